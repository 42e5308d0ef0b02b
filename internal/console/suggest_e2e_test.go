package console_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/proserun/prose/server/testenv"
)

// TestConsoleEditorSuggestsStandardProcedures: the editor's live check
// completes the last line with the procedures the catalog ranks first for
// it, the language's standard library among them (with an example), and
// warns of an output set only inside a block.
func TestConsoleEditorSuggestsStandardProcedures(t *testing.T) {
	e := newTestEnv(t)
	c := testenv.BrowserClient(t)
	csrf := e.ConsoleSignIn(t, c, e.Init.APIKey)
	check := func(code string) string {
		t.Helper()
		status, _, body := testenv.Post(t, c, e.Srv.URL, "/w/"+e.Init.WorkspaceID+"/check-code", url.Values{"csrf": {csrf}, "code": {code}})
		if status != http.StatusOK {
			t.Fatalf("check-code: %d %s", status, body)
		}
		return body
	}
	body := check("the line is \"a;b\"\nsplit the line by")
	if !strings.Contains(body, `id="suggestions"`) || !strings.Contains(body, "split a text by a separator") || !strings.Contains(body, "(standard)") {
		t.Errorf("no standard suggestion for 'split the line by': %s", body)
	}
	if !strings.Contains(body, "split the line by &#34;;&#34;") {
		t.Errorf("the suggestion's example is missing: %s", body)
	}
	if body := check("the total is 1\n"); strings.Contains(body, "split a text") {
		t.Errorf("a suggestion of split for an assignment: %s", body)
	}
	// An output set only inside a block is warned about at its line.
	body = check("if true then\n  the output flag is 1\n")
	if !strings.Contains(body, `class="warning">Warning: line 2, column 3: &#39;the output flag&#39; is set only inside a block`) {
		t.Errorf("no warning for an output set in a block: %s", body)
	}
}
