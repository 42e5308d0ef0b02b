package console_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/proserun/prose/server/testenv"
)

const doublingCode = "get the n\nthe output x is the n * 2\nif the n is greater than 5 then\n  the output x is 0\n"

// safeChangeSetup publishes doublingCode, records two runs of it (n 3 and
// 10), gives the draft a test that n 3 doubles to 6 and then changes the
// draft to triple: the test fails, line 4 is reached by no test, and a
// replay changes the run of 3 (6 → 9) and not the run of 10.
func safeChangeSetup(t *testing.T, e *testEnv) testenv.Automation {
	t.Helper()
	a := e.MkAutomation(t, "Doubling", doublingCode, true)
	for _, n := range []string{"3", "10"} {
		m := e.API(t, "POST", e.AutomationsPath()+"/"+a.ID+":invoke",
			`{"stage":"AUTOMATION_STAGE_PUBLISHED","inputs":{"n":{"number":{"lo":`+n+`}}}}`, 200)
		e.WaitRun(t, a.ID, m["run_id"].(string), "completed")
	}
	e.API(t, "POST", e.AutomationsPath()+"/"+a.ID+"/tests", `{"display_name":"three doubles to six",
		"inputs":{"n":{"number":{"lo":3}}},"expect":{"outputs":{"x":{"number":{"lo":6}}}}}`, 200)
	e.API(t, "PATCH", e.AutomationsPath()+"/"+a.ID+"?update_mask=english_code",
		`{"english_code":`+testenv.JSONStr(strings.Replace(doublingCode, "* 2", "* 3", 1))+`}`, 200)
	return a
}

// TestConsoleSafeChange: the automation's check-and-publish page shows its
// tests against the draft, the lines no test reaches, the replay's
// changed runs side by side (recorded, draft), refuses a publish with its
// failures listed, and publishes when given a reason.
func TestConsoleSafeChange(t *testing.T) {
	e := newTestEnv(t)
	a := safeChangeSetup(t, e)
	c := testenv.BrowserClient(t)
	csrf := e.ConsoleSignIn(t, c, e.NewKey(t, testenv.KeySpec{}))
	page := "/w/" + e.Init.WorkspaceID + "/automations/" + a.ID + "/safe-change"
	code, body, _ := testenv.Page(t, c, e.Srv.URL, "/w/"+e.Init.WorkspaceID+"/automations/"+a.ID)
	if code != http.StatusOK || !strings.Contains(body, `href="`+page+`"`) {
		t.Fatalf("the automation page links no check-and-publish page: %d", code)
	}
	code, body, _ = testenv.Page(t, c, e.Srv.URL, page)
	for _, want := range []string{"0 passed, 1 failed", "output x: expected 6, got 9", `<span class="uncovered"><span class="ln">4</span>`,
		`<span class="covered"><span class="ln">2</span>`, "Not replayed yet."} {
		if code != http.StatusOK || !strings.Contains(body, want) {
			t.Errorf("the page (%d) lacks %q", code, want)
		}
	}
	if code, loc, body := testenv.Post(t, c, e.Srv.URL, page+"/replay", url.Values{"csrf": {csrf}}); code != http.StatusSeeOther || loc != page {
		t.Fatalf("replay: %d %s %s", code, loc, body)
	}
	_, body, _ = testenv.Page(t, c, e.Srv.URL, page)
	for _, want := range []string{"2 runs of version 2 replayed against version 4: 1 unchanged, 1 outputs differ",
		`<td>output x</td><td class="del">6</td><td class="add">9</td>`} {
		if !strings.Contains(body, want) {
			t.Errorf("after the replay the page lacks %q", want)
		}
	}
	code, _, body = testenv.Post(t, c, e.Srv.URL, page+"/publish", url.Values{"csrf": {csrf}})
	if code != http.StatusOK || !strings.Contains(body, "Publishing is refused") || !strings.Contains(body, `test &#34;three doubles to six&#34;: output x: expected 6, got 9`) ||
		!strings.Contains(body, "outputs differ: output x 6 → 9") {
		t.Fatalf("publish without a reason: %d\n%s", code, body)
	}
	code, loc, body := testenv.Post(t, c, e.Srv.URL, page+"/publish", url.Values{"csrf": {csrf}, "reason": {"tripling is the new rule"}})
	if code != http.StatusSeeOther || !strings.HasSuffix(loc, "/automations/"+a.ID) {
		t.Fatalf("publish with a reason: %d %s %s", code, loc, body)
	}
	rev := e.API(t, "GET", e.AutomationsPath()+"/"+a.ID+"/revisions/latest", "", 200)
	if testenv.Field(rev, "publish_check.force_reason") != "tripling is the new rule" || testenv.Field(rev, "publish_check.forced") != true {
		t.Errorf("the revision's check: %v", rev["publish_check"])
	}
}
