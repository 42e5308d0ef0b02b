package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"time"

	"github.com/dustin/go-humanize"
	"github.com/spf13/pflag"

	"github.com/proserun/prose/gateway"
	"github.com/proserun/prose/internal/console"
	"github.com/proserun/prose/internal/engine"
	"github.com/proserun/prose/internal/engine/schedule"
	"github.com/proserun/prose/internal/logctx"
	"github.com/proserun/prose/internal/metrics"
	"github.com/proserun/prose/internal/tracing"
	"github.com/proserun/prose/server"
	"github.com/proserun/prose/server/app"
	"github.com/proserun/prose/server/transport/admission"
	"github.com/proserun/prose/server/transport/chain"
	"github.com/proserun/prose/store"
)

// serveFlags defines serve's flags on fs, into cfg.
// Their values may also come from the environment and a config file
// (applyEnvAndConfig).
func serveFlags(fs *pflag.FlagSet, cfg *app.Config) {
	fs.String(ConfigFlag, "", "config file of flag values (YAML, or TOML if it ends in .toml; the flag names as keys)")
	fs.StringVar(&cfg.Addr, "addr", "127.0.0.1:8080", "address to listen on (gRPC and HTTP)")
	fs.StringVar(&cfg.GRPCAddr, "grpc-addr", "", "also serve gRPC alone on this address (HOST:PORT) with grpc-go's own transport: about half the CPU per call of gRPC on --addr, for gRPC-heavy clients; the same services, keys, TLS and limits, except that every request message there is bounded to 8 MiB (larger file uploads go to --addr). Default: none")
	fs.StringVar(&cfg.Data, "data", defaultData, "data directory of the embedded SQLite database")
	fs.StringVar(&cfg.Database, "database", "", "a postgres://… URL; overrides --data")
	fs.StringVar(&cfg.PublicURL, "public-url", "", "public origin of the HTTP side (https://prose.example.com), for signed file URLs and the sign-in link serve prints; default: the request's host (the link: the address serve listens on)")
	fs.BoolVar(&cfg.PrintLoginLink, "print-login-link", false, "print a one-time sign-in link to the web console at start, for the owner of the oldest organization, as 'prose login-link' makes (serve prints one anyway when it initialises an empty store)")
	fs.StringVar(&cfg.LogLevel, "log-level", "info", "debug, info, warn or error")
	fs.DurationVar(&cfg.Lease, "lease", 0, "how long a worker's lease on a run lasts without renewal (renewed every third); a run of a dead replica is taken over after it (default 30s)")
	fs.IntVar(&cfg.Workers, "workers", 0, "runs this replica executes at once (default: 4 per CPU on SQLite; 32 per CPU on PostgreSQL, where a run mostly waits for the database)")
	fs.StringVar(&cfg.Books, "books", "", `JSON file of workspace books to register at start: [{"workspace": "organizations/{o}/workspaces/{w}", "book": {…}}] (kept in memory by this process, over the books registered through the API, which are stored)`)
	fs.IntVar(&cfg.MaxUploads, "max-uploads", gateway.DefaultMaxUploads, "file uploads read at once (each holds its file in memory a few times over); more wait (--upload-wait), then 503 with Retry-After; -1: no bound")
	fs.IntVar(&cfg.MaxUploadsPerOrg, "max-uploads-per-organization", 0, "of --max-uploads, the most one organization's uploads hold at once (uploads whose credentials do not check out count as one organization); 0: half of --max-uploads; -1: no share")
	fs.IntVar(&cfg.MaxGRPCUploads, "max-grpc-uploads", admission.DefaultMaxLargeRequests, "native gRPC file uploads (UploadFile, up to 64 MiB each) received at once; more are refused at once with RESOURCE_EXHAUSTED UPLOADS_BUSY before their message is read; -1: no bound")
	fs.IntVar(&cfg.MaxGRPCUploadsPerOrg, "max-grpc-uploads-per-organization", 0, "of --max-grpc-uploads, the most one organization's native gRPC uploads hold at once (more are refused with RESOURCE_EXHAUSTED UPLOADS_BUSY; uploads whose credentials do not check out count as one organization); 0: half of --max-grpc-uploads; -1: no share")
	fs.DurationVar(&cfg.UploadWait, "upload-wait", gateway.DefaultUploadWait, "how long an upload waits for a slot when --max-uploads are in flight (its body unread) before 503; -1ns: no wait")
	fs.DurationVar(&cfg.BodyReadTimeout, "body-read-timeout", gateway.DefaultBodyReadTimeout, "time to read a request body; a slower one is cut with 408; -1ns: none")
	fs.StringVar(&cfg.TLSCert, "tls-cert", "", "PEM certificate (chain) file: serve HTTPS and gRPC over TLS on --addr and --grpc-addr (with --tls-key); read again when the file changes. Default: plain HTTP and h2c, for loopback")
	fs.StringVar(&cfg.TLSKey, "tls-key", "", "PEM private key file of --tls-cert")
	fs.StringVar(&cfg.TLSClientCA, "tls-client-ca", "", "PEM file of the CA certificates of the clients: every client (gRPC and HTTP) must show a certificate one of them signed (mutual TLS; needs --tls-cert). Default: no client certificates")
	fs.DurationVar(&cfg.ShutdownTimeout, "shutdown-timeout", 15*time.Second, "on SIGTERM or SIGINT, how long requests in flight may take to finish, and runs in flight to reach their next statement and go back to the queue (for another replica at once), before the rest is cut")
	fs.StringVar(&cfg.LogFormat, "log-format", logctx.FormatAuto, "auto (text on a terminal, JSON lines otherwise), text or json")
	fs.IntVar(&cfg.MetricsAutomations, "metrics-automations", metrics.DefaultMaxAutomations, "automations named (by id) in the automation label of the run metrics, the first ones this process sees; later ones count under \"other\"; and in prose_exceptions_pending, the automations (and workspaces) with the most pending exceptions (bounds the series /metrics exports); -1: none")
	fs.StringVar(&cfg.Pprof, "pprof", "", "serve net/http/pprof on this address (127.0.0.1:6060), for profiling; off by default")
	registerLimitFlags(fs, &cfg.Limits)
	fs.IntVar(&cfg.MaxGuidedPerRun, "max-guided-per-run", 0, fmt.Sprintf("the most exceptions approved guide entries resolve in one run; past it the run waits for a person (default %d; -1: guide entries never apply)", engine.DefaultMaxGuidedPerRun))
	fs.IntVar(&cfg.OrgWorkers, "org-workers", 0, "the most workers one organization's runs hold at once, the others kept for the other organizations (default: the workers less an eighth, at least one, from 4 workers up; -1: no bound; see docs/fairness.md)")
	fs.IntVar(&cfg.Processors, "processors", 0, "the most long runs (past their first 1,024 statements) interpreting at once, in turns shared fairly between the organizations with work (default: GOMAXPROCS; -1: no bound; see docs/fairness.md)")
	fs.DurationVar(&cfg.InlineWindow, "inline-window", 0, fmt.Sprintf("how long an invoke may execute a run itself, on a free worker, before creating it: a run that ends within it without calling a book is created completed or failed (default %s; -1ns: never)", engine.DefaultInlineWindow))
	fs.IntVar(&cfg.History.MaxEvents, "max-history-events", 0, fmt.Sprintf("entries the engine records in one run's history (says, book calls, runs started; states and exceptions are always recorded); past it one entry says the history stops (default %d; -1: no limit)", engine.DefaultMaxHistoryEvents))
	fs.Var(sizeFlag{&cfg.History.MaxEventBytes}, "max-history-event-bytes", fmt.Sprintf("size of one entry of a run's history: a longer say line is cut, a book call's larger inputs and outputs are left out (default %s)", humanize.IBytes(engine.DefaultMaxHistoryEventBytes)))
	fs.IntVar(&cfg.History.MaxFactEvents, "max-history-facts", 0, fmt.Sprintf("the facts a run sets are recorded in its history (its page shows them at their lines) while it has fewer entries than this; a loop's statement once (default %d; -1: none)", engine.DefaultMaxFactEvents))
	fs.DurationVar(&cfg.TimeSlice, "time-slice", 0, fmt.Sprintf("how long a run executes before it gives its worker up when every worker is busy and other runs wait (default %s; -1ns: never)", engine.DefaultTimeSlice))
	fs.IntVar(&cfg.MaxLostLeases, "max-lost-leases", 0, fmt.Sprintf("times in a row a run's worker may die while executing it before the run fails with an internal error (default %d)", store.DefaultMaxLostLeases))
	fs.IntVar(&cfg.MaxEventMessage, "max-event-message-bytes", 0, "largest message (a user's content or content_list, an agent's content) an event may carry, in bytes (default and most: the size of an event, --max-event-bytes); larger ones are INVALID_ARGUMENT")
	registerSizeFlags(fs, &cfg.Sizes)
	fs.DurationVar(&cfg.EventPoll, "event-stream-poll", server.DefaultEventStreamPoll, "how often an idle event stream re-reads its thread after its last offset, in case a wake-up was lost (new events are pushed at once; negative: never)")
	fs.DurationVar(&cfg.SessionTTL, "session-ttl", console.DefaultSessionTTL, "how long a web console session lasts after sign-in")
	fs.DurationVar(&cfg.ScheduleCatchUp, "schedule-catch-up", schedule.DefaultCatchUp, "how late a schedule's occurrence missed while no server ran still starts its run (only the latest missed one does); negative: never")
	fs.Float64Var(&cfg.TriggerRate.PerSecond, "trigger-rate", server.DefaultTriggerRate, "events a second each trigger instance (webhook or message) starts runs for on this server; a webhook delivery over it is 429 with Retry-After, a message waits for its turn; -1: no bound")
	fs.IntVar(&cfg.TriggerRate.Burst, "trigger-burst", server.DefaultTriggerBurst, "events of one trigger instance taken at once above --trigger-rate")
	fs.StringVar(&cfg.ReplicaName, "replica-name", "", "this replica's name: stable across its restarts, and another for each replica of one database (two on one host need their own). An MQTT trigger's session on its broker is named by it, so a replica started again takes the messages the broker kept for it. Default: the host name")
	fs.BoolVar(&cfg.AllowPrivateNetworks, "allow-private-networks", false, "let the books (http calls, file downloads, mail and database servers), OAuth token urls, outbound webhooks and message-trigger brokers reach addresses that are not public: loopback, private networks (10/8, 172.16/12, 192.168/16, fc00::/7), link-local (cloud metadata at 169.254.169.254) and other reserved ranges. Off: such a connection is refused when dialled")
	registerModelFlags(fs, &cfg.Model)
	fs.StringVar(&cfg.SecretKeysFile, "secret-keys-file", "", "file of the keys that seal connection credentials (base64 32-byte keys, separated by commas or new lines; the first seals, the others only open: rotation). Default: $PROSE_SECRET_KEYS, else a key the database keeps, made at its first start")
}

func serveCmd(ctx context.Context, args []string, _ io.Reader, _, stderr io.Writer) int {
	fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	var cfg app.Config
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
	if (cfg.TLSCert == "") != (cfg.TLSKey == "") {
		fmt.Fprintln(stderr, "serve: --tls-cert and --tls-key go together")
		return 2
	}
	if cfg.TLSClientCA != "" && cfg.TLSCert == "" {
		fmt.Fprintln(stderr, "serve: --tls-client-ca needs --tls-cert and --tls-key (mutual TLS is TLS)")
		return 2
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(cfg.LogLevel)); err != nil {
		fmt.Fprintf(stderr, "serve: bad --log-level: %v\n", err)
		return 2
	}
	if !logctx.ValidFormat(cfg.LogFormat) {
		fmt.Fprintf(stderr, "serve: bad --log-format %q: auto, text or json\n", cfg.LogFormat)
		return 2
	}
	logger := logctx.New(stderr, cfg.LogFormat, level)

	tp, err := tracing.Setup(ctx, os.Getenv, server.Version)
	if err != nil {
		logger.Error("tracing", "err", err)
		return 1
	}
	if tp != nil {
		cfg.TracerProvider = tp
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
	if cfg.TLSCert != "" {
		certs, err := gateway.NewCertReloader(cfg.TLSCert, cfg.TLSKey, logger)
		if err != nil {
			logger.Error("tls", "err", err)
			return 1
		}
		tlsCfg := certs.TLSConfig()
		if cfg.TLSClientCA != "" {
			pool, err := gateway.LoadCAPool(cfg.TLSClientCA)
			if err != nil {
				logger.Error("tls", "err", err)
				return 1
			}
			tlsCfg.ClientCAs, tlsCfg.ClientAuth = pool, tls.RequireAndVerifyClientCert
		}
		cfg.TLSConfig = tlsCfg
		scheme = "https"
	}
	a, err := app.New(ctx, cfg, logger, stderr)
	if err != nil {
		logger.Error("start", "err", err)
		return 1
	}
	defer a.Close()

	opts := a.ServeOptions()
	if cfg.TLSConfig != nil {
		opts = append(opts, gateway.WithTLS(cfg.TLSConfig))
	}
	lis, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		logger.Error("listen", "addr", cfg.Addr, "err", err)
		return 1
	}
	if scheme == "http" && !isLoopback(lis.Addr()) {
		logger.Warn("serving plain HTTP and h2c on a non-loopback address: API keys cross the network in clear; give --tls-cert and --tls-key, or terminate TLS in front", "addr", lis.Addr().String())
	}
	if cfg.GRPCAddr != "" {
		glis, err := net.Listen("tcp", cfg.GRPCAddr)
		if err != nil {
			_ = lis.Close()
			logger.Error("listen", "grpc_addr", cfg.GRPCAddr, "err", err)
			return 1
		}
		if scheme == "http" && !isLoopback(glis.Addr()) {
			logger.Warn("serving plain gRPC on a non-loopback address: API keys cross the network in clear; give --tls-cert and --tls-key", "addr", glis.Addr().String())
		}
		opts = append(opts, gateway.WithNativeGRPC(glis, a.GRPCOnly))
		// Before "serving": whoever waits for that line finds both ports.
		logger.Info("serving gRPC only", "addr", glis.Addr().String(), "tls", scheme == "https", "max_request_bytes", chain.GRPCOnlyMaxRequestBytes)
	}
	// SIGTERM: this replica stops taking work at once (health NOT_SERVING,
	// /readyz 503, the engine hands its runs back) while gateway.Serve
	// drains the requests in flight.
	go func() {
		<-ctx.Done()
		logger.Info("shutting down", "timeout_ms", cfg.ShutdownTimeout.Milliseconds())
		a.BeginShutdown()
	}()
	if cfg.Pprof != "" {
		if err := servePprof(ctx, cfg.Pprof, logger); err != nil {
			logger.Error("pprof", "addr", cfg.Pprof, "err", err)
			return 1
		}
	}
	if err := printSignIn(ctx, stderr, a, cfg, scheme, lis.Addr()); err != nil {
		logger.Error("sign-in link", "err", err)
		return 1
	}
	logger.Info("serving", "addr", lis.Addr().String(), "version", server.Version, "tls", scheme == "https")
	if err := gateway.Serve(ctx, lis, a.GRPC, a.HTTP, logger, opts...); err != nil && !errors.Is(err, http.ErrServerClosed) {
		logger.Error("serve", "err", err)
		return 1
	}
	logger.Info("stopped")
	return 0
}

// isLoopback reports whether addr is a loopback address.
func isLoopback(addr net.Addr) bool {
	ta, ok := addr.(*net.TCPAddr)
	return ok && ta.IP.IsLoopback()
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
