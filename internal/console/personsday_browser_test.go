package console_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/proserun/prose/internal/console"
	"github.com/proserun/prose/internal/testtime"
)

// personsDayCode reads two inputs; the form gives the first, the run sets
// a fact from it, then waits for the second.
const personsDayCode = "get the rate\nthe day rate is the rate * 8\nget the hours\nthe output pay is the rate * the hours\nsay \"paid\"\n"

// A person's day on a fresh server, in Chromium: sign in, create an
// automation by name, invoke it with the form made from its inputs, watch
// the run page (open in a tab of its own, never reloaded) annotate its
// lines while the run waits for guidance, resolve the exception from the
// inbox, see the resolution on the exception page and the run complete in
// the open tab, and the insights change. Every page visited passes
// axe-core (no serious or critical violation) and the page checks, and
// fits 390 px.
func TestConsoleBrowserPersonsDay(t *testing.T) {
	b := newBrowser(t)
	e := newTestEnv(t)
	script := axeScript(t)
	ids := map[string]string{e.Init.OrganizationID: "organization", e.Init.WorkspaceID: "workspace", e.Init.UserID: "user"}
	ws := e.Srv.URL + "/w/" + e.Init.WorkspaceID
	main := b.ctx
	look := func(ctx context.Context, name, sel string) {
		t.Helper()
		b.do(ctx, name, chromedp.EmulateViewport(1400, 900), chromedp.WaitVisible(chromedp.CSS(sel)))
		b.checkPage(ctx, name, script, ids, "")
		b.do(ctx, name+" at 390 px", chromedp.EmulateViewport(390, 844), chromedp.WaitVisible(chromedp.CSS(sel)))
		if over, err := chromedp.Run(ctx, chromedp.Evaluate[bool]("document.documentElement.scrollWidth > window.innerWidth + 1")); err != nil || over {
			t.Errorf("%s scrolls sideways at 390 px (%v)", name, err)
		}
		for _, el := range b.cutOff(ctx) {
			t.Errorf("%s at 390 px: a control is cut off: %s", name, el)
		}
		b.do(ctx, name+" back at 1400 px", chromedp.EmulateViewport(1400, 900))
	}

	token, err := console.CreateLink(context.Background(), e.Store, e.Init.OrganizationID, e.Init.UserID, 0, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	b.do(main, "sign in", chromedp.Navigate(console.LinkURL(e.Srv.URL, token)), chromedp.WaitVisible(chromedp.ID("signin-link")))
	if _, err := chromedp.RunResponse(main, chromedp.Click(chromedp.ID("signin-link"))); err != nil {
		t.Fatal(err)
	}
	look(main, "the inbox", "#inbox")
	b.do(main, "the insights before", chromedp.Navigate(ws+"/insights"))
	look(main, "insights", "#chart-runs")
	insightsBefore := b.text(main, "main")

	b.do(main, "create an automation by name", chromedp.Navigate(ws+"/automations"), chromedp.WaitVisible(chromedp.ID("code")))
	look(main, "automations", "#code")
	b.do(main, "name and code", chromedp.SetValue(chromedp.ID("display_name"), "Day rates"), chromedp.SetValue(chromedp.ID("code"), personsDayCode))
	if _, err := chromedp.RunResponse(main, chromedp.Submit(chromedp.ID("code"))); err != nil {
		t.Fatal(err)
	}
	look(main, "the automation", "#invoke")
	if got := b.text(main, `label[for="value-0"]`); !strings.HasPrefix(got, "rate") {
		t.Errorf("the form's first field is %q, want the rate", got)
	}
	if got := b.text(main, `label[for="value-1"]`); !strings.HasPrefix(got, "hours") {
		t.Errorf("the form's second field is %q, want the hours", got)
	}
	b.do(main, "give the rate", chromedp.SetValue(chromedp.ID("value-0"), "120.50"))
	if _, err := chromedp.RunResponse(main, chromedp.Submit(chromedp.ID("value-0"))); err != nil {
		t.Fatal(err)
	}
	runURL, err := chromedp.Run(main, chromedp.Location())
	if err != nil {
		t.Fatal(err)
	}
	// The run page, annotated while the run waits: the fact set at line 2,
	// the exception inline at line 3, the lines after it dimmed.
	b.do(main, "the run waits", chromedp.WaitVisible(chromedp.CSS("#run-state.state-awaiting_guidance")),
		chromedp.WaitVisible(chromedp.CSS(`#program li[value="3"] .note-exception`)))
	if got := b.text(main, `#program li[value="2"] .note-fact`); !strings.Contains(got, "day rate =") || !strings.Contains(got, "964.00") {
		t.Errorf("line 2 while the run waits: %q", got)
	}
	if n := b.count(main, "#program li.not-run"); n != 2 {
		t.Errorf("%d lines dimmed, want the 2 after the line that waits", n)
	}
	look(main, "the run awaiting guidance", "#program")
	runTab := b.tab()
	b.do(runTab, "the run page in a tab of its own", chromedp.Navigate(runURL), chromedp.WaitVisible(chromedp.CSS("#run-state.state-awaiting_guidance")))
	if _, err := chromedp.Run(runTab, chromedp.Evaluate[int]("window.proseNotReloaded = 1")); err != nil {
		t.Fatal(err)
	}

	// Resolve it from the inbox.
	b.do(main, "the inbox", chromedp.Navigate(ws+"/"), chromedp.WaitVisible(chromedp.CSS("a.exc")))
	look(main, "the inbox with the exception", "a.exc")
	if _, err := chromedp.RunResponse(main, chromedp.Click(chromedp.CSS("a.exc"))); err != nil {
		t.Fatal(err)
	}
	look(main, "the exception", "#provide-values")
	excURL, err := chromedp.Run(main, chromedp.Location())
	if err != nil {
		t.Fatal(err)
	}
	b.do(main, "provide the hours", chromedp.SetValue(chromedp.ID("value-0"), "8"), chromedp.SetValue(chromedp.ID("type-0"), "number"))
	if _, err := chromedp.RunResponse(main, chromedp.Submit(chromedp.ID("value-0"))); err != nil {
		t.Fatal(err)
	}
	b.do(main, "the run completes", chromedp.WaitVisible(chromedp.CSS("#run-state.state-completed")), chromedp.WaitVisible(chromedp.CSS("p.notice")))
	if got := b.text(main, `#program li[value="3"]`); !strings.Contains(got, "values provided by") || strings.Contains(got, "users/") {
		t.Errorf("line 3 after the guidance: %q", got)
	}
	if got := b.text(main, "#outputs"); !strings.Contains(got, "964.00") {
		t.Errorf("outputs %q", got)
	}
	look(main, "the completed run", "#program")
	// The open tab shows the run completed without a reload.
	ctx, cancel := context.WithTimeout(runTab, testtime.Limit(testtime.Wait))
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS("#run-state.state-completed")), chromedp.WaitVisible(chromedp.CSS(`#program li[value="5"] .note-say`))); err != nil {
		t.Fatalf("the open run page did not show the run complete: %v", err)
	}
	if v, err := chromedp.Run(runTab, chromedp.Evaluate[int]("window.proseNotReloaded || 0")); err != nil || v != 1 {
		t.Errorf("the run page was reloaded (%d, %v)", v, err)
	}

	// The exception page, resolved.
	b.do(main, "the resolved exception", chromedp.Navigate(excURL))
	look(main, "the resolved exception", "#resolution")
	if got := b.text(main, "#resolution"); !strings.Contains(got, "values provided") || !strings.Contains(got, "8") {
		t.Errorf("the resolution: %q", got)
	}
	// The insights change.
	b.do(main, "the insights after", chromedp.Navigate(ws+"/insights"))
	look(main, "insights after", "#chart-runs")
	if b.text(main, "main") == insightsBefore {
		t.Errorf("the insights page did not change after a run")
	}
	b.noConsoleErrors()
}

// TestConsoleBrowserExceptionLive: an exception page left open changes
// when someone else (here the API, as the agent would) resolves the
// exception: its state, the resolution, and the guidance forms gone,
// without a reload.
func TestConsoleBrowserExceptionLive(t *testing.T) {
	b := newBrowser(t)
	e := newTestEnv(t)
	_, _, xid := e.ExcMake(t, "ask \"Approve the invoice?\"\nthe output approved is the answer\n")
	token, err := console.CreateLink(context.Background(), e.Store, e.Init.OrganizationID, e.Init.UserID, 0, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	ctx := b.ctx
	b.do(ctx, "sign in", chromedp.Navigate(console.LinkURL(e.Srv.URL, token)), chromedp.WaitVisible(chromedp.ID("signin-link")))
	if _, err := chromedp.RunResponse(ctx, chromedp.Click(chromedp.ID("signin-link"))); err != nil {
		t.Fatal(err)
	}
	b.do(ctx, "the exception page", chromedp.Navigate(e.Srv.URL+"/w/"+e.Init.WorkspaceID+"/exceptions/"+xid), chromedp.WaitVisible(chromedp.ID("guide")))
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[int]("window.proseNotReloaded = 1")); err != nil {
		t.Fatal(err)
	}
	e.API(t, "POST", e.WsPath()+"/exceptions/"+xid+":resolve", `{"answer":{"value":{"text":"yes"}}}`, 200)
	wctx, cancel := context.WithTimeout(ctx, testtime.Limit(testtime.Wait))
	defer cancel()
	if err := chromedp.Do(wctx, chromedp.WaitVisible(chromedp.ID("resolution")), chromedp.WaitNotVisible(chromedp.ID("guide"))); err != nil {
		t.Fatalf("the open page did not show the resolution: %v", err)
	}
	if got := b.text(ctx, "#exc-state"); got != "Resolved" {
		t.Errorf("state %q", got)
	}
	if got := b.text(ctx, "#exc-live"); !strings.Contains(got, "The automation asked: Approve the invoice?") || !strings.Contains(got, "answered") {
		t.Errorf("the live part: %q", got)
	}
	if v, err := chromedp.Run(ctx, chromedp.Evaluate[int]("window.proseNotReloaded || 0")); err != nil || v != 1 {
		t.Errorf("the page was reloaded (%d, %v)", v, err)
	}
	b.noConsoleErrors()
}
