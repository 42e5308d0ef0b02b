package main

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"testing"
)

// benchWriter is a reusable http.ResponseWriter that keeps the status and
// counts the bytes: the benchmark measures the server's handler, not a
// recorder's buffers.
type benchWriter struct {
	h      http.Header
	status int
	n      int
}

func (w *benchWriter) Header() http.Header { return w.h }
func (w *benchWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
}

func (w *benchWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	w.n += len(b)
	return len(b), nil
}

// BenchmarkGetWorkspaceHTTP: GET /api/v1/organizations/{o}/workspaces/{w}
// through the whole HTTP handler the server serves (request id, body guard,
// grpc-gateway, the in-process channel, the interceptor chain with the key
// checked, the service, the store's cached read, protojson), calling its
// ServeHTTP directly: no sockets, so its ns/op, B/op and allocs/op are the
// server's own work per request. On SQLite (with PROSE_TEST_POSTGRES_URL,
// PostgreSQL: the workspace read is cached either way).
//
//	go test ./cmd/prose -run '^$' -bench BenchmarkGetWorkspaceHTTP -benchmem -count 6
func BenchmarkGetWorkspaceHTTP(b *testing.B) {
	cfg := serveConfig{addr: "127.0.0.1:0", data: b.TempDir(), logLevel: "error"}
	a, err := newApp(context.Background(), cfg, slog.New(slog.DiscardHandler), io.Discard)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(a.Close)
	init, err := bootstrap(context.Background(), a.store, initOptions{organization: "Bench", email: "bench@example.test", workspace: "Ops"})
	if err != nil {
		b.Fatal(err)
	}
	path := "/api/v1/organizations/" + init.orgID + "/workspaces/" + init.workspaceID
	req := &http.Request{
		Method: http.MethodGet, URL: &url.URL{Path: path}, RequestURI: path,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, Host: "bench", RemoteAddr: "127.0.0.1:1234",
		Header: http.Header{"Authorization": {"Bearer " + init.APIKey}, "Accept": {"*/*"}},
		Body:   http.NoBody,
	}
	req = req.WithContext(context.Background())
	w := &benchWriter{h: http.Header{}}
	serve := func() {
		clear(w.h)
		w.status, w.n = 0, 0
		a.http.ServeHTTP(w, req)
	}
	serve()
	if w.status != http.StatusOK || w.n == 0 {
		b.Fatalf("GET %s: status %d, %d bytes", path, w.status, w.n)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		serve()
	}
	b.StopTimer()
	if w.status != http.StatusOK {
		b.Fatalf("GET %s: status %d", path, w.status)
	}
}
