package console_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/proserun/prose/server/testenv"
)

// TestConsoleInvokeForm: the automation page's invoke form has a labelled
// field for each input the code reads, typed where the code tells, rows
// for other inputs, and a choice of the draft or the published version;
// an empty field is left for the run to ask; the code is shown once.
func TestConsoleInvokeForm(t *testing.T) {
	e := newTestEnv(t)
	code := "the output pay is the hours * 12.5\nif the start is after 2026-01-01 then\n  say \"new\"\nsay the note\n"
	a := e.MkAutomation(t, "Payroll", code, true)
	c := testenv.BrowserClient(t)
	csrf := e.ConsoleSignIn(t, c, e.NewKey(t, testenv.KeySpec{}))
	page := "/w/" + e.Init.WorkspaceID + "/automations/" + a.ID
	_, body, _ := testenv.Page(t, c, e.Srv.URL, page)
	for _, want := range []string{
		`<input type="hidden" name="fact.0" value="hours">`, `<input type="hidden" name="type.0" value="number">`, `inputmode="decimal"`,
		`<input type="hidden" name="fact.1" value="start">`, `name="value.1" type="date"`,
		`<input type="hidden" name="fact.2" value="note">`, `<select id="type-2" name="type.2">`,
		`name="fact.3"`, `Add another input`, `value="published"`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the invoke form has no %s", want)
		}
	}
	if !strings.Contains(body, `<textarea id="code"`) || strings.Contains(body, `<ol class="lines"`) {
		t.Errorf("the code is not shown once, in the editor")
	}
	form := url.Values{"csrf": {csrf}, "stage": {"published"},
		"fact.0": {"hours"}, "type.0": {"number"}, "value.0": {"160"},
		"fact.1": {"start"}, "type.1": {"date"}, "value.1": {"2026-03-01"},
		"fact.2": {"note"}, "type.2": {"text"}, "value.2": {""},
		"fact.3": {"team"}, "type.3": {"text"}, "value.3": {"ops"}}
	code2, loc, _ := testenv.Post(t, c, e.Srv.URL, page+"/invoke", form)
	if code2 != http.StatusSeeOther || !strings.Contains(loc, "/runs/") {
		t.Fatalf("invoke: %d %s", code2, loc)
	}
	run := e.WaitRun(t, a.ID, loc[strings.LastIndex(loc, "/")+1:], "awaiting_guidance")
	if testenv.Field(run, "stage") != "AUTOMATION_STAGE_PUBLISHED" {
		t.Errorf("stage %v, want the published version", testenv.Field(run, "stage"))
	}
	if testenv.Field(run, "user_inputs.hours.number.lo") != float64(160) || testenv.Field(run, "user_inputs.start.date.year") != float64(2026) ||
		testenv.Field(run, "user_inputs.team.text") != "ops" || testenv.Field(run, "user_inputs.note") != nil {
		t.Errorf("inputs %v", testenv.Field(run, "user_inputs"))
	}
	form.Set("stage", "tomorrow")
	if code, _, _ := testenv.Post(t, c, e.Srv.URL, page+"/invoke", form); code != http.StatusBadRequest {
		t.Errorf("an unknown stage: %d, want 400", code)
	}
}
