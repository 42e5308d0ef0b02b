package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/proserun/prose/gateway"
	"github.com/proserun/prose/gen/openapi"
	"github.com/proserun/prose/internal/books"
	"github.com/proserun/prose/internal/console"
	"github.com/proserun/prose/internal/engine"
	"github.com/proserun/prose/internal/engine/outbound"
	"github.com/proserun/prose/internal/engine/schedule"
	"github.com/proserun/prose/internal/lang"
	"github.com/proserun/prose/internal/metrics"
	"github.com/proserun/prose/internal/names"
	"github.com/proserun/prose/internal/netguard"
	"github.com/proserun/prose/internal/tracing"
	"github.com/proserun/prose/server"
	"github.com/proserun/prose/server/transport"
	"github.com/proserun/prose/server/transport/admission"
	"github.com/proserun/prose/server/transport/auth"
	"github.com/proserun/prose/server/transport/chain"
	"github.com/proserun/prose/server/transport/limits"
	"github.com/proserun/prose/server/transport/orgwork"
	"github.com/proserun/prose/server/transport/requestid"
	"github.com/proserun/prose/store"
)

// New assembles the service of cfg: the store, the books, the engine and
// its background work, the services, the gRPC server and the HTTP gateway
// with the console. It initialises an empty store (an organization, its
// owner and a key, printed once to stderr). Close releases what it made.
func New(ctx context.Context, cfg Config, logger *slog.Logger, stderr io.Writer) (*App, error) {
	if err := cfg.Sizes.Validate(); err != nil {
		return nil, err
	}
	a := &App{shutdownTimeout: cfg.ShutdownTimeout, logger: logger, health: health.NewServer()}
	if a.shutdownTimeout <= 0 {
		a.shutdownTimeout = 15 * time.Second
	}
	if err := a.build(ctx, cfg, logger, stderr); err != nil {
		a.Close()
		return nil, err
	}
	return a, nil
}

// build runs New's parts in order; each leaves what it started in
// a.closers, so New's Close on an error undoes the ones before.
func (a *App) build(ctx context.Context, cfg Config, logger *slog.Logger, stderr io.Writer) error {
	if err := a.openStore(ctx, cfg, stderr); err != nil {
		return err
	}
	keyAuth := auth.NewKeyAuth(a.Store, cfg.SessionClock)
	reg, err := a.newBooks(ctx, cfg, logger)
	if err != nil {
		return err
	}
	if err := a.startWork(ctx, cfg, logger, reg); err != nil {
		return err
	}
	if err := a.newServices(cfg, reg); err != nil {
		return err
	}
	local := a.newTransports(cfg, logger, keyAuth)
	h, err := a.newGateway(ctx, cfg, logger, local, keyAuth)
	if err != nil {
		return err
	}
	return a.mountConsole(ctx, cfg, logger, local, keyAuth, h)
}

// openStore opens the store (or takes cfg.Store) and initialises it when
// it is empty.
func (a *App) openStore(ctx context.Context, cfg Config, stderr io.Writer) error {

	st := cfg.Store
	if st == nil {
		var err error
		if st, err = OpenStore(ctx, cfg.Data, cfg.Database, store.WithMaxLostLeases(cfg.MaxLostLeases), store.WithPageBytes(cfg.Sizes.PageBytes)); err != nil {
			return fmt.Errorf("store: %w", err)
		}
		a.closers = append(a.closers, st.Close)
	} else if ps, ok := st.(interface{ SetPageBytes(int) }); ok && cfg.Sizes.PageBytes != 0 {
		// A store given by the caller (tests): its page budget is set here.
		ps.SetPageBytes(cfg.Sizes.PageBytes)
	}
	a.Store = st
	ids, err := OrganizationIDs(ctx, st, 1)
	if err != nil {
		return fmt.Errorf("store: %w", err)
	}
	if len(ids) == 0 {
		// An empty store: make the first organization and print its key once.
		r, err := Bootstrap(ctx, st, InitOptions{})
		if err != nil {
			return fmt.Errorf("initialise: %w", err)
		}
		a.Bootstrap = &r
		// The `prose login` line waits for the address the server listens
		// on (cmd/prose prints it with the sign-in link).
		fmt.Fprintf(stderr, "Initialised an empty store. This API key is shown once:\n")
		PrintInit(stderr, r, false, "")
	}
	return nil
}

// newBooks makes the book registry (stored, --books file and built-in
// books), indexes the catalog, and opens the connections (a.Conns).
func (a *App) newBooks(ctx context.Context, cfg Config, logger *slog.Logger) (*books.Registry, error) {
	st := a.Store

	// Books registered over the API are kept in the store; those of a
	// --books file are this process's own (in memory, over the stored ones).
	fileBooks := books.NewMemoryStore()
	// Registered and file books are called through the network guard, as
	// the built-in ones: a tenant's endpoint may not reach loopback, private
	// networks or cloud metadata unless the server allows them.
	reg := books.NewRegistry(books.WithStore(books.Overlay{Top: fileBooks, Base: NewDBBooks(st)}),
		books.WithClient(&books.Client{HTTP: netguard.HTTPClient(0, !cfg.AllowPrivateNetworks), Timeout: books.DefaultCallTimeout}),
		books.WithBuiltins(books.Builtins(books.BuiltinOptions{PublicNetworkOnly: !cfg.AllowPrivateNetworks, OwnFile: a.ownFile})...))
	// The built-in books are searched in the database with the registered
	// ones: their catalog is written again at every start.
	if err := reg.IndexBuiltins(ctx); err != nil {
		return nil, fmt.Errorf("index the built-in books for search: %w", err)
	}
	// Books registered before the catalog existed (migration 00029) are
	// indexed once; later starts find none to index.
	n, err := NewDBBooks(st).BackfillCatalog(ctx, func(b store.WorkspaceBook, err error) {
		logger.Warn("a workspace book's descriptor does not decode: it is not searchable", "organization", b.OrganizationID,
			"workspace", b.WorkspaceID, "book", b.Name, "version", b.Version, "error", err)
	})
	if err != nil {
		return nil, fmt.Errorf("index the workspace books registered before catalog search: %w", err)
	}
	if n > 0 {
		logger.Info("workspace books indexed for search", "count", n)
	}
	keyring, err := secretKeyring(ctx, cfg.SecretKeysFile, st)
	if err != nil {
		return nil, fmt.Errorf("connection secret keys: %w", err)
	}
	// Trigger and webhook secrets are sealed with the connections' keys;
	// those written plain before, or under a key rotated out, are sealed
	// with the first key now.
	st.SetSealer(keyring)
	if n, err := st.ResealSecrets(ctx); err != nil {
		return nil, fmt.Errorf("seal trigger and webhook secrets: %w", err)
	} else if n > 0 {
		logger.Info("trigger and webhook secrets sealed with the first secret key", "count", n)
	}
	conns := books.NewConnections(NewDBConnections(st), keyring, reg)
	conns.PublicNetworkOnly(!cfg.AllowPrivateNetworks)
	conns.SetOnceLedger(dbOnce{st})
	a.Conns = conns
	if keyring.Len() > 1 {
		// A rotation: secrets sealed by an older key are sealed again with
		// the first one, so that the older keys can then be dropped.
		n, err := conns.Rekey(ctx)
		if err != nil {
			return nil, fmt.Errorf("seal connection secrets with the new key: %w", err)
		}
		logger.Info("connection secrets sealed with the first secret key", "count", n)
	}
	if cfg.Books != "" {
		if err := registerBookFile(ctx, books.NewRegistry(books.WithStore(fileBooks)), cfg.Books); err != nil {
			return nil, fmt.Errorf("--books: %w", err)
		}
	}
	return reg, nil
}

// startWork starts the background work: the engine (with its metrics),
// the scheduler, the outbound webhooks and the message triggers; a.StopEngine
// stops them all.
func (a *App) startWork(ctx context.Context, cfg Config, logger *slog.Logger, reg *books.Registry) error {
	st := a.Store

	// The work's metrics, on a registry of the app's own (tests run
	// several apps in one process), served at /metrics with the default
	// registry's (the per-RPC metrics, the Go runtime's).
	a.Registry = prometheus.NewRegistry()
	work, err := metrics.New(a.Registry, metrics.Options{
		MaxAutomations: cfg.MetricsAutomations,
		PendingRuns:    st.CountPendingRuns,
		PendingExceptions: func(ctx context.Context) ([]metrics.PendingCount, error) {
			return pendingExceptions(ctx, st)
		},
		BusyWorkers: func() int64 { return a.Engine.BusySlots() },
		Workers:     func() int { return a.Engine.Workers() },
	})
	if err != nil {
		return fmt.Errorf("metrics: %w", err)
	}
	a.Work = work
	st.OnLeasesRecovered(work.LeaseTakeovers)
	engCtx, stopEngine := context.WithCancel(context.WithoutCancel(ctx))
	engOpts := engine.Options{
		Logger:          logger,
		LeaseDuration:   cfg.Lease,
		Workers:         cfg.Workers,
		Limits:          cfg.Limits,
		TimeSlice:       cfg.TimeSlice,
		InlineWindow:    cfg.InlineWindow,
		OrgWorkers:      cfg.OrgWorkers,
		Processors:      cfg.Processors,
		MaxGuidedPerRun: cfg.MaxGuidedPerRun,
		History:         cfg.History,
		Metrics:         work,
		Tracer:          tracerOf(cfg.TracerProvider),
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
	a.Hub = hub
	engOpts.Changed = hub.Changed
	a.Engine = engine.New(st, engOpts)
	// A pause committed on any replica reaches the one executing the run at
	// once (LISTEN/NOTIFY, carried by the engine's listener), not at its
	// next lease renewal.
	st.OnRunPause(a.Engine.PauseNoticed)
	engDone := make(chan struct{})
	go func() {
		defer close(engDone)
		_ = a.Engine.Run(engCtx, a.shutdownTimeout)
	}()
	a.Scheduler = schedule.NewScheduler(st, a.Engine, schedule.Options{Now: cfg.Clock, CatchUp: cfg.ScheduleCatchUp, Logger: logger, Inactive: server.AutomationInactive})
	schedDone := make(chan struct{})
	go func() {
		defer close(schedDone)
		a.Scheduler.Run(engCtx)
	}()
	// Outbound webhooks: deliveries the store wrote, sent in the background.
	a.Dispatcher = outbound.New(st, outbound.Options{Logger: logger, BaseBackoff: cfg.WebhookBackoff,
		Client: netguard.HTTPClient(outbound.DefaultTimeout, !cfg.AllowPrivateNetworks)})
	dispDone := make(chan struct{})
	go func() {
		defer close(dispDone)
		a.Dispatcher.Run(engCtx)
	}()
	// Message triggers: a subscription per NATS, RabbitMQ and MQTT instance.
	a.Messages = server.NewMessageTriggers(st, a.Engine, logger)
	a.Messages.SetRate(cfg.TriggerRate)
	a.Messages.AllowPrivateNetworks(cfg.AllowPrivateNetworks)
	a.Messages.SetReplicaName(cfg.ReplicaName)
	a.Registry.MustRegister(a.Messages) // prose_trigger_subscription_up, on the app's own registry
	msgDone := make(chan struct{})
	go func() {
		defer close(msgDone)
		a.Messages.Run(engCtx)
	}()
	a.StopEngine = sync.OnceFunc(func() { stopEngine(); <-msgDone; <-dispDone; <-schedDone; <-engDone })
	a.closers = append(a.closers, func() error { a.StopEngine(); return nil })
	return nil
}

// newServices makes the services (a.Services) over the store and the engine.
func (a *App) newServices(cfg Config, reg *books.Registry) error {
	st, conns := a.Store, a.Conns

	files := server.NewFileService(st, server.FileOptions{BaseURL: cfg.PublicURL})
	a.Files = files
	legacyV1 := server.NewLegacyV1(st, a.Engine)
	legacyV1.PublicURL = cfg.PublicURL
	legacyV2 := server.NewLegacyV2Runs(st, st, a.Engine)
	legacyV2.PublicURL = cfg.PublicURL
	agents, err := cfg.Model.Agents()
	if err != nil {
		return err
	}
	events := server.NewEventServiceWith(st, a.Engine, server.EventOptions{Agents: agents, MaxMessageBytes: cfg.MaxEventMessage, MaxEventBytes: cfg.Sizes.WithDefaults().EventBytes, Poll: cfg.EventPoll})
	a.closers = append(a.closers, events.Close)
	// Replicas sharing a PostgreSQL database wake each other's event
	// streams: every event write is announced (LISTEN/NOTIFY, carried by
	// the engine's listener).
	st.OnEventChange(events.EventChanged)
	triggers := server.NewTriggerService(st, reg)
	triggers.PublicURL = cfg.PublicURL
	triggers.Messages = a.Messages
	connSvc := server.NewConnectionService(conns, st)
	connSvc.PublicURL = cfg.PublicURL
	connSvc.Workspaces = st
	connSvc.Triggers = st
	bookSvc := server.NewBookService(reg)
	bookSvc.Workspaces = st
	// Safe change: tests and replays look the workspace's books up, never
	// call them; publishing is gated by both.
	safe := server.NewSafeChangeService(st, a.Engine, func(org, ws string) lang.Books {
		return reg.ForWorkspace(books.Workspace{OrganizationID: org, WorkspaceID: ws})
	}, a.logger)
	a.closers = append(a.closers, safe.Close)
	automations := server.NewAutomationService(st, a.Engine)
	automations.Gate = safe
	a.Services = server.Services{
		Files:         files,
		Books:         bookSvc,
		Connections:   connSvc,
		Workspaces:    server.NewWorkspaceService(st),
		Organizations: server.NewOrganizationService(st),
		APIKeys:       server.NewApiKeyService(st, nil),
		LegacyV2:      legacyV2,
		Automations:   automations,
		Runs:          server.NewRunService(st, a.Engine),
		RunHistory:    server.NewRunHistoryService(st, a.Engine),
		LegacyV1:      legacyV1,
		Events:        events,
		Exceptions:    server.NewExceptionService(st, a.Engine),
		Schedules:     server.NewScheduleService(st, cfg.Clock, a.Scheduler.Wake),
		Triggers:      triggers,
		Webhooks:      server.NewWebhookService(st),
		GuideEntries:  server.NewGuideEntryService(st, a.Engine),
		Revisions:     server.NewRevisionService(st),
		Insights:      server.NewInsightsService(st, cfg.Clock),
		Tests:         safe,
	}
	return nil
}

// newTransports makes the gRPC server (and the gRPC-only one of
// cfg.GRPCAddr) with every service behind the one interceptor chain, and
// returns the in-process channel to it.
func (a *App) newTransports(cfg Config, logger *slog.Logger, keyAuth *auth.KeyAuth) *chain.Local {

	a.admission = admission.New(cfg.MaxGRPCUploads).WithTenants(cfg.MaxGRPCUploadsPerOrg, grpcUploadTenant(keyAuth))
	grpcOpts := limits.MessageSizeOptions()
	if tp := cfg.TracerProvider; tp != nil {
		// A span per native gRPC call (HTTP requests get theirs below).
		grpcOpts = append(grpcOpts, grpc.StatsHandler(otelgrpc.NewServerHandler(otelgrpc.WithTracerProvider(tp), otelgrpc.WithPropagators(tracing.Propagator))))
	}
	srv := chain.NewServer(chain.Options{
		Logger:        logger,
		Authenticator: keyAuth,
		ServerOptions: grpcOpts,
		Outer:         cfg.Outer,
		// Native gRPC uploads are bounded like the HTTP ones; the gateway
		// calls the services in process and bounds its own (--max-uploads).
		Admission: a.admission,
		Sizes:     cfg.Sizes,
		Health:    a.health,
		// A child span per in-process call of the gateway and the console.
		TracerProvider: cfg.TracerProvider,
		GRPCOnly:       grpcOnlyOptions(cfg),
		// A caller's call is its organization's work for the engine's
		// processor turns (docs/fairness.md).
		Extra: []transport.Middleware{orgwork.Middleware(a.Engine.Work)},
	})
	a.GRPC, a.GRPCOnly = srv.GRPC, srv.GRPCOnly
	// Every service on the gRPC server and on the in-process channel the
	// gateway and the console call (one interceptor chain for both).
	a.Services.Register(srv)
	// gRPC health: the server ("") and each service by its full name.
	a.health.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	for name := range srv.GRPC.GetServiceInfo() {
		a.health.SetServingStatus(name, healthpb.HealthCheckResponse_SERVING)
	}
	local := srv.Local
	return local
}

// newGateway makes the HTTP side over local: the gateway's mux with the
// signed files, the probes, the inbound webhooks and the OAuth callback.
func (a *App) newGateway(ctx context.Context, cfg Config, logger *slog.Logger, local *chain.Local, keyAuth *auth.KeyAuth) (http.Handler, error) {
	doc, err := constrainedOpenAPI()
	if err == nil {
		doc, err = openapi.WithVersion(doc, server.Version)
	}
	if err != nil {
		return nil, fmt.Errorf("openapi: %w", err)
	}
	mux, h, err := gateway.Mux(ctx, local, gateway.Options{
		OpenAPI: doc, Logger: logger, MaxUploads: cfg.MaxUploads, UploadWait: cfg.UploadWait,
		UploadTenant: uploadTenant(keyAuth, a.Files), MaxUploadsPerTenant: cfg.MaxUploadsPerOrg,
		BodyReadTimeout: cfg.BodyReadTimeout, ValueExample: plainValueJSON,
		Metrics: promhttp.HandlerFor(prometheus.Gatherers{prometheus.DefaultGatherer, a.Registry}, promhttp.HandlerOpts{}),
	}, gateway.Handlers()...)
	if err != nil {
		return nil, fmt.Errorf("gateway: %w", err)
	}
	// Files: signed upload and download URLs (no API key), large downloads.
	if err := gateway.HandleSignedFiles(mux, local, a.Files, server.MaxFileBytes); err != nil {
		return nil, fmt.Errorf("gateway: %w", err)
	}
	// Probes: /readyz (takes work: not shutting down, the store answers)
	// and /livez (the process serves); /healthz is the gateway's (gRPC
	// health of "").
	if err := mux.HandlePath(http.MethodGet, "/readyz", a.Readyz); err != nil {
		return nil, fmt.Errorf("gateway: %w", err)
	}
	if err := mux.HandlePath(http.MethodGet, "/livez", Livez); err != nil {
		return nil, fmt.Errorf("gateway: %w", err)
	}
	// Inbound webhooks: signed deliveries, no API key.
	hooks := server.NewWebhookHandler(a.Store, a.Engine, logger)
	hooks.SetRate(cfg.TriggerRate)
	if err := mux.HandlePath(http.MethodPost, "/hooks/{organization}/{workspace}/{instance}", func(w http.ResponseWriter, r *http.Request, _ map[string]string) {
		hooks.ServeHTTP(w, r)
	}); err != nil {
		return nil, fmt.Errorf("gateway: %w", err)
	}
	// OAuth: the provider sends a person back here with a code (no API key:
	// the sealed state names the connection).
	if err := mux.HandlePath(http.MethodGet, server.OAuthCallbackPath, a.oauthCallback(cfg.PublicURL, logger)); err != nil {
		return nil, fmt.Errorf("gateway: %w", err)
	}
	return requestid.HTTP(h), nil
}

// oauthCallback completes a connection's authorization when the provider
// sends a person back with a code.
func (a *App) oauthCallback(publicURL string, logger *slog.Logger) runtime.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request, _ map[string]string) {

		q := r.URL.Query()
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if e := q.Get("error"); e != "" {
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprintf(w, "The provider refused the authorization: %s\n", e)
			return
		}
		name, err := a.Conns.CompleteAuthorization(r.Context(), q.Get("state"), q.Get("code"),
			strings.TrimSuffix(publicURL, "/")+server.OAuthCallbackPath)
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
	}
}

// mountConsole mounts the web console over h (a.HTTP) and traces HTTP
// requests when cfg has a tracer.
func (a *App) mountConsole(ctx context.Context, cfg Config, logger *slog.Logger, local *chain.Local, keyAuth *auth.KeyAuth, h http.Handler) error {
	st := a.Store

	// The web console at /: pages that call the services above through the
	// same in-process channel and interceptor chain, as the session's user.
	conOpts := console.Options{
		Conn: local, Sessions: st, Auth: keyAuth, SessionTTL: cfg.SessionTTL, Now: cfg.SessionClock,
		Secure: strings.HasPrefix(cfg.PublicURL, "https://"), Logger: logger, Hub: a.Hub,
	}
	if !st.SingleWriter() {
		// Replicas may share the database: they tell each other of their
		// changes (LISTEN/NOTIFY).
		conOpts.Replicas = st
	}
	con, err := console.New(conOpts)
	if err != nil {
		return fmt.Errorf("console: %w", err)
	}
	a.Console = con
	a.closers = append(a.closers, func() error { con.Close(); return nil })
	// The live pages' streams end with the service (before it drains).
	go func() { <-ctx.Done(); con.Close() }()
	a.HTTP = con.Mount(h)
	if tp := cfg.TracerProvider; tp != nil {
		// A span per HTTP request, continuing the caller's traceparent.
		a.HTTP = otelhttp.NewHandler(a.HTTP, "prose", otelhttp.WithTracerProvider(tp), otelhttp.WithPropagators(tracing.Propagator),
			otelhttp.WithSpanNameFormatter(func(_ string, r *http.Request) string { return "HTTP " + r.Method }))
	}
	return nil
}

// pendingExceptions reads the store's counts of pending exceptions for
// prose_exceptions_pending, workspaces by resource name.
func pendingExceptions(ctx context.Context, st store.Store) ([]metrics.PendingCount, error) {
	rows, err := st.CountPendingExceptions(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]metrics.PendingCount, len(rows))
	for i, r := range rows {
		out[i] = metrics.PendingCount{Workspace: names.Workspace(r.OrganizationID, r.WorkspaceID), Automation: r.AutomationID, Group: r.Group, N: r.N}
	}
	return out, nil
}
