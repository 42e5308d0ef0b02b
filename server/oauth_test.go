package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	bookv1 "github.com/proserun/prose/gen/prose/book/v1"
	"github.com/proserun/prose/internal/books"
	"github.com/proserun/prose/server/app"
	"github.com/proserun/prose/server/testenv"
	"github.com/proserun/prose/store"
)

const (
	oauthClientSecret = "cs-Pp02-secret"
	oauthAccess       = "at-Zx55-access"
	oauthRefresh      = "rt-Qw11-refresh"
	oauthPublic       = "https://prose.example.test"
)

// TestConnectionOAuth runs the authorization code flow against a fake
// provider: authorize answers the provider's URL, the callback exchanges
// the code for a token kept sealed with the connection, and an automation's
// http call then carries it. No secret reaches an answer or a log line.
func TestConnectionOAuth(t *testing.T) {
	var mu sync.Mutex
	exchanges := 0
	provider := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		f := r.PostForm
		if r.URL.Path != "/token" || f.Get("grant_type") != "authorization_code" || f.Get("code") != "code-123" ||
			f.Get("client_id") != "cid" || f.Get("client_secret") != oauthClientSecret || f.Get("redirect_uri") != oauthPublic+"/oauth/callback" {
			http.Error(w, `{"error": "invalid_grant"}`, http.StatusBadRequest)
			return
		}
		mu.Lock()
		exchanges++
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"access_token": "`+oauthAccess+`", "refresh_token": "`+oauthRefresh+`", "token_type": "bearer", "expires_in": 3600}`)
	}))
	defer provider.Close()
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+oauthAccess {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"name": "Ana"}`)
	}))
	defer api.Close()

	logs := &testenv.SyncBuffer{}
	e := newTestEnvLogged(t, func(c *app.Config) { c.PublicURL = oauthPublic },
		slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	m := e.API(t, "POST", e.WsPath()+"/books/http/1.0.0/connections", `{"connection_name": "crm",
		"authentication": {"authentication_id": "oauth2", "authentication_credentials": [{"id": "client id", "value": {"text_value": "cid"}}, {"id": "client secret", "value": {"text_value": "`+oauthClientSecret+`"}}]},
		"config_map": {"base url": {"text_value": "`+api.URL+`"}, "authorize url": {"text_value": "`+provider.URL+`/authorize?prompt=consent"},
		"token url": {"text_value": "`+provider.URL+`/token"}, "scopes": {"text_value": "read write"}}}`, 200)
	id := fmt.Sprint(testenv.Field(m, "book_connection_descriptor.connection_id"))
	bearer := fmt.Sprint(testenv.Field(e.API(t, "POST", e.WsPath()+"/books/http/1.0.0/connections", `{"connection_name": "plain",
		"authentication": {"authentication_id": "bearer", "authentication_credentials": [{"id": "token", "value": {"text_value": "x"}}]}}`, 200), "book_connection_descriptor.connection_id"))

	var answers []string
	var states []string // one per transport: each authorization's state is good once
	forEachTransport(t, func(t *testing.T, tr apiTransport) {
		authz := func(id string, want codes.Code) map[string]any {
			m, err := e.call(t, tr, "/prose.book.v1.ConnectionService/AuthorizeWorkspaceBookConnection",
				&bookv1.AuthorizeWorkspaceBookConnectionRequest{OrganizationId: e.Init.OrganizationID, WorkspaceId: e.Init.WorkspaceID, ConnectionId: id})
			if status.Code(err) != want {
				t.Fatalf("authorize over %s: %v, want %v", tr, err, want)
			}
			b, _ := json.Marshal(m)
			answers = append(answers, string(b), fmt.Sprint(err))
			return m
		}
		m := authz(id, codes.OK)
		if tr.name == "http" {
			checkSchema(t, "v2BookConnectionResponse", m)
		}
		u, err := url.Parse(fmt.Sprint(testenv.Field(m, "authorize_url.url")))
		if err != nil || u.Host != strings.TrimPrefix(provider.URL, "http://") || u.Path != "/authorize" {
			t.Fatalf("authorize url: %v", m)
		}
		q := u.Query()
		if q.Get("response_type") != "code" || q.Get("client_id") != "cid" || q.Get("redirect_uri") != oauthPublic+"/oauth/callback" ||
			q.Get("scope") != "read write" || q.Get("prompt") != "consent" || q.Get("state") == "" ||
			testenv.Field(m, "book_connection_descriptor.connection_id") != id {
			t.Fatalf("authorize url: %s", u)
		}
		states = append(states, q.Get("state"))
		authz(bearer, codes.FailedPrecondition)
		authz("nope", codes.NotFound)
	})

	callback := func(query string) (int, string) {
		resp, err := http.Get(e.Srv.URL + "/oauth/callback?" + query)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		answers = append(answers, string(b))
		return resp.StatusCode, string(b)
	}
	if len(states) < 2 || states[0] == states[1] {
		t.Fatalf("states: %q, want two different ones", states)
	}
	if code, body := callback("code=wrong&state=" + url.QueryEscape(states[0])); code != 400 || !strings.Contains(body, "400") {
		t.Errorf("a code the provider refuses: %d %s", code, body)
	}
	if code, body := callback("code=code-123&state=forged"); code != 400 {
		t.Errorf("a forged state: %d %s", code, body)
	}
	if code, body := callback("error=access_denied"); code != 400 {
		t.Errorf("a refusal: %d %s", code, body)
	}
	if code, body := callback("code=code-123&state=" + url.QueryEscape(states[0])); code != 400 || !strings.Contains(body, "already completed") {
		t.Errorf("a state used once, then with the right code: %d %s", code, body)
	}
	if code, body := callback("code=code-123&state=" + url.QueryEscape(states[1])); code != 200 || !strings.Contains(body, `"crm" is authorized`) {
		t.Fatalf("callback: %d %s", code, body)
	}
	// The same state again with another code (issue 26, finding 3): refused,
	// the connection stays bound to the first.
	if code, body := callback("code=code-456&state=" + url.QueryEscape(states[1])); code != 400 || !strings.Contains(body, "already completed") {
		t.Errorf("the state replayed with another code: %d %s", code, body)
	}
	// An update that sends the client credentials back without values keeps
	// them and the issued tokens.
	e.API(t, "PUT", e.WsPath()+"/books/http/1.0.0/connections/"+id, `{"connection_name": "crm",
		"authentication": {"authentication_id": "oauth2", "authentication_credentials": [{"id": "client id"}, {"id": "client secret"}]},
		"config_map": {"base url": {"text_value": "`+api.URL+`"}, "authorize url": {"text_value": "`+provider.URL+`/authorize"}, "token url": {"text_value": "`+provider.URL+`/token"}}}`, 200)
	c, err := e.App.Conns.Resolve(t.Context(), books.Workspace{OrganizationID: e.Init.OrganizationID, WorkspaceID: e.Init.WorkspaceID}, "http", "crm")
	if err != nil || c.Credentials["access token"] != oauthAccess || c.Credentials["refresh token"] != oauthRefresh || c.Credentials["client secret"] != oauthClientSecret {
		t.Fatalf("stored credentials after the update: %v", err)
	}
	got := e.API(t, "GET", e.WsPath()+"/connections/"+id, "", 200)
	b, _ := json.Marshal(got)
	answers = append(answers, string(b))

	a := e.MkAutomation(t, "Who am I", "call the api at \"/me\" with\n  the connection is \"crm\"\nthe output name is the above's name\n", true)
	inv := e.API(t, "POST", e.AutomationsPath()+"/"+a.ID+":invoke", `{"stage": "AUTOMATION_STAGE_PUBLISHED"}`, 200)
	done := e.WaitRun(t, a.ID, fmt.Sprint(inv["run_id"]), "completed")
	out, _ := json.Marshal(done)
	if !strings.Contains(string(out), `"Ana"`) {
		t.Errorf("run: %s", out)
	}
	answers = append(answers, string(out))
	mu.Lock()
	if exchanges != 1 {
		t.Errorf("token exchanges: %d", exchanges)
	}
	mu.Unlock()
	for _, s := range []string{oauthClientSecret, oauthAccess, oauthRefresh} {
		for _, a := range answers {
			if strings.Contains(a, s) {
				t.Fatalf("an answer carries %q: %s", s, a)
			}
		}
		if strings.Contains(logs.String(), s) {
			t.Fatalf("a log line carries %q", s)
		}
	}
}

// TestConnectionOAuthPublicNetworkOnly: a server that reaches public
// addresses only does not exchange a code at a token url on loopback.
func TestConnectionOAuthPublicNetworkOnly(t *testing.T) {
	called := false
	provider := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		called = true
		_, _ = io.WriteString(w, `{"access_token": "`+oauthAccess+`"}`)
	}))
	defer provider.Close()
	e := newTestEnvWith(t, func(c *app.Config) { c.PublicURL = oauthPublic; c.AllowPrivateNetworks = false })
	m := e.API(t, "POST", e.WsPath()+"/books/http/1.0.0/connections", `{"connection_name": "crm",
		"authentication": {"authentication_id": "oauth2", "authentication_credentials": [{"id": "client id", "value": {"text_value": "cid"}}, {"id": "client secret", "value": {"text_value": "`+oauthClientSecret+`"}}]},
		"config_map": {"authorize url": {"text_value": "`+provider.URL+`/authorize"}, "token url": {"text_value": "`+provider.URL+`/token"}}}`, 200)
	id := fmt.Sprint(testenv.Field(m, "book_connection_descriptor.connection_id"))
	a := e.API(t, "PUT", e.WsPath()+"/connections/"+id+"/authorize", "", 200)
	u, _ := url.Parse(fmt.Sprint(testenv.Field(a, "authorize_url.url")))
	resp, err := http.Get(e.Srv.URL + "/oauth/callback?code=c&state=" + url.QueryEscape(u.Query().Get("state")))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != 400 || called || strings.Contains(string(b), oauthClientSecret) {
		t.Fatalf("callback to a loopback token url: %d %s (provider called: %v)", resp.StatusCode, b, called)
	}
}

// TestConnectionOAuthRefresh: an access token the API refuses (401) or that
// has expired is refreshed with the refresh token, kept sealed, and the call
// is made again once; concurrent refreshes of one connection make one
// request to the token url; a refused refresh is the run's exception, naming
// the connection and never a secret.
func TestConnectionOAuthRefresh(t *testing.T) {
	const (
		rt2 = "rt-Kb72-second-refresh"
	)
	var mu sync.Mutex
	issued := 0       // access tokens issued
	accepted := ""    // the access token the API takes
	expiresIn := 3600 // of the next token
	refuse := false   // the token url refuses refreshes
	refreshes := 0    // refresh requests
	lastRefresh := "" // the refresh token of the last one
	provider := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		f := r.PostForm
		mu.Lock()
		defer mu.Unlock()
		if f.Get("client_id") != "cid" || f.Get("client_secret") != oauthClientSecret {
			http.Error(w, `{"error": "invalid_client"}`, http.StatusUnauthorized)
			return
		}
		answer := map[string]any{"token_type": "bearer", "expires_in": expiresIn}
		switch f.Get("grant_type") {
		case "authorization_code":
			answer["refresh_token"] = oauthRefresh
		case "refresh_token":
			refreshes++
			lastRefresh = f.Get("refresh_token")
			if refuse {
				// The answer echoes the refresh token: it must not reach the run.
				http.Error(w, `{"error": "invalid_grant", "detail": "`+lastRefresh+` was revoked"}`, http.StatusBadRequest)
				return
			}
			if refreshes == 1 {
				answer["refresh_token"] = rt2 // rotated; later answers keep it
			}
		default:
			http.Error(w, `{"error": "unsupported_grant_type"}`, http.StatusBadRequest)
			return
		}
		issued++
		answer["access_token"] = fmt.Sprintf("at-%d-Vv90-access", issued)
		accepted = fmt.Sprint(answer["access_token"])
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(answer)
	}))
	defer provider.Close()
	var apiCalls []string
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		ok := r.Header.Get("Authorization") == "Bearer "+accepted
		apiCalls = append(apiCalls, r.Header.Get("Authorization"))
		mu.Unlock()
		if !ok {
			http.Error(w, `{"error": "token expired"}`, http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"name": "Ana"}`)
	}))
	defer api.Close()

	logs := &testenv.SyncBuffer{}
	e := newTestEnvLogged(t, func(c *app.Config) { c.PublicURL = oauthPublic },
		slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	m := e.API(t, "POST", e.WsPath()+"/books/http/1.0.0/connections", `{"connection_name": "crm",
		"authentication": {"authentication_id": "oauth2", "authentication_credentials": [{"id": "client id", "value": {"text_value": "cid"}}, {"id": "client secret", "value": {"text_value": "`+oauthClientSecret+`"}}]},
		"config_map": {"base url": {"text_value": "`+api.URL+`"}, "authorize url": {"text_value": "`+provider.URL+`/authorize"}, "token url": {"text_value": "`+provider.URL+`/token"}}}`, 200)
	id := fmt.Sprint(testenv.Field(m, "book_connection_descriptor.connection_id"))
	a := e.API(t, "PUT", e.WsPath()+"/connections/"+id+"/authorize", "", 200)
	u, _ := url.Parse(fmt.Sprint(testenv.Field(a, "authorize_url.url")))
	resp, err := http.Get(e.Srv.URL + "/oauth/callback?code=c1&state=" + url.QueryEscape(u.Query().Get("state")))
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("callback: %d", resp.StatusCode)
	}
	ws := books.Workspace{OrganizationID: e.Init.OrganizationID, WorkspaceID: e.Init.WorkspaceID}
	stored := func() *books.Connection {
		t.Helper()
		c, err := e.App.Conns.Resolve(t.Context(), ws, "http", "crm")
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	var answers []string
	auto := e.MkAutomation(t, "Who am I", "call the api at \"/me\" with\n  the connection is \"crm\"\nthe output name is the above's name\n", true)
	run := func(want string) map[string]any {
		t.Helper()
		inv := e.API(t, "POST", e.AutomationsPath()+"/"+auto.ID+":invoke", `{"stage": "AUTOMATION_STAGE_PUBLISHED"}`, 200)
		r := e.WaitRun(t, auto.ID, fmt.Sprint(inv["run_id"]), want)
		b, _ := json.Marshal(r)
		answers = append(answers, string(b))
		return r
	}

	// 1. The API refuses the token (revoked): refresh, store, retry once.
	mu.Lock()
	accepted = "revoked"
	mu.Unlock()
	if out, _ := json.Marshal(run("completed")); !strings.Contains(string(out), `"Ana"`) {
		t.Errorf("run after a 401: %s", out)
	}
	mu.Lock()
	if refreshes != 1 || lastRefresh != oauthRefresh || len(apiCalls) != 2 || apiCalls[1] != "Bearer at-2-Vv90-access" {
		t.Errorf("after a 401: %d refreshes (with %q), API calls %q", refreshes, lastRefresh, apiCalls)
	}
	mu.Unlock()
	if c := stored(); c.Credentials["access token"] != "at-2-Vv90-access" || c.Credentials["refresh token"] != rt2 {
		t.Errorf("stored tokens after the refresh: %q %q", c.Credentials["access token"], c.Credentials["refresh token"])
	}

	// 2. The token expires within the margin: refreshed before the call
	// (the answer has no refresh token: the rotated one is kept).
	mu.Lock()
	expiresIn = 5
	mu.Unlock()
	if _, err := e.App.Conns.RefreshOAuth(t.Context(), ws, id, "at-2-Vv90-access"); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	expiresIn, apiCalls = 3600, nil
	mu.Unlock()
	run("completed")
	mu.Lock()
	if refreshes != 3 || lastRefresh != rt2 || len(apiCalls) != 1 || apiCalls[0] != "Bearer at-4-Vv90-access" {
		t.Errorf("an expired token: %d refreshes (with %q), API calls %q", refreshes, lastRefresh, apiCalls)
	}
	mu.Unlock()

	// 3. Concurrent refreshes of one stale token: one request.
	stale := stored().Credentials["access token"]
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Go(func() {
			_, err := e.App.Conns.RefreshOAuth(context.Background(), ws, id, stale)
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	mu.Lock()
	if refreshes != 4 {
		t.Errorf("8 concurrent refreshes made %d requests, want 1", refreshes-3)
	}
	mu.Unlock()

	// 4. A refused refresh: the run's exception names the connection and
	// the token url's status, never a secret.
	mu.Lock()
	refuse, accepted = true, "revoked again"
	mu.Unlock()
	r := run("awaiting_guidance")
	xid := store.LastSegment(fmt.Sprint(testenv.Field(r, "state.awaiting_guidance.exception")))
	x := e.API(t, "GET", e.WsPath()+"/exceptions/"+xid, "", 200)
	msg := fmt.Sprint(x["message"])
	if !strings.Contains(msg, `"crm" could not refresh its OAuth access token`) || !strings.Contains(msg, "400") || !strings.Contains(msg, "authorize it again") {
		t.Errorf("exception of a refused refresh: %q", msg)
	}
	xb, _ := json.Marshal(x)
	answers = append(answers, string(xb))
	got := e.API(t, "GET", e.WsPath()+"/connections/"+id, "", 200)
	gb, _ := json.Marshal(got)
	answers = append(answers, string(gb))
	for _, s := range []string{oauthClientSecret, oauthRefresh, rt2, "at-1-Vv90", "at-2-Vv90", "at-4-Vv90", "at-5-Vv90"} {
		for _, a := range answers {
			if strings.Contains(a, s) {
				t.Fatalf("an answer carries %q: %s", s, a)
			}
		}
		if strings.Contains(logs.String(), s) {
			t.Fatalf("a log line carries %q", s)
		}
	}
}
