package chain_test

import (
	errorsv1 "github.com/proserun/prose/gen/prose/errors/v1"

	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/goleak"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"

	legacyv2 "github.com/proserun/prose/gen/prose/legacy/v2"
	"github.com/proserun/prose/server/transport"
	"github.com/proserun/prose/server/transport/auth"
	"github.com/proserun/prose/server/transport/chain"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// syncBuffer is a log sink safe for the server's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// fakeLegacy answers GetRun by id: "panic" panics, "plain" returns a
// non-status error, "slow" waits for its context; anything else is NOT_FOUND.
type fakeLegacy struct {
	legacyv2.UnimplementedLegacyServiceServer
	sawRequestID chan string
}

func (f *fakeLegacy) GetRun(ctx context.Context, req *legacyv2.GetRunRequest) (*legacyv2.Run, error) {
	if f.sawRequestID != nil {
		f.sawRequestID <- transport.RequestID(ctx)
	}
	switch req.GetId() {
	case "panic":
		panic("boom")
	case "plain":
		return nil, errors.New("database is on fire")
	case "ok":
		return &legacyv2.Run{Id: "ok"}, nil
	}
	return nil, transport.NotFound(errorsv1.ErrorReason_ERROR_REASON_RUN_NOT_FOUND, "runs/"+req.GetId())
}

func (f *fakeLegacy) CreateRun(ctx context.Context, req *legacyv2.CreateRunRequest) (*legacyv2.Run, error) {
	return &legacyv2.Run{Id: "r1", Name: req.GetName()}, nil
}

func (f *fakeLegacy) Health(context.Context, *legacyv2.HealthRequest) (*legacyv2.HealthResponse, error) {
	return &legacyv2.HealthResponse{}, nil
}

type env struct {
	conn *grpc.ClientConn
	logs *syncBuffer
}

// start serves impl on a server of opts with InsecureNoAuthorization:
// these tests are about the transport.
func start(t *testing.T, opts chain.Options, impl legacyv2.LegacyServiceServer) *env {
	t.Helper()
	opts.InsecureNoAuthorization = true
	return startAsIs(t, opts, impl)
}

// startAsIs serves impl on a server of opts as they are.
func startAsIs(t *testing.T, opts chain.Options, impl legacyv2.LegacyServiceServer) *env {
	t.Helper()
	logs := &syncBuffer{}
	opts.Logger = slog.New(slog.NewJSONHandler(logs, nil))
	opts.Registerer = prometheus.NewRegistry()
	s := chain.New(opts)
	legacyv2.RegisterLegacyServiceServer(s, impl)
	lis := bufconn.Listen(1 << 20)
	done := make(chan struct{})
	go func() { defer close(done); _ = s.Serve(lis) }()
	conn, err := grpc.NewClient("passthrough:///bufnet",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = conn.Close()
		s.Stop()
		<-done
	})
	return &env{conn: conn, logs: logs}
}

func TestPanicBecomesInternal(t *testing.T) {
	e := start(t, chain.Options{}, &fakeLegacy{})
	c := legacyv2.NewLegacyServiceClient(e.conn)
	_, err := c.GetRun(context.Background(), &legacyv2.GetRunRequest{Id: "panic"})
	if status.Code(err) != codes.Internal {
		t.Fatalf("code = %v, want INTERNAL (%v)", status.Code(err), err)
	}
	if strings.Contains(err.Error(), "boom") {
		t.Errorf("panic value leaked to the client: %v", err)
	}
	logs := e.logs.String()
	if !strings.Contains(logs, "panic in handler") || !strings.Contains(logs, "fakeLegacy).GetRun") {
		t.Errorf("panic and the handler's stack not logged:\n%s", logs)
	}
	// Logging (and metrics) saw the call as INTERNAL.
	if !strings.Contains(logs, `"msg":"rpc","method":"/prose.legacy.v2.LegacyService/GetRun","code":"Internal"`) {
		t.Errorf("no INTERNAL log line for the panicking call:\n%s", logs)
	}
	// The server is still up.
	if _, err := c.GetRun(context.Background(), &legacyv2.GetRunRequest{Id: "ok"}); err != nil {
		t.Fatalf("after panic: %v", err)
	}
}

func TestNonStatusErrorBecomesGenericInternal(t *testing.T) {
	e := start(t, chain.Options{}, &fakeLegacy{})
	_, err := legacyv2.NewLegacyServiceClient(e.conn).GetRun(context.Background(), &legacyv2.GetRunRequest{Id: "plain"})
	st := status.Convert(err)
	if st.Code() != codes.Internal || st.Message() != "internal error" {
		t.Fatalf("got %v %q, want INTERNAL \"internal error\"", st.Code(), st.Message())
	}
	if transport.ReasonOf(err) != transport.ReasonInternal {
		t.Errorf("reason = %q", transport.Reason(err))
	}
	if !strings.Contains(e.logs.String(), "database is on fire") {
		t.Errorf("original error not logged:\n%s", e.logs)
	}
}

func TestRequestID(t *testing.T) {
	f := &fakeLegacy{sawRequestID: make(chan string, 1)}
	e := start(t, chain.Options{}, f)
	c := legacyv2.NewLegacyServiceClient(e.conn)

	t.Run("given", func(t *testing.T) {
		var hdr metadata.MD
		ctx := metadata.AppendToOutgoingContext(context.Background(), "x-request-id", "abc-123")
		_, _ = c.GetRun(ctx, &legacyv2.GetRunRequest{Id: "ok"}, grpc.Header(&hdr))
		if got := <-f.sawRequestID; got != "abc-123" {
			t.Errorf("handler saw %q", got)
		}
		if got := hdr.Get("x-request-id"); len(got) != 1 || got[0] != "abc-123" {
			t.Errorf("header x-request-id = %v", got)
		}
	})
	t.Run("made", func(t *testing.T) {
		var hdr, trl metadata.MD
		_, err := c.GetRun(context.Background(), &legacyv2.GetRunRequest{Id: "missing"}, grpc.Header(&hdr), grpc.Trailer(&trl))
		if status.Code(err) != codes.NotFound {
			t.Fatalf("err = %v", err)
		}
		id := <-f.sawRequestID
		if len(id) != 32 {
			t.Errorf("made id %q", id)
		}
		got := append(hdr.Get("x-request-id"), trl.Get("x-request-id")...)
		if len(got) == 0 || got[0] != id {
			t.Errorf("x-request-id header/trailer = %v, want %q", got, id)
		}
		if !strings.Contains(e.logs.String(), `"request_id":"`+id+`"`) {
			t.Errorf("request id not in the call's log line:\n%s", e.logs)
		}
	})
	t.Run("invalid replaced", func(t *testing.T) {
		ctx := metadata.AppendToOutgoingContext(context.Background(), "x-request-id", "bad id with spaces")
		_, _ = c.GetRun(ctx, &legacyv2.GetRunRequest{Id: "ok"})
		if got := <-f.sawRequestID; got == "bad id with spaces" || got == "" {
			t.Errorf("handler saw %q", got)
		}
	})
}

func TestLogLine(t *testing.T) {
	e := start(t, chain.Options{}, &fakeLegacy{})
	_, _ = legacyv2.NewLegacyServiceClient(e.conn).GetRun(context.Background(), &legacyv2.GetRunRequest{Id: "nope"})
	logs := e.logs.String()
	for _, want := range []string{`"msg":"rpc"`, `"method":"/prose.legacy.v2.LegacyService/GetRun"`, `"code":"NotFound"`, `"duration_ms":`, `"request_id":`} {
		if !strings.Contains(logs, want) {
			t.Errorf("log lacks %s:\n%s", want, logs)
		}
	}
}

func TestAuth(t *testing.T) {
	auth := auth.AuthenticatorFunc(func(ctx context.Context, method string) (context.Context, error) {
		md, _ := metadata.FromIncomingContext(ctx)
		if len(md.Get("x-api-key")) == 0 {
			return nil, transport.Unauthenticated(errorsv1.ErrorReason_ERROR_REASON_API_KEY_MISSING, "missing x-api-key")
		}
		return ctx, nil
	})
	e := start(t, chain.Options{Authenticator: auth}, &fakeLegacy{})
	c := legacyv2.NewLegacyServiceClient(e.conn)

	_, err := c.GetRun(context.Background(), &legacyv2.GetRunRequest{Id: "ok"})
	if status.Code(err) != codes.Unauthenticated || transport.Reason(err) != "API_KEY_MISSING" {
		t.Errorf("without key: %v", err)
	}
	ctx := metadata.AppendToOutgoingContext(context.Background(), "x-api-key", "k")
	if _, err := c.GetRun(ctx, &legacyv2.GetRunRequest{Id: "ok"}); err != nil {
		t.Errorf("with key: %v", err)
	}
	// Public methods skip the authenticator.
	if _, err := c.Health(context.Background(), &legacyv2.HealthRequest{}); err != nil {
		t.Errorf("v2 health: %v", err)
	}
	if _, err := healthpb.NewHealthClient(e.conn).Check(context.Background(), &healthpb.HealthCheckRequest{}); err != nil {
		t.Errorf("grpc health: %v", err)
	}
}

func TestValidationOverGRPC(t *testing.T) {
	e := start(t, chain.Options{}, &fakeLegacy{})
	_, err := legacyv2.NewLegacyServiceClient(e.conn).CreateRun(context.Background(), &legacyv2.CreateRunRequest{Name: "n", Stage: "Draft"})
	st := status.Convert(err)
	if st.Code() != codes.InvalidArgument {
		t.Fatalf("err = %v", err)
	}
	var fields []string
	for _, d := range st.Details() {
		if br, ok := d.(*errdetails.BadRequest); ok {
			for _, v := range br.GetFieldViolations() {
				fields = append(fields, v.GetField())
			}
		}
	}
	if strings.Join(fields, ",") != "process_id,agent_id" {
		t.Errorf("violations = %v", fields)
	}
}

// TestAuthorizationIsBuiltIn: authorization is a named entry of the
// built-in chain, after validation, whatever the options; a server built
// without an Authenticator refuses every non-public call, and one whose
// Authenticator lets a call through without a Principal refuses it too
// (fail closed). Public methods stay open.
func TestAuthorizationIsBuiltIn(t *testing.T) {
	var names []string
	for _, m := range chain.Entries(chain.Options{Registerer: prometheus.NewRegistry()}) {
		names = append(names, m.Name)
	}
	if got := strings.Join(names, ","); !strings.HasSuffix(got, chain.MiddlewareValidation+","+chain.MiddlewareAuthorization) ||
		!strings.Contains(got, chain.MiddlewareAuth+",") {
		t.Errorf("chain = %s, want auth, then validation, then authorization", got)
	}
	noPrincipal := auth.AuthenticatorFunc(func(ctx context.Context, _ string) (context.Context, error) { return ctx, nil })
	for name, opts := range map[string]chain.Options{
		"no authenticator":            {},
		"authenticator, no principal": {Authenticator: noPrincipal},
	} {
		t.Run(name, func(t *testing.T) {
			e := startAsIs(t, opts, &fakeLegacy{})
			c := legacyv2.NewLegacyServiceClient(e.conn)
			_, err := c.GetRun(context.Background(), &legacyv2.GetRunRequest{Id: "ok"})
			if status.Code(err) != codes.Unauthenticated || transport.ReasonOf(err) != transport.ReasonAuthenticatorMissing {
				t.Errorf("GetRun: %v, want UNAUTHENTICATED %s", err, transport.ReasonAuthenticatorMissing)
			}
			if _, err := c.Health(context.Background(), &legacyv2.HealthRequest{}); err != nil {
				t.Errorf("v2 health: %v", err)
			}
			if _, err := healthpb.NewHealthClient(e.conn).Check(context.Background(), &healthpb.HealthCheckRequest{}); err != nil {
				t.Errorf("grpc health: %v", err)
			}
		})
	}
}

// TestVerifyChain: the built-in chain passes; a chain with a built-in entry
// moved, missing, duplicated, unnamed or empty is refused, and New refuses
// to build a server on it.
func TestVerifyChain(t *testing.T) {
	base := chain.Entries(chain.Options{Registerer: prometheus.NewRegistry()})
	if err := chain.Verify(base); err != nil {
		t.Fatalf("built-in chain: %v", err)
	}
	noop := func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		return h(ctx, req)
	}
	extra := transport.Middleware{Name: "audit", Unary: noop}
	if err := chain.Verify(append(slices.Clone(base), extra)); err != nil {
		t.Errorf("built-in chain + one entry: %v", err)
	}
	swapped := slices.Clone(base)
	swapped[5], swapped[6] = swapped[6], swapped[5] // validation before auth
	without := slices.DeleteFunc(slices.Clone(base), func(m transport.Middleware) bool {
		return m.Name == chain.MiddlewareAuthorization
	})
	for name, tc := range map[string]struct {
		chain []transport.Middleware
		want  string
	}{
		"out of order": {swapped, `"validation" must come after "auth"`},
		"missing":      {without, `required entry "authorization" is missing`},
		"twice":        {append(slices.Clone(base), transport.Middleware{Name: chain.MiddlewareAuth, Unary: noop}), `"auth" appears twice`},
		"unnamed":      {append(slices.Clone(base), transport.Middleware{Unary: noop}), "has no name"},
		"empty":        {append(slices.Clone(base), transport.Middleware{Name: "x"}), `"x" has no interceptor`},
	} {
		err := chain.Verify(tc.chain)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error containing %s", name, err, tc.want)
		}
		if _, err := chain.ServerOptionsFor(tc.chain); err == nil {
			t.Errorf("%s: ServerOptionsFor accepted it", name)
		}
	}
	defer func() {
		if p := recover(); p == nil || !strings.Contains(fmt.Sprint(p), `"logging" appears twice`) {
			t.Errorf("New with a duplicate entry: recovered %v", p)
		}
	}()
	chain.New(chain.Options{Registerer: prometheus.NewRegistry(),
		Extra: []transport.Middleware{{Name: chain.MiddlewareLogging, Unary: noop}}})
}

// overridingLegacy implements go-grpc-middleware's AuthFuncOverride, which
// that library's auth interceptor obeyed instead of the Authenticator.
type overridingLegacy struct{ fakeLegacy }

func (*overridingLegacy) AuthFuncOverride(ctx context.Context, _ string) (context.Context, error) {
	return ctx, nil
}

// TestServiceCannotSkipTheAuthenticator: the auth entry asks the
// Authenticator whatever the service implements (over gRPC and over Local,
// unary and streaming).
func TestServiceCannotSkipTheAuthenticator(t *testing.T) {
	refuse := auth.AuthenticatorFunc(func(context.Context, string) (context.Context, error) {
		return nil, transport.Unauthenticated(errorsv1.ErrorReason_ERROR_REASON_API_KEY_MISSING, "no")
	})
	e := start(t, chain.Options{Authenticator: refuse}, &overridingLegacy{})
	if _, err := legacyv2.NewLegacyServiceClient(e.conn).GetRun(context.Background(), &legacyv2.GetRunRequest{Id: "ok"}); status.Code(err) != codes.Unauthenticated {
		t.Errorf("unary over gRPC: %v, want UNAUTHENTICATED", err)
	}
	srv := chain.NewServer(chain.Options{Logger: slog.New(slog.DiscardHandler), Registerer: prometheus.NewRegistry(),
		Authenticator: refuse, DisableReflection: true})
	defer srv.GRPC.Stop()
	desc := healthpb.Health_ServiceDesc
	desc.ServiceName = "probe.Health"
	srv.RegisterService(&desc, overridingProbe{})
	stream, err := probeClient{srv.Local}.Watch(context.Background(), &healthpb.HealthCheckRequest{})
	if err == nil {
		_, err = stream.Recv()
	}
	if status.Code(err) != codes.Unauthenticated {
		t.Errorf("stream over Local: %v, want UNAUTHENTICATED", err)
	}
}

type overridingProbe struct{ probeHealth }

func (overridingProbe) AuthFuncOverride(ctx context.Context, _ string) (context.Context, error) {
	return ctx, nil
}
