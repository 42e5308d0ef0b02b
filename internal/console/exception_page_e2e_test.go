package console_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/proserun/prose/server/testenv"
	"github.com/proserun/prose/store"
)

// TestConsoleExceptionResolved: once resolved (here over the API, as the
// agent or another person would), the exception page shows the answer
// given, who gave it by name and when, in the past tense, without the
// guidance forms; its state part is live. Archive and unarchive are
// confirmed.
func TestConsoleExceptionResolved(t *testing.T) {
	e := newTestEnv(t)
	c := testenv.BrowserClient(t)
	csrf := e.ConsoleSignIn(t, c, e.NewKey(t, testenv.KeySpec{}))
	ws := "/w/" + e.Init.WorkspaceID
	a, r, xid := e.ExcMake(t, testenv.ExcAskCode)
	page := ws + "/exceptions/" + xid
	_, body, _ := testenv.Page(t, c, e.Srv.URL, page)
	if !strings.Contains(body, `id="guide"`) || !strings.Contains(body, `data-live="`+ws+`/live?topic=exceptions"`) || !strings.Contains(body, "waits for your answer") {
		t.Errorf("the pending exception: no guidance forms, no live state, or not in the present tense")
	}
	e.API(t, "POST", e.WsPath()+"/exceptions/"+xid+":resolve", `{"answer":{"value":{"text":"yes"}}}`, 200)
	e.WaitRunState(t, a.ID, r.ID, store.RunCompleted)
	_, body, _ = testenv.Page(t, c, e.Srv.URL, page)
	for _, want := range []string{`id="resolution"`, "answered", `<dt>answer</dt><dd>yes</dd>`, "The automation asked: Approve?", `<time>`} {
		if !strings.Contains(body, want) {
			t.Errorf("the resolved exception's page lacks %q", want)
		}
	}
	by := body[strings.Index(body, `id="resolved-by">`)+len(`id="resolved-by">`):]
	by = by[:strings.Index(by, "<")]
	if by == "" || strings.Contains(body, "users/") {
		t.Errorf("resolved by %q; the page shows a users/… id: %v", by, strings.Contains(body, "users/"))
	}
	if strings.Contains(body, "waits for your answer") || strings.Contains(body, `id="guide"`) {
		t.Errorf("the resolved exception still speaks in the present tense or offers guidance")
	}
	// Archive and unarchive, each confirmed.
	_, _, x2 := e.ExcMake(t, testenv.ExcMissingCode)
	for _, act := range []struct{ action, notice string }{{"archive", "is archived"}, {"unarchive", "waits for guidance again"}} {
		code, loc, _ := testenv.Post(t, c, e.Srv.URL, ws+"/exceptions/"+x2+"/"+act.action, url.Values{"csrf": {csrf}})
		if code != http.StatusSeeOther || loc != ws+"/exceptions/"+x2+"?done="+act.action {
			t.Fatalf("%s: %d %s", act.action, code, loc)
		}
		if _, body, _ := testenv.Page(t, c, e.Srv.URL, loc); !strings.Contains(body, act.notice) {
			t.Errorf("%s: no confirmation", act.action)
		}
	}
}

// TestConsoleCorrectedValues: a user error's page offers the form its
// description promises, for corrected values; the run takes them.
func TestConsoleCorrectedValues(t *testing.T) {
	e := newTestEnv(t)
	c := testenv.BrowserClient(t)
	csrf := e.ConsoleSignIn(t, c, e.NewKey(t, testenv.KeySpec{}))
	ws := "/w/" + e.Init.WorkspaceID
	a, r, xid := e.ExcMake(t, "the rate is 0\nthe x is 10 / the rate\nthe output x is the x\n")
	_, body, _ := testenv.Page(t, c, e.Srv.URL, ws+"/exceptions/"+xid)
	if !strings.Contains(body, `id="corrected-values"`) || !strings.Contains(body, `value="the rate"`) {
		t.Fatalf("the user error's page has no corrected-values form for the rate")
	}
	form := url.Values{"csrf": {csrf}, "kind": {"provide_values"}, "fact.0": {"the rate"}, "type.0": {"number"}, "value.0": {"2"}, "fact.1": {""}, "value.1": {""}}
	if code, loc, body := testenv.Post(t, c, e.Srv.URL, ws+"/exceptions/"+xid+"/resolve", form); code != http.StatusSeeOther || !strings.HasSuffix(loc, "?done=resolved") {
		t.Fatalf("corrected values: %d %s %s", code, loc, body)
	}
	run := e.WaitRun(t, a.ID, r.ID, "completed")
	if testenv.Field(run, "state.completed.outputs.output x.number.lo") != float64(5) {
		t.Errorf("output x %v, want the corrected 5", testenv.Field(run, "state.completed.outputs"))
	}
	_, body, _ = testenv.Page(t, c, e.Srv.URL, ws+"/automations/"+a.ID+"/runs/"+r.ID+"?done=resolved")
	if !strings.Contains(body, "Your guidance is given") {
		t.Errorf("no confirmation on the run page")
	}
}
