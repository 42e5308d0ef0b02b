package console_test

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/proserun/prose/internal/engine"
	"github.com/proserun/prose/internal/testtime"
	"github.com/proserun/prose/server/app"
	"github.com/proserun/prose/server/testenv"
	"github.com/proserun/prose/store"
)

// sseStream opens a live stream of the console with c's session and returns
// its events' names as they come (closed when the stream ends).
func sseStream(t *testing.T, ctx context.Context, c *http.Client, u string) (int, string, <-chan string) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.Do(req) //nolint:bodyclose // closed below, or by the reader goroutine when the stream ends
	if err != nil {
		t.Fatal(err)
	}
	out := make(chan string, 100)
	if res.StatusCode != http.StatusOK {
		res.Body.Close()
		close(out)
		return res.StatusCode, res.Header.Get("Content-Type"), out
	}
	go func() {
		defer close(out)
		defer res.Body.Close()
		sc := bufio.NewScanner(res.Body)
		for sc.Scan() {
			if name, ok := strings.CutPrefix(sc.Text(), "event: "); ok {
				out <- name
			}
		}
	}()
	return res.StatusCode, res.Header.Get("Content-Type"), out
}

// awaitEvent waits for an event named want on ch. The streams are pushed
// (nothing polls, nothing refreshes a page on a timer), so an event that
// is not sent never comes: the limit (testtime.Wait) only bounds how long
// a broken test hangs, and is not a latency the test asserts.
func awaitEvent(t *testing.T, ch <-chan string, want string, what string) {
	t.Helper()
	d := testtime.Limit(testtime.Wait)
	deadline := time.After(d)
	for {
		select {
		case name, ok := <-ch:
			if !ok {
				t.Fatalf("%s: the stream ended", what)
			}
			if name == want {
				return
			}
		case <-deadline:
			t.Fatalf("%s: no %q event within %v", what, want, d)
		}
	}
}

// drain empties ch of what it holds now and what comes within d.
func drain(ch <-chan string, d time.Duration) {
	deadline := time.After(d)
	for {
		select {
		case <-ch:
		case <-deadline:
			return
		}
	}
}

// Live pages are pushed, not polled: the inbox's and the runs' stream says
// "change" when a run of the workspace is invoked, waits, is resolved; the
// conversation's stream when a message is added to the run's thread; a bad
// topic is 400, another workspace's stream is refused, and no template
// polls.
func TestConsoleLiveUpdates(t *testing.T) {
	e := newTestEnv(t)
	a, run, excID := e.ExcMake(t, testenv.ExcMissingCode)
	c := testenv.BrowserClient(t)
	csrf := e.ConsoleSignIn(t, c, e.NewKey(t, testenv.KeySpec{}))
	ws := "/w/" + e.Init.WorkspaceID
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	code, ctype, inbox := sseStream(t, ctx, c, e.Srv.URL+ws+"/live?topic=exceptions")
	if code != http.StatusOK || ctype != "text/event-stream" {
		t.Fatalf("live inbox: %d %s", code, ctype)
	}
	_, _, runs := sseStream(t, ctx, c, e.Srv.URL+ws+"/live?topic=runs")
	// Wait for both subscriptions, then forget what came before.
	testtime.Until(t, testtime.Wait, func() (bool, string) {
		n := e.App.Hub.Streams()
		return n >= 2, fmt.Sprintf("%d live streams subscribed, want 2", n)
	})
	drain(inbox, 300*time.Millisecond)
	drain(runs, 0)

	// A new run that waits: both streams hear of it.
	r2, _, err := e.App.Engine.Invoke(context.Background(), engine.InvokeRequest{
		OrganizationID: e.Init.OrganizationID, WorkspaceID: e.Init.WorkspaceID, AutomationID: a.ID, Stage: store.StageDraft,
	})
	if err != nil {
		t.Fatal(err)
	}
	awaitEvent(t, inbox, "change", "inbox after an invoke")
	awaitEvent(t, runs, "change", "runs after an invoke")
	e.WaitRunState(t, a.ID, r2.ID, store.RunAwaitingGuidance)
	drain(inbox, 300*time.Millisecond)

	// Assigning from the console (no engine run involved) is told too.
	if code, _, body := testenv.Post(t, c, e.Srv.URL, ws+"/exceptions:assign", url.Values{"csrf": {csrf}, "id": {excID}, "assignee": {"me"}}); code != http.StatusSeeOther {
		t.Fatalf("assign: %d %s", code, body)
	}
	awaitEvent(t, inbox, "change", "inbox after an assignment")

	// The conversation: a message to the agent wakes the stream.
	_, _, conv := sseStream(t, ctx, c, e.Srv.URL+ws+"/live?topic=conversation&exception="+excID)
	drain(conv, 500*time.Millisecond)
	if code, _, body := testenv.Post(t, c, e.Srv.URL, ws+"/exceptions/"+excID+"/say", url.Values{"csrf": {csrf}, "message": {"the invoice total is 12.50"}}); code != http.StatusSeeOther {
		t.Fatalf("say: %d %s", code, body)
	}
	awaitEvent(t, conv, "change", "conversation after a message")
	// The agent's reply resolves the exception; the run completes and the
	// inbox hears of it.
	e.WaitRunState(t, a.ID, run.ID, store.RunCompleted)
	awaitEvent(t, inbox, "change", "inbox after the run completed")

	for q, want := range map[string]int{
		"?topic=nonsense":                                  http.StatusBadRequest,
		"?topic=conversation&exception=nope":               http.StatusNotFound,
		"?topic=exceptions&unused=" + url.QueryEscape("x"): http.StatusOK,
	} {
		qctx, qcancel := context.WithTimeout(ctx, testtime.Limit(testtime.Wait))
		if code, _, _ := sseStream(t, qctx, c, e.Srv.URL+ws+"/live"+q); code != want {
			t.Errorf("live%s: %d, want %d", q, code, want)
		}
		qcancel()
	}
	// A session of a key scoped to another workspace gets no stream here.
	other := e.NewWorkspace(t, "Elsewhere")
	scoped := testenv.BrowserClient(t)
	_, _, tok := testenv.Page(t, scoped, e.Srv.URL, "/signin")
	testenv.Post(t, scoped, e.Srv.URL, "/signin", url.Values{"csrf": {tok}, "api_key": {e.NewKey(t, testenv.KeySpec{Workspaces: []string{other}})}, "next": {"/"}})
	if code, _, _ := sseStream(t, ctx, scoped, e.Srv.URL+ws+"/live?topic=exceptions"); code != http.StatusForbidden {
		t.Errorf("live stream of a workspace out of the key's scope: %d, want 403", code)
	}
	// Signed out: no stream.
	anon := testenv.BrowserClient(t)
	if code, _, _ := sseStream(t, ctx, anon, e.Srv.URL+ws+"/live?topic=exceptions"); code != http.StatusSeeOther {
		t.Errorf("live stream without a session: %d, want a redirect to sign in", code)
	}
	// No page polls: the live parts wait for the stream's events.
	for _, p := range []string{ws + "/", ws + "/runs", ws + "/automations/" + a.ID + "/runs/" + r2.ID, ws + "/exceptions/" + excID} {
		_, body, _ := testenv.Page(t, c, e.Srv.URL, p)
		if strings.Contains(body, "every ") || !strings.Contains(body, `data-live="`) && p != ws+"/exceptions/"+excID {
			t.Errorf("%s polls or has no live part", p)
		}
	}
}

// The inbox's assignee filter (me, nobody, a member), "assign to me" on a
// row, assigning the selected to a member, archiving one row: each post
// returns to the inbox with its filter.
func TestConsoleInboxAssignee(t *testing.T) {
	e := newTestEnv(t)
	ctx := context.Background()
	_, _, x1 := e.ExcMake(t, testenv.ExcMissingCode)
	_, _, x2 := e.ExcMake(t, testenv.ExcMissingCode)
	_, _, x3 := e.ExcMake(t, testenv.ExcMissingCode)
	ana, err := e.Store.CreateUser(ctx, store.User{DisplayName: "Ana Resolver", Email: "ana-" + store.NewID() + "@example.test"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Store.AddOrganizationMember(ctx, e.Init.OrganizationID, ana.ID, []string{"member"}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Store.AddWorkspaceMember(ctx, e.Init.OrganizationID, e.Init.WorkspaceID, ana.ID, []string{"workspace_member"}); err != nil {
		t.Fatal(err)
	}
	c := testenv.BrowserClient(t)
	csrf := e.ConsoleSignIn(t, c, e.NewKey(t, testenv.KeySpec{}))
	ws := "/w/" + e.Init.WorkspaceID
	_, body, _ := testenv.Page(t, c, e.Srv.URL, ws+"/")
	if !strings.Contains(body, `<option value="users/`+ana.ID+`"`) || !strings.Contains(body, `id="assign-selected"`) {
		t.Fatalf("the inbox offers no member to assign to or filter by")
	}
	back := ws + "/?state=PENDING&assignee=none"
	if code, loc, body := testenv.Post(t, c, e.Srv.URL, ws+"/exceptions:assign", url.Values{"csrf": {csrf}, "id": {x1}, "assignee": {"me"}, "back": {back}}); code != http.StatusSeeOther || loc != back {
		t.Fatalf("assign to me: %d %s %s", code, loc, body)
	}
	if code, _, body := testenv.Post(t, c, e.Srv.URL, ws+"/exceptions:assign", url.Values{"csrf": {csrf}, "id": {x2, x3}, "assignee": {"users/" + ana.ID}}); code != http.StatusSeeOther {
		t.Fatalf("assign the selected to Ana: %d %s", code, body)
	}
	lists := func(q string) map[string]bool {
		t.Helper()
		code, body, _ := testenv.Page(t, c, e.Srv.URL, ws+"/"+q)
		if code != http.StatusOK {
			t.Fatalf("inbox%s: %d", q, code)
		}
		got := map[string]bool{}
		for _, m := range regexp.MustCompile(`class="exc" href="[^"]*/exceptions/([^"]+)"`).FindAllStringSubmatch(body, -1) {
			got[m[1]] = true
		}
		return got
	}
	for q, want := range map[string][]string{
		"?assignee=me": {x1},
		"?assignee=" + url.QueryEscape("users/"+ana.ID): {x2, x3},
		"?assignee=none": {},
		"":               {x1, x2, x3},
	} {
		got := lists(q)
		if len(got) != len(want) {
			t.Errorf("inbox%s lists %v, want %v", q, got, want)
		}
		for _, id := range want {
			if !got[id] {
				t.Errorf("inbox%s lacks %s", q, id)
			}
		}
	}
	// The same filter through the API.
	code, m, raw := e.DoHTTP(t, "GET", e.WsPath()+"/exceptions?filter="+url.QueryEscape(`assignee = "users/`+ana.ID+`"`), "", e.Bearer())
	if code != http.StatusOK || m["total_size"] != float64(2) {
		t.Errorf("API filter by assignee: %d %s", code, raw)
	}
	if code, _, _ := e.DoHTTP(t, "GET", e.WsPath()+"/exceptions?filter="+url.QueryEscape(`assignee > "users/a"`), "", e.Bearer()); code != http.StatusBadRequest {
		t.Errorf("assignee with >: %d, want 400", code)
	}
	// The filter links keep the assignee.
	if _, body, _ := testenv.Page(t, c, e.Srv.URL, ws+"/?assignee=me"); !strings.Contains(body, "assignee=me&amp;automation=") {
		t.Errorf("the count links of a filtered inbox drop the assignee")
	}
	// Archive one row.
	if code, _, body := testenv.Post(t, c, e.Srv.URL, ws+"/exceptions:archive", url.Values{"csrf": {csrf}, "id": {x2}, "back": {ws + "/?assignee=me"}}); code != http.StatusSeeOther {
		t.Fatalf("archive one: %d %s", code, body)
	}
	if got := lists("?state=ARCHIVED"); len(got) != 1 || !got[x2] {
		t.Errorf("archived: %v, want %s", got, x2)
	}
	// Bad input: a non-member, nothing ticked, a foreign back link.
	if code, _, _ := testenv.Post(t, c, e.Srv.URL, ws+"/exceptions:assign", url.Values{"csrf": {csrf}, "id": {x3}, "assignee": {"users/nobody"}}); code != http.StatusBadRequest {
		t.Errorf("assign to a non-member: %d, want 400", code)
	}
	if code, _, _ := testenv.Post(t, c, e.Srv.URL, ws+"/exceptions:assign", url.Values{"csrf": {csrf}, "assignee": {"me"}}); code != http.StatusBadRequest {
		t.Errorf("assign nothing: %d, want 400", code)
	}
	if code, loc, _ := testenv.Post(t, c, e.Srv.URL, ws+"/exceptions:assign", url.Values{"csrf": {csrf}, "id": {x3}, "assignee": {"me"}, "back": {"https://evil.test/"}}); code != http.StatusSeeOther || loc != ws+"/" {
		t.Errorf("assign with a foreign back link: %d %s, want the inbox", code, loc)
	}
	if _, err := e.Store.GetException(ctx, e.Init.OrganizationID, e.Init.WorkspaceID, x3); err != nil {
		t.Fatal(err)
	}
}

// countingSessions counts the store's session lookups.
type countingSessions struct {
	store.Store
	n atomic.Int64
}

func (s *countingSessions) GetConsoleSession(ctx context.Context, hash string, now time.Time) (store.ConsoleSession, error) {
	s.n.Add(1)
	return s.Store.GetConsoleSession(ctx, hash, now)
}

// Sessions are cached: pages of one session read it from the database once
// (not once by the console and once per call of the interceptor), and a
// sign-out is honoured by the next request.
func TestConsoleSessionCache(t *testing.T) {
	var counting *countingSessions
	e := newTestEnvWith(t, func(cfg *app.Config) {
		st := cfg.Store
		if st == nil {
			var err error
			if st, err = app.OpenStore(context.Background(), cfg.Data, cfg.Database); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
		}
		counting = &countingSessions{Store: st}
		cfg.Store = counting
	})
	c := testenv.BrowserClient(t)
	csrf := e.ConsoleSignIn(t, c, e.NewKey(t, testenv.KeySpec{}))
	ws := "/w/" + e.Init.WorkspaceID
	before := counting.n.Load()
	for range 5 {
		if code, _, _ := testenv.Page(t, c, e.Srv.URL, ws+"/"); code != http.StatusOK {
			t.Fatalf("inbox: %d", code)
		}
	}
	// Each inbox makes 7 authenticated calls: 40 lookups uncached. The
	// cache lasts 2 s: a slow machine may read it again once or twice.
	if n := counting.n.Load() - before; n > 3 {
		t.Errorf("5 inbox pages read the session %d times, want at most 3", n)
	}
	u := testenv.MustURL(t, e.Srv.URL)
	var token string
	for _, ck := range c.Jar.Cookies(u) {
		if ck.Name == "prose_session" {
			token = ck.Value
		}
	}
	if code, loc, _ := testenv.Post(t, c, e.Srv.URL, "/signout", url.Values{"csrf": {csrf}}); code != http.StatusSeeOther || loc != "/signin" {
		t.Fatalf("sign out: %d %s", code, loc)
	}
	// The signed-out token, cached a moment ago, is refused at once.
	req, _ := http.NewRequest(http.MethodGet, e.Srv.URL+ws+"/", nil)
	req.AddCookie(&http.Cookie{Name: "prose_session", Value: token})
	res, err := testenv.BrowserClient(t).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if loc := res.Header.Get("Location"); res.StatusCode != http.StatusSeeOther || !strings.HasPrefix(loc, "/signin") {
		t.Errorf("the inbox with a signed-out session: %d %s, want a redirect to sign in", res.StatusCode, loc)
	}
}

// Settings: an admin edits a member's workspace roles (and the change
// takes effect), adds a user of the organization, removes a member; a
// viewer sees no forms and is refused; no role at all is a clear 400.
func TestConsoleSettingsMembers(t *testing.T) {
	e := newTestEnv(t)
	ctx := context.Background()
	zed := e.NewViewer(t)
	bo, err := e.Store.CreateUser(ctx, store.User{DisplayName: "Bo Outside", Email: "bo-" + store.NewID() + "@example.test"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Store.AddOrganizationMember(ctx, e.Init.OrganizationID, bo.ID, []string{"member"}); err != nil {
		t.Fatal(err)
	}
	c := testenv.BrowserClient(t)
	csrf := e.ConsoleSignIn(t, c, e.NewKey(t, testenv.KeySpec{}))
	ws := "/w/" + e.Init.WorkspaceID
	_, body, _ := testenv.Page(t, c, e.Srv.URL, ws+"/settings")
	if !strings.Contains(body, `action="`+ws+`/settings/members/roles"`) || !strings.Contains(body, `<option value="users/`+bo.ID+`"`) {
		t.Fatalf("settings offer no role editing or no user to add")
	}
	roles := func(user string) []string {
		t.Helper()
		m, err := e.Store.GetWorkspaceUser(ctx, e.Init.OrganizationID, e.Init.WorkspaceID, user)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, r := range m.Roles {
			if r.Scope == store.ScopeWorkspace {
				out = append(out, r.RoleID)
			}
		}
		return out
	}
	zedKey := e.NewKey(t, testenv.KeySpec{User: zed.ID})
	resolve := func() int {
		c, _, _ := e.DoHTTP(t, "POST", e.WsPath()+"/exceptions:batchAssign", `{"filter":"state = PENDING","assignee":""}`, map[string]string{"Authorization": "Bearer " + zedKey})
		return c
	}
	if code := resolve(); code != http.StatusForbidden {
		t.Fatalf("a viewer assigns: %d, want 403", code)
	}
	if code, loc, body := testenv.Post(t, c, e.Srv.URL, ws+"/settings/members/roles", url.Values{"csrf": {csrf}, "user": {"users/" + zed.ID}, "role": {"workspace_member"}}); code != http.StatusSeeOther || !strings.HasSuffix(loc, "/settings#members") {
		t.Fatalf("give Zed workspace_member: %d %s %s", code, loc, body)
	}
	if got := roles(zed.ID); len(got) != 1 || got[0] != "workspace_member" {
		t.Errorf("Zed's roles: %v", got)
	}
	if code := resolve(); code != http.StatusOK {
		t.Errorf("Zed, now a workspace member, assigns: %d, want 200", code)
	}
	if code, _, body := testenv.Post(t, c, e.Srv.URL, ws+"/settings/members/roles", url.Values{"csrf": {csrf}, "user": {"users/" + zed.ID}}); code != http.StatusBadRequest || !strings.Contains(body, "at least one role") {
		t.Errorf("no role: %d", code)
	}
	if code, _, _ := testenv.Post(t, c, e.Srv.URL, ws+"/settings/members/roles", url.Values{"csrf": {csrf}, "user": {"users/" + zed.ID}, "role": {"owner"}}); code != http.StatusBadRequest {
		t.Errorf("an organization role as a workspace role: %d, want 400", code)
	}
	if code, _, body := testenv.Post(t, c, e.Srv.URL, ws+"/settings/members/add", url.Values{"csrf": {csrf}, "user": {"users/" + bo.ID}, "role": {"workspace_viewer"}}); code != http.StatusSeeOther {
		t.Fatalf("add Bo: %d %s", code, body)
	}
	if got := roles(bo.ID); len(got) != 1 || got[0] != "workspace_viewer" {
		t.Errorf("Bo's roles: %v", got)
	}
	if code, _, body := testenv.Post(t, c, e.Srv.URL, ws+"/settings/members/remove", url.Values{"csrf": {csrf}, "user": {"users/" + bo.ID}}); code != http.StatusSeeOther {
		t.Fatalf("remove Bo: %d %s", code, body)
	}
	if _, err := e.Store.GetWorkspaceUser(ctx, e.Init.OrganizationID, e.Init.WorkspaceID, bo.ID); err == nil {
		t.Errorf("Bo is still a member")
	}
	// A viewer's settings have no member forms, and their posts are refused.
	v := testenv.BrowserClient(t)
	vCSRF := e.ConsoleSignIn(t, v, e.NewKey(t, testenv.KeySpec{User: e.NewViewer(t).ID}))
	if _, body, _ := testenv.Page(t, v, e.Srv.URL, ws+"/settings"); strings.Contains(body, "/settings/members/") {
		t.Errorf("a viewer's settings show member forms")
	}
	if code, _, _ := testenv.Post(t, v, e.Srv.URL, ws+"/settings/members/roles", url.Values{"csrf": {vCSRF}, "user": {"users/" + zed.ID}, "role": {"workspace_admin"}}); code != http.StatusForbidden {
		t.Errorf("a viewer edits roles: %d, want 403", code)
	}
}

// The session cookie is HttpOnly and SameSite=Lax, Secure when the console
// is served over https (--public-url https://…), and the session expires
// after --session-ttl even while cached.
func TestConsoleCookieAndExpiry(t *testing.T) {
	// The sessions' clock moves only when the test moves it: on the real
	// clock, a loaded machine could take the 1.5 s of the session between
	// the sign-in and the first page.
	start := time.Now()
	var elapsed atomic.Int64
	clock := func() time.Time { return start.Add(time.Duration(elapsed.Load())) }
	e := newTestEnvWith(t, func(c *app.Config) { c.SessionTTL = 1500 * time.Millisecond; c.SessionClock = clock })
	signin := func(e *testEnv) *http.Cookie {
		t.Helper()
		c := testenv.BrowserClient(t)
		_, _, tok := testenv.Page(t, c, e.Srv.URL, "/signin")
		req, _ := http.NewRequest(http.MethodPost, e.Srv.URL+"/signin", strings.NewReader(url.Values{"csrf": {tok}, "api_key": {e.NewKey(t, testenv.KeySpec{})}, "next": {"/"}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		res, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		for _, ck := range res.Cookies() {
			if ck.Name == "prose_session" && ck.Value != "" {
				return ck
			}
		}
		t.Fatalf("sign-in set no session cookie: %d", res.StatusCode)
		return nil
	}
	ck := signin(e)
	if !ck.HttpOnly || ck.SameSite != http.SameSiteLaxMode || ck.Secure {
		t.Errorf("cookie over http: HttpOnly %v SameSite %v Secure %v, want true Lax false", ck.HttpOnly, ck.SameSite, ck.Secure)
	}
	get := func() int {
		req, _ := http.NewRequest(http.MethodGet, e.Srv.URL+"/w/"+e.Init.WorkspaceID+"/", nil)
		req.AddCookie(&http.Cookie{Name: "prose_session", Value: ck.Value})
		res, err := testenv.BrowserClient(t).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	if code := get(); code != http.StatusOK {
		t.Fatalf("inbox in the session: %d", code)
	}
	elapsed.Add(int64(1400 * time.Millisecond))
	if code := get(); code != http.StatusOK {
		t.Fatalf("inbox 1.4 s into a 1.5 s session: %d", code)
	}
	elapsed.Add(int64(200 * time.Millisecond))
	if code := get(); code != http.StatusSeeOther {
		t.Errorf("inbox after the session's ttl: %d, want a redirect to sign in", code)
	}
	https := newTestEnvWith(t, func(c *app.Config) { c.PublicURL = "https://prose.example" })
	if ck := signin(https); !ck.Secure || !ck.HttpOnly {
		t.Errorf("cookie with an https public URL: Secure %v HttpOnly %v, want both", ck.Secure, ck.HttpOnly)
	}
}

// The exception page's five kinds of guidance, each through its form: the
// page offers the form, the post resolves the exception, the run goes on.
func TestConsoleGuidanceForms(t *testing.T) {
	e := newTestEnv(t)
	c := testenv.BrowserClient(t)
	csrf := e.ConsoleSignIn(t, c, e.NewKey(t, testenv.KeySpec{}))
	ws := "/w/" + e.Init.WorkspaceID
	resolve := func(t *testing.T, code string, offers []string, form url.Values) (store.Automation, store.Run, string) {
		t.Helper()
		a, r, xid := e.ExcMake(t, code)
		_, body, _ := testenv.Page(t, c, e.Srv.URL, ws+"/exceptions/"+xid)
		for _, o := range offers {
			if !strings.Contains(body, o) {
				t.Errorf("the page lacks %q", o)
			}
		}
		form.Set("csrf", csrf)
		if st, loc, body := testenv.Post(t, c, e.Srv.URL, ws+"/exceptions/"+xid+"/resolve", form); st != http.StatusSeeOther || !strings.HasSuffix(loc, "/runs/"+r.ID+"?done=resolved") {
			t.Fatalf("resolve: %d %s %s", st, loc, body)
		}
		return a, r, xid
	}
	t.Run("provide values, typed", func(t *testing.T) {
		a, r, _ := resolve(t, testenv.ExcMissingCode, []string{`id="provide-values"`, `<label for="value-0">the invoice total</label>`, `<option value="yes/no">`},
			url.Values{"kind": {"provide_values"}, "fact.0": {"the invoice total"}, "type.0": {"number"}, "value.0": {"4.25"}})
		if got := testenv.ExcNum(testenv.ExcOutputs(t, e.WaitRunState(t, a.ID, r.ID, store.RunCompleted))["output total"]); got != 8.5 {
			t.Errorf("output total %v, want 8.5", got)
		}
	})
	t.Run("answer with a choice button", func(t *testing.T) {
		a, r, _ := resolve(t, testenv.ExcChoiceCode, []string{`<button type="submit" name="value" value="red">`, `<button type="submit" name="value" value="blue">`},
			url.Values{"kind": {"answer"}, "type": {"text"}, "value": {"blue"}})
		if got := testenv.ExcOutputs(t, e.WaitRunState(t, a.ID, r.ID, store.RunCompleted))["output colour"].GetText(); got != "blue" {
			t.Errorf("output colour %q", got)
		}
	})
	t.Run("skip", func(t *testing.T) {
		a, r, _ := resolve(t, testenv.ExcSkipCode, []string{`value="skip"`}, url.Values{"kind": {"skip"}})
		if got := testenv.ExcOutputs(t, e.WaitRunState(t, a.ID, r.ID, store.RunCompleted))["output done"].GetText(); got != "yes" {
			t.Errorf("output done %q", got)
		}
	})
	t.Run("replace the step", func(t *testing.T) {
		a, r, _ := resolve(t, testenv.ExcDivisionCode, []string{`id="replace-code"`, `hx-post="` + ws + `/check-code"`},
			url.Values{"kind": {"replace_step"}, "code": {"the x is 10 / 2"}})
		if got := testenv.ExcNum(testenv.ExcOutputs(t, e.WaitRunState(t, a.ID, r.ID, store.RunCompleted))["output x"]); got != 5 {
			t.Errorf("output x %v", got)
		}
	})
	t.Run("retry", func(t *testing.T) {
		_, _, xid := resolve(t, testenv.ExcDivisionCode, []string{`value="retry"`}, url.Values{"kind": {"retry"}})
		if x, err := e.Store.GetException(context.Background(), e.Init.OrganizationID, e.Init.WorkspaceID, xid); err != nil || x.State != store.ExceptionResolved {
			t.Errorf("retried exception: %v %v", x.State, err)
		}
	})
}
