package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/proserun/prose/internal/loadprog"
	"github.com/proserun/prose/server/app"
	"github.com/proserun/prose/store/backend"
)

// BenchmarkInvokeHTTP: POST /api/v1/{automation}:invoke, as prose-load
// sends it, through the whole HTTP handler the server serves (request id,
// body guard, grpc-gateway, the in-process channel, the interceptor chain
// with the key checked, InvokeAutomation, the engine's inline execution,
// the create batch and its commit, protojson), calling ServeHTTP directly
// from 32 goroutines (the load's connections): no sockets and no load
// generator, so its ns/op, B/op and allocs/op are the server's own work per
// run. On SQLite; with PROSE_TEST_POSTGRES_URL, on the package's PostgreSQL
// database (TestMain's).
//
//	go test ./cmd/prose -run '^$' -bench BenchmarkInvokeHTTP -benchmem -count 6
func BenchmarkInvokeHTTP(b *testing.B) {
	cfg := app.Config{Addr: "127.0.0.1:0", Data: b.TempDir(), LogLevel: "error"}
	if u := os.Getenv("PROSE_TEST_POSTGRES_URL"); u != "" {
		st, err := backend.Open(context.Background(), u)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { st.Close() })
		cfg.Store = st
	}
	a, init := newBenchApp(b, cfg)
	post := func(w http.ResponseWriter, path string, body []byte) {
		req := &http.Request{
			Method: http.MethodPost, URL: &url.URL{Path: path}, RequestURI: path,
			Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, Host: "bench", RemoteAddr: "127.0.0.1:1234",
			Header: http.Header{"Authorization": {"Bearer " + init.APIKey}, "Content-Type": {"application/json"},
				"Content-Length": {strconv.Itoa(len(body))}, "Accept-Encoding": {"gzip"}, "User-Agent": {"Go-http-client/1.1"}},
			Body: io.NopCloser(bytes.NewReader(body)), ContentLength: int64(len(body)),
		}
		a.HTTP.ServeHTTP(w, req.WithContext(context.Background()))
	}
	// The automation, created as prose-load creates it.
	body, _ := json.Marshal(map[string]any{"display_name": "load", "english_code": loadprog.Short})
	rec := &recordWriter{benchWriter: benchWriter{h: http.Header{}}}
	post(rec, "/api/v1/organizations/"+init.OrganizationID+"/workspaces/"+init.WorkspaceID+"/automations", body)
	var auto struct{ Name string }
	if err := json.Unmarshal(rec.buf.Bytes(), &auto); err != nil || rec.status != http.StatusOK || auto.Name == "" {
		b.Fatalf("create the automation: status %d, %s", rec.status, rec.buf.String())
	}
	path := "/api/v1/" + auto.Name + ":invoke"
	var next atomic.Int64
	invoke := func(w *benchWriter) {
		body := []byte(`{"stage":"AUTOMATION_STAGE_DRAFT","request_id":"bench-` + strconv.FormatInt(next.Add(1), 10) + `"}`)
		clear(w.h)
		w.status, w.n = 0, 0
		post(w, path, body)
		if w.status != http.StatusOK || w.n == 0 {
			b.Errorf("POST %s: status %d, %d bytes", path, w.status, w.n)
		}
	}
	invoke(&benchWriter{h: http.Header{}})
	b.ReportAllocs()
	b.SetParallelism(max(1, 32/runtime.GOMAXPROCS(0))) // 32 goroutines, as prose-load's connections
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		w := &benchWriter{h: http.Header{}}
		for pb.Next() {
			invoke(w)
		}
	})
}

// recordWriter is a benchWriter that keeps the body.
type recordWriter struct {
	benchWriter
	buf bytes.Buffer
}

func (w *recordWriter) Write(b []byte) (int, error) {
	w.buf.Write(b)
	return w.benchWriter.Write(b)
}
