package main

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dustin/go-humanize"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/reflect/protoregistry"

	"github.com/proserun/prose/books"
	"github.com/proserun/prose/console"
	"github.com/proserun/prose/engine"
	"github.com/proserun/prose/engine/outbound"
	"github.com/proserun/prose/engine/schedule"
	"github.com/proserun/prose/gateway"
	"github.com/proserun/prose/gen/openapi"
	bookv1 "github.com/proserun/prose/gen/prose/book/v1"
	"github.com/proserun/prose/lang"
	"github.com/proserun/prose/logctx"
	"github.com/proserun/prose/metrics"
	"github.com/proserun/prose/names"
	"github.com/proserun/prose/netguard"
	"github.com/proserun/prose/server"
	"github.com/proserun/prose/server/transport"
	"github.com/proserun/prose/store"
	"github.com/proserun/prose/tracing"
)

type serveConfig struct {
	addr string
	// grpcAddr, when set, is a gRPC-only port served by grpc-go's own
	// transport (transport.Options.GRPCOnly), beside addr.
	grpcAddr string
	// grpcHandshakeTimeout replaces the gRPC-only port's handshake timeout
	// (transport.GRPCOnlyHandshakeTimeout) when positive; no flag: tests
	// shorten it.
	grpcHandshakeTimeout time.Duration
	data                 string
	database             string
	logLevel             string
	logFormat            string
	// publicURL is the public origin for signed file URLs ("": the request's).
	publicURL string
	// lease is the engine's run lease (0: engine default); books is a JSON
	// file of workspace books registered at start.
	lease time.Duration
	// workers bounds the runs this replica executes at once (0: engine
	// default).
	workers int
	books   string
	// pprof, when set, is an address serving net/http/pprof (profiling).
	pprof string
	// maxUploads bounds the file uploads in flight (0: gateway default);
	// bodyReadTimeout the time to read a request body (0: gateway default).
	maxUploads int
	uploadWait time.Duration
	// maxGRPCUploads bounds the native gRPC uploads in flight (0: the
	// server's default).
	maxGRPCUploads  int
	bodyReadTimeout time.Duration
	// limits bound each run (lang.Limits); timeSlice is the engine's
	// (engine.Options.TimeSlice); maxLostLeases is the store's
	// (store.Options.MaxLostLeases). Zero: the defaults.
	limits        limitFlags
	timeSlice     time.Duration
	maxLostLeases int
	// inlineWindow is engine.Options.InlineWindow (zero: the default).
	inlineWindow time.Duration
	// maxGuidedPerRun is engine.Options.MaxGuidedPerRun (zero: the default).
	maxGuidedPerRun int
	// history bounds what the engine records of each run's history
	// (engine.Options.History; zero fields: the defaults).
	history engine.HistoryLimits
	// maxEventMessage caps a user message's bytes (0: the server's
	// default); eventPoll is an idle event stream's safety re-read (0: the
	// default; negative: never).
	maxEventMessage int
	eventPoll       time.Duration
	// sizes are the sizes the server accepts (zero fields: the defaults).
	sizes store.Sizes
	// sessionTTL is how long a web console session lasts (0: the console's
	// default).
	sessionTTL time.Duration
	// scheduleCatchUp: see schedule.Options.CatchUp (0: the default).
	scheduleCatchUp time.Duration
	// clock is the scheduler's and the schedule service's (nil: time.Now;
	// tests pass a fake one).
	clock func() time.Time
	// sessionClock is the console's and the authenticator's clock: console
	// sessions start and expire on it, API keys expire on it (nil:
	// time.Now; tests move one by hand instead of sleeping past an end).
	sessionClock func() time.Time
	// triggerRate bounds each trigger instance's events per replica
	// (server.TriggerRate).
	triggerRate server.TriggerRate
	// allowPrivateNetworks lets the books, file downloads and outbound
	// webhooks reach addresses that are not public (netguard): loopback,
	// private networks, cloud metadata. Off by default.
	allowPrivateNetworks bool
	// webhookBackoff is the first retry's wait of a failed webhook delivery
	// (0: outbound.DefaultBaseBackoff).
	webhookBackoff time.Duration
	// secretKeysFile holds the keys that seal connection credentials
	// (base64, separated by commas or new lines; the first seals). Empty:
	// PROSE_SECRET_KEYS, else the key the store made at its first start.
	secretKeysFile string
	// model configures the model-backed agent (URL "": none).
	model modelFlags
	// tlsCert and tlsKey serve TLS on addr (both or neither); read again
	// when the files change.
	tlsCert, tlsKey string
	// tlsClientCA, when set, asks every client for a certificate signed by
	// one of the file's CAs (mutual TLS; needs tlsCert).
	tlsClientCA string
	// tlsConfig is the TLS of both ports, made by serveCmd from the flags
	// above (nil: plain).
	tlsConfig *tls.Config
	// tracerProvider, when set, traces requests (otelgrpc, otelhttp) and
	// runs (the engine's spans); nil: tracing off. serveCmd sets it from
	// the OTEL_ variables (tracing.Setup); tests pass an in-memory one.
	tracerProvider trace.TracerProvider
	// metricsAutomations: see metrics.Options.MaxAutomations.
	metricsAutomations int
	// shutdownTimeout bounds the drain of a shutdown (SIGTERM): requests in
	// flight, and runs in flight reaching their next statement to be
	// handed back.
	shutdownTimeout time.Duration

	// outer are interceptor entries before the chain (tests use them to
	// observe calls, over both transports).
	outer []transport.Middleware
	// store, when set, is used instead of opening --data / --database (tests
	// share one PostgreSQL database this way); the caller closes it.
	store store.Store
}

// serveFlags defines serve's flags on fs, into cfg.
// Their values may also come from the environment and a config file
// (applyEnvAndConfig).
func serveFlags(fs *flag.FlagSet, cfg *serveConfig) {
	fs.String(ConfigFlag, "", "config file of flag values (YAML, or TOML if it ends in .toml; the flag names as keys)")
	fs.StringVar(&cfg.addr, "addr", "127.0.0.1:8080", "address to listen on (gRPC and HTTP)")
	fs.StringVar(&cfg.grpcAddr, "grpc-addr", "", "also serve gRPC alone on this address (HOST:PORT) with grpc-go's own transport: about half the CPU per call of gRPC on --addr, for gRPC-heavy clients; the same services, keys, TLS and limits, except that every request message there is bounded to 8 MiB (larger file uploads go to --addr). Default: none")
	fs.StringVar(&cfg.data, "data", "./prose-data", "data directory of the embedded SQLite database")
	fs.StringVar(&cfg.database, "database", "", "a postgres://… URL; overrides --data")
	fs.StringVar(&cfg.publicURL, "public-url", "", "public origin of the HTTP side (https://prose.example.com), for signed file URLs; default: the request's host")
	fs.StringVar(&cfg.logLevel, "log-level", "info", "debug, info, warn or error")
	fs.DurationVar(&cfg.lease, "lease", 0, "how long a worker's lease on a run lasts without renewal (renewed every third); a run of a dead replica is taken over after it (default 30s)")
	fs.IntVar(&cfg.workers, "workers", 0, "runs this replica executes at once (default: 4 per CPU on SQLite; 32 per CPU on PostgreSQL, where a run mostly waits for the database)")
	fs.StringVar(&cfg.books, "books", "", `JSON file of workspace books to register at start: [{"workspace": "organizations/{o}/workspaces/{w}", "book": {…}}] (kept in memory by this process, over the books registered through the API, which are stored)`)
	fs.IntVar(&cfg.maxUploads, "max-uploads", gateway.DefaultMaxUploads, "file uploads read at once (each holds its file in memory a few times over); more wait (--upload-wait), then 503 with Retry-After; -1: no bound")
	fs.IntVar(&cfg.maxGRPCUploads, "max-grpc-uploads", transport.DefaultMaxLargeRequests, "native gRPC file uploads (UploadFile, up to 64 MiB each) received at once; more are refused at once with RESOURCE_EXHAUSTED UPLOADS_BUSY before their message is read; -1: no bound")
	fs.DurationVar(&cfg.uploadWait, "upload-wait", gateway.DefaultUploadWait, "how long an upload waits for a slot when --max-uploads are in flight (its body unread) before 503; -1ns: no wait")
	fs.DurationVar(&cfg.bodyReadTimeout, "body-read-timeout", gateway.DefaultBodyReadTimeout, "time to read a request body; a slower one is cut with 408; -1ns: none")
	fs.StringVar(&cfg.tlsCert, "tls-cert", "", "PEM certificate (chain) file: serve HTTPS and gRPC over TLS on --addr and --grpc-addr (with --tls-key); read again when the file changes. Default: plain HTTP and h2c, for loopback")
	fs.StringVar(&cfg.tlsKey, "tls-key", "", "PEM private key file of --tls-cert")
	fs.StringVar(&cfg.tlsClientCA, "tls-client-ca", "", "PEM file of the CA certificates of the clients: every client (gRPC and HTTP) must show a certificate one of them signed (mutual TLS; needs --tls-cert). Default: no client certificates")
	fs.DurationVar(&cfg.shutdownTimeout, "shutdown-timeout", 15*time.Second, "on SIGTERM or SIGINT, how long requests in flight may take to finish, and runs in flight to reach their next statement and go back to the queue (for another replica at once), before the rest is cut")
	fs.StringVar(&cfg.logFormat, "log-format", logctx.FormatAuto, "auto (text on a terminal, JSON lines otherwise), text or json")
	fs.IntVar(&cfg.metricsAutomations, "metrics-automations", metrics.DefaultMaxAutomations, "automations named (by id) in the automation label of the run metrics, the first ones this process sees; later ones count under \"other\" (bounds the series /metrics exports); -1: none")
	fs.StringVar(&cfg.pprof, "pprof", "", "serve net/http/pprof on this address (127.0.0.1:6060), for profiling; off by default")
	cfg.limits.register(fs)
	fs.IntVar(&cfg.maxGuidedPerRun, "max-guided-per-run", 0, fmt.Sprintf("the most exceptions approved guide entries resolve in one run; past it the run waits for a person (default %d; -1: guide entries never apply)", engine.DefaultMaxGuidedPerRun))
	fs.DurationVar(&cfg.inlineWindow, "inline-window", 0, fmt.Sprintf("how long an invoke may execute a run itself, on a free worker, before creating it: a run that ends within it without calling a book is created completed or failed (default %s; -1ns: never)", engine.DefaultInlineWindow))
	fs.IntVar(&cfg.history.MaxEvents, "max-history-events", 0, fmt.Sprintf("entries the engine records in one run's history (says, book calls, runs started; states and exceptions are always recorded); past it one entry says the history stops (default %d; -1: no limit)", engine.DefaultMaxHistoryEvents))
	fs.Var(sizeFlag{&cfg.history.MaxEventBytes}, "max-history-event-bytes", fmt.Sprintf("size of one entry of a run's history: a longer say line is cut, a book call's larger inputs and outputs are left out (default %s)", humanize.IBytes(engine.DefaultMaxHistoryEventBytes)))
	fs.DurationVar(&cfg.timeSlice, "time-slice", 0, fmt.Sprintf("how long a run executes before it gives its worker up when every worker is busy and other runs wait (default %s; -1ns: never)", engine.DefaultTimeSlice))
	fs.IntVar(&cfg.maxLostLeases, "max-lost-leases", 0, fmt.Sprintf("times in a row a run's worker may die while executing it before the run fails with an internal error (default %d)", store.DefaultMaxLostLeases))
	fs.IntVar(&cfg.maxEventMessage, "max-event-message-bytes", 0, "largest message (a user's content or content_list, an agent's content) an event may carry, in bytes (default and most: the size of an event, --max-event-bytes); larger ones are INVALID_ARGUMENT")
	registerSizeFlags(fs, &cfg.sizes)
	fs.DurationVar(&cfg.eventPoll, "event-stream-poll", server.DefaultEventStreamPoll, "how often an idle event stream re-reads its thread after its last offset, in case a wake-up was lost (new events are pushed at once; negative: never)")
	fs.DurationVar(&cfg.sessionTTL, "session-ttl", console.DefaultSessionTTL, "how long a web console session lasts after sign-in")
	fs.DurationVar(&cfg.scheduleCatchUp, "schedule-catch-up", schedule.DefaultCatchUp, "how late a schedule's occurrence missed while no server ran still starts its run (only the latest missed one does); negative: never")
	fs.Float64Var(&cfg.triggerRate.PerSecond, "trigger-rate", server.DefaultTriggerRate, "events a second each trigger instance (webhook or message) starts runs for on this server; a webhook delivery over it is 429 with Retry-After, a message waits for its turn; -1: no bound")
	fs.IntVar(&cfg.triggerRate.Burst, "trigger-burst", server.DefaultTriggerBurst, "events of one trigger instance taken at once above --trigger-rate")
	fs.BoolVar(&cfg.allowPrivateNetworks, "allow-private-networks", false, "let the books (http calls, file downloads, mail and database servers) and outbound webhooks reach addresses that are not public: loopback, private networks (10/8, 172.16/12, 192.168/16, fc00::/7), link-local (cloud metadata at 169.254.169.254) and other reserved ranges. Off: such a connection is refused when dialled")
	cfg.model.register(fs)
	fs.StringVar(&cfg.secretKeysFile, "secret-keys-file", "", "file of the keys that seal connection credentials (base64 32-byte keys, separated by commas or new lines; the first seals, the others only open: rotation). Default: $PROSE_SECRET_KEYS, else a key the database keeps, made at its first start")
}

func serveCmd(ctx context.Context, args []string, _ io.Reader, _, stderr io.Writer) int {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cfg serveConfig
	serveFlags(fs, &cfg)
	fs.Usage = flagUsageWithEnv(fs, "serve")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "serve: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	if err := applyEnvAndConfig(fs, nil, os.Getenv); err != nil {
		fmt.Fprintf(stderr, "serve: %v\n", err)
		return 2
	}
	if (cfg.tlsCert == "") != (cfg.tlsKey == "") {
		fmt.Fprintln(stderr, "serve: --tls-cert and --tls-key go together")
		return 2
	}
	if cfg.tlsClientCA != "" && cfg.tlsCert == "" {
		fmt.Fprintln(stderr, "serve: --tls-client-ca needs --tls-cert and --tls-key (mutual TLS is TLS)")
		return 2
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(cfg.logLevel)); err != nil {
		fmt.Fprintf(stderr, "serve: bad --log-level: %v\n", err)
		return 2
	}
	if !logctx.ValidFormat(cfg.logFormat) {
		fmt.Fprintf(stderr, "serve: bad --log-format %q: auto, text or json\n", cfg.logFormat)
		return 2
	}
	logger := logctx.New(stderr, cfg.logFormat, level)

	tp, err := tracing.Setup(ctx, os.Getenv, server.Version)
	if err != nil {
		logger.Error("tracing", "err", err)
		return 1
	}
	if tp != nil {
		cfg.tracerProvider = tp
		logger.Info("tracing: exporting spans by OTLP")
		defer func() {
			sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := tp.Shutdown(sctx); err != nil {
				logger.Warn("tracing: flush", "err", err)
			}
		}()
	}
	scheme := "http"
	if cfg.tlsCert != "" {
		certs, err := gateway.NewCertReloader(cfg.tlsCert, cfg.tlsKey, logger)
		if err != nil {
			logger.Error("tls", "err", err)
			return 1
		}
		tlsCfg := certs.TLSConfig()
		if cfg.tlsClientCA != "" {
			pool, err := gateway.LoadCAPool(cfg.tlsClientCA)
			if err != nil {
				logger.Error("tls", "err", err)
				return 1
			}
			tlsCfg.ClientCAs, tlsCfg.ClientAuth = pool, tls.RequireAndVerifyClientCert
		}
		cfg.tlsConfig = tlsCfg
		scheme = "https"
	}
	app, err := newApp(ctx, cfg, logger, stderr)
	if err != nil {
		logger.Error("start", "err", err)
		return 1
	}
	defer app.Close()

	opts := app.serveOptions()
	if cfg.tlsConfig != nil {
		opts = append(opts, gateway.WithTLS(cfg.tlsConfig))
	}
	lis, err := net.Listen("tcp", cfg.addr)
	if err != nil {
		logger.Error("listen", "addr", cfg.addr, "err", err)
		return 1
	}
	if scheme == "http" && !isLoopback(lis.Addr()) {
		logger.Warn("serving plain HTTP and h2c on a non-loopback address: API keys cross the network in clear; give --tls-cert and --tls-key, or terminate TLS in front", "addr", lis.Addr().String())
	}
	if cfg.grpcAddr != "" {
		glis, err := net.Listen("tcp", cfg.grpcAddr)
		if err != nil {
			_ = lis.Close()
			logger.Error("listen", "grpc_addr", cfg.grpcAddr, "err", err)
			return 1
		}
		if scheme == "http" && !isLoopback(glis.Addr()) {
			logger.Warn("serving plain gRPC on a non-loopback address: API keys cross the network in clear; give --tls-cert and --tls-key", "addr", glis.Addr().String())
		}
		opts = append(opts, gateway.WithNativeGRPC(glis, app.grpcOnly))
		// Before "serving": whoever waits for that line finds both ports.
		logger.Info("serving gRPC only", "addr", glis.Addr().String(), "tls", scheme == "https", "max_request_bytes", transport.GRPCOnlyMaxRequestBytes)
	}
	// SIGTERM: this replica stops taking work at once (health NOT_SERVING,
	// /readyz 503, the engine hands its runs back) while gateway.Serve
	// drains the requests in flight.
	go func() {
		<-ctx.Done()
		logger.Info("shutting down", "timeout_ms", cfg.shutdownTimeout.Milliseconds())
		app.beginShutdown()
	}()
	if cfg.pprof != "" {
		if err := servePprof(ctx, cfg.pprof, logger); err != nil {
			logger.Error("pprof", "addr", cfg.pprof, "err", err)
			return 1
		}
	}
	if app.bootstrap != nil {
		// The owner's first way into the web console.
		base := cfg.publicURL
		if base == "" {
			base = scheme + "://" + lis.Addr().String()
		}
		token, err := console.CreateLink(ctx, app.store, app.bootstrap.orgID, app.bootstrap.userID, 0, time.Now())
		if err != nil {
			logger.Error("sign-in link", "err", err)
			return 1
		}
		fmt.Fprintf(stderr, "Open the web console and sign in with this one-time link (or later: prose login-link):\n%s\n", console.LinkURL(base, token))
	}
	logger.Info("serving", "addr", lis.Addr().String(), "version", server.Version, "tls", scheme == "https")
	if err := gateway.Serve(ctx, lis, app.grpc, app.http, logger, opts...); err != nil && !errors.Is(err, http.ErrServerClosed) {
		logger.Error("serve", "err", err)
		return 1
	}
	logger.Info("stopped")
	return 0
}

// app is the assembled service: the gRPC server with every service registered,
// and the HTTP gateway that calls it through the in-process channel (transport.Local).
type app struct {
	services server.Services
	grpc     *grpc.Server
	// grpcOnly is the gRPC-only server of --grpc-addr (nil without it):
	// grpc's chain and services on grpc-go's own transport.
	grpcOnly *grpc.Server
	http     http.Handler
	store    store.Store
	engine   *engine.Engine
	hub      *console.Hub // wakes the console's live pages
	console  *console.Console
	// scheduler starts the runs of schedules (its loop runs with the engine).
	scheduler *schedule.Scheduler
	// dispatcher sends the outbound webhooks' deliveries.
	dispatcher *outbound.Dispatcher
	// messages keeps the message triggers' subscriptions.
	messages *server.MessageTriggers
	// conns keeps the workspaces' book connections.
	conns *books.Connections
	// stopEngine stops the engine and waits for it; it is safe to call twice.
	stopEngine func()
	// bootstrap is set when newApp initialised an empty store (organization,
	// owner, workspace, API key); the key was printed once to stderr.
	bootstrap *initResult
	// files reads the server's own files for the books (ownFile).
	files *server.FileService
	// admission bounds the native gRPC uploads in flight (--max-grpc-uploads).
	admission *transport.Admission
	// health is the gRPC health service: SERVING for "" and every service
	// until beginShutdown.
	health          *health.Server
	shuttingDown    atomic.Bool
	shutdownTimeout time.Duration
	logger          *slog.Logger
	// registry holds the work's metrics (work).
	registry *prometheus.Registry
	work     *metrics.Work
	closers  []func() error
}

// serveOptions are gateway.Serve's options for the app: the gRPC calls of
// the shared port go through the same admission as the gRPC server's own,
// and the first message of each is refused before it is read when it is
// over its method's bound (transport.RequestSizeError).
func (a *app) serveOptions() []gateway.ServeOption {
	return []gateway.ServeOption{gateway.WithShutdownTimeout(a.shutdownTimeout), gateway.WithGRPCAdmission(a.admission.Tap),
		gateway.WithGRPCMessageLimit(transport.RequestSizeError)}
}

// ownFile reads a file of this server by its signed download URL
// (books.BuiltinOptions.OwnFile): the books read the files given to runs
// without a network call, so that a server on a private address reads
// them with private networks refused.
func (a *app) ownFile(ctx context.Context, rawURL string) ([]byte, bool, error) {
	u, perr := url.Parse(rawURL)
	if perr != nil || a.files == nil || !strings.HasPrefix(u.Path, server.SignedDownloadPath) {
		return nil, false, nil //nolint:nilerr // not a URL of ours: the caller downloads it (and reports a bad URL)
	}
	// The token, without the file name segment that may follow it.
	tok, _, _ := strings.Cut(strings.TrimPrefix(u.Path, server.SignedDownloadPath), "/")
	_, data, err := a.files.DownloadSigned(ctx, tok)
	if err != nil {
		return nil, true, err
	}
	return data, true, nil
}

// beginShutdown stops this replica taking work: every gRPC health status
// NOT_SERVING, /readyz 503, and the engine handing its runs in flight back
// (in the background; Close waits for it). Requests in flight go on.
func (a *app) beginShutdown() {
	a.shuttingDown.Store(true)
	a.health.Shutdown()
	go a.stopEngine()
}

// isLoopback reports whether addr is a loopback address.
func isLoopback(addr net.Addr) bool {
	ta, ok := addr.(*net.TCPAddr)
	return ok && ta.IP.IsLoopback()
}

// readyz answers 200 when this replica takes work: not shutting down and
// its store answers (within 2s); 503 with the reason otherwise.
func (a *app) readyz(w http.ResponseWriter, r *http.Request, _ map[string]string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	if a.shuttingDown.Load() {
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = io.WriteString(w, `{"status":"shutting_down"}`+"\n")
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	if err := a.store.Ping(ctx); err != nil {
		a.logger.Warn("readyz: the store does not answer", "err", err)
		w.WriteHeader(http.StatusServiceUnavailable)
		b, _ := json.Marshal(map[string]string{"status": "unavailable", "store": err.Error()})
		_, _ = w.Write(append(b, '\n'))
		return
	}
	_, _ = io.WriteString(w, `{"status":"ok","store":"ok"}`+"\n")
}

// livez answers 200 while the process serves HTTP at all.
func livez(w http.ResponseWriter, _ *http.Request, _ map[string]string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = io.WriteString(w, `{"status":"ok"}`+"\n")
}

func (a *app) Close() {
	for i := len(a.closers) - 1; i >= 0; i-- {
		if err := a.closers[i](); err != nil {
			fmt.Fprintln(os.Stderr, "close:", err)
		}
	}
}

func newApp(ctx context.Context, cfg serveConfig, logger *slog.Logger, stderr io.Writer) (*app, error) {
	if err := cfg.sizes.Validate(); err != nil {
		return nil, err
	}
	a := &app{shutdownTimeout: cfg.shutdownTimeout, logger: logger, health: health.NewServer()}
	if a.shutdownTimeout <= 0 {
		a.shutdownTimeout = 15 * time.Second
	}
	st := cfg.store
	if st == nil {
		var err error
		if st, err = openStore(ctx, cfg.data, cfg.database, store.WithMaxLostLeases(cfg.maxLostLeases), store.WithPageBytes(cfg.sizes.PageBytes)); err != nil {
			return nil, fmt.Errorf("store: %w", err)
		}
		a.closers = append(a.closers, st.Close)
	} else if ps, ok := st.(interface{ SetPageBytes(int) }); ok && cfg.sizes.PageBytes != 0 {
		// A store given by the caller (tests): its page budget is set here.
		ps.SetPageBytes(cfg.sizes.PageBytes)
	}
	a.store = st
	ids, err := organizationIDs(ctx, st, 1)
	if err != nil {
		a.Close()
		return nil, fmt.Errorf("store: %w", err)
	}
	if len(ids) == 0 {
		// An empty store: make the first organization and print its key once.
		r, err := bootstrap(ctx, st, initOptions{})
		if err != nil {
			a.Close()
			return nil, fmt.Errorf("initialise: %w", err)
		}
		a.bootstrap = &r
		fmt.Fprintf(stderr, "Initialised an empty store. This API key is shown once:\n")
		printInit(stderr, r, false)
	}

	auth := transport.NewKeyAuth(st, cfg.sessionClock)
	// Books registered over the API are kept in the store; those of a
	// --books file are this process's own (in memory, over the stored ones).
	fileBooks := books.NewMemoryStore()
	reg := books.NewRegistry(books.WithStore(books.Overlay{Top: fileBooks, Base: newDBBooks(st)}),
		books.WithBuiltins(books.Builtins(books.BuiltinOptions{PublicNetworkOnly: !cfg.allowPrivateNetworks, OwnFile: a.ownFile})...))
	// The built-in books are searched in the database with the registered
	// ones: their catalog is written again at every start.
	if err := reg.IndexBuiltins(ctx); err != nil {
		a.Close()
		return nil, fmt.Errorf("index the built-in books for search: %w", err)
	}
	// Books registered before the catalog existed (migration 00029) are
	// indexed once; later starts find none to index.
	n, err := newDBBooks(st).backfillCatalog(ctx, func(b store.WorkspaceBook, err error) {
		logger.Warn("a workspace book's descriptor does not decode: it is not searchable", "organization", b.OrganizationID,
			"workspace", b.WorkspaceID, "book", b.Name, "version", b.Version, "error", err)
	})
	if err != nil {
		a.Close()
		return nil, fmt.Errorf("index the workspace books registered before catalog search: %w", err)
	}
	if n > 0 {
		logger.Info("workspace books indexed for search", "count", n)
	}
	keyring, err := secretKeyring(ctx, cfg.secretKeysFile, st)
	if err != nil {
		a.Close()
		return nil, fmt.Errorf("connection secret keys: %w", err)
	}
	conns := books.NewConnections(newDBConnections(st), keyring, reg)
	conns.PublicNetworkOnly(!cfg.allowPrivateNetworks)
	a.conns = conns
	if keyring.Len() > 1 {
		// A rotation: secrets sealed by an older key are sealed again with
		// the first one, so that the older keys can then be dropped.
		n, err := conns.Rekey(ctx)
		if err != nil {
			a.Close()
			return nil, fmt.Errorf("seal connection secrets with the new key: %w", err)
		}
		logger.Info("connection secrets sealed with the first secret key", "count", n)
	}
	if cfg.books != "" {
		if err := registerBookFile(ctx, books.NewRegistry(books.WithStore(fileBooks)), cfg.books); err != nil {
			a.Close()
			return nil, fmt.Errorf("--books: %w", err)
		}
	}
	// The work's metrics, on a registry of the app's own (tests run
	// several apps in one process), served at /metrics with the default
	// registry's (the per-RPC metrics, the Go runtime's).
	a.registry = prometheus.NewRegistry()
	work, err := metrics.New(a.registry, metrics.Options{
		MaxAutomations: cfg.metricsAutomations,
		PendingRuns:    st.CountPendingRuns,
		BusyWorkers:    func() int64 { return a.engine.BusySlots() },
		Workers:        func() int { return a.engine.Workers() },
	})
	if err != nil {
		a.Close()
		return nil, fmt.Errorf("metrics: %w", err)
	}
	a.work = work
	st.OnLeasesRecovered(work.LeaseTakeovers)
	engCtx, stopEngine := context.WithCancel(context.WithoutCancel(ctx))
	engOpts := engine.Options{
		Logger:          logger,
		LeaseDuration:   cfg.lease,
		Workers:         cfg.workers,
		Limits:          cfg.limits.l,
		TimeSlice:       cfg.timeSlice,
		InlineWindow:    cfg.inlineWindow,
		MaxGuidedPerRun: cfg.maxGuidedPerRun,
		History:         cfg.history,
		Metrics:         work,
		Tracer:          tracerOf(cfg.tracerProvider),
		Books: func(org, ws string) lang.Books {
			return callIDBooks{reg.ForWorkspace(books.Workspace{OrganizationID: org, WorkspaceID: ws})}
		},
	}
	// Replicas sharing a PostgreSQL database wake each other with
	// LISTEN/NOTIFY when they make work (they also poll). A single-writer
	// database (SQLite) is served by this process alone: its engine wakes
	// itself, and notices to itself would only cost claims.
	if !st.SingleWriter() {
		// The listener lives as long as the service, not the engine: it
		// also carries the event streams' and the console's notices.
		lisCtx, stopListen := context.WithCancel(context.WithoutCancel(ctx))
		a.closers = append(a.closers, func() error { stopListen(); return nil })
		engOpts.Wakeups, engOpts.Notify = st.Listen(lisCtx), st.Notify
	}
	// The engine tells the console's live pages what changed.
	hub := console.NewHub()
	a.hub = hub
	engOpts.Changed = hub.Changed
	a.engine = engine.New(st, engOpts)
	// A pause committed on any replica reaches the one executing the run at
	// once (LISTEN/NOTIFY, carried by the engine's listener), not at its
	// next lease renewal.
	st.OnRunPause(a.engine.PauseNoticed)
	engDone := make(chan struct{})
	go func() {
		defer close(engDone)
		_ = a.engine.Run(engCtx, a.shutdownTimeout)
	}()
	a.scheduler = schedule.NewScheduler(st, a.engine, schedule.Options{Now: cfg.clock, CatchUp: cfg.scheduleCatchUp, Logger: logger, Inactive: server.AutomationInactive})
	schedDone := make(chan struct{})
	go func() {
		defer close(schedDone)
		a.scheduler.Run(engCtx)
	}()
	// Outbound webhooks: deliveries the store wrote, sent in the background.
	a.dispatcher = outbound.New(st, outbound.Options{Logger: logger, BaseBackoff: cfg.webhookBackoff,
		Client: netguard.HTTPClient(outbound.DefaultTimeout, !cfg.allowPrivateNetworks)})
	dispDone := make(chan struct{})
	go func() {
		defer close(dispDone)
		a.dispatcher.Run(engCtx)
	}()
	// Message triggers: a subscription per NATS, RabbitMQ and MQTT instance.
	a.messages = server.NewMessageTriggers(st, a.engine, logger)
	a.messages.SetRate(cfg.triggerRate)
	msgDone := make(chan struct{})
	go func() {
		defer close(msgDone)
		a.messages.Run(engCtx)
	}()
	a.stopEngine = sync.OnceFunc(func() { stopEngine(); <-msgDone; <-dispDone; <-schedDone; <-engDone })
	a.closers = append(a.closers, func() error { a.stopEngine(); return nil })
	files := server.NewFileService(st, server.FileOptions{BaseURL: cfg.publicURL})
	a.files = files
	legacyV1 := server.NewLegacyV1(st, a.engine)
	legacyV1.PublicURL = cfg.publicURL
	legacyV2 := server.NewLegacyV2Runs(st, st, a.engine)
	legacyV2.PublicURL = cfg.publicURL
	agents, err := cfg.model.agents()
	if err != nil {
		return nil, err
	}
	events := server.NewEventServiceWith(st, a.engine, server.EventOptions{Agents: agents, MaxMessageBytes: cfg.maxEventMessage, MaxEventBytes: cfg.sizes.WithDefaults().EventBytes, Poll: cfg.eventPoll})
	a.closers = append(a.closers, events.Close)
	// Replicas sharing a PostgreSQL database wake each other's event
	// streams: every event write is announced (LISTEN/NOTIFY, carried by
	// the engine's listener).
	st.OnEventChange(events.EventChanged)
	triggers := server.NewTriggerService(st)
	triggers.PublicURL = cfg.publicURL
	connSvc := server.NewConnectionService(conns, st)
	connSvc.PublicURL = cfg.publicURL
	a.services = server.Services{
		Files:         files,
		Books:         server.NewBookService(reg),
		Connections:   connSvc,
		Workspaces:    server.NewWorkspaceService(st),
		Organizations: server.NewOrganizationService(st),
		APIKeys:       server.NewApiKeyService(st, nil),
		LegacyV2:      legacyV2,
		Automations:   server.NewAutomationService(st, a.engine),
		Runs:          server.NewRunService(st, a.engine),
		RunHistory:    server.NewRunHistoryService(st, a.engine),
		LegacyV1:      legacyV1,
		Events:        events,
		Exceptions:    server.NewExceptionService(st, a.engine),
		Schedules:     server.NewScheduleService(st, cfg.clock, a.scheduler.Wake),
		Triggers:      triggers,
		Webhooks:      server.NewWebhookService(st),
		GuideEntries:  server.NewGuideEntryService(st, a.engine),
		Revisions:     server.NewRevisionService(st),
		Insights:      server.NewInsightsService(st, cfg.clock),
	}
	a.admission = transport.NewAdmission(cfg.maxGRPCUploads)
	grpcOpts := transport.MessageSizeOptions()
	if tp := cfg.tracerProvider; tp != nil {
		// A span per native gRPC call (HTTP requests get theirs below).
		grpcOpts = append(grpcOpts, grpc.StatsHandler(otelgrpc.NewServerHandler(otelgrpc.WithTracerProvider(tp), otelgrpc.WithPropagators(tracing.Propagator))))
	}
	srv := transport.NewServer(transport.Options{
		Logger:        logger,
		Authenticator: auth,
		ServerOptions: grpcOpts,
		Outer:         cfg.outer,
		// Native gRPC uploads are bounded like the HTTP ones; the gateway
		// calls the services in process and bounds its own (--max-uploads).
		Admission: a.admission,
		Sizes:     cfg.sizes,
		Health:    a.health,
		// A child span per in-process call of the gateway and the console.
		TracerProvider: cfg.tracerProvider,
		GRPCOnly:       grpcOnlyOptions(cfg),
	})
	a.grpc, a.grpcOnly = srv.GRPC, srv.GRPCOnly
	// Every service on the gRPC server and on the in-process channel the
	// gateway and the console call (one interceptor chain for both).
	a.services.Register(srv)
	// gRPC health: the server ("") and each service by its full name.
	a.health.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	for name := range srv.GRPC.GetServiceInfo() {
		a.health.SetServingStatus(name, healthpb.HealthCheckResponse_SERVING)
	}
	local := srv.Local
	doc, err := constrainedOpenAPI()
	if err == nil {
		doc, err = openapi.WithVersion(doc, server.Version)
	}
	if err != nil {
		a.Close()
		return nil, fmt.Errorf("openapi: %w", err)
	}
	mux, h, err := gateway.Mux(ctx, local, gateway.Options{
		OpenAPI: doc, Logger: logger, MaxUploads: cfg.maxUploads, UploadWait: cfg.uploadWait,
		BodyReadTimeout: cfg.bodyReadTimeout, ValueExample: plainValueJSON,
		Metrics: promhttp.HandlerFor(prometheus.Gatherers{prometheus.DefaultGatherer, a.registry}, promhttp.HandlerOpts{}),
	}, gateway.Handlers()...)
	if err != nil {
		a.Close()
		return nil, fmt.Errorf("gateway: %w", err)
	}
	// Files: signed upload and download URLs (no API key), large downloads.
	if err := gateway.HandleSignedFiles(mux, local, files, server.MaxFileBytes); err != nil {
		a.Close()
		return nil, fmt.Errorf("gateway: %w", err)
	}
	// Probes: /readyz (takes work: not shutting down, the store answers)
	// and /livez (the process serves); /healthz is the gateway's (gRPC
	// health of "").
	if err := mux.HandlePath(http.MethodGet, "/readyz", a.readyz); err != nil {
		a.Close()
		return nil, fmt.Errorf("gateway: %w", err)
	}
	if err := mux.HandlePath(http.MethodGet, "/livez", livez); err != nil {
		a.Close()
		return nil, fmt.Errorf("gateway: %w", err)
	}
	// Inbound webhooks: signed deliveries, no API key.
	hooks := server.NewWebhookHandler(st, a.engine, logger)
	hooks.SetRate(cfg.triggerRate)
	if err := mux.HandlePath(http.MethodPost, "/hooks/{organization}/{workspace}/{instance}", func(w http.ResponseWriter, r *http.Request, _ map[string]string) {
		hooks.ServeHTTP(w, r)
	}); err != nil {
		a.Close()
		return nil, fmt.Errorf("gateway: %w", err)
	}
	// OAuth: the provider sends a person back here with a code (no API key:
	// the sealed state names the connection).
	if err := mux.HandlePath(http.MethodGet, server.OAuthCallbackPath, func(w http.ResponseWriter, r *http.Request, _ map[string]string) {
		q := r.URL.Query()
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if e := q.Get("error"); e != "" {
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprintf(w, "The provider refused the authorization: %s\n", e)
			return
		}
		name, err := conns.CompleteAuthorization(r.Context(), q.Get("state"), q.Get("code"),
			strings.TrimSuffix(cfg.publicURL, "/")+server.OAuthCallbackPath)
		switch {
		case err == nil:
			fmt.Fprintf(w, "The connection %q is authorized. You may close this page.\n", name)
		case errors.Is(err, books.ErrNotFound):
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprintln(w, "The connection no longer exists.")
		case errors.Is(err, books.ErrOAuth), errors.Is(err, books.ErrSecretKey):
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprintln(w, err.Error())
		default:
			logger.Error("oauth callback", "error", err)
			w.WriteHeader(http.StatusInternalServerError)
			fmt.Fprintln(w, "The authorization could not be saved.")
		}
	}); err != nil {
		a.Close()
		return nil, fmt.Errorf("gateway: %w", err)
	}
	// The web console at /: pages that call the services above through the
	// same in-process channel and interceptor chain, as the session's user.
	conOpts := console.Options{
		Conn: local, Sessions: st, Auth: auth, SessionTTL: cfg.sessionTTL, Now: cfg.sessionClock,
		Secure: strings.HasPrefix(cfg.publicURL, "https://"), Logger: logger, Hub: hub,
	}
	if !st.SingleWriter() {
		// Replicas may share the database: they tell each other of their
		// changes (LISTEN/NOTIFY).
		conOpts.Replicas = st
	}
	con, err := console.New(conOpts)
	if err != nil {
		a.Close()
		return nil, fmt.Errorf("console: %w", err)
	}
	a.console = con
	a.closers = append(a.closers, func() error { con.Close(); return nil })
	// The live pages' streams end with the service (before it drains).
	go func() { <-ctx.Done(); con.Close() }()
	a.http = con.Mount(h)
	if tp := cfg.tracerProvider; tp != nil {
		// A span per HTTP request, continuing the caller's traceparent.
		a.http = otelhttp.NewHandler(a.http, "prose", otelhttp.WithTracerProvider(tp), otelhttp.WithPropagators(tracing.Propagator),
			otelhttp.WithSpanNameFormatter(func(_ string, r *http.Request) string { return "HTTP " + r.Method }))
	}
	return a, nil
}

// grpcOnlyOptions are the gRPC-only server's own options (nil: no
// --grpc-addr): the ports' TLS as its transport credentials.
func grpcOnlyOptions(cfg serveConfig) *transport.GRPCOnlyOptions {
	if cfg.grpcAddr == "" {
		return nil
	}
	o := &transport.GRPCOnlyOptions{HandshakeTimeout: cfg.grpcHandshakeTimeout}
	if cfg.tlsConfig != nil {
		o.ServerOptions = append(o.ServerOptions, grpc.Creds(credentials.NewTLS(cfg.tlsConfig)))
	}
	return o
}

// tracerOf is the engine's tracer of tp (nil: tracing off).
func tracerOf(tp trace.TracerProvider) trace.Tracer {
	if tp == nil {
		return nil
	}
	return tp.Tracer("github.com/proserun/prose/engine")
}

// callIDBooks gives each external book call the engine's call id (see
// engine.CallID), so a book can recognise a call repeated after a crash.
type callIDBooks struct{ *books.RunBooks }

func (b callIDBooks) Call(ctx context.Context, p lang.BookProcedure, in map[string]lang.Value) (map[string]lang.Value, error) {
	rb := *b.RunBooks
	id := engine.CallID(ctx)
	rb.CallID = func(lang.BookProcedure, map[string]lang.Value) string { return id }
	return rb.Call(ctx, p, in)
}

// registerBookFile registers the books of a --books file.
func registerBookFile(ctx context.Context, reg *books.Registry, path string) error {
	data, err := os.ReadFile(path) //nolint:gosec // G304: the operator names the file on the command line
	if err != nil {
		return err
	}
	var entries []struct {
		Workspace string          `json:"workspace"`
		Book      json.RawMessage `json:"book"`
	}
	if err := json.Unmarshal(data, &entries); err != nil {
		return err
	}
	for i, e := range entries {
		org, ws, ok := names.ParseWorkspace(e.Workspace)
		if !ok {
			return fmt.Errorf("entry %d: workspace %q is not organizations/{o}/workspaces/{w}", i, e.Workspace)
		}
		b := &bookv1.Book{}
		if err := protojson.Unmarshal(e.Book, b); err != nil {
			return fmt.Errorf("entry %d: %w", i, err)
		}
		if _, err := reg.Register(ctx, books.Workspace{OrganizationID: org, WorkspaceID: ws}, b, ""); err != nil {
			return fmt.Errorf("entry %d: %w", i, err)
		}
	}
	return nil
}

// servePprof serves the net/http/pprof handlers on their own listener until
// ctx ends (never on the API's address).
func servePprof(ctx context.Context, addr string, logger *slog.Logger) error {
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { <-ctx.Done(); _ = srv.Close() }()
	go func() { _ = srv.Serve(lis) }()
	logger.Info("pprof", "addr", lis.Addr().String())
	return nil
}

// secretKeyring returns the keys that seal connection credentials: those of
// the file, else of $PROSE_SECRET_KEYS, else the key the store keeps (made
// now if this is the database's first start).
func secretKeyring(ctx context.Context, file string, st store.SecretKeys) (*books.Keyring, error) {
	src := os.Getenv("PROSE_SECRET_KEYS")
	if file != "" {
		b, err := os.ReadFile(file) //nolint:gosec // G304: the operator names the file on the command line
		if err != nil {
			return nil, err
		}
		src = strings.ReplaceAll(string(b), "\n", ",")
	}
	if strings.TrimSpace(src) != "" {
		keys, err := books.ParseSecretKeys(src)
		if err != nil {
			return nil, err
		}
		return books.NewKeyring(keys...)
	}
	candidate, err := books.NewSecretKey()
	if err != nil {
		return nil, err
	}
	key, err := st.EnsureSecretKey(ctx, candidate)
	if err != nil {
		return nil, err
	}
	return books.NewKeyring(key)
}

// constrainedOpenAPI is the generated OpenAPI document with the protos'
// protovalidate rules written in (openapi.WithConstraints), made once.
var constrainedOpenAPI = sync.OnceValues(func() ([]byte, error) {
	doc, _, err := openapi.WithConstraints(openapi.JSON, protoregistry.GlobalFiles)
	return doc, err
})
