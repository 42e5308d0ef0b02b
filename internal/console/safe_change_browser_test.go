package console_test

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestConsoleBrowserSafeChange: in Chromium, the check-and-publish page
// highlights the line no test reaches, the replay shows the changed run's
// output recorded and drafted side by side, and a publish without a
// reason lists its failures; with a reason it publishes.
func TestConsoleBrowserSafeChange(t *testing.T) {
	b := newBrowser(t)
	e := newTestEnv(t)
	a := safeChangeSetup(t, e)
	ctx := b.ctx
	b.do(ctx, "sign in",
		chromedp.Navigate(e.Srv.URL+"/signin"),
		chromedp.SetValue(chromedp.ID("api_key"), e.Init.APIKey))
	if _, err := chromedp.RunResponse(ctx, chromedp.Submit(chromedp.ID("api_key"))); err != nil {
		t.Fatal(err)
	}
	b.do(ctx, "the automation", chromedp.Navigate(e.Srv.URL+"/w/"+e.Init.WorkspaceID+"/automations/"+a.ID), chromedp.WaitVisible(chromedp.ID("safe-change")))
	if _, err := chromedp.RunResponse(ctx, chromedp.Click(chromedp.ID("safe-change"))); err != nil {
		t.Fatal(err)
	}
	b.do(ctx, "the check page", chromedp.WaitVisible(chromedp.ID("coverage")))
	if got := b.text(ctx, "#coverage .uncovered"); !strings.Contains(got, "the output x is 0") {
		t.Errorf("the highlighted line %q", got)
	}
	if n := b.count(ctx, "#coverage .uncovered"); n != 1 {
		t.Errorf("%d highlighted lines, want 1", n)
	}
	if _, err := chromedp.RunResponse(ctx, chromedp.Click(chromedp.ID("replay-button"))); err != nil {
		t.Fatal(err)
	}
	b.do(ctx, "the replay", chromedp.WaitVisible(chromedp.ID("replay")))
	if got := b.text(ctx, "#replay tbody"); !strings.Contains(got, "output x\t6\t9") {
		t.Errorf("the replay's table %q", got)
	}
	b.screenshot(ctx, "safe-change")
	if _, err := chromedp.RunResponse(ctx, chromedp.Click(chromedp.ID("publish"))); err != nil {
		t.Fatal(err)
	}
	b.do(ctx, "refused", chromedp.WaitVisible(chromedp.ID("failures")))
	if n := b.count(ctx, "#failures li"); n != 2 {
		t.Errorf("%d failures listed, want the test and the run", n)
	}
	b.do(ctx, "a reason", chromedp.SetValue(chromedp.ID("reason"), "tripling is the new rule"))
	if _, err := chromedp.RunResponse(ctx, chromedp.Click(chromedp.ID("publish"))); err != nil {
		t.Fatal(err)
	}
	b.do(ctx, "published", chromedp.WaitVisible(chromedp.ID("diff")))
	if got := b.text(ctx, "#diff"); got != "The draft is what is published." {
		t.Errorf("after the forced publish: %q", got)
	}
	b.noConsoleErrors()
}
