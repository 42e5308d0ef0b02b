package gateway

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/proserun/prose/gen/openapi"
)

// recordingConn answers every call with NOT_FOUND naming its method, and
// records the methods called.
type recordingConn struct {
	mu    sync.Mutex
	calls []string
}

func (c *recordingConn) record(method string) error {
	c.mu.Lock()
	c.calls = append(c.calls, method)
	c.mu.Unlock()
	return status.Error(codes.NotFound, "called "+method)
}

func (c *recordingConn) take() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	calls := c.calls
	c.calls = nil
	return calls
}

func (c *recordingConn) Invoke(_ context.Context, method string, _, _ any, _ ...grpc.CallOption) error {
	return c.record(method)
}

func (c *recordingConn) NewStream(_ context.Context, _ *grpc.StreamDesc, method string, _ ...grpc.CallOption) (grpc.ClientStream, error) {
	return nil, c.record(method)
}

// handRoutes adds hand-written routes like the server's (files, hooks,
// probes) and some of shapes the generated ones lack ("**", a variable
// of several segments, a verb).
func handRoutes(t *testing.T, mux *runtime.ServeMux) {
	t.Helper()
	for _, r := range [][2]string{
		{http.MethodPost, "/hooks/{organization}/{workspace}/{instance}"},
		{http.MethodGet, "/readyz"},
		{http.MethodGet, "/api/v1/organizations/{organization_id}/files/{file}:download"},
		{http.MethodGet, "/static/{path=**}"},
		{http.MethodPut, "/api/v1/{name=organizations/*/workspaces/*}/blob"},
		{http.MethodGet, "/api/v1/organizations/{organization_id}/workspaces/{workspace_id}:peek"},
	} {
		pattern := r[1]
		if err := mux.HandlePath(r[0], pattern, func(w http.ResponseWriter, _ *http.Request, p map[string]string) {
			b, _ := json.Marshal(p)
			_, _ = io.WriteString(w, pattern+" "+string(b))
		}); err != nil {
			t.Fatal(err)
		}
	}
}

// TestRouteIndexAnswersAsTheMux sends the same requests to the gateway
// with its route index and to one without (any MuxOptions turn it off):
// every operation of the OpenAPI document with sample values, and variants
// of each path (one segment more or less, a trailing slash, verbs, escaped
// characters), with every method and with a form POST (grpc-gateway's
// POST→GET fallback). Status, Allow, body and the method called must be
// the same.
func TestRouteIndexAnswersAsTheMux(t *testing.T) {
	ctx := context.Background()
	logger := slog.New(slog.DiscardHandler)
	opts := Options{OpenAPI: []byte(`{}`), DisableMetrics: true, Logger: logger}
	var conns [2]recordingConn
	var handlers [2]http.Handler
	for i := range handlers {
		o := opts
		if i == 1 {
			o.MuxOptions = []runtime.ServeMuxOption{func(*runtime.ServeMux) {}}
		}
		g, h, err := build(ctx, &conns[i], o, Handlers()...)
		if err != nil {
			t.Fatal(err)
		}
		if (g.index != nil) != (i == 0) {
			t.Fatalf("gateway %d: index %v", i, g.index != nil)
		}
		handRoutes(t, g.mux)
		handlers[i] = h
	}

	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(openapi.JSON, &doc); err != nil {
		t.Fatal(err)
	}
	pathVar := regexp.MustCompile(`\{[^}]*\}`)
	paths := map[string]bool{}
	for tmpl := range doc.Paths {
		p := pathVar.ReplaceAllString(tmpl, "x1")
		for _, v := range []string{
			p, p + "/", p + "/extra", p + ":verb", p + "/:search", path(p) + "/:search",
			path(p), strings.Replace(p, "x1", "a%2Fb", 1), strings.Replace(p, "x1", "a%20b", 1),
		} {
			paths[v] = true
		}
	}
	for _, p := range []string{
		"/", "/x", "/healthz", "/readyz", "/openapi.json", "/hooks/o/w/i", "/static", "/static/",
		"/static/a/b/c/d/e/f/g/h/i/j/k/l/m/n/o/p/q", "/api/v1/organizations/o/workspaces/w/blob",
		"/api/v1/organizations/o/files/f:download", "/api/v1/organizations/o/workspaces/w:peek",
		"/api/v1/organizations/o/workspaces/w:", "/api/v1/organizations/o/workspaces/:peek",
		"/api//organizations", "//", "/api/v1/organizations/o/workspaces/w//",
	} {
		paths[p] = true
	}
	if len(paths) < 500 {
		t.Fatalf("only %d paths", len(paths))
	}
	type answer struct {
		status      int
		allow, body string
		calls       []string
	}
	send := func(i int, method, target, contentType string) answer {
		u, err := url.ParseRequestURI(target)
		if err != nil {
			t.Fatal(err)
		}
		r := (&http.Request{Method: method, URL: u, RequestURI: target, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
			Header: http.Header{}, Host: "test", Body: http.NoBody}).WithContext(ctx)
		if contentType != "" {
			r.Header.Set("Content-Type", contentType)
			r.Body = io.NopCloser(strings.NewReader("a=1"))
			r.ContentLength = 3
		}
		w := &recorder{h: http.Header{}}
		handlers[i].ServeHTTP(w, r)
		w.h.Del("X-Request-Id")
		body := regexp.MustCompile(`"request_id":"[^"]*"`).ReplaceAllString(w.body.String(), "")
		return answer{w.status, w.h.Get("Allow"), body, conns[i].take()}
	}
	n := 0
	for p := range paths {
		for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, "POST form"} {
			method, ct := m, ""
			if m == "POST form" {
				method, ct = http.MethodPost, "application/x-www-form-urlencoded"
			}
			a, b := send(0, method, p, ct), send(1, method, p, ct)
			// A form POST that no POST route takes goes to the first of the
			// other methods' routes that matches, in the order of a Go map:
			// the mux answers it with GET's route or with 405 at random.
			// The index must give one of the mux's answers.
			for try := 0; ct != "" && try < 50 && !reflect.DeepEqual(a, b); try++ {
				b = send(1, method, p, ct)
			}
			if a.status != b.status || a.allow != b.allow || a.body != b.body || strings.Join(a.calls, ",") != strings.Join(b.calls, ",") {
				t.Errorf("%s %s: with the index %+v, without %+v", m, p, a, b)
			}
			n++
		}
	}
	t.Logf("%d requests answered alike", n)
}

func path(p string) string { return p[:max(strings.LastIndexByte(p, '/'), 0)] }

// TestRouteIndexIsUsed fails when the gateway routes without its index: a
// grpc-gateway whose ServeMux table the index no longer reads.
func TestRouteIndexIsUsed(t *testing.T) {
	g, _, err := build(context.Background(), &recordingConn{}, Options{Logger: slog.New(slog.DiscardHandler)}, Handlers()...)
	if err != nil {
		t.Fatal(err)
	}
	if g.index == nil {
		t.Fatal("no route index: runtime.ServeMux's table is not the one routes.go reads")
	}
	// A route added after a request is routed too.
	h := g.index
	w := &recorder{h: http.Header{}}
	h.ServeHTTP(w, httpGet("/late/one"))
	if w.status != http.StatusNotFound {
		t.Fatalf("before HandlePath: %d", w.status)
	}
	if err := g.mux.HandlePath(http.MethodGet, "/late/{id}", func(w http.ResponseWriter, _ *http.Request, p map[string]string) {
		_, _ = io.WriteString(w, p["id"])
	}); err != nil {
		t.Fatal(err)
	}
	w = &recorder{h: http.Header{}}
	h.ServeHTTP(w, httpGet("/late/one"))
	if w.status != http.StatusOK || w.body.String() != "one" {
		t.Fatalf("after HandlePath: %d %q", w.status, w.body.String())
	}
}

func httpGet(target string) *http.Request {
	u, _ := url.ParseRequestURI(target)
	return (&http.Request{Method: http.MethodGet, URL: u, RequestURI: target, Header: http.Header{}, Body: http.NoBody}).WithContext(context.Background())
}

type recorder struct {
	h      http.Header
	status int
	body   strings.Builder
}

func (w *recorder) Header() http.Header { return w.h }
func (w *recorder) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
}

func (w *recorder) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.body.Write(b)
}
