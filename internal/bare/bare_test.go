package bare_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/proserun/prose/internal/bare"
)

// TestInvokeHandler: prose-load's calls get the bodies given, a GET of
// runs gets no runs, anything else the workspace; no key is 401.
func TestInvokeHandler(t *testing.T) {
	srv := httptest.NewServer(bare.InvokeHandler([]byte(`{"name":"ws"}`), []byte(`{"name":"auto"}`), []byte(`{"run_id":"r1"}`), "k"))
	defer srv.Close()
	for _, c := range []struct {
		method, path, key string
		code              int
		body              string
	}{
		{"POST", "/api/v1/organizations/o/workspaces/w/automations/a:invoke", "k", 200, `{"run_id":"r1"}`},
		{"POST", "/api/v1/organizations/o/workspaces/w/automations", "k", 200, `{"name":"auto"}`},
		{"GET", "/api/v1/organizations/o/workspaces/w/automations/a/runs", "k", 200, `{"runs":[],"nextPageToken":""}`},
		{"GET", "/api/v1/organizations/o/workspaces/w", "k", 200, `{"name":"ws"}`},
		{"POST", "/api/v1/organizations/o/workspaces/w/automations/a:invoke", "wrong", 401, `{"code":16,"message":"unauthenticated"}` + "\n"},
	} {
		req, err := http.NewRequest(c.method, srv.URL+c.path, strings.NewReader(`{"stage":"AUTOMATION_STAGE_DRAFT"}`))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+c.key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode != c.code || string(b) != c.body {
			t.Errorf("%s %s (key %s): %d %s, want %d %s", c.method, c.path, c.key, resp.StatusCode, b, c.code, c.body)
		}
	}
}
