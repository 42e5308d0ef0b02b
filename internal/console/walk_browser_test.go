package console_test

import (
	"bytes"
	"context"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/proserun/prose/internal/console"
	"github.com/proserun/prose/store"
)

// screenshotsOut is where TestConsoleBrowserEveryPage saves a screenshot of
// every page at 1,400 and 390 px wide (also PROSE_CONSOLE_SCREENSHOTS):
//
//	go test ./internal/console -run TestConsoleBrowserEveryPage -args -screenshots "$PWD/docs/console"
var screenshotsOut = flag.String("screenshots", "", "save a screenshot of every console page at 1400 and 390 px into this folder")

// The widths every page is looked at.
var walkWidths = []struct {
	Name string
	W, H int64
}{{"1400", 1400, 900}, {"390", 390, 844}}

// axeScript is axe-core (testdata/axe, MPL-2.0), injected into each page.
func axeScript(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "axe", "axe.min.js"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// axeSerious runs axe-core on the tab's page and returns its serious and
// critical violations, one line each with the elements they were found on.
func (b *browser) axeSerious(ctx context.Context, script string) []string {
	b.t.Helper()
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool]("(() => { if (!window.axe) { "+script+"\n } return true })()")); err != nil {
		b.t.Fatalf("inject axe-core: %v", err)
	}
	got, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`axe.run(document, {resultTypes: ["violations"]}).then(r => r.violations
		.filter(v => v.impact === "serious" || v.impact === "critical")
		.map(v => v.id + " (" + v.impact + "): " + v.help + " at " + v.nodes.slice(0, 4).map(n => n.target.join(" ")).join("; ")))`, chromedp.EvalAwaitPromise))
	if err != nil {
		b.t.Fatalf("axe-core: %v", err)
	}
	return got
}

// A wire-form value ({"number":{"lo":…}}) or a resource name of a person.
var wireForm = regexp.MustCompile(`"(lo|flags|mid|hi)"\s*:|\{"(number|text|boolean|date|list)"|users/[a-z0-9]`)

// urls are left out of the id check: a link or an endpoint carries ids.
var urls = regexp.MustCompile(`https?://\S+|/hooks/\S+`)

// idsShown returns the ids of named things (an organization, workspace,
// person, automation, learning, webhook, connection, trigger, exception)
// that the text shows where their name belongs, and the wire-form values
// or person names it shows.
func idsShown(text string, ids map[string]string) []string {
	text = urls.ReplaceAllString(text, "")
	var out []string
	for id, what := range ids {
		if strings.Contains(text, id) {
			out = append(out, what+" id "+id)
		}
	}
	for _, m := range wireForm.FindAllString(text, 5) {
		out = append(out, "wire form or resource name "+m)
	}
	return out
}

// Every page of the console, on a workspace with something on each: axe-core
// finds no serious or critical violation, the page fits 390 px without
// scrolling sideways, every control is reachable with the keyboard (no
// tabindex takes one out of the order), and no id of a named thing, person
// resource name or wire-form value shows. With -screenshots DIR (or
// PROSE_CONSOLE_SCREENSHOTS) it saves each page at both widths.
func TestConsoleBrowserEveryPage(t *testing.T) {
	b := newBrowser(t)
	e := newTestEnv(t)
	sd := seedProduct(t, e)
	script := axeScript(t)
	out := *screenshotsOut
	if out == "" {
		out = os.Getenv("PROSE_CONSOLE_SCREENSHOTS")
	}
	if out != "" {
		if err := os.MkdirAll(out, 0o755); err != nil { //nolint:gosec // G301: a folder of screenshots
			t.Fatal(err)
		}
	}
	ids := map[string]string{e.Init.OrganizationID: "organization", e.Init.WorkspaceID: "workspace", e.Init.UserID: "user",
		sd.Learning: "learning", sd.Webhook: "webhook", sd.Connection: "connection", sd.Trigger: "trigger", sd.Exception: "exception"}
	autos, err := e.Store.ListAutomations(context.Background(), store.ListAutomationsRequest{OrganizationID: e.Init.OrganizationID, WorkspaceID: e.Init.WorkspaceID, PageSize: 100})
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range autos.Items {
		if len(a.ID) == 20 {
			ids[a.ID] = "automation " + a.DisplayName
		}
	}
	ws := e.Srv.URL + "/w/" + e.Init.WorkspaceID
	pages := []struct{ Name, Path, Sel string }{
		{"inbox", "/", "#inbox"},
		{"runs", "/runs", "#runs"},
		{"automations", "/automations", "#code"},
		{"exception", "/exceptions/" + sd.Exception, "pre.code"},
		{"run", "/automations/" + sd.Automation + "/runs/" + sd.Resolved, "#run-state"},
		{"settings", "/settings", "#member-list"},
	}
	pages = append(pages, productPages(sd)...)
	pages = append(pages, struct{ Name, Path, Sel string }{"notfound", "/no-such-page", "main h1"})

	ctx := b.ctx
	b.do(ctx, "the sign-in page", chromedp.EmulateViewport(1400, 900), chromedp.Navigate(e.Srv.URL+"/signin"), chromedp.WaitVisible(chromedp.ID("api_key")))
	b.checkPage(ctx, "signin", script, ids, out)
	b.savePNG(ctx, out, "signin-1400")
	token, err := console.CreateLink(context.Background(), e.Store, e.Init.OrganizationID, e.Init.UserID, 0, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	b.do(ctx, "sign in", chromedp.Navigate(console.LinkURL(e.Srv.URL, token)), chromedp.WaitVisible(chromedp.ID("signin-link")))
	if _, err := chromedp.RunResponse(ctx, chromedp.Click(chromedp.ID("signin-link"))); err != nil {
		t.Fatal(err)
	}
	for _, wd := range walkWidths {
		b.do(ctx, "width "+wd.Name, chromedp.EmulateViewport(wd.W, wd.H))
		for _, p := range pages {
			b.do(ctx, p.Name+" at "+wd.Name+" px", chromedp.Navigate(ws+p.Path), chromedp.WaitVisible(chromedp.CSS(p.Sel)))
			name := p.Name + "-" + wd.Name
			if wd.W < 500 {
				if over, err := chromedp.Run(ctx, chromedp.Evaluate[bool]("document.documentElement.scrollWidth > window.innerWidth + 1")); err != nil || over {
					t.Errorf("%s scrolls sideways at %s px (%v)", p.Name, wd.Name, err)
				}
				for _, el := range b.cutOff(ctx) {
					t.Errorf("%s at %s px: a control is cut off or out of sight: %s", p.Name, wd.Name, el)
				}
				b.savePNG(ctx, out, name)
				continue
			}
			b.checkPage(ctx, p.Name, script, ids, out)
			b.savePNG(ctx, out, name)
		}
	}
	// The 404 page's own status is logged by the browser as an error.
	b.dropErrors("/no-such-page")
	b.noConsoleErrors()
}

// dropErrors forgets the console errors logged at URLs containing s.
func (b *browser) dropErrors(s string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	var keep []string
	for _, e := range b.errors {
		if !strings.Contains(e, s) {
			keep = append(keep, e)
		}
	}
	b.errors = keep
}

// cutOff lists the visible controls that do not fit the window's width,
// or that a box scrolling sideways hides in part (a table cut at the
// screen's edge).
func (b *browser) cutOff(ctx context.Context) []string {
	b.t.Helper()
	got, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll("a[href], button, input, select, textarea")]
		.filter(el => el.type !== "hidden" && el.offsetParent !== null && !el.closest(".skip"))
		.filter(el => {
			const r = el.getBoundingClientRect();
			if (r.width === 0) return false;
			if (r.left < -1 || r.right > window.innerWidth + 1) return true;
			for (let p = el.parentElement; p; p = p.parentElement) {
				const s = getComputedStyle(p);
				if (s.overflowX !== "visible") {
					const q = p.getBoundingClientRect();
					if (r.left < q.left - 1 || r.right > q.right + 1) return true;
				}
			}
			return false;
		})
		.map(el => el.outerHTML.slice(0, 100))`))
	if err != nil {
		b.t.Fatal(err)
	}
	return got
}

// checkPage runs the checks of one page at the wide width.
func (b *browser) checkPage(ctx context.Context, name, script string, ids map[string]string, out string) {
	b.t.Helper()
	for _, v := range b.axeSerious(ctx, script) {
		b.t.Errorf("%s: axe-core: %s", name, v)
	}
	if got := b.unlabelled(ctx); len(got) != 0 {
		b.t.Errorf("%s: controls without a label: %v", name, got)
	}
	// A control taken out of the Tab order, or any element put before the
	// page's own order.
	outOfOrder, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll("a[href], button, input, select, textarea, [tabindex]")]
		.filter(el => el.type !== "hidden" && el.offsetParent !== null && (el.tabIndex > 0 || (el.tabIndex < 0 && el.matches("a[href], button, input, select, textarea"))))
		.map(el => el.outerHTML.slice(0, 80))`))
	if err != nil {
		b.t.Fatal(err)
	}
	for _, el := range outOfOrder {
		b.t.Errorf("%s: out of the keyboard's order: %s", name, el)
	}
	if !b.keyboardReaches(ctx, "main a, main button, main input, main select, main textarea", 30) {
		b.t.Errorf("%s: the Tab key does not reach the page's content", name)
	}
	text := b.text(ctx, "body")
	for _, x := range idsShown(text, ids) {
		b.t.Errorf("%s shows %s", name, x)
	}
}

// savePNG saves the tab's page as name.png in dir (when set), made small
// by pngquant when it is installed (apt-get install pngquant).
func (b *browser) savePNG(ctx context.Context, dir, name string) {
	b.t.Helper()
	if dir == "" {
		return
	}
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		b.t.Fatalf("screenshot %s: %v", name, err)
	}
	if q, err := exec.LookPath("pngquant"); err == nil {
		cmd := exec.Command(q, "--quality=60-90", "--speed=3", "-")
		cmd.Stdin = bytes.NewReader(png)
		if small, err := cmd.Output(); err == nil && len(small) > 0 {
			png = small
		}
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil { //nolint:gosec // G306: a screenshot for the docs
		b.t.Fatal(err)
	}
}

// The product pages' forms work in the browser, each confirming what it
// did: retire a learning and bring it back, add a webhook (its secret
// shown once, with a copy button), pause a schedule.
func TestConsoleBrowserProductActions(t *testing.T) {
	b := newBrowser(t)
	e := newTestEnv(t)
	sd := seedProduct(t, e)
	ctx := b.ctx
	b.do(ctx, "sign in", chromedp.Navigate(e.Srv.URL+"/signin"), chromedp.SetValue(chromedp.ID("api_key"), e.Init.APIKey))
	if _, err := chromedp.RunResponse(ctx, chromedp.Submit(chromedp.ID("api_key"))); err != nil {
		t.Fatal(err)
	}
	ws := e.Srv.URL + "/w/" + e.Init.WorkspaceID
	click := func(what, sel, wantNotice string) {
		t.Helper()
		if _, err := chromedp.RunResponse(ctx, chromedp.Click(chromedp.CSS(sel))); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		b.do(ctx, what, chromedp.WaitVisible(chromedp.CSS(`main [role="status"]`)))
		if got := b.text(ctx, `main [role="status"]`); !strings.Contains(got, wantNotice) {
			t.Errorf("%s: the page says %q, want %q", what, got, wantNotice)
		}
	}
	b.do(ctx, "a learning", chromedp.Navigate(ws+"/learnings/"+sd.Automation+"/"+sd.Learning), chromedp.WaitVisible(chromedp.ID("retire")))
	click("retire the learning", "#retire", "Retired")
	click("bring it back", "#undelete", "Brought back")
	if got := b.text(ctx, "#learning-state"); got != "Approved" {
		t.Errorf("the learning brought back is %q", got)
	}
	b.do(ctx, "the webhooks", chromedp.Navigate(ws+"/webhooks"), chromedp.WaitVisible(chromedp.ID("wh-url")),
		chromedp.SetValue(chromedp.ID("wh-url"), "https://127.0.0.1:9/new"), chromedp.SetValue(chromedp.ID("wh-name"), "Pager"))
	if _, err := chromedp.RunResponse(ctx, chromedp.Submit(chromedp.ID("wh-url"))); err != nil {
		t.Fatal(err)
	}
	b.do(ctx, "the new secret", chromedp.WaitVisible(chromedp.ID("new-secret")))
	if got := b.count(ctx, `button[data-copy="#new-secret"]`); got != 1 {
		t.Errorf("no copy button for the secret")
	}
	if got := b.text(ctx, "#webhook-list"); !strings.Contains(got, "Pager") {
		t.Errorf("the new webhook is not listed: %q", got)
	}
	b.do(ctx, "the schedules", chromedp.Navigate(ws+"/triggers"), chromedp.WaitVisible(chromedp.ID("schedules")))
	click("pause the schedule", `#schedules button[aria-label^="Pause"]`, "The schedule is paused")
	b.noConsoleErrors()
}
