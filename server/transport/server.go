// Package transport is the gRPC plumbing every Prose service shares: the
// named, order-checked interceptor chain (recovery → request id → logging →
// metrics → errors → auth → validation → authorization), authentication
// (API keys, console sessions) and the method access table, AIP-193 error
// helpers, request limits, gRPC health and server reflection. It knows no
// service: the services live in package server and register on the
// *grpc.Server that New returns.
//
// HTTP requests reach the same services through Local, the in-process
// channel NewServer makes beside the *grpc.Server: the same interceptor
// chain, without HTTP/2 framing or protobuf encoding, so everything here
// runs for both transports.
package transport

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"

	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/reflection"

	"github.com/proserun/prose/store"
)

// Middleware is one named entry of the interceptor chain. Either interceptor
// may be nil when the entry applies to one kind of call only.
type Middleware struct {
	Name   string
	Unary  grpc.UnaryServerInterceptor
	Stream grpc.StreamServerInterceptor
}

// Names of the built-in chain entries, outermost first.
const (
	MiddlewareRecovery   = "recovery"
	MiddlewareRequestID  = "request_id"
	MiddlewareLogging    = "logging"
	MiddlewareMetrics    = "metrics"
	MiddlewareErrors     = "errors"
	MiddlewareAuth       = "auth"
	MiddlewareValidation = "validation"
	// MiddlewareAuthorization checks the request against the caller: its
	// organization, its workspaces against the key's scope, and the
	// permission of MethodAccess against the caller's roles.
	MiddlewareAuthorization = "authorization"
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
	Authenticator Authenticator
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
	Outer []Middleware
	// Extra entries are appended after authorization (innermost).
	Extra []Middleware
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
	Admission *Admission
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

// Chain returns the named interceptor entries New installs, outermost
// first. A caller wanting a different chain can edit this slice and pass
// it to ServerOptionsFor.
func Chain(opts Options) []Middleware {
	log := opts.logger()
	auth := opts.Authenticator
	if auth == nil {
		auth = denyAll
		if opts.InsecureNoAuthorization {
			auth = AllowAll
		}
	}
	public := newPublicSet(append(append([]string{}, DefaultPublicMethods...), opts.PublicMethods...))
	metrics := serverMetrics(opts.Registerer)
	ls := defaultLimits
	if opts.Sizes != (store.Sizes{}) {
		ls = newLimitSet(opts.Sizes)
	}
	chain := append([]Middleware{}, opts.Outer...)
	chain = append(chain, []Middleware{
		{Name: MiddlewareRecovery, Unary: recoveryUnary(log), Stream: recoveryStream(log)},
		{Name: MiddlewareRequestID, Unary: requestIDUnary(), Stream: requestIDStream()},
		{Name: MiddlewareLogging, Unary: loggingUnary(log), Stream: loggingStream(log)},
		{Name: MiddlewareMetrics, Unary: interceptors.UnaryServerInterceptor(metrics), Stream: interceptors.StreamServerInterceptor(metrics)},
		{Name: MiddlewareErrors, Unary: errorsUnary(log), Stream: errorsStream(log)},
		{Name: MiddlewareAuth, Unary: authUnary(auth, public), Stream: authStream(auth, public)},
		{Name: MiddlewareValidation, Unary: validationUnary(ls), Stream: validationStream(ls)},
		authorizationMiddleware(public, opts.InsecureNoAuthorization),
	}...)
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

// VerifyChain checks a chain before it is installed: every entry has a name
// and at least one interceptor, no name appears twice, every built-in entry
// is present, and the built-in entries keep builtinOrder (entries of one's
// own may sit anywhere between or after them).
func VerifyChain(chain []Middleware) error {
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

// ServerOptionsFor checks chain with VerifyChain and turns its entries into
// grpc.ServerOptions.
func ServerOptionsFor(chain []Middleware) ([]grpc.ServerOption, error) {
	unary, stream, err := interceptorsOf(chain)
	if err != nil {
		return nil, err
	}
	return []grpc.ServerOption{
		grpc.ChainUnaryInterceptor(unary...),
		grpc.ChainStreamInterceptor(stream...),
	}, nil
}

// interceptorsOf checks chain with VerifyChain and lists its interceptors,
// outermost first.
func interceptorsOf(chain []Middleware) (unary []grpc.UnaryServerInterceptor, stream []grpc.StreamServerInterceptor, err error) {
	if err := VerifyChain(chain); err != nil {
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
// NewServer panics if the chain fails VerifyChain: that is a programming
// error (an Extra entry reusing a built-in name), found by the first test
// that starts a server.
func NewServer(opts Options) *Server {
	unary, stream, err := interceptorsOf(Chain(opts))
	if err != nil {
		panic("transport.New: " + err.Error())
	}
	grpcOpts := []grpc.ServerOption{grpc.ChainUnaryInterceptor(unary...), grpc.ChainStreamInterceptor(stream...), codecOption()}
	// Only native gRPC calls are admitted by Admission: Local's callers
	// (the gateway, the console) are bounded by the gateway itself.
	grpcOpts = append(grpcOpts, opts.Admission.serverOption()...)
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

func serverMetrics(reg prometheus.Registerer) *rpcMetrics {
	if reg == nil {
		reg = prometheus.DefaultRegisterer
	}
	m := newRPCMetrics()
	if err := reg.Register(m); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(*rpcMetrics); ok {
				return existing
			}
		}
		// Some other collector clashes: keep counting, unexported.
		return m
	}
	return m
}

// HTTPCodeHeader is the response header metadata key the gateway reads to
// set the HTTP status of a successful call; it never reaches HTTP clients.
const HTTPCodeHeader = "x-http-code"

// SetHTTPStatus asks the gateway to answer a successful unary call over
// HTTP with code (2xx, e.g. 201 for POST /v1/invoke/{share_id}). gRPC
// clients see the header metadata x-http-code and may ignore it.
func SetHTTPStatus(ctx context.Context, code int) error {
	return grpc.SetHeader(ctx, metadata.Pairs(HTTPCodeHeader, strconv.Itoa(code)))
}
