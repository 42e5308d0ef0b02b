package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/proserun/prose/internal/books"
	"github.com/proserun/prose/server/app"
	"github.com/proserun/prose/server/testenv"
	"github.com/proserun/prose/store"
	"github.com/proserun/prose/store/backend"
)

// rotatingProvider is a fake OAuth provider that rotates refresh tokens: a
// refresh spends its refresh token, and a spent one is refused (400
// invalid_grant), as providers that rotate do. The first refresh request
// waits for release, so that another replica's refresh comes while it is in
// flight.
type rotatingProvider struct {
	*httptest.Server
	mu        sync.Mutex
	valid     string // the refresh token the provider takes now
	refreshes int    // refresh requests
	refused   int    // refresh requests with a spent token
	inFirst   chan struct{}
	release   chan struct{}
}

func newRotatingProvider(t *testing.T) *rotatingProvider {
	p := &rotatingProvider{valid: "rt-0-Hh31", inFirst: make(chan struct{}), release: make(chan struct{})}
	p.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		f := r.PostForm
		p.mu.Lock()
		answer := map[string]any{"token_type": "bearer", "expires_in": 3600}
		switch f.Get("grant_type") {
		case "authorization_code":
			answer["access_token"], answer["refresh_token"] = "at-0-Hh31", p.valid
		case "refresh_token":
			p.refreshes++
			n := p.refreshes
			if f.Get("refresh_token") != p.valid {
				p.refused++
				p.mu.Unlock()
				http.Error(w, `{"error": "invalid_grant"}`, http.StatusBadRequest)
				return
			}
			p.valid = fmt.Sprintf("rt-%d-Hh31", n)
			answer["access_token"], answer["refresh_token"] = fmt.Sprintf("at-%d-Hh31", n), p.valid
			if n == 1 {
				p.mu.Unlock()
				close(p.inFirst)
				<-p.release
				p.mu.Lock()
			}
		default:
			p.mu.Unlock()
			http.Error(w, `{"error": "unsupported_grant_type"}`, http.StatusBadRequest)
			return
		}
		p.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(answer)
	}))
	t.Cleanup(p.Close)
	return p
}

func (p *rotatingProvider) counts() (refreshes, refused int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.refreshes, p.refused
}

// refreshOnTwoReplicas authorizes an OAuth connection through replica a,
// then refreshes its access token on a and on b at the same moment: b's
// refresh starts while a's token request is in flight. Exactly one refresh
// request reaches the provider, both calls succeed with the token it
// issued, and the rotated refresh token is stored.
func refreshOnTwoReplicas(t *testing.T, a, b *testEnv, p *rotatingProvider) {
	t.Helper()
	m := a.API(t, "POST", a.WsPath()+"/books/http/1.0.0/connections", `{"connection_name": "crm",
		"authentication": {"authentication_id": "oauth2", "authentication_credentials": [{"id": "client id", "value": {"text_value": "cid"}}, {"id": "client secret", "value": {"text_value": "`+oauthClientSecret+`"}}]},
		"config_map": {"base url": {"text_value": "https://api.example.test"}, "authorize url": {"text_value": "`+p.URL+`/authorize"}, "token url": {"text_value": "`+p.URL+`/token"}}}`, 200)
	id := fmt.Sprint(testenv.Field(m, "book_connection_descriptor.connection_id"))
	au := a.API(t, "PUT", a.WsPath()+"/connections/"+id+"/authorize", "", 200)
	u, _ := url.Parse(fmt.Sprint(testenv.Field(au, "authorize_url.url")))
	resp, err := http.Get(a.Srv.URL + "/oauth/callback?code=c1&state=" + url.QueryEscape(u.Query().Get("state")))
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("callback: %d", resp.StatusCode)
	}
	ws := books.Workspace{OrganizationID: a.Init.OrganizationID, WorkspaceID: a.Init.WorkspaceID}

	type result struct {
		conn *books.Connection
		err  error
	}
	refresh := func(e *testEnv, out chan<- result) {
		c, err := e.App.Conns.RefreshOAuth(context.Background(), ws, id, "at-0-Hh31")
		out <- result{c, err}
	}
	fromA, fromB := make(chan result, 1), make(chan result, 1)
	go refresh(a, fromA)
	<-p.inFirst // a's token request is in flight
	go refresh(b, fromB)
	// b must not send a request of its own while a's is in flight (it
	// would spend the refresh token a already spent).
	deadline := time.After(500 * time.Millisecond)
wait:
	for {
		select {
		case <-deadline:
			break wait
		case <-time.After(10 * time.Millisecond):
			if n, _ := p.counts(); n > 1 {
				break wait
			}
		}
	}
	close(p.release)
	ra, rb := <-fromA, <-fromB
	for name, r := range map[string]result{"a": ra, "b": rb} {
		if r.err != nil {
			t.Errorf("the refresh on %s: %v", name, r.err)
		} else if got := r.conn.Credentials["access token"]; got != "at-1-Hh31" {
			t.Errorf("the refresh on %s gave the access token %q, want the one the provider issued", name, got)
		}
	}
	if n, refused := p.counts(); n != 1 || refused != 0 {
		t.Errorf("two replicas refreshing at once made %d refresh requests (%d refused), want 1", n, refused)
	}
	for name, e := range map[string]*testEnv{"a": a, "b": b} {
		c, err := e.App.Conns.Resolve(t.Context(), ws, "http", "crm")
		if err != nil {
			t.Fatal(err)
		}
		if c.Credentials["access token"] != "at-1-Hh31" || c.Credentials["refresh token"] != "rt-1-Hh31" {
			t.Errorf("replica %s reads the tokens %q, %q", name, c.Credentials["access token"], c.Credentials["refresh token"])
		}
	}
	// Later refreshes go on with the rotated token, from either replica.
	if _, err := b.App.Conns.RefreshOAuth(t.Context(), ws, id, "at-1-Hh31"); err != nil {
		t.Fatal(err)
	}
	if n, refused := p.counts(); n != 2 || refused != 0 {
		t.Errorf("after a later refresh: %d requests, %d refused", n, refused)
	}
}

// TestConnectionOAuthRefreshAcrossReplicas: two replicas on one PostgreSQL
// database refresh one connection at the same moment against a provider
// that rotates refresh tokens: one request, both succeed.
func TestConnectionOAuthRefreshAcrossReplicas(t *testing.T) {
	newReplica := testenv.PGReplica(t)
	p := newRotatingProvider(t)
	withURL := func(c app.Config) app.Config { c.PublicURL = oauthPublic; return c }
	a, _ := startApp(t, withURL(newReplica()), app.InitResult{}, "")
	a.Email = "owner-" + store.NewID() + "@example.test"
	var err error
	a.Init, err = app.Bootstrap(context.Background(), a.Store, app.InitOptions{Organization: "OAuth replicas org", Email: a.Email, Workspace: "Ops"})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := startApp(t, withURL(newReplica()), a.Init, a.Email)
	refreshOnTwoReplicas(t, a, b, p)
}

// TestConnectionOAuthRefreshTwoEnginesSQLite: the same with two apps (two
// engines and registries, each with its own in-process deduplication) in
// one process on one SQLite database.
func TestConnectionOAuthRefreshTwoEnginesSQLite(t *testing.T) {
	st, err := backend.Open(context.Background(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	cfg := func() app.Config {
		return app.Config{Addr: "127.0.0.1:0", Data: t.TempDir(), LogLevel: "error", Store: st, AllowPrivateNetworks: true, PublicURL: oauthPublic}
	}
	p := newRotatingProvider(t)
	a, _ := startApp(t, cfg(), app.InitResult{}, "")
	a.Email = "owner-" + store.NewID() + "@example.test"
	a.Init, err = app.Bootstrap(context.Background(), a.Store, app.InitOptions{Organization: "OAuth engines org", Email: a.Email, Workspace: "Ops"})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := startApp(t, cfg(), a.Init, a.Email)
	refreshOnTwoReplicas(t, a, b, p)
}
