// Package chain builds the one interceptor chain every RPC passes, on
// both transports, from the named entries of the middleware packages
// beside it (recovery → request id → logging → metrics → errors → auth →
// validation → authorization), in one place (Entries), checked (Verify);
// and the servers behind it: the *grpc.Server, its in-process channel
// Local (how HTTP reaches the services: the same chain, without HTTP/2
// framing or protobuf encoding), an optional gRPC-only server, gRPC health
// and server reflection.
package chain

import (
	"fmt"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/reflection"

	"github.com/proserun/prose/server/transport"
	"github.com/proserun/prose/server/transport/admission"
	"github.com/proserun/prose/server/transport/auth"
	"github.com/proserun/prose/server/transport/limits"
	"github.com/proserun/prose/server/transport/logging"
	"github.com/proserun/prose/server/transport/metrics"
	"github.com/proserun/prose/server/transport/normalize"
	"github.com/proserun/prose/server/transport/recovery"
	"github.com/proserun/prose/server/transport/requestid"
	"github.com/proserun/prose/server/transport/validate"
	"github.com/proserun/prose/store"
)

// Names of the built-in chain entries, outermost first (each package's
// Name).
const (
	MiddlewareRecovery      = recovery.Name
	MiddlewareRequestID     = requestid.Name
	MiddlewareLogging       = logging.Name
	MiddlewareMetrics       = metrics.Name
	MiddlewareErrors        = normalize.Name
	MiddlewareAuth          = auth.Name
	MiddlewareValidation    = validate.Name
	MiddlewareAuthorization = auth.AuthorizationName
)

// Options configures New. The zero value is usable: it logs to
// slog.Default(), registers metrics with prometheus.DefaultRegisterer and,
// having no Authenticator, refuses every non-public method (fail closed).
type Options struct {
	// Logger receives one line per call and panics with their stacks.
	Logger *slog.Logger
	// Authenticator decides who may call non-public methods. Nil: every
	// non-public call is refused (UNAUTHENTICATED
	// AUTHENTICATOR_NOT_CONFIGURED), unless InsecureNoAuthorization.
	Authenticator auth.Authenticator
	// InsecureNoAuthorization is for tests of the transport only: a nil
	// Authenticator lets every call through (AllowAll), and a call that
	// reaches the authorization entry without a Principal (an Authenticator
	// that does not make one) is not refused. Never set it in a server.
	InsecureNoAuthorization bool
	// PublicMethods are added to DefaultPublicMethods: full method names
	// ("/prose.legacy.v2.LegacyService/GetHealth") or whole services
	// ("/prose.legacy.v2.LegacyService/"). Public methods skip the
	// Authenticator (they still get validation).
	PublicMethods []string
	// Registerer receives the per-method counters and latency histograms.
	// Nil: prometheus.DefaultRegisterer. Registering twice (several servers
	// in one process, as in tests) reuses the metrics already registered.
	Registerer prometheus.Registerer
	// Health is the health service to register; nil makes one that reports
	// SERVING for "". Pass your own to flip it to NOT_SERVING on shutdown.
	Health *health.Server
	// DisableReflection leaves server reflection out.
	DisableReflection bool
	// Outer entries come before recovery (outermost): they see every call,
	// even one the chain refuses (a tracer, a test's call recorder).
	Outer []transport.Middleware
	// Extra entries are appended after authorization (innermost).
	Extra []transport.Middleware
	// ServerOptions are passed to grpc.NewServer after the interceptors.
	ServerOptions []grpc.ServerOption
	// Sizes are the sizes of request fields the validation entry accepts
	// (titles, descriptions, code, inputs, events); zero fields: the
	// defaults (store.DefaultSizes). Validate them first (Sizes.Validate).
	Sizes store.Sizes
	// Admission, when set, bounds the calls of LargeRequestMethods (file
	// uploads, up to MaxRequestBytes each) in flight on the connections
	// the server serves itself (its InTapHandle); give the same Admission
	// to the HTTP side for the gRPC calls it serves (gateway.Serve's
	// WithGRPCAdmission).
	Admission *admission.Admission
	// TracerProvider, when set, gives each call on Local a server span of
	// its own, a child of the caller's (the HTTP request's), named and
	// attributed as otelgrpc names a call on a connection. Native gRPC
	// calls get theirs from otelgrpc's stats handler (ServerOptions).
	TracerProvider trace.TracerProvider
	// GRPCOnly, when set, makes NewServer build a second *grpc.Server
	// (Server.GRPCOnly) for a gRPC-only port served by grpc-go's own
	// transport (grpc.Server.Serve): the same interceptor chain, admission,
	// health, reflection and ServerOptions, its own options after them, and
	// one receive bound for every method, GRPCOnlyMaxRequestBytes.
	GRPCOnly *GRPCOnlyOptions
}

func (o Options) logger() *slog.Logger {
	if o.Logger != nil {
		return o.Logger
	}
	return slog.Default()
}

// Entries returns the named interceptor entries NewServer installs,
// outermost first: the one place the chain is put together. A caller
// wanting a different chain can edit this slice and pass it to
// ServerOptionsFor.
func Entries(opts Options) []transport.Middleware {
	log := opts.logger()
	authn := opts.Authenticator
	if authn == nil && opts.InsecureNoAuthorization {
		authn = auth.AllowAll
	}
	ls := limits.Default
	if opts.Sizes != (store.Sizes{}) {
		ls = limits.NewSet(opts.Sizes)
	}
	chain := append([]transport.Middleware{}, opts.Outer...)
	chain = append(chain,
		recovery.Middleware(log),
		requestid.Middleware(),
		logging.Middleware(log),
		metrics.Middleware(opts.Registerer),
		normalize.Middleware(log),
		auth.Middleware(authn, opts.PublicMethods),
		validate.Middleware(ls),
		auth.AuthorizationMiddleware(opts.PublicMethods, opts.InsecureNoAuthorization),
	)
	return append(chain, opts.Extra...)
}

// builtinOrder is the order the built-in entries keep, outermost first.
// Each relies on those outside it: logging and the errors entry read the
// request id; logging and metrics sit outside errors so that they record the
// normalised code (a panic or a plain error counts as INTERNAL); auth runs
// inside errors so that its refusals are normalised too; validation follows
// auth so that an anonymous caller learns nothing from validation messages;
// authorization needs both the Principal auth made and a validated request.
var builtinOrder = []string{
	MiddlewareRecovery,
	MiddlewareRequestID,
	MiddlewareLogging,
	MiddlewareMetrics,
	MiddlewareErrors,
	MiddlewareAuth,
	MiddlewareValidation,
	MiddlewareAuthorization,
}

// Verify checks a chain before it is installed: every entry has a name
// and at least one interceptor, no name appears twice, every built-in entry
// is present, and the built-in entries keep builtinOrder (entries of one's
// own may sit anywhere between or after them).
func Verify(chain []transport.Middleware) error {
	at := make(map[string]int, len(chain))
	for i, m := range chain {
		switch {
		case m.Name == "":
			return fmt.Errorf("middleware chain: entry %d has no name", i)
		case m.Unary == nil && m.Stream == nil:
			return fmt.Errorf("middleware chain: entry %q has no interceptor", m.Name)
		}
		if j, dup := at[m.Name]; dup {
			return fmt.Errorf("middleware chain: %q appears twice (entries %d and %d)", m.Name, j, i)
		}
		at[m.Name] = i
	}
	prev := -1
	for k, name := range builtinOrder {
		i, ok := at[name]
		if !ok {
			return fmt.Errorf("middleware chain: required entry %q is missing", name)
		}
		if i < prev {
			return fmt.Errorf("middleware chain: %q must come after %q", name, builtinOrder[k-1])
		}
		prev = i
	}
	return nil
}

// ServerOptionsFor checks chain with Verify and turns its entries into
// grpc.ServerOptions.
func ServerOptionsFor(chain []transport.Middleware) ([]grpc.ServerOption, error) {
	unary, stream, err := interceptorsOf(chain)
	if err != nil {
		return nil, err
	}
	return []grpc.ServerOption{
		grpc.ChainUnaryInterceptor(unary...),
		grpc.ChainStreamInterceptor(stream...),
	}, nil
}

// interceptorsOf checks chain with Verify and lists its interceptors,
// outermost first.
func interceptorsOf(chain []transport.Middleware) (unary []grpc.UnaryServerInterceptor, stream []grpc.StreamServerInterceptor, err error) {
	if err := Verify(chain); err != nil {
		return nil, nil, err
	}
	for _, m := range chain {
		if m.Unary != nil {
			unary = append(unary, m.Unary)
		}
		if m.Stream != nil {
			stream = append(stream, m.Stream)
		}
	}
	return unary, stream, nil
}

// New returns a gRPC server with the interceptor chain installed and gRPC
// health and server reflection registered: NewServer(opts).GRPC, for a
// server with no in-process callers.
func New(opts Options) *grpc.Server {
	return NewServer(opts).GRPC
}

// NewServer returns a gRPC server and its in-process channel, both behind
// the interceptor chain of opts (one chain, built and checked once), with
// gRPC health registered on both and server reflection on the gRPC server
// (and, with Options.GRPCOnly, a second gRPC server built from the same
// chain and options: Server.GRPCOnly).
// Register the Prose services on the Server, then serve GRPC
// (gateway.ListenAndServe) and give Local to the gateway and the console.
//
// NewServer panics if the chain fails Verify: that is a programming
// error (an Extra entry reusing a built-in name), found by the first test
// that starts a server.
func NewServer(opts Options) *Server {
	unary, stream, err := interceptorsOf(Entries(opts))
	if err != nil {
		panic("chain.NewServer: " + err.Error())
	}
	grpcOpts := []grpc.ServerOption{grpc.ChainUnaryInterceptor(unary...), grpc.ChainStreamInterceptor(stream...), codecOption()}
	// Only native gRPC calls are admitted by Admission: Local's callers
	// (the gateway, the console) are bounded by the gateway itself.
	grpcOpts = append(grpcOpts, opts.Admission.ServerOptions()...)
	grpcOpts = append(grpcOpts, opts.ServerOptions...)
	s := &Server{
		GRPC:  grpc.NewServer(grpcOpts...),
		Local: &Local{unary: unary, stream: chainStream(stream), methods: map[string]localMethod{}},
	}
	if opts.GRPCOnly != nil {
		// The same options, its connection limits, then its own options,
		// then its bound (last: it wins).
		only := append(grpcOpts[:len(grpcOpts):len(grpcOpts)], GRPCOnlyConnectionOptions(opts.GRPCOnly.HandshakeTimeout)...)
		only = append(append(only, opts.GRPCOnly.ServerOptions...), grpc.MaxRecvMsgSize(GRPCOnlyMaxRequestBytes))
		s.GRPCOnly = grpc.NewServer(only...)
	}
	if opts.TracerProvider != nil {
		s.Local.tracer = opts.TracerProvider.Tracer(tracerName)
	}
	hs := opts.Health
	if hs == nil {
		hs = health.NewServer()
		hs.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	}
	healthpb.RegisterHealthServer(s, hs)
	if !opts.DisableReflection {
		reflection.Register(s.GRPC)
		if s.GRPCOnly != nil {
			reflection.Register(s.GRPCOnly)
		}
	}
	return s
}
