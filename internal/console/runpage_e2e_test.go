package console_test

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/proserun/prose/server/testenv"
	"github.com/proserun/prose/store"
)

const programCode = "the rate is 120.50\nget the hours\nif the hours is greater than 100 then\n  say \"a long month\"\nthe output total is the rate * the hours\nsay \"done\"\n"

// TestConsoleRunProgram: the run page shows the code the run ran once,
// each line with what the run did there (the fact set and its value as
// people write it, the exception inline and linked), the lines not run
// dimmed; after the answer, who gave it by name; stop, continue and
// re-run with the same inputs, each confirmed.
func TestConsoleRunProgram(t *testing.T) {
	e := newTestEnv(t)
	a := e.MkAutomation(t, "Timesheet", programCode, true)
	c := testenv.BrowserClient(t)
	csrf := e.ConsoleSignIn(t, c, e.NewKey(t, testenv.KeySpec{}))
	ws := "/w/" + e.Init.WorkspaceID
	m := e.API(t, "POST", e.AutomationsPath()+"/"+a.ID+":invoke", `{"stage":"AUTOMATION_STAGE_PUBLISHED","inputs":{"note":{"text":"march"}}}`, 200)
	runPage := ws + "/automations/" + a.ID + "/runs/" + m["run_id"].(string)
	waiting := e.WaitRun(t, a.ID, m["run_id"].(string), "awaiting_guidance")
	x := store.LastSegment(testenv.Field(waiting, "state.awaiting_guidance.exception").(string))

	_, body, _ := testenv.Page(t, c, e.Srv.URL, runPage)
	lines := programLines(t, body)
	if len(lines) != 6 || strings.Count(body, "the rate <span") != 1 {
		t.Fatalf("%d lines in the program, the code %d times: %v", len(lines), strings.Count(body, "the rate <span"), lines)
	}
	if l := lines[0]; !strings.Contains(l, `class="ran"`) || !strings.Contains(l, "rate =") || !strings.Contains(l, ">120.50<") {
		t.Errorf("line 1: %s", l)
	}
	if l := lines[1]; !strings.Contains(l, "exception:") || !strings.Contains(l, ws+"/exceptions/"+x) || !strings.Contains(l, "waiting for guidance") {
		t.Errorf("line 2 (the exception): %s", l)
	}
	for i := 2; i < 6; i++ {
		if !strings.Contains(lines[i], `class="not-run"`) {
			t.Errorf("line %d, after the line the run waits at: %s", i+1, lines[i])
		}
	}
	if !strings.Contains(body, `<span class="tk">say</span>`) || !strings.Contains(body, `<span class="tn">120.50</span>`) {
		t.Errorf("the code is not highlighted")
	}

	e.API(t, "POST", e.WsPath()+"/exceptions/"+x+":resolve", `{"provide_values":{"values":{"the hours":{"number":{"lo":8}}}}}`, 200)
	e.WaitRun(t, a.ID, m["run_id"].(string), "completed")
	_, body, _ = testenv.Page(t, c, e.Srv.URL, runPage)
	lines = programLines(t, body)
	if l := lines[1]; !strings.Contains(l, "values provided by ") || strings.Contains(l, "users/") {
		t.Errorf("line 2 after the answer: %s", l)
	}
	if strings.Contains(body, "users/") {
		t.Errorf("the run page shows a users/… id")
	}
	if l := lines[2]; !strings.Contains(l, `class="ran"`) {
		t.Errorf("the if line of a completed run: %s", l)
	}
	if l := lines[3]; !strings.Contains(l, `class="not-run"`) {
		t.Errorf("the branch not taken: %s", l)
	}
	if l := lines[4]; !strings.Contains(l, "output total =") || !strings.Contains(l, ">964.00<") {
		t.Errorf("line 5: %s", l)
	}
	if l := lines[5]; !strings.Contains(l, "said") || !strings.Contains(l, "done") {
		t.Errorf("line 6: %s", l)
	}

	// Re-run with the same inputs: a new run, confirmed.
	code, loc, _ := testenv.Post(t, c, e.Srv.URL, runPage+"/rerun", url.Values{"csrf": {csrf}})
	if code != http.StatusSeeOther || !strings.HasSuffix(loc, "?done=rerun") || strings.HasPrefix(loc, runPage+"?") {
		t.Fatalf("rerun: %d %s", code, loc)
	}
	newRun := strings.TrimSuffix(loc[strings.LastIndex(loc, "/")+1:], "?done=rerun")
	e.WaitRun(t, a.ID, newRun, "awaiting_guidance")
	_, body, _ = testenv.Page(t, c, e.Srv.URL, loc)
	if !strings.Contains(body, "same inputs") || !strings.Contains(body, "march") {
		t.Errorf("the new run's page: no confirmation or not the same inputs")
	}
	// Stop and continue it, each confirmed.
	newPage := ws + "/automations/" + a.ID + "/runs/" + newRun
	if code, loc, _ := testenv.Post(t, c, e.Srv.URL, newPage+"/stop", url.Values{"csrf": {csrf}}); code != http.StatusSeeOther || loc != newPage+"?done=stop" {
		t.Fatalf("stop: %d %s", code, loc)
	}
	e.WaitRun(t, a.ID, newRun, "stopped")
	if _, body, _ = testenv.Page(t, c, e.Srv.URL, newPage+"?done=stop"); !strings.Contains(body, "The run is stopped") || !strings.Contains(body, `id="continue-run"`) {
		t.Errorf("the stopped run: no confirmation or no continue")
	}
	if code, loc, _ := testenv.Post(t, c, e.Srv.URL, newPage+"/continue", url.Values{"csrf": {csrf}}); code != http.StatusSeeOther || loc != newPage+"?done=continue" {
		t.Fatalf("continue: %d %s", code, loc)
	}
	e.WaitRun(t, a.ID, newRun, "awaiting_guidance")
	if code, _, _ := testenv.Post(t, c, e.Srv.URL, newPage+"/nonsense", url.Values{"csrf": {csrf}}); code != http.StatusNotFound {
		t.Errorf("an unknown action: %d, want 404", code)
	}
}

// programLines returns the lines of the run page's program, as HTML.
func programLines(t *testing.T, body string) []string {
	t.Helper()
	m := regexp.MustCompile(`(?s)<ol class="program"[^>]*>(.*?)</ol>\s*(?:<p|<h2)`).FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no program on the run page")
	}
	return regexp.MustCompile(`(?s)<li value="\d+".*?</li>\n`).FindAllString(m[1], -1)
}
