package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/proserun/prose/console"
	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/store"
)

// browserClient is an HTTP client with a cookie jar that does not follow
// redirects (tests look at them).
func browserClient(t *testing.T) *http.Client {
	t.Helper()
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// page GETs path and returns the status, the body and the first CSRF token
// on it.
func page(t *testing.T, c *http.Client, base, path string) (int, string, string) {
	t.Helper()
	res, err := c.Get(base + path)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	tok := ""
	if m := csrfField.FindSubmatch(b); m != nil {
		tok = string(m[1])
	}
	return res.StatusCode, string(b), tok
}

// post sends a form and returns the status, the Location and the body.
func post(t *testing.T, c *http.Client, base, path string, form url.Values, header ...string) (int, string, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, base+path, strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	res, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, res.Header.Get("Location"), string(b)
}

// consoleSignIn signs c in with an API key and returns the session's CSRF
// token (read from the inbox).
func (e *testEnv) consoleSignIn(t *testing.T, c *http.Client, key string) string {
	t.Helper()
	_, _, tok := page(t, c, e.srv.URL, "/signin")
	code, loc, body := post(t, c, e.srv.URL, "/signin", url.Values{"csrf": {tok}, "api_key": {key}, "next": {"/"}})
	if code != http.StatusSeeOther || loc != "/" {
		t.Fatalf("sign-in: %d %s %s", code, loc, body)
	}
	code, _, csrf := page(t, c, e.srv.URL, "/w/"+e.init.workspaceID+"/")
	if code != http.StatusOK || csrf == "" {
		t.Fatalf("inbox after sign-in: %d", code)
	}
	return csrf
}

// A session is honoured only from the console's in-process path: an outside
// gRPC client presenting a valid session token (with or without a guessed
// secret) is UNAUTHENTICATED, and the gateway does not pass the metadata on
// from HTTP headers.
func TestConsoleSessionCannotBeForged(t *testing.T) {
	e := newTestEnv(t)
	ctx := context.Background()
	token := "forged-" + store.NewID()
	if _, err := e.st.CreateConsoleSession(ctx, store.ConsoleSession{
		TokenHash: store.ConsoleTokenHash(token), OrganizationID: e.init.orgID, UserID: e.init.userID, ExpireTime: time.Now().Add(time.Hour),
	}); err != nil {
		t.Fatal(err)
	}
	req := &platformv1.ListExceptionsRequest{OrganizationId: e.init.orgID, WorkspaceId: e.init.workspaceID}
	for name, md := range map[string]metadata.MD{
		"token alone":           metadata.Pairs("x-prose-console-session", token),
		"token, guessed secret": metadata.Pairs("x-prose-console-session", token, "x-prose-console-secret", "guess"),
		"token, empty secret":   metadata.Pairs("x-prose-console-session", token, "x-prose-console-secret", ""),
		"secret key alone":      metadata.Pairs("x-prose-console-secret", "guess"),
	} {
		_, err := platformv1.NewExceptionServiceClient(e.conn).ListExceptions(metadata.NewOutgoingContext(ctx, md), req)
		if status.Code(err) != codes.Unauthenticated || errReason(err) != "CONSOLE_SESSION_INVALID" {
			t.Errorf("gRPC %s: %v, want UNAUTHENTICATED CONSOLE_SESSION_INVALID", name, err)
		}
	}
	// Over HTTP the headers are not forwarded: the call has no credential.
	for _, h := range []string{"X-Prose-Console-Session", "Grpc-Metadata-X-Prose-Console-Session"} {
		r, _ := http.NewRequest(http.MethodGet, e.srv.URL+e.excBase()+"/exceptions", nil)
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
	ws := "/w/" + e.init.workspaceID + "/"

	t.Run("pages need a session", func(t *testing.T) {
		c := browserClient(t)
		res, err := c.Get(e.srv.URL + ws + "?state=RESOLVED")
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/signin?next="+url.QueryEscape(ws+"?state=RESOLVED") {
			t.Errorf("GET inbox without a session: %d %s", res.StatusCode, res.Header.Get("Location"))
		}
		if code, _, _ := post(t, c, e.srv.URL, ws+"exceptions:archive", url.Values{"csrf": {"x"}}); code != http.StatusUnauthorized {
			t.Errorf("POST without a session: %d, want 401", code)
		}
	})

	t.Run("bad key", func(t *testing.T) {
		c := browserClient(t)
		_, _, tok := page(t, c, e.srv.URL, "/signin")
		code, _, body := post(t, c, e.srv.URL, "/signin", url.Values{"csrf": {tok}, "api_key": {"prose_nope"}})
		if code != http.StatusUnauthorized || !strings.Contains(body, "not valid") {
			t.Errorf("bad key: %d", code)
		}
		// Without the sign-in form's token (login CSRF): refused.
		code, _, _ = post(t, browserClient(t), e.srv.URL, "/signin", url.Values{"api_key": {e.newKey(t, keySpec{})}})
		if code != http.StatusForbidden {
			t.Errorf("sign-in without the form's token: %d, want 403", code)
		}
	})

	t.Run("key, sign-out", func(t *testing.T) {
		c := browserClient(t)
		csrf := e.consoleSignIn(t, c, e.newKey(t, keySpec{}))
		for _, ck := range c.Jar.Cookies(mustURL(t, e.srv.URL)) {
			if ck.Name == "prose_session" && ck.Value == "" {
				t.Error("empty session cookie")
			}
		}
		if code, loc, _ := post(t, c, e.srv.URL, "/signout", url.Values{"csrf": {csrf}}); code != http.StatusSeeOther || loc != "/signin" {
			t.Errorf("sign-out: %d %s", code, loc)
		}
		if code, _, _ := page(t, c, e.srv.URL, ws); code != http.StatusSeeOther {
			t.Errorf("inbox after sign-out: %d, want a redirect to sign-in", code)
		}
	})

	t.Run("revoking the key ends the session", func(t *testing.T) {
		c := browserClient(t)
		key := e.newKey(t, keySpec{})
		e.consoleSignIn(t, c, key)
		prefix, _, _ := strings.Cut(strings.TrimPrefix(key, "prose_"), "_")
		k, err := e.st.GetAPIKeyByPrefix(context.Background(), "prose_"+prefix+"_")
		if err != nil {
			t.Fatal(err)
		}
		if err := e.st.DeleteAPIKey(context.Background(), e.init.orgID, k.ID); err != nil {
			t.Fatal(err)
		}
		if code, _, _ := page(t, c, e.srv.URL, ws); code != http.StatusSeeOther {
			t.Errorf("inbox after revocation: %d, want a redirect to sign-in", code)
		}
	})

	t.Run("one-time link", func(t *testing.T) {
		token, err := console.CreateLink(context.Background(), e.st, e.init.orgID, e.init.userID, 0, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		link := console.LinkURL(e.srv.URL, token)
		u := mustURL(t, link)
		if !strings.HasPrefix(link, e.srv.URL+"/signin?link=") {
			t.Fatalf("link %q", link)
		}
		c := browserClient(t)
		_, body, tok := page(t, c, e.srv.URL, "/signin?"+u.RawQuery)
		if !strings.Contains(body, "Sign in with this link") {
			t.Fatal("the sign-in page does not offer the link")
		}
		form := url.Values{"csrf": {tok}, "link": {u.Query().Get("link")}, "next": {ws}}
		if code, loc, _ := post(t, c, e.srv.URL, "/signin", form); code != http.StatusSeeOther || loc != ws {
			t.Fatalf("link sign-in: %d %s", code, loc)
		}
		if code, _, _ := page(t, c, e.srv.URL, ws); code != http.StatusOK {
			t.Errorf("inbox: %d", code)
		}
		// A link works once.
		c2 := browserClient(t)
		_, _, tok2 := page(t, c2, e.srv.URL, "/signin")
		form.Set("csrf", tok2)
		if code, _, body := post(t, c2, e.srv.URL, "/signin", form); code != http.StatusUnauthorized || !strings.Contains(body, "used already") {
			t.Errorf("second use of the link: %d", code)
		}
	})

	t.Run("next stays on this site", func(t *testing.T) {
		c := browserClient(t)
		_, _, tok := page(t, c, e.srv.URL, "/signin")
		code, loc, _ := post(t, c, e.srv.URL, "/signin", url.Values{"csrf": {tok}, "api_key": {e.newKey(t, keySpec{})}, "next": {"//evil.example/x"}})
		if code != http.StatusSeeOther || loc != "/" {
			t.Errorf("next=//evil.example: %d %s", code, loc)
		}
	})
}

func mustURL(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// Every form needs the session's CSRF token, and a post from another origin
// is refused; a read-only key sees no write buttons and its forged posts
// are refused by the server's authorization.
func TestConsoleForgedPosts(t *testing.T) {
	e := newTestEnv(t)
	_, _, excID := e.excMake(t, excMissingCode)
	ws := "/w/" + e.init.workspaceID
	path := ws + "/exceptions/" + excID + "/resolve"
	good := url.Values{"kind": {"provide_values"}, "fact.0": {"the invoice total"}, "type.0": {"number"}, "value.0": {"12.50"}}

	c := browserClient(t)
	csrf := e.consoleSignIn(t, c, e.newKey(t, keySpec{}))
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
		if code, _, _ := post(t, c, e.srv.URL, path, form, tc.header...); code != http.StatusForbidden {
			t.Errorf("%s: %d, want 403", name, code)
		}
	}
	if x, err := e.st.GetException(context.Background(), e.init.orgID, e.init.workspaceID, excID); err != nil || x.State != store.ExceptionPending {
		t.Fatalf("after forged posts: %v %v", x.State, err)
	}

	t.Run("read-only key", func(t *testing.T) {
		ro := browserClient(t)
		roCSRF := e.consoleSignIn(t, ro, e.newKey(t, keySpec{level: store.PermissionReadOnly}))
		code, body, _ := page(t, ro, e.srv.URL, ws+"/exceptions/"+excID)
		if code != http.StatusOK || !strings.Contains(body, "Please provide the invoice total") {
			t.Fatalf("exception page: %d", code)
		}
		for _, w := range []string{"/resolve", "/archive", "/assign", "Assign to me"} {
			if strings.Contains(body, w) {
				t.Errorf("a read-only session sees %q", w)
			}
		}
		_, inbox, _ := page(t, ro, e.srv.URL, ws+"/")
		if strings.Contains(inbox, "Archive selected") || strings.Contains(inbox, "Assign to me") {
			t.Error("a read-only session sees write buttons in the inbox")
		}
		form := url.Values{"csrf": {roCSRF}}
		for k, v := range good {
			form[k] = v
		}
		code, _, body = post(t, ro, e.srv.URL, path, form)
		if code != http.StatusForbidden || !strings.Contains(body, "read-only") {
			t.Errorf("read-only resolve: %d", code)
		}
	})

	// The real thing, with the token: the run goes on.
	form := url.Values{"csrf": {csrf}}
	for k, v := range good {
		form[k] = v
	}
	code, loc, body := post(t, c, e.srv.URL, path, form)
	if code != http.StatusSeeOther || !strings.Contains(loc, "/runs/") {
		t.Fatalf("resolve: %d %s %s", code, loc, body)
	}
	x, _ := e.st.GetException(context.Background(), e.init.orgID, e.init.workspaceID, excID)
	if x.State != store.ExceptionResolved || x.Resolver != "users/"+e.init.userID {
		t.Errorf("exception %s resolved by %q", x.State, x.Resolver)
	}
}

// Typed guidance that does not fit is shown on the exception page (400),
// never a 500.
func TestConsoleGuidanceErrors(t *testing.T) {
	e := newTestEnv(t)
	_, _, excID := e.excMake(t, excMissingCode)
	c := browserClient(t)
	csrf := e.consoleSignIn(t, c, e.newKey(t, keySpec{}))
	path := "/w/" + e.init.workspaceID + "/exceptions/" + excID + "/resolve"
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
		code, _, body := post(t, c, e.srv.URL, path, tc.form)
		if code != http.StatusBadRequest || !strings.Contains(body, tc.want) {
			t.Errorf("%s: %d (want 400 with %q)", name, code, tc.want)
		}
	}
	if code, _, _ := page(t, c, e.srv.URL, "/w/"+e.init.workspaceID+"/exceptions/nope"); code != http.StatusNotFound {
		t.Errorf("unknown exception: %d, want 404", code)
	}
	if code, _, _ := page(t, c, e.srv.URL, "/w/"+e.init.workspaceID+"/?q=nonsense%20%3D%3D"); code != http.StatusBadRequest {
		t.Errorf("bad filter: %d, want 400", code)
	}
}

// prose login-link prints a link for the owner, or for --email.
func TestLoginLinkCommand(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	var out, errb bytes.Buffer
	if rc := initCmd(ctx, []string{"--data", dir, "--email", "ann@example.test", "--json"}, nil, &out, &errb); rc != 0 {
		t.Fatalf("init: %d %s", rc, errb.String())
	}
	for _, args := range [][]string{{}, {"--email", "ANN@example.test"}} {
		out.Reset()
		if rc := loginLinkCmd(ctx, append([]string{"--data", dir, "--url", "https://prose.example/"}, args...), nil, &out, &errb); rc != 0 {
			t.Fatalf("login-link %v: %d %s", args, rc, errb.String())
		}
		link := strings.TrimSpace(out.String())
		if !strings.HasPrefix(link, "https://prose.example/signin?link=") {
			t.Errorf("login-link %v printed %q", args, link)
		}
	}
	for _, tc := range []struct {
		args []string
		rc   int
		want string
	}{
		{[]string{"--email", "nobody@example.test"}, 1, "no user"},
		{[]string{"--ttl", "0s"}, 2, "--ttl"},
		{[]string{"extra"}, 2, "unexpected argument"},
	} {
		errb.Reset()
		if rc := loginLinkCmd(ctx, append([]string{"--data", dir}, tc.args...), nil, &out, &errb); rc != tc.rc || !strings.Contains(errb.String(), tc.want) {
			t.Errorf("login-link %v: %d %q, want %d %q", tc.args, rc, errb.String(), tc.rc, tc.want)
		}
	}
	st, err := openStore(ctx, dir, "")
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	// The links are stored as links (hashes only), usable once each.
	n, err := st.DeleteExpiredConsoleSessions(ctx, time.Now().Add(console.DefaultLinkTTL+time.Minute))
	if err != nil || n != 2 {
		t.Errorf("stored links: %d %v, want 2", n, err)
	}
}

// The runs list (workspace-wide and per automation, by state) and a run's
// pause and continue.
func TestConsoleRuns(t *testing.T) {
	e := newTestEnv(t)
	a, run, _ := e.excMake(t, excMissingCode)
	c := browserClient(t)
	csrf := e.consoleSignIn(t, c, e.newKey(t, keySpec{}))
	ws := "/w/" + e.init.workspaceID
	for q, want := range map[string]bool{
		"":                                      true,
		"?state=awaiting_guidance":              true,
		"?state=completed":                      false,
		"?automation=" + a.ID:                   true,
		"?automation=" + a.ID + "&state=failed": false,
	} {
		code, body, _ := page(t, c, e.srv.URL, ws+"/runs"+q)
		if code != http.StatusOK || strings.Contains(body, run.ID) != want {
			t.Errorf("runs%s: %d, lists the run: %v, want %v", q, code, strings.Contains(body, run.ID), want)
		}
	}
	if code, _, _ := page(t, c, e.srv.URL, ws+"/runs?state=nonsense"); code != http.StatusBadRequest {
		t.Errorf("runs?state=nonsense: %d, want 400", code)
	}
	runPage := ws + "/automations/" + a.ID + "/runs/" + run.ID
	if code, loc, body := post(t, c, e.srv.URL, runPage+"/pause", url.Values{"csrf": {csrf}, "reason": {"lunch"}}); code != http.StatusSeeOther || loc != runPage {
		t.Fatalf("pause: %d %s %s", code, loc, body)
	}
	if r := e.waitRunState(t, a.ID, run.ID, store.RunStopped); r.State != store.RunStopped {
		t.Fatalf("after pause: %s", r.State)
	}
	_, body, _ := page(t, c, e.srv.URL, runPage)
	if !strings.Contains(body, "lunch") || !strings.Contains(body, "/continue") {
		t.Errorf("the stopped run's page shows no reason or no continue button")
	}
	if code, _, body := post(t, c, e.srv.URL, runPage+"/continue", url.Values{"csrf": {csrf}}); code != http.StatusSeeOther {
		t.Fatalf("continue: %d %s", code, body)
	}
	e.waitRunState(t, a.ID, run.ID, store.RunAwaitingGuidance)
}

// Settings: create an API key (its value shown once, and it works), list
// and revoke it; members are listed.
func TestConsoleSettings(t *testing.T) {
	e := newTestEnv(t)
	c := browserClient(t)
	csrf := e.consoleSignIn(t, c, e.newKey(t, keySpec{}))
	ws := "/w/" + e.init.workspaceID
	code, _, body := post(t, c, e.srv.URL, ws+"/settings/keys/create", url.Values{"csrf": {csrf}, "display_name": {"from the console"}, "level": {"read_only"}, "expires": {"30d"}})
	m := regexp.MustCompile(`id="new-key" value="(prose_[^"]+)"`).FindStringSubmatch(body)
	if code != http.StatusOK || m == nil {
		t.Fatalf("create key: %d", code)
	}
	status, _, _ := e.doHTTP(t, "GET", e.excBase()+"/exceptions", "", map[string]string{"Authorization": "Bearer " + m[1]})
	if status != http.StatusOK {
		t.Errorf("the new key: %d", status)
	}
	_, settings, _ := page(t, c, e.srv.URL, ws+"/settings")
	if !strings.Contains(settings, "from the console") || strings.Contains(settings, m[1]) || !strings.Contains(settings, e.email) {
		t.Errorf("settings list the key: %v, show its value again: %v, list the owner: %v",
			strings.Contains(settings, "from the console"), strings.Contains(settings, m[1]), strings.Contains(settings, e.email))
	}
	name := regexp.MustCompile(`name="key" value="(organizations/[^"]+)"`).FindAllStringSubmatch(settings, -1)
	prefix, _, _ := strings.Cut(strings.TrimPrefix(m[1], "prose_"), "_")
	k, err := e.st.GetAPIKeyByPrefix(context.Background(), "prose_"+prefix+"_")
	if err != nil || len(name) == 0 {
		t.Fatalf("key %v, %d revoke buttons", err, len(name))
	}
	if code, _, _ := post(t, c, e.srv.URL, ws+"/settings/keys/create", url.Values{"csrf": {csrf}, "display_name": {"x"}, "level": {"admin"}, "expires": {"30d"}}); code != http.StatusBadRequest {
		t.Errorf("create with a bad level: %d, want 400", code)
	}
	if code, _, body := post(t, c, e.srv.URL, ws+"/settings/keys/revoke", url.Values{"csrf": {csrf}, "key": {"organizations/" + e.init.orgID + "/apiKeys/" + k.ID}}); code != http.StatusSeeOther {
		t.Fatalf("revoke: %d %s", code, body)
	}
	status, _, _ = e.doHTTP(t, "GET", e.excBase()+"/exceptions", "", map[string]string{"Authorization": "Bearer " + m[1]})
	if status != http.StatusUnauthorized {
		t.Errorf("the revoked key: %d, want 401", status)
	}
	// A read-only session cannot create keys.
	ro := browserClient(t)
	roCSRF := e.consoleSignIn(t, ro, e.newKey(t, keySpec{level: store.PermissionReadOnly}))
	if code, _, _ := post(t, ro, e.srv.URL, ws+"/settings/keys/create", url.Values{"csrf": {roCSRF}, "display_name": {"x"}, "level": {"all"}, "expires": {"30d"}}); code != http.StatusForbidden {
		t.Errorf("read-only create: %d, want 403", code)
	}
}

// The exception page's conversation: a message to the agent, its answer in
// the thread, and the run going on when the reply gives the value.
func TestConsoleConversation(t *testing.T) {
	e := newTestEnv(t)
	a, run, excID := e.excMake(t, excMissingCode)
	c := browserClient(t)
	csrf := e.consoleSignIn(t, c, e.newKey(t, keySpec{}))
	base := "/w/" + e.init.workspaceID + "/exceptions/" + excID
	if code, body, _ := page(t, c, e.srv.URL, base+"/conversation"); code != http.StatusOK || !strings.Contains(body, "No messages yet") {
		t.Fatalf("empty thread: %d %s", code, body)
	}
	if code, _, _ := post(t, c, e.srv.URL, base+"/say", url.Values{"csrf": {csrf}, "message": {" "}}); code != http.StatusBadRequest {
		t.Errorf("empty message: %d, want 400", code)
	}
	if code, loc, body := post(t, c, e.srv.URL, base+"/say", url.Values{"csrf": {csrf}, "message": {"the invoice total is 12.50"}}); code != http.StatusSeeOther || !strings.HasSuffix(loc, "#conversation") {
		t.Fatalf("say: %d %s %s", code, loc, body)
	}
	r := e.waitRunState(t, a.ID, run.ID, store.RunCompleted)
	if got := excNum(excOutputs(t, r)["output total"]); got != 25 {
		t.Errorf("output total = %v, want 25", got)
	}
	_, body, _ := page(t, c, e.srv.URL, base+"/conversation")
	if !strings.Contains(body, "the invoice total is 12.50") || !strings.Contains(body, "from-agent") {
		t.Errorf("thread: %s", body)
	}
}
