package console_test

import (
	"context"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/internal/console"
	"github.com/proserun/prose/server/testenv"
	"github.com/proserun/prose/store"
)

// A session is honoured only from the console's in-process path: an outside
// gRPC client presenting a valid session token (with or without a guessed
// secret) is UNAUTHENTICATED, and the gateway does not pass the metadata on
// from HTTP headers.
func TestConsoleSessionCannotBeForged(t *testing.T) {
	e := newTestEnv(t)
	ctx := context.Background()
	token := "forged-" + store.NewID()
	if _, err := e.Store.CreateConsoleSession(ctx, store.ConsoleSession{
		TokenHash: store.ConsoleTokenHash(token), OrganizationID: e.Init.OrganizationID, UserID: e.Init.UserID, ExpireTime: time.Now().Add(time.Hour),
	}); err != nil {
		t.Fatal(err)
	}
	req := &platformv1.ListExceptionsRequest{OrganizationId: e.Init.OrganizationID, WorkspaceId: e.Init.WorkspaceID}
	for name, md := range map[string]metadata.MD{
		"token alone":           metadata.Pairs("x-prose-console-session", token),
		"token, guessed secret": metadata.Pairs("x-prose-console-session", token, "x-prose-console-secret", "guess"),
		"token, empty secret":   metadata.Pairs("x-prose-console-session", token, "x-prose-console-secret", ""),
		"secret key alone":      metadata.Pairs("x-prose-console-secret", "guess"),
	} {
		_, err := platformv1.NewExceptionServiceClient(e.Conn).ListExceptions(metadata.NewOutgoingContext(ctx, md), req)
		if status.Code(err) != codes.Unauthenticated || errReason(err) != "CONSOLE_SESSION_INVALID" {
			t.Errorf("gRPC %s: %v, want UNAUTHENTICATED CONSOLE_SESSION_INVALID", name, err)
		}
	}
	// Over HTTP the headers are not forwarded: the call has no credential.
	for _, h := range []string{"X-Prose-Console-Session", "Grpc-Metadata-X-Prose-Console-Session"} {
		r, _ := http.NewRequest(http.MethodGet, e.Srv.URL+e.WsPath()+"/exceptions", nil)
		r.Header.Set(h, token)
		r.Header.Set("Grpc-Metadata-X-Prose-Console-Secret", "guess")
		res, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusUnauthorized {
			t.Errorf("HTTP with %s: %d, want 401", h, res.StatusCode)
		}
	}
}

func errReason(err error) string {
	for _, d := range status.Convert(err).Details() {
		if i, ok := d.(*errdetails.ErrorInfo); ok {
			return i.GetReason()
		}
	}
	return ""
}

// Sign-in with a key and with a one-time link, sign-out, and what ends a
// session.
func TestConsoleSignIn(t *testing.T) {
	e := newTestEnv(t)
	ws := "/w/" + e.Init.WorkspaceID + "/"

	t.Run("pages need a session", func(t *testing.T) {
		c := testenv.BrowserClient(t)
		res, err := c.Get(e.Srv.URL + ws + "?state=RESOLVED")
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/signin?next="+url.QueryEscape(ws+"?state=RESOLVED") {
			t.Errorf("GET inbox without a session: %d %s", res.StatusCode, res.Header.Get("Location"))
		}
		if code, _, _ := testenv.Post(t, c, e.Srv.URL, ws+"exceptions:archive", url.Values{"csrf": {"x"}}); code != http.StatusUnauthorized {
			t.Errorf("POST without a session: %d, want 401", code)
		}
	})

	t.Run("bad key", func(t *testing.T) {
		c := testenv.BrowserClient(t)
		_, _, tok := testenv.Page(t, c, e.Srv.URL, "/signin")
		code, _, body := testenv.Post(t, c, e.Srv.URL, "/signin", url.Values{"csrf": {tok}, "api_key": {"prose_nope"}})
		if code != http.StatusUnauthorized || !strings.Contains(body, "not valid") {
			t.Errorf("bad key: %d", code)
		}
		// Without the sign-in form's token (login CSRF): refused.
		code, _, _ = testenv.Post(t, testenv.BrowserClient(t), e.Srv.URL, "/signin", url.Values{"api_key": {e.NewKey(t, testenv.KeySpec{})}})
		if code != http.StatusForbidden {
			t.Errorf("sign-in without the form's token: %d, want 403", code)
		}
	})

	t.Run("key, sign-out", func(t *testing.T) {
		c := testenv.BrowserClient(t)
		csrf := e.ConsoleSignIn(t, c, e.NewKey(t, testenv.KeySpec{}))
		for _, ck := range c.Jar.Cookies(testenv.MustURL(t, e.Srv.URL)) {
			if ck.Name == "prose_session" && ck.Value == "" {
				t.Error("empty session cookie")
			}
		}
		if code, loc, _ := testenv.Post(t, c, e.Srv.URL, "/signout", url.Values{"csrf": {csrf}}); code != http.StatusSeeOther || loc != "/signin" {
			t.Errorf("sign-out: %d %s", code, loc)
		}
		if code, _, _ := testenv.Page(t, c, e.Srv.URL, ws); code != http.StatusSeeOther {
			t.Errorf("inbox after sign-out: %d, want a redirect to sign-in", code)
		}
	})

	t.Run("revoking the key ends the session", func(t *testing.T) {
		c := testenv.BrowserClient(t)
		key := e.NewKey(t, testenv.KeySpec{})
		e.ConsoleSignIn(t, c, key)
		prefix, _, _ := strings.Cut(strings.TrimPrefix(key, "prose_"), "_")
		k, err := e.Store.GetAPIKeyByPrefix(context.Background(), "prose_"+prefix+"_")
		if err != nil {
			t.Fatal(err)
		}
		if err := e.Store.DeleteAPIKey(context.Background(), e.Init.OrganizationID, k.ID); err != nil {
			t.Fatal(err)
		}
		if code, _, _ := testenv.Page(t, c, e.Srv.URL, ws); code != http.StatusSeeOther {
			t.Errorf("inbox after revocation: %d, want a redirect to sign-in", code)
		}
	})

	t.Run("one-time link", func(t *testing.T) {
		token, err := console.CreateLink(context.Background(), e.Store, e.Init.OrganizationID, e.Init.UserID, 0, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		link := console.LinkURL(e.Srv.URL, token)
		u := testenv.MustURL(t, link)
		if !strings.HasPrefix(link, e.Srv.URL+"/signin?link=") {
			t.Fatalf("link %q", link)
		}
		c := testenv.BrowserClient(t)
		_, body, tok := testenv.Page(t, c, e.Srv.URL, "/signin?"+u.RawQuery)
		if !strings.Contains(body, "Sign in with this link") {
			t.Fatal("the sign-in page does not offer the link")
		}
		form := url.Values{"csrf": {tok}, "link": {u.Query().Get("link")}, "next": {ws}}
		if code, loc, _ := testenv.Post(t, c, e.Srv.URL, "/signin", form); code != http.StatusSeeOther || loc != ws {
			t.Fatalf("link sign-in: %d %s", code, loc)
		}
		if code, _, _ := testenv.Page(t, c, e.Srv.URL, ws); code != http.StatusOK {
			t.Errorf("inbox: %d", code)
		}
		// A link works once.
		c2 := testenv.BrowserClient(t)
		_, _, tok2 := testenv.Page(t, c2, e.Srv.URL, "/signin")
		form.Set("csrf", tok2)
		if code, _, body := testenv.Post(t, c2, e.Srv.URL, "/signin", form); code != http.StatusUnauthorized || !strings.Contains(body, "used already") {
			t.Errorf("second use of the link: %d", code)
		}
	})

	t.Run("next stays on this site", func(t *testing.T) {
		c := testenv.BrowserClient(t)
		_, _, tok := testenv.Page(t, c, e.Srv.URL, "/signin")
		code, loc, _ := testenv.Post(t, c, e.Srv.URL, "/signin", url.Values{"csrf": {tok}, "api_key": {e.NewKey(t, testenv.KeySpec{})}, "next": {"//evil.example/x"}})
		if code != http.StatusSeeOther || loc != "/" {
			t.Errorf("next=//evil.example: %d %s", code, loc)
		}
	})
}

// Every form needs the session's CSRF token, and a post from another origin
// is refused; a read-only key sees no write buttons and its forged posts
// are refused by the server's authorization.
func TestConsoleForgedPosts(t *testing.T) {
	e := newTestEnv(t)
	_, _, excID := e.ExcMake(t, testenv.ExcMissingCode)
	ws := "/w/" + e.Init.WorkspaceID
	path := ws + "/exceptions/" + excID + "/resolve"
	good := url.Values{"kind": {"provide_values"}, "fact.0": {"the invoice total"}, "type.0": {"number"}, "value.0": {"12.50"}}

	c := testenv.BrowserClient(t)
	csrf := e.ConsoleSignIn(t, c, e.NewKey(t, testenv.KeySpec{}))
	for name, tc := range map[string]struct {
		csrf   string
		header []string
	}{
		"no token":     {"", nil},
		"wrong token":  {"x" + csrf, nil},
		"other origin": {csrf, []string{"Origin", "https://evil.example"}},
	} {
		form := url.Values{}
		for k, v := range good {
			form[k] = v
		}
		if tc.csrf != "" {
			form.Set("csrf", tc.csrf)
		}
		if code, _, _ := testenv.Post(t, c, e.Srv.URL, path, form, tc.header...); code != http.StatusForbidden {
			t.Errorf("%s: %d, want 403", name, code)
		}
	}
	if x, err := e.Store.GetException(context.Background(), e.Init.OrganizationID, e.Init.WorkspaceID, excID); err != nil || x.State != store.ExceptionPending {
		t.Fatalf("after forged posts: %v %v", x.State, err)
	}

	t.Run("read-only key", func(t *testing.T) {
		ro := testenv.BrowserClient(t)
		roCSRF := e.ConsoleSignIn(t, ro, e.NewKey(t, testenv.KeySpec{Level: store.PermissionReadOnly}))
		code, body, _ := testenv.Page(t, ro, e.Srv.URL, ws+"/exceptions/"+excID)
		if code != http.StatusOK || !strings.Contains(body, "Please provide the invoice total") {
			t.Fatalf("exception page: %d", code)
		}
		for _, w := range []string{"/resolve", "/archive", "/assign", "Assign to me"} {
			if strings.Contains(body, w) {
				t.Errorf("a read-only session sees %q", w)
			}
		}
		_, inbox, _ := testenv.Page(t, ro, e.Srv.URL, ws+"/")
		if strings.Contains(inbox, "Archive selected") || strings.Contains(inbox, "Assign to me") {
			t.Error("a read-only session sees write buttons in the inbox")
		}
		form := url.Values{"csrf": {roCSRF}}
		for k, v := range good {
			form[k] = v
		}
		code, _, body = testenv.Post(t, ro, e.Srv.URL, path, form)
		if code != http.StatusForbidden || !strings.Contains(body, "read-only") {
			t.Errorf("read-only resolve: %d", code)
		}
	})

	// The real thing, with the token: the run goes on.
	form := url.Values{"csrf": {csrf}}
	for k, v := range good {
		form[k] = v
	}
	code, loc, body := testenv.Post(t, c, e.Srv.URL, path, form)
	if code != http.StatusSeeOther || !strings.Contains(loc, "/runs/") {
		t.Fatalf("resolve: %d %s %s", code, loc, body)
	}
	x, _ := e.Store.GetException(context.Background(), e.Init.OrganizationID, e.Init.WorkspaceID, excID)
	if x.State != store.ExceptionResolved || x.Resolver != "users/"+e.Init.UserID {
		t.Errorf("exception %s resolved by %q", x.State, x.Resolver)
	}
}

// Typed guidance that does not fit is shown on the exception page (400),
// never a 500.
func TestConsoleGuidanceErrors(t *testing.T) {
	e := newTestEnv(t)
	_, _, excID := e.ExcMake(t, testenv.ExcMissingCode)
	c := testenv.BrowserClient(t)
	csrf := e.ConsoleSignIn(t, c, e.NewKey(t, testenv.KeySpec{}))
	path := "/w/" + e.Init.WorkspaceID + "/exceptions/" + excID + "/resolve"
	for name, tc := range map[string]struct {
		form url.Values
		want string
	}{
		"not a number":  {url.Values{"kind": {"provide_values"}, "fact.0": {"the invoice total"}, "type.0": {"number"}, "value.0": {"twelve"}}, "is not a number"},
		"bad date":      {url.Values{"kind": {"provide_values"}, "fact.0": {"the invoice total"}, "type.0": {"date"}, "value.0": {"31/12"}}, "is not a date"},
		"bad type":      {url.Values{"kind": {"provide_values"}, "fact.0": {"the invoice total"}, "type.0": {"json"}, "value.0": {"1"}}, "unknown input type"},
		"other fact":    {url.Values{"kind": {"provide_values"}, "fact.0": {"the customer"}, "type.0": {"text"}, "value.0": {"x"}}, "the invoice total"},
		"bad code":      {url.Values{"kind": {"replace_step"}, "code": {"the x is is"}}, ""},
		"no kind":       {url.Values{}, "Choose a kind"},
		"answer to get": {url.Values{"kind": {"answer"}, "type": {"text"}, "value": {"x"}}, ""},
	} {
		tc.form.Set("csrf", csrf)
		code, _, body := testenv.Post(t, c, e.Srv.URL, path, tc.form)
		if code != http.StatusBadRequest || !strings.Contains(body, tc.want) {
			t.Errorf("%s: %d (want 400 with %q)", name, code, tc.want)
		}
	}
	if code, _, _ := testenv.Page(t, c, e.Srv.URL, "/w/"+e.Init.WorkspaceID+"/exceptions/nope"); code != http.StatusNotFound {
		t.Errorf("unknown exception: %d, want 404", code)
	}
	if code, _, _ := testenv.Page(t, c, e.Srv.URL, "/w/"+e.Init.WorkspaceID+"/?q=nonsense%20%3D%3D"); code != http.StatusBadRequest {
		t.Errorf("bad filter: %d, want 400", code)
	}
}

// The runs list (workspace-wide and per automation, by state) and a run's
// pause and continue.
func TestConsoleRuns(t *testing.T) {
	e := newTestEnv(t)
	a, run, _ := e.ExcMake(t, testenv.ExcMissingCode)
	c := testenv.BrowserClient(t)
	csrf := e.ConsoleSignIn(t, c, e.NewKey(t, testenv.KeySpec{}))
	ws := "/w/" + e.Init.WorkspaceID
	for q, want := range map[string]bool{
		"":                                      true,
		"?state=awaiting_guidance":              true,
		"?state=completed":                      false,
		"?automation=" + a.ID:                   true,
		"?automation=" + a.ID + "&state=failed": false,
	} {
		code, body, _ := testenv.Page(t, c, e.Srv.URL, ws+"/runs"+q)
		if code != http.StatusOK || strings.Contains(body, run.ID) != want {
			t.Errorf("runs%s: %d, lists the run: %v, want %v", q, code, strings.Contains(body, run.ID), want)
		}
	}
	if code, _, _ := testenv.Page(t, c, e.Srv.URL, ws+"/runs?state=nonsense"); code != http.StatusBadRequest {
		t.Errorf("runs?state=nonsense: %d, want 400", code)
	}
	runPage := ws + "/automations/" + a.ID + "/runs/" + run.ID
	if code, loc, body := testenv.Post(t, c, e.Srv.URL, runPage+"/pause", url.Values{"csrf": {csrf}, "reason": {"lunch"}}); code != http.StatusSeeOther || loc != runPage+"?done=stop" {
		t.Fatalf("pause: %d %s %s", code, loc, body)
	}
	if r := e.WaitRunState(t, a.ID, run.ID, store.RunStopped); r.State != store.RunStopped {
		t.Fatalf("after pause: %s", r.State)
	}
	_, body, _ := testenv.Page(t, c, e.Srv.URL, runPage)
	if !strings.Contains(body, "lunch") || !strings.Contains(body, "/continue") {
		t.Errorf("the stopped run's page shows no reason or no continue button")
	}
	if code, _, body := testenv.Post(t, c, e.Srv.URL, runPage+"/continue", url.Values{"csrf": {csrf}}); code != http.StatusSeeOther {
		t.Fatalf("continue: %d %s", code, body)
	}
	e.WaitRunState(t, a.ID, run.ID, store.RunAwaitingGuidance)
}

// Settings: create an API key (its value shown once, and it works), list
// and revoke it; members are listed.
func TestConsoleSettings(t *testing.T) {
	e := newTestEnv(t)
	c := testenv.BrowserClient(t)
	csrf := e.ConsoleSignIn(t, c, e.NewKey(t, testenv.KeySpec{}))
	ws := "/w/" + e.Init.WorkspaceID
	code, _, body := testenv.Post(t, c, e.Srv.URL, ws+"/settings/keys/create", url.Values{"csrf": {csrf}, "display_name": {"from the console"}, "level": {"read_only"}, "expires": {"30d"}})
	m := regexp.MustCompile(`id="new-key" value="(prose_[^"]+)"`).FindStringSubmatch(body)
	if code != http.StatusOK || m == nil {
		t.Fatalf("create key: %d", code)
	}
	status, _, _ := e.DoHTTP(t, "GET", e.WsPath()+"/exceptions", "", map[string]string{"Authorization": "Bearer " + m[1]})
	if status != http.StatusOK {
		t.Errorf("the new key: %d", status)
	}
	_, settings, _ := testenv.Page(t, c, e.Srv.URL, ws+"/settings")
	if !strings.Contains(settings, "from the console") || strings.Contains(settings, m[1]) || !strings.Contains(settings, e.Email) {
		t.Errorf("settings list the key: %v, show its value again: %v, list the owner: %v",
			strings.Contains(settings, "from the console"), strings.Contains(settings, m[1]), strings.Contains(settings, e.Email))
	}
	name := regexp.MustCompile(`name="key" value="(organizations/[^"]+)"`).FindAllStringSubmatch(settings, -1)
	prefix, _, _ := strings.Cut(strings.TrimPrefix(m[1], "prose_"), "_")
	k, err := e.Store.GetAPIKeyByPrefix(context.Background(), "prose_"+prefix+"_")
	if err != nil || len(name) == 0 {
		t.Fatalf("key %v, %d revoke buttons", err, len(name))
	}
	if code, _, _ := testenv.Post(t, c, e.Srv.URL, ws+"/settings/keys/create", url.Values{"csrf": {csrf}, "display_name": {"x"}, "level": {"admin"}, "expires": {"30d"}}); code != http.StatusBadRequest {
		t.Errorf("create with a bad level: %d, want 400", code)
	}
	if code, _, body := testenv.Post(t, c, e.Srv.URL, ws+"/settings/keys/revoke", url.Values{"csrf": {csrf}, "key": {"organizations/" + e.Init.OrganizationID + "/apiKeys/" + k.ID}}); code != http.StatusSeeOther {
		t.Fatalf("revoke: %d %s", code, body)
	}
	status, _, _ = e.DoHTTP(t, "GET", e.WsPath()+"/exceptions", "", map[string]string{"Authorization": "Bearer " + m[1]})
	if status != http.StatusUnauthorized {
		t.Errorf("the revoked key: %d, want 401", status)
	}
	// A read-only session cannot create keys.
	ro := testenv.BrowserClient(t)
	roCSRF := e.ConsoleSignIn(t, ro, e.NewKey(t, testenv.KeySpec{Level: store.PermissionReadOnly}))
	if code, _, _ := testenv.Post(t, ro, e.Srv.URL, ws+"/settings/keys/create", url.Values{"csrf": {roCSRF}, "display_name": {"x"}, "level": {"all"}, "expires": {"30d"}}); code != http.StatusForbidden {
		t.Errorf("read-only create: %d, want 403", code)
	}
}

// The exception page's conversation: a message to the agent, its answer in
// the thread, and the run going on when the reply gives the value.
func TestConsoleConversation(t *testing.T) {
	e := newTestEnv(t)
	a, run, excID := e.ExcMake(t, testenv.ExcMissingCode)
	c := testenv.BrowserClient(t)
	csrf := e.ConsoleSignIn(t, c, e.NewKey(t, testenv.KeySpec{}))
	base := "/w/" + e.Init.WorkspaceID + "/exceptions/" + excID
	if code, body, _ := testenv.Page(t, c, e.Srv.URL, base+"/conversation"); code != http.StatusOK || !strings.Contains(body, "No messages yet") {
		t.Fatalf("empty thread: %d %s", code, body)
	}
	if code, _, _ := testenv.Post(t, c, e.Srv.URL, base+"/say", url.Values{"csrf": {csrf}, "message": {" "}}); code != http.StatusBadRequest {
		t.Errorf("empty message: %d, want 400", code)
	}
	if code, loc, body := testenv.Post(t, c, e.Srv.URL, base+"/say", url.Values{"csrf": {csrf}, "message": {"the invoice total is 12.50"}}); code != http.StatusSeeOther || !strings.HasSuffix(loc, "#conversation") {
		t.Fatalf("say: %d %s %s", code, loc, body)
	}
	r := e.WaitRunState(t, a.ID, run.ID, store.RunCompleted)
	if got := testenv.ExcNum(testenv.ExcOutputs(t, r)["output total"]); got != 25 {
		t.Errorf("output total = %v, want 25", got)
	}
	_, body, _ := testenv.Page(t, c, e.Srv.URL, base+"/conversation")
	if !strings.Contains(body, "the invoice total is 12.50") || !strings.Contains(body, "from-agent") {
		t.Errorf("thread: %s", body)
	}
}
