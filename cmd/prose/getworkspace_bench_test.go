package main

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"runtime"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"

	"github.com/proserun/prose/gateway"
	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/internal/bare"
	"github.com/proserun/prose/server/app"
	"github.com/proserun/prose/server/testenv"
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

// newBenchApp is the server prose serve builds from cfg, closed when b
// ends, with an organization, a workspace and an API key made as prose init
// makes them.
func newBenchApp(b *testing.B, cfg app.Config) (*app.App, app.InitResult) {
	b.Helper()
	a, err := app.New(context.Background(), cfg, slog.New(slog.DiscardHandler), io.Discard)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(a.Close)
	init, err := app.Bootstrap(context.Background(), a.Store, app.InitOptions{Organization: "Bench", Email: "bench@example.test", Workspace: "Ops"})
	if err != nil {
		b.Fatal(err)
	}
	return a, init
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
	cfg := app.Config{Addr: "127.0.0.1:0", Data: b.TempDir(), LogLevel: "error"}
	a, init := newBenchApp(b, cfg)
	path := "/api/v1/organizations/" + init.OrganizationID + "/workspaces/" + init.WorkspaceID
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
		a.HTTP.ServeHTTP(w, req)
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

// BenchmarkGetWorkspaceGRPC: WorkspaceService/GetWorkspace with an API key
// over a real loopback gRPC connection (client in the same process, one
// connection, 32 calls at a time as ghz -c32 makes them), against:
//
//   - prose: the server as prose serve serves it (gateway.Serve on one
//     port: net/http's HTTP/2 server, the shared port's admission and
//     message-length checks, grpc.Server.ServeHTTP, the interceptor chain,
//     the service, the store's cached read);
//   - prose-grpc-only: the gRPC-only port of prose serve --grpc-addr, as
//     serve builds it (chain.Options.GRPCOnly: the same chain and
//     services on grpc-go's own transport, gateway.WithNativeGRPC) and
//     served by the same gateway.Serve call as the shared port;
//   - bare: the bare grpc-go server of cmd/prose-bare (internal/bare: no
//     interceptor, grpc-go's own transport) answering the same message
//     after the same header check.
//
// ns/op is wall time per call with every call in flight on GOMAXPROCS
// cores, client included; cpu-ns/op is the process's CPU time (user +
// system) per call, client included, which other work on the machine
// disturbs less. Compare prose with bare (issue 13's gRPC figure is
// bare's ns/op ÷ prose's), not either alone. B/op and allocs/op count the client's
// allocations too (the same client for both). On SQLite.
//
//	go test ./cmd/prose -run '^$' -bench BenchmarkGetWorkspaceGRPC -benchmem -count 6
func BenchmarkGetWorkspaceGRPC(b *testing.B) {
	cfg := app.Config{Addr: "127.0.0.1:0", GRPCAddr: "127.0.0.1:0", Data: b.TempDir(), LogLevel: "error"}
	a, init := newBenchApp(b, cfg)
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)
	// Both ports of prose serve --grpc-addr, served as serveCmd serves them.
	onlyLis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	onlyAddr := onlyLis.Addr().String()
	proseAddr := benchListen(b, func(lis net.Listener) {
		_ = gateway.Serve(ctx, lis, a.GRPC, a.HTTP, slog.New(slog.DiscardHandler), append(a.ServeOptions(), gateway.WithNativeGRPC(onlyLis, a.GRPCOnly))...)
	})
	req := &platformv1.GetWorkspaceRequest{OrganizationId: init.OrganizationID, WorkspaceId: init.WorkspaceID}
	callCtx := metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer "+init.APIKey)
	ws, err := platformv1.NewWorkspaceServiceClient(benchConn(b, proseAddr)).GetWorkspace(callCtx, req)
	if err != nil {
		b.Fatal(err)
	}
	bs := grpc.NewServer()
	bare.RegisterWorkspaces(bs, ws, init.APIKey)
	bareAddr := benchListen(b, func(lis net.Listener) { _ = bs.Serve(lis) })
	b.Cleanup(bs.Stop)

	for _, c := range []struct{ name, addr string }{{"prose", proseAddr}, {"prose-grpc-only", onlyAddr}, {"bare", bareAddr}} {
		b.Run(c.name, func(b *testing.B) {
			client := platformv1.NewWorkspaceServiceClient(benchConn(b, c.addr))
			got, err := client.GetWorkspace(callCtx, req)
			if err != nil {
				b.Fatal(err)
			}
			if !proto.Equal(got, ws) {
				b.Fatalf("%s answers %v, want %v", c.name, got, ws)
			}
			b.ReportAllocs()
			b.SetParallelism(max(1, 32/runtime.GOMAXPROCS(0)))
			b.ResetTimer()
			cpu0 := testenv.ProcessCPU()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := client.GetWorkspace(callCtx, req); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.ReportMetric(float64(testenv.ProcessCPU()-cpu0)/float64(b.N), "cpu-ns/op")
		})
	}
}

// benchListen serves on a loopback port with serve (in a goroutine, until
// the benchmark ends) and returns its address.
func benchListen(b *testing.B, serve func(net.Listener)) string {
	b.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	done := make(chan struct{})
	go func() { defer close(done); serve(lis) }()
	b.Cleanup(func() { _ = lis.Close(); <-done })
	return lis.Addr().String()
}

// benchConn is a plaintext gRPC client connection to addr, closed when the
// benchmark ends.
func benchConn(b *testing.B, addr string) *grpc.ClientConn {
	b.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = conn.Close() })
	return conn
}
