package console_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/proserun/prose/server/testenv"
	"github.com/proserun/prose/store"
)

var postForm = regexp.MustCompile(`<form[^>]*method="post"[^>]*action="([^"]+)"`)

// Every product page renders for the owner with what it is about, and for
// a read-only key with no form that writes (its posts are refused by the
// services).
func TestConsoleProductPages(t *testing.T) {
	e := newTestEnv(t)
	sd := seedProduct(t, e)
	ws := "/w/" + e.Init.WorkspaceID
	owner := testenv.BrowserClient(t)
	e.ConsoleSignIn(t, owner, e.Init.APIKey)
	want := map[string][]string{
		"insights":    {`id="chart-runs"`, `role="img"`, "Invoice totals", "Straight-through rate", "$37.50", "30 min", `name="cost.invoice-totals" value="12.50"`},
		"learnings":   {"Provide the invoice total", "Approved", "Invoice totals", "the invoice total is 120.50"},
		"learning":    {"Runs it resolved", "/runs/" + sd.Resolved, "Retire", `id="l-title"`},
		"connections": {"crm", "http 1.0.0", `name="cred.bearer.token"`, `name="config.base url"`},
		"connection":  {"crm.example.com", "token", "(sealed)", "Delete"},
		"triggers":    {"Orders", "Ready", "Invoice totals", "Every day at 09:00", "Mon 7 Jan 2030", "Add a webhook trigger"},
		"webhooks":    {"Ops board", "a run changes state", "Add a webhook"},
		"webhook":     {"https://127.0.0.1:9/prose", "Deliveries"},
		"books":       {"Procedures for", "send an email", "http"},
		"book":        {"Procedures"},
		"automation":  {"Flow of the published version", `id="flow"`, `data-node="start"`, "get the invoice total", "the output total is the invoice total * 2"},
	}
	for _, p := range productPages(sd) {
		code, body, _ := testenv.Page(t, owner, e.Srv.URL, ws+p.Path)
		if code != http.StatusOK {
			t.Errorf("%s: %d %s", p.Name, code, body)
			continue
		}
		containsAll(t, p.Name, body, want[p.Name]...)
		if strings.Contains(body, "s3cret-token-value") || strings.Contains(body, "a-secret-of-24-characters") {
			t.Errorf("%s shows a secret", p.Name)
		}
	}
	// Members and roles: what each role lets a member do, keys' owners by name.
	_, settings, _ := testenv.Page(t, owner, e.Srv.URL, ws+"/settings")
	containsAll(t, "settings", settings, `id="role-list"`, "Workspace viewer", "see runs and insights", "resolve exceptions and teach learnings")
	if strings.Contains(settings, "<td>"+e.Init.UserID+"</td>") || !strings.Contains(settings, "<td>"+e.Email+"</td>") {
		t.Errorf("settings names people by id, or not by their email")
	}
	// A trigger's recent deliveries: the run its event started.
	_, body, _ := testenv.Page(t, owner, e.Srv.URL, ws+"/triggers")
	if !regexp.MustCompile(`/automations/invoice-totals/runs/[a-z0-9]+">Invoice totals</a> <span class="state-completed">`).MatchString(body) {
		t.Errorf("the trigger's recent delivery is not shown")
	}

	viewer := e.NewKey(t, testenv.KeySpec{Level: store.PermissionReadOnly})
	ro := testenv.BrowserClient(t)
	roCSRF := e.ConsoleSignIn(t, ro, viewer)
	for _, p := range productPages(sd) {
		code, body, _ := testenv.Page(t, ro, e.Srv.URL, ws+p.Path)
		if code != http.StatusOK {
			t.Errorf("read-only %s: %d", p.Name, code)
			continue
		}
		for _, m := range postForm.FindAllStringSubmatch(body, -1) {
			if m[1] != "/signout" {
				t.Errorf("read-only %s has a form posting to %s", p.Name, m[1])
			}
		}
	}
	// The owner's forms, posted by the read-only session: refused.
	for _, path := range []string{
		"/learnings/" + sd.Automation + "/" + sd.Learning + "/delete", "/webhooks/" + sd.Webhook + "/delete",
		"/connections/" + sd.Connection + "/delete", "/schedules/" + sd.Automation + "/disable", "/triggers/" + sd.Trigger + "/remove",
		"/insights/estimates",
	} {
		if code, _, _ := testenv.Post(t, ro, e.Srv.URL, ws+path, url.Values{"csrf": {roCSRF}, "automation": {sd.Automation}, "cost." + sd.Automation: {"1"}}); code != http.StatusForbidden {
			t.Errorf("read-only POST %s: %d, want 403", path, code)
		}
	}
	if g, err := e.Store.GetGuideEntry(context.Background(), e.Init.OrganizationID, e.Init.WorkspaceID, sd.Automation, sd.Learning); err != nil || !g.DeleteTime.IsZero() {
		t.Errorf("the learning after the refused posts: %+v %v", g, err)
	}
}

// A URL the console does not have is a 404 page inside the layout, with the
// navigation for a signed-in person and without it otherwise.
func TestConsoleNotFoundPage(t *testing.T) {
	e := newTestEnv(t)
	ws := "/w/" + e.Init.WorkspaceID
	anon := testenv.BrowserClient(t)
	code, body, _ := testenv.Page(t, anon, e.Srv.URL, ws+"/nothing-here")
	if code != http.StatusNotFound || !strings.Contains(body, "<h1>Page not found</h1>") || strings.Contains(body, `aria-label="Main"`) {
		t.Errorf("signed out: %d %s", code, body)
	}
	c := testenv.BrowserClient(t)
	e.ConsoleSignIn(t, c, e.Init.APIKey)
	for _, p := range []string{ws + "/nothing-here", ws + "/automations/x/y/z/w", "/w/"} {
		code, body, _ := testenv.Page(t, c, e.Srv.URL, p)
		if code != http.StatusNotFound || !strings.Contains(body, "<h1>Page not found</h1>") || !strings.Contains(body, `href="/w/`+e.Init.WorkspaceID+`/insights"`) {
			t.Errorf("%s: %d, want the 404 page in the layout with its navigation", p, code)
		}
	}
	// The API keeps its own answers.
	if code, _ := e.APIRaw(t, "GET", "/api/v1/nothing", ""); code != http.StatusNotFound {
		t.Errorf("API 404: %d", code)
	}
}

// The owner's actions on the product pages go through the services and
// say what they did.
func TestConsoleProductActions(t *testing.T) {
	e := newTestEnv(t)
	sd := seedProduct(t, e)
	ws := "/w/" + e.Init.WorkspaceID
	c := testenv.BrowserClient(t)
	csrf := e.ConsoleSignIn(t, c, e.Init.APIKey)
	post := func(path string, form url.Values) (int, string, string) {
		t.Helper()
		form.Set("csrf", csrf)
		return testenv.Post(t, c, e.Srv.URL, ws+path, form)
	}
	follow := func(what string, code int, loc string, want ...string) {
		t.Helper()
		if code != http.StatusSeeOther {
			t.Fatalf("%s: %d, want a redirect", what, code)
		}
		_, body, _ := testenv.Page(t, c, e.Srv.URL, loc)
		containsAll(t, what, body, want...)
	}
	learning := "/learnings/" + sd.Automation + "/" + sd.Learning
	code, loc, _ := post(learning+"/update", url.Values{"title": {"Invoice total from finance"}, "resolution_notes": {"Ask finance above 1000."}})
	follow("edit a learning", code, loc, `role="status"`, "Saved.", "Invoice total from finance", "Ask finance above 1000.")
	code, loc, _ = post(learning+"/delete", url.Values{})
	follow("retire a learning", code, loc, "Retired", "Bring it back")
	code, loc, _ = post(learning+"/undelete", url.Values{})
	follow("bring a learning back", code, loc, "Brought back", "Approved")

	code, loc, _ = post("/insights/estimates", url.Values{"automation": {sd.Automation}, "cost." + sd.Automation: {"$2.00"}, "minutes." + sd.Automation: {"1.5"}})
	follow("set an estimate", code, loc, "The estimates are saved", `value="2.00"`, `value="1.50"`, "$6.00", "4 min")
	if code, _, body := post("/insights/estimates", url.Values{"automation": {sd.Automation}, "minutes." + sd.Automation: {"lots"}}); code != http.StatusBadRequest || !strings.Contains(body, "is not a number of minutes") {
		t.Errorf("a bad estimate: %d", code)
	}
	// Emptied: the automation saves nothing from now on.
	code, loc, _ = post("/insights/estimates", url.Values{"automation": {sd.Automation}, "had." + sd.Automation: {"1"}})
	follow("empty an estimate", code, loc, "The estimates are saved", `id="fig-money">$0.00<`, `id="fig-time">0 min<`)

	code, _, body := post("/webhooks", url.Values{"url": {"https://127.0.0.1:9/second"}, "event.exception": {"1"}})
	if code != http.StatusOK || !strings.Contains(body, `id="new-secret"`) || !strings.Contains(body, "an exception is raised") {
		t.Errorf("add a webhook: %d", code)
	}
	if code, _, body := post("/webhooks", url.Values{"url": {"ftp://nope"}, "event.run": {"1"}}); code != http.StatusBadRequest || !strings.Contains(body, `class="error"`) || !strings.Contains(body, `value="ftp://nope"`) {
		t.Errorf("a bad webhook: %d, want 400 with the form kept", code)
	}

	code, _, body = post("/triggers", url.Values{"name": {"Refunds"}, "automation": {sd.Automation}})
	if code != http.StatusOK || !strings.Contains(body, `id="new-trigger-secret"`) || !strings.Contains(body, "Refunds") || !strings.Contains(body, "/hooks/") {
		t.Errorf("add a trigger: %d", code)
	}
	code, loc, _ = post("/schedules/-", url.Values{"automation": {sd.Automation}, "start_date": {"2031-02-03"}, "time": {"07:30"}, "time_zone": {"UTC"}, "every": {"2"}, "unit": {"week"}, "day.Monday": {"1"}})
	follow("replace a schedule", code, loc, "The schedule is saved", "Mon 3 Feb 2031 07:30 UTC")
	code, loc, _ = post("/schedules/"+sd.Automation+"/disable", url.Values{})
	follow("pause a schedule", code, loc, "The schedule is paused", "Turn on")
	if code, _, body := post("/schedules/-", url.Values{"automation": {sd.Automation}, "start_date": {"soon"}}); code != http.StatusBadRequest || !strings.Contains(body, "year-month-day") {
		t.Errorf("a bad schedule: %d", code)
	}

	code, loc, _ = post("/connections", url.Values{"book": {"http@1.0.0"}, "connection_name": {"billing"}, "auth": {"bearer"}, "cred.bearer.token": {"tok-123456"},
		"config.base url": {"https://billing.example.com"}, "kind.base url": {"text"}, "config.timeout seconds": {"5"}, "kind.timeout seconds": {"number"}})
	follow("add a connection", code, loc, "The connection is added", "billing")
	if code, _, body := post("/connections", url.Values{"book": {"http@1.0.0"}, "connection_name": {"crm"}}); code != http.StatusBadRequest || !strings.Contains(body, `class="error"`) {
		t.Errorf("a connection whose name is taken: %d", code)
	}
	_, body, _ = testenv.Page(t, c, e.Srv.URL, ws+"/connections/"+sd.Connection+"?test=1")
	containsAll(t, "test a connection", body, `id="test-result"`, "The connection is complete for the http book. Nothing was sent")
	// An email connection is checked at its SMTP server: none listens here.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	m := e.API(t, "POST", e.WsPath()+"/books/email/1.0.0/connections", fmt.Sprintf(`{"connection_name": "mail",
		"config_map": {"host": {"text_value": "127.0.0.1"}, "port": {"number_value": %d}, "security": {"text_value": "none"}, "from": {"text_value": "robot@acme.test"}}}`, closed), 200)
	mail := ws + "/connections/" + fmt.Sprint(testenv.Field(m, "book_connection_descriptor.connection_id"))
	if code, body, _ := testenv.Page(t, c, e.Srv.URL, mail); code != http.StatusOK || !strings.Contains(body, "Signs in with</dt><dd><span class=\"muted\">nothing") {
		t.Errorf("a connection without authentication: %d", code)
	}
	_, body, _ = testenv.Page(t, c, e.Srv.URL, mail+"?test=1")
	containsAll(t, "test an email connection", body, `class="error" role="status" id="test-result"`, "The check failed: could not reach the mail server")
	// OAuth without a public URL: the server's reason, on the page.
	if code, _, body := post("/connections/"+sd.Connection+"/authorize", url.Values{}); code != http.StatusBadRequest || !strings.Contains(body, `class="error"`) {
		t.Errorf("authorize a bearer connection: %d", code)
	}
	code, loc, _ = post("/webhooks/"+sd.Webhook+"/delete", url.Values{})
	follow("delete a webhook", code, loc, "The webhook is deleted")
	code, loc, _ = post("/triggers/"+sd.Trigger+"/remove", url.Values{"connection": {sd.TriggerConnection}})
	follow("remove a trigger", code, loc, "The trigger is removed")
}

// A delivered event is sent again from the webhook's page.
func TestConsoleWebhookRedeliver(t *testing.T) {
	e := newTestEnv(t)
	var got atomic.Int32
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { got.Add(1); w.WriteHeader(http.StatusNoContent) }))
	t.Cleanup(rcv.Close)
	m := e.API(t, "POST", e.WsPath()+"/webhooks", `{"url":"`+rcv.URL+`/hook","event_types":["WEBHOOK_EVENT_TYPE_RUN_STATE_CHANGED"]}`, 200)
	hook := store.LastSegment(fmt.Sprint(m["name"]))
	a := e.MkAutomation(t, "Doubler", "the output x is 2\n", false)
	e.API(t, "POST", e.AutomationsPath()+"/"+a.ID+":invoke", `{"stage":"AUTOMATION_STAGE_DRAFT"}`, 200)
	var delivery string
	e.Poll(t, func() (bool, bool, string) {
		e.App.Dispatcher.Wake()
		p, err := e.Store.ListWebhookDeliveries(context.Background(), e.Init.OrganizationID, e.Init.WorkspaceID, hook, 10, "")
		if err != nil || len(p.Items) == 0 || p.Items[0].State != store.DeliverySucceeded {
			return false, err != nil, fmt.Sprintf("no delivery succeeded: %+v %v", p.Items, err)
		}
		delivery = p.Items[0].ID
		return true, false, ""
	})
	before := got.Load()
	c := testenv.BrowserClient(t)
	csrf := e.ConsoleSignIn(t, c, e.Init.APIKey)
	ws := "/w/" + e.Init.WorkspaceID
	_, body, _ := testenv.Page(t, c, e.Srv.URL, ws+"/webhooks/"+hook)
	containsAll(t, "the webhook page", body, "Delivered", `name="delivery" value="`+delivery+`"`, ">Redeliver</button>")
	code, loc, _ := testenv.Post(t, c, e.Srv.URL, ws+"/webhooks/"+hook+"/redeliver", url.Values{"csrf": {csrf}, "delivery": {delivery}})
	if code != http.StatusSeeOther {
		t.Fatalf("redeliver: %d", code)
	}
	_, body, _ = testenv.Page(t, c, e.Srv.URL, loc)
	containsAll(t, "after redelivering", body, "The delivery is queued again")
	e.Poll(t, func() (bool, bool, string) {
		e.App.Dispatcher.Wake()
		return got.Load() > before, false, "the redelivery did not reach the receiver"
	})
	if code, _, body := testenv.Post(t, c, e.Srv.URL, ws+"/webhooks/"+hook+"/redeliver", url.Values{"csrf": {csrf}, "delivery": {"nope"}}); code != http.StatusConflict || !strings.Contains(body, `class="error"`) {
		t.Errorf("redeliver an unknown delivery: %d", code)
	}
}
