// Package app assembles the service of `prose serve` from its parts (the
// store, the books, the engine, the services, gRPC and the HTTP gateway
// with the console): cmd/prose parses the flags into a Config and calls
// New; tests (server/testenv) build the same service.
package app

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/health"

	"github.com/proserun/prose/gateway"
	"github.com/proserun/prose/internal/books"
	"github.com/proserun/prose/internal/console"
	"github.com/proserun/prose/internal/engine"
	"github.com/proserun/prose/internal/engine/outbound"
	"github.com/proserun/prose/internal/engine/schedule"
	"github.com/proserun/prose/internal/metrics"
	"github.com/proserun/prose/server"
	"github.com/proserun/prose/server/transport/admission"
	"github.com/proserun/prose/server/transport/limits"
	"github.com/proserun/prose/store"
)

// App is the assembled service: the gRPC server with every service registered,
// and the HTTP gateway that calls it through the in-process channel (chain.Local).
type App struct {
	Services server.Services
	GRPC     *grpc.Server
	// GRPCOnly is the gRPC-only server of --grpc-addr (nil without it):
	// GRPC's chain and services on grpc-go's own transport.
	GRPCOnly *grpc.Server
	HTTP     http.Handler
	Store    store.Store
	Engine   *engine.Engine
	Hub      *console.Hub // wakes the console's live pages
	Console  *console.Console
	// Scheduler starts the runs of schedules (its loop runs with the engine).
	Scheduler *schedule.Scheduler
	// Dispatcher sends the outbound webhooks' deliveries.
	Dispatcher *outbound.Dispatcher
	// Messages keeps the message triggers' subscriptions.
	Messages *server.MessageTriggers
	// Conns keeps the workspaces' book connections.
	Conns *books.Connections
	// StopEngine stops the engine and waits for it; it is safe to call twice.
	StopEngine func()
	// Bootstrap is set when New initialised an empty store (organization,
	// owner, workspace, API key); the key was printed once to stderr.
	Bootstrap *InitResult
	// Files reads the server's own files for the books (ownFile).
	Files *server.FileService
	// admission bounds the native gRPC uploads in flight (--max-grpc-uploads).
	admission *admission.Admission
	// health is the gRPC health service: SERVING for "" and every service
	// until BeginShutdown.
	health          *health.Server
	shuttingDown    atomic.Bool
	shutdownTimeout time.Duration
	logger          *slog.Logger
	// Registry holds the work's metrics (work).
	Registry *prometheus.Registry
	Work     *metrics.Work
	closers  []func() error
}

// ServeOptions are gateway.Serve's options for the app: the gRPC calls of
// the shared port go through the same admission as the gRPC server's own,
// and the first message of each is refused before it is read when it is
// over its method's bound (limits.RequestSizeError).
func (a *App) ServeOptions() []gateway.ServeOption {
	return []gateway.ServeOption{gateway.WithShutdownTimeout(a.shutdownTimeout), gateway.WithGRPCAdmission(a.admission.Tap),
		gateway.WithGRPCMessageLimit(limits.RequestSizeError)}
}

// ownFile reads a file of this server by its signed download URL
// (books.BuiltinOptions.OwnFile): the books read the files given to runs
// without a network call, so that a server on a private address reads
// them with private networks refused.
func (a *App) ownFile(ctx context.Context, rawURL string) ([]byte, bool, error) {
	u, perr := url.Parse(rawURL)
	if perr != nil || a.Files == nil || !strings.HasPrefix(u.Path, server.SignedDownloadPath) {
		return nil, false, nil //nolint:nilerr // not a URL of ours: the caller downloads it (and reports a bad URL)
	}
	// The token, without the file name segment that may follow it.
	tok, _, _ := strings.Cut(strings.TrimPrefix(u.Path, server.SignedDownloadPath), "/")
	_, data, err := a.Files.DownloadSigned(ctx, tok)
	if err != nil {
		return nil, true, err
	}
	return data, true, nil
}

// BeginShutdown stops this replica taking work: every gRPC health status
// NOT_SERVING, /readyz 503, and the engine handing its runs in flight back
// (in the background; Close waits for it). Requests in flight go on.
func (a *App) BeginShutdown() {
	a.shuttingDown.Store(true)
	a.health.Shutdown()
	go a.StopEngine()
}

// Readyz answers 200 when this replica takes work: not shutting down and
// its store answers (within 2s); 503 with the reason otherwise.
func (a *App) Readyz(w http.ResponseWriter, r *http.Request, _ map[string]string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	if a.shuttingDown.Load() {
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = io.WriteString(w, `{"status":"shutting_down"}`+"\n")
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	if err := a.Store.Ping(ctx); err != nil {
		a.logger.Warn("readyz: the store does not answer", "err", err)
		w.WriteHeader(http.StatusServiceUnavailable)
		b, _ := json.Marshal(map[string]string{"status": "unavailable", "store": err.Error()})
		_, _ = w.Write(append(b, '\n'))
		return
	}
	_, _ = io.WriteString(w, `{"status":"ok","store":"ok"}`+"\n")
}

// Livez answers 200 while the process serves HTTP at all.
func Livez(w http.ResponseWriter, _ *http.Request, _ map[string]string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = io.WriteString(w, `{"status":"ok"}`+"\n")
}

// Close stops what New started and closes what it opened, last first.
func (a *App) Close() {
	for i := len(a.closers) - 1; i >= 0; i-- {
		if err := a.closers[i](); err != nil {
			fmt.Fprintln(os.Stderr, "close:", err)
		}
	}
}
