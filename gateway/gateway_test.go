package gateway_test

import (
	errorsv1 "github.com/proserun/prose/gen/prose/errors/v1"

	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/proserun/prose/gateway"
	bookv1 "github.com/proserun/prose/gen/prose/book/v1"
	legacyv1 "github.com/proserun/prose/gen/prose/legacy/v1"
	legacyv2 "github.com/proserun/prose/gen/prose/legacy/v2"
	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/server/transport"
	"github.com/proserun/prose/server/transport/auth"
	"github.com/proserun/prose/server/transport/chain"
	"github.com/proserun/prose/server/transport/requestid"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

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

// --- fakes ----------------------------------------------------------------

// errorFor maps a magic id to the error a fake handler returns.
func errorFor(id string) error {
	if n, ok := strings.CutPrefix(id, "code-"); ok {
		c, _ := strconv.Atoi(n)
		return status.Error(codes.Code(c), "failed with code "+n)
	}
	switch id {
	case "missing":
		return transport.NotFound(errorsv1.ErrorReason_ERROR_REASON_RUN_NOT_FOUND, "runs/missing")
	case "denied":
		return transport.PermissionDenied(errorsv1.ErrorReason_ERROR_REASON_ORGANIZATION_MISMATCH, "mismatch with department")
	case "bad":
		return transport.InvalidArgument(errorsv1.ErrorReason_ERROR_REASON_INVALID_FIELD, "bad id", transport.Violation("id", "must be numeric"))
	case "conflict":
		return transport.FailedPrecondition(errorsv1.ErrorReason_ERROR_REASON_EXCEPTION_STATE_CONFLICT, "not pending", nil)
	case "plain":
		return io.ErrUnexpectedEOF
	case "panic":
		panic("handler exploded")
	}
	return nil
}

type fakeV1 struct {
	legacyv1.UnimplementedLegacyServiceServer
	mu  sync.Mutex
	md  metadata.MD
	req *legacyv1.InvokeRequest
}

func (f *fakeV1) Invoke(ctx context.Context, req *legacyv1.InvokeRequest) (*legacyv1.InvokeResponse, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	f.mu.Lock()
	f.md, f.req = md, req
	f.mu.Unlock()
	if err := errorFor(req.GetShareId()); err != nil {
		return nil, err
	}
	_ = grpc.SetHeader(ctx, metadata.Pairs("internal-secret", "s3cr3t"))
	_ = transport.SetHTTPStatus(ctx, http.StatusCreated)
	return &legacyv1.InvokeResponse{WorkerId: "w-1"}, nil
}

func (f *fakeV1) GetRunStatus(ctx context.Context, req *legacyv1.GetRunStatusRequest) (*legacyv1.GetRunStatusResponse, error) {
	if err := errorFor(req.GetWorkerId()); err != nil {
		return nil, err
	}
	return &legacyv1.GetRunStatusResponse{State: "done"}, nil
}

type fakeV2 struct {
	legacyv2.UnimplementedLegacyServiceServer
	entered, release chan struct{}
}

func (*fakeV2) Health(context.Context, *legacyv2.HealthRequest) (*legacyv2.HealthResponse, error) {
	return &legacyv2.HealthResponse{}, nil
}

func (f *fakeV2) GetRun(ctx context.Context, req *legacyv2.GetRunRequest) (*legacyv2.Run, error) {
	if req.GetId() == "slow" {
		close(f.entered)
		<-f.release
	}
	if err := errorFor(req.GetId()); err != nil {
		return nil, err
	}
	return &legacyv2.Run{Id: req.GetId(), Name: "n"}, nil
}

func (*fakeV2) CreateRun(ctx context.Context, req *legacyv2.CreateRunRequest) (*legacyv2.Run, error) {
	return &legacyv2.Run{Id: "r-1", Name: req.GetName()}, nil
}

type fakeBooks struct {
	bookv1.UnimplementedBookServiceServer
}

func (fakeBooks) GetBook(ctx context.Context, req *bookv1.GetBookRequest) (*bookv1.GetBookResponse, error) {
	if err := errorFor(req.GetName()); err != nil {
		return nil, err
	}
	if req.GetName() == "known" {
		return &bookv1.GetBookResponse{Book: &bookv1.Book{Name: "known", Version: req.GetVersion(), DisplayName: "Known"}}, nil
	}
	return nil, transport.NotFound(errorsv1.ErrorReason_ERROR_REASON_BOOK_NOT_FOUND, "books/"+req.GetName()+"/versions/"+req.GetVersion())
}

func (fakeBooks) ListWorkspaceBooks(context.Context, *bookv1.ListWorkspaceBooksRequest) (*bookv1.ListWorkspaceBooksResponse, error) {
	return &bookv1.ListWorkspaceBooksResponse{}, nil
}

func (fakeBooks) CreateWorkspaceBook(ctx context.Context, req *bookv1.CreateWorkspaceBookRequest) (*bookv1.Book, error) {
	return req.GetBook(), nil
}

type fakeEvents struct {
	platformv1.UnimplementedEventServiceServer
}

// StreamEvents sends two events; for run "broken" it fails after the first.
func (fakeEvents) StreamEvents(req *platformv1.StreamEventsRequest, stream grpc.ServerStreamingServer[platformv1.StreamEventsResponse]) error {
	if req.GetRunId() == "missing" {
		return transport.NotFound(errorsv1.ErrorReason_ERROR_REASON_RUN_NOT_FOUND, "runs/missing")
	}
	for i, name := range []string{"e1", "e2"} {
		if i == 1 && req.GetRunId() == "broken" {
			return transport.FailedPrecondition(errorsv1.ErrorReason_ERROR_REASON_RUN_STATE_CONFLICT, "the run went away", nil)
		}
		if err := stream.Send(&platformv1.StreamEventsResponse{Event: &platformv1.Event{Name: name, State: platformv1.Event_STATE_COMPLETE}}); err != nil {
			return err
		}
	}
	return nil
}

// --- harness --------------------------------------------------------------

type stack struct {
	base   string
	addr   string
	client *http.Client
	logs   *syncBuffer
	v1     *fakeV1
	v2     *fakeV2
	stop   func() error // cancels Serve's context and waits for it
}

// authByKey rejects x-api-key "wrong" and lets everything else through.
var authByKey = auth.AuthenticatorFunc(func(ctx context.Context, _ string) (context.Context, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	for _, k := range md.Get("x-api-key") {
		if k == "wrong" {
			return nil, transport.Unauthenticated(errorsv1.ErrorReason_ERROR_REASON_API_KEY_INVALID, "Invalid API key")
		}
	}
	for _, a := range md.Get("authorization") {
		if a == "Bearer wrong" {
			return nil, transport.Unauthenticated(errorsv1.ErrorReason_ERROR_REASON_API_KEY_INVALID, "Invalid API key")
		}
	}
	return ctx, nil
})

func startStack(t *testing.T) *stack {
	t.Helper()
	logs := &syncBuffer{}
	logger := slog.New(slog.NewJSONHandler(logs, nil))
	reg := prometheus.NewRegistry()
	srv := chain.NewServer(chain.Options{Logger: logger, Registerer: reg, Authenticator: authByKey, InsecureNoAuthorization: true})
	gs := srv.GRPC
	v1 := &fakeV1{}
	legacyv1.RegisterLegacyServiceServer(srv, v1)
	v2 := &fakeV2{entered: make(chan struct{}), release: make(chan struct{})}
	legacyv2.RegisterLegacyServiceServer(srv, v2)
	bookv1.RegisterBookServiceServer(srv, fakeBooks{})
	platformv1.RegisterEventServiceServer(srv, fakeEvents{})

	ctx, cancel := context.WithCancel(context.Background())
	mux, h, err := gateway.Mux(ctx, srv.Local, gateway.Options{
		OpenAPI: []byte(`{"swagger":"2.0"}`),
		Metrics: promhttp.HandlerFor(reg, promhttp.HandlerOpts{}),
		Logger:  logger,
	},
		gateway.Register(legacyv1.NewLegacyServiceClient, legacyv1.RegisterLegacyServiceHandlerClient),
		gateway.Register(legacyv2.NewLegacyServiceClient, legacyv2.RegisterLegacyServiceHandlerClient),
		gateway.Register(bookv1.NewBookServiceClient, bookv1.RegisterBookServiceHandlerClient),
		gateway.Register(platformv1.NewEventServiceClient, platformv1.RegisterEventServiceHandlerClient),
	)
	if err != nil {
		t.Fatal(err)
	}
	// A hand-written route, as the file upload endpoint will be.
	if err := mux.HandlePath(http.MethodPost, "/api/v1/hand/{id}", func(w http.ResponseWriter, r *http.Request, p map[string]string) {
		if p["id"] == "panic" {
			panic("hand-written route exploded")
		}
		_, _ = io.WriteString(w, `{"id":"`+p["id"]+`"}`)
	}); err != nil {
		t.Fatal(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- gateway.Serve(ctx, lis, gs, requestid.HTTP(h), logger) }()
	client := &http.Client{Transport: &http.Transport{}}
	var once sync.Once
	var serveErr error
	stop := func() error {
		once.Do(func() {
			cancel()
			serveErr = <-done
			client.CloseIdleConnections()
		})
		return serveErr
	}
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return &stack{base: "http://" + lis.Addr().String(), addr: lis.Addr().String(), client: client, logs: logs, v1: v1, v2: v2, stop: stop}
}

type response struct {
	status int
	header http.Header
	body   string
}

func (s *stack) do(t *testing.T, method, path, body string, header ...string) response {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, s.base+path, r)
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := s.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return response{resp.StatusCode, resp.Header, string(b)}
}

// jsonEq compares JSON documents ignoring formatting; want may leave out
// "details" (checked separately).
func decode(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatalf("body %q: %v", s, err)
	}
	return m
}

func mustEqualJSON(t *testing.T, got, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal([]byte(got), &g); err != nil {
		t.Fatalf("body %q: %v", got, err)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatal(err)
	}
	gb, _ := json.Marshal(g)
	wb, _ := json.Marshal(w)
	if !bytes.Equal(gb, wb) {
		t.Errorf("body\n got %s\nwant %s", gb, wb)
	}
}

// --- tests ----------------------------------------------------------------

func TestLegacyV1ErrorShapes(t *testing.T) {
	s := startStack(t)
	tests := []struct {
		name   string
		path   string
		header []string
		status int
		body   string
	}{
		{"not found", "/v1/run/missing", nil, 404, `{"statusCode":404,"message":"runs/missing not found"}`},
		{"department mismatch", "/v1/run/denied", nil, 400, `{"statusCode":400,"message":"mismatch with department"}`},
		{"invalid argument", "/v1/run/bad", nil, 400, `{"statusCode":400,"message":"bad id"}`},
		{"failed precondition", "/v1/run/conflict", nil, 400, `{"statusCode":400,"message":"not pending"}`},
		{"internal", "/v1/run/code-13", nil, 500, `{"statusCode":500,"message":"Internal server error"}`},
		{"non-status error", "/v1/run/plain", nil, 500, `{"statusCode":500,"message":"Internal server error"}`},
		{"panic", "/v1/run/panic", nil, 500, `{"statusCode":500,"message":"Internal server error"}`},
		{"invalid api key", "/v1/run/ok", []string{"x-api-key", "wrong"}, 403, `{"message":"Invalid API key"}`},
		{"unknown path", "/v1/nothing/here", nil, 404, `{"statusCode":404,"message":"Not Found"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := s.do(t, http.MethodGet, tt.path, "", tt.header...)
			if r.status != tt.status {
				t.Errorf("status = %d, want %d (%s)", r.status, tt.status, r.body)
			}
			if ct := r.header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type = %q", ct)
			}
			mustEqualJSON(t, r.body, tt.body)
		})
	}
	if !strings.Contains(s.logs.String(), "handler exploded") {
		t.Error("panic not logged")
	}
}

func TestAIP193ErrorShape(t *testing.T) {
	s := startStack(t)
	r := s.do(t, http.MethodGet, "/api/v1/books/nope/1.0.0", "")
	if r.status != http.StatusNotFound {
		t.Fatalf("status = %d (%s)", r.status, r.body)
	}
	// The reference's rpcStatus: code (google.rpc.Code), message and details
	// at the top level of the body.
	mustEqualJSON(t, r.body, `{
		"code":5,
		"message":"books/nope/versions/1.0.0 not found",
		"details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"BOOK_NOT_FOUND","domain":"prose.run","metadata":{"resource_name":"books/nope/versions/1.0.0"}}]}`)

	// Unauthenticated on /api/v1 is 401 with a challenge.
	r = s.do(t, http.MethodGet, "/api/v1/books/known/1", "", "Authorization", "Bearer wrong")
	if r.status != http.StatusUnauthorized || r.header.Get("WWW-Authenticate") == "" {
		t.Errorf("bad bearer: %d %v %s", r.status, r.header, r.body)
	}
	if e := decode(t, r.body); e["code"] != float64(codes.Unauthenticated) {
		t.Errorf("bad bearer body %s", r.body)
	}

	// Unknown path outside the legacy prefixes: AIP-193 404 with an ErrorInfo.
	r = s.do(t, http.MethodGet, "/api/v1/nothing", "")
	if r.status != http.StatusNotFound {
		t.Fatalf("status = %d", r.status)
	}
	e := decode(t, r.body)
	if e["code"] != float64(codes.NotFound) || len(e["details"].([]any)) != 1 {
		t.Errorf("unknown path body %s", r.body)
	}
}

// TestEveryCodeHasAStatus: each gRPC code a handler returns answers the HTTP
// status chosen for it, on /api/v1 and /v2 (AIP-193's table) and on /v1 (its
// documented 400/403/404/500 for client mistakes and server faults; the
// statuses that say "retry" kept).
func TestEveryCodeHasAStatus(t *testing.T) {
	s := startStack(t)
	for _, tc := range []struct {
		code     codes.Code
		api, v1  int
		v1Hidden bool // v1 says "Internal server error"
	}{
		{codes.Canceled, 499, 499, false},
		{codes.Unknown, 500, 500, true}, // the server turns UNKNOWN into INTERNAL
		{codes.InvalidArgument, 400, 400, false},
		{codes.DeadlineExceeded, 504, 504, false},
		{codes.NotFound, 404, 404, false},
		{codes.AlreadyExists, 409, 400, false},
		{codes.PermissionDenied, 403, 400, false},
		{codes.ResourceExhausted, 429, 429, false},
		{codes.FailedPrecondition, 400, 400, false},
		{codes.Aborted, 409, 409, false},
		{codes.OutOfRange, 400, 400, false},
		{codes.Unimplemented, 501, 501, false},
		{codes.Internal, 500, 500, true},
		{codes.Unavailable, 503, 503, false},
		{codes.DataLoss, 500, 500, true},
		{codes.Unauthenticated, 401, 403, false},
	} {
		t.Run(tc.code.String(), func(t *testing.T) {
			id := "code-" + strconv.Itoa(int(tc.code))
			wantCode := tc.code
			if wantCode == codes.Unknown {
				wantCode = codes.Internal
			}
			r := s.do(t, http.MethodGet, "/api/v1/books/"+id+"/1.0.0", "")
			if r.status != tc.api || decode(t, r.body)["code"] != float64(wantCode) {
				t.Errorf("/api/v1: %d %s, want %d", r.status, r.body, tc.api)
			}
			r = s.do(t, http.MethodGet, "/v2/runs/"+id, "")
			if r.status != tc.api || decode(t, r.body)["status_code"] != float64(tc.api) {
				t.Errorf("/v2: %d %s, want %d", r.status, r.body, tc.api)
			}
			r = s.do(t, http.MethodGet, "/v1/run/"+id, "")
			if r.status != tc.v1 {
				t.Errorf("/v1: %d %s, want %d", r.status, r.body, tc.v1)
			}
			b := decode(t, r.body)
			if tc.code == codes.Unauthenticated {
				if b["message"] != "failed with code 16" || b["statusCode"] != nil {
					t.Errorf("/v1 unauthenticated body %s", r.body)
				}
				return
			}
			wantMsg := "failed with code " + strconv.Itoa(int(tc.code))
			if tc.v1Hidden {
				wantMsg = "Internal server error"
			}
			if b["statusCode"] != float64(tc.v1) || b["message"] != wantMsg {
				t.Errorf("/v1 body %s, want statusCode %d message %q", r.body, tc.v1, wantMsg)
			}
		})
	}
}

func TestSuccessBodySnakeCase(t *testing.T) {
	s := startStack(t)
	r := s.do(t, http.MethodGet, "/api/v1/books/known/1.0.0", "")
	if r.status != 200 {
		t.Fatalf("status %d %s", r.status, r.body)
	}
	mustEqualJSON(t, r.body, `{"book":{"name":"known","version":"1.0.0","display_name":"Known"}}`)
}

func TestLegacyV2ErrorShape(t *testing.T) {
	s := startStack(t)
	r := s.do(t, http.MethodGet, "/v2/runs/missing", "")
	if r.status != http.StatusNotFound {
		t.Fatalf("status = %d (%s)", r.status, r.body)
	}
	mustEqualJSON(t, r.body, `{"status_code":404,"message":"runs/missing not found",
		"details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"RUN_NOT_FOUND","domain":"prose.run","metadata":{"resource_name":"runs/missing"}}]}`)

	// Required fields: one violation per missing field.
	r = s.do(t, http.MethodPost, "/v2/runs", `{"name":"n","stage":"Draft"}`)
	if r.status != http.StatusBadRequest {
		t.Fatalf("status = %d (%s)", r.status, r.body)
	}
	body := decode(t, r.body)
	if body["status_code"] != float64(400) {
		t.Errorf("body %s", r.body)
	}
	var fields []string
	for _, d := range body["details"].([]any) {
		d := d.(map[string]any)
		if d["@type"] == "type.googleapis.com/google.rpc.BadRequest" {
			for _, v := range d["field_violations"].([]any) {
				fields = append(fields, v.(map[string]any)["field"].(string))
			}
		}
	}
	if strings.Join(fields, ",") != "process_id,agent_id" {
		t.Errorf("violations %v in %s", fields, r.body)
	}

	// /v2/health is public even with a bad key.
	if r := s.do(t, http.MethodGet, "/v2/health", "", "x-api-key", "wrong"); r.status != 200 {
		t.Errorf("/v2/health: %d %s", r.status, r.body)
	}
}

func TestUnknownFieldsRejected(t *testing.T) {
	s := startStack(t)
	for _, tt := range []struct{ path, body string }{
		{"/v2/runs", `{"name":"n","process_id":"p","agent_id":"a","stage":"Draft","colour":"red"}`},
		{"/api/v1/organizations/o/workspaces/w/books", `{"name":"b","version":"1","nonsense":true}`},
	} {
		r := s.do(t, http.MethodPost, tt.path, tt.body)
		if r.status != http.StatusBadRequest {
			t.Errorf("%s: status = %d (%s)", tt.path, r.status, r.body)
		}
		if !strings.Contains(r.body, "unknown field") {
			t.Errorf("%s: body %s", tt.path, r.body)
		}
	}
	// JSON with anything after its value is refused, on every prefix.
	for _, path := range []string{"/v2/runs", "/api/v1/organizations/o/workspaces/w/books", "/v1/invoke/s"} {
		for _, tail := range []string{` trailing`, ` {}`, `}`, `,`} {
			body := `{"name":"n","process_id":"p","agent_id":"a","stage":"Draft"}` + tail
			if strings.HasPrefix(path, "/api") {
				body = `{"name":"b","version":"1"}` + tail
			} else if strings.HasPrefix(path, "/v1") {
				body = `{"a":1}` + tail
			}
			if r := s.do(t, http.MethodPost, path, body); r.status != http.StatusBadRequest {
				t.Errorf("%s %q: status = %d (%s)", path, body, r.status, r.body)
			}
		}
	}
	// White space after the value is fine; so is an empty body.
	if r := s.do(t, http.MethodPost, "/v1/invoke/s", "{\"a\":1} \n\t"); r.status != http.StatusCreated {
		t.Errorf("trailing white space: %d %s", r.status, r.body)
	}
	if r := s.do(t, http.MethodPost, "/v1/invoke/s", ""); r.status != http.StatusCreated {
		t.Errorf("empty body: %d %s", r.status, r.body)
	}
	// And the same bodies without the extra field pass.
	if r := s.do(t, http.MethodPost, "/v2/runs", `{"name":"n","process_id":"p","agent_id":"a","stage":"Draft"}`); r.status != 200 {
		t.Errorf("valid body: %d %s", r.status, r.body)
	}
}

func TestMethodNotAllowed(t *testing.T) {
	s := startStack(t)
	tests := []struct {
		path, method, allow string
		shape               string
	}{
		{"/api/v1/organizations/o/workspaces/w/books", http.MethodPut, "GET, POST", "aip"},
		{"/v1/run/w-1", http.MethodPost, "GET", "v1"},
		{"/v2/runs", http.MethodDelete, "GET, POST", "v2"},
		{"/openapi.json", http.MethodPost, "GET", "aip"},
		{"/api/v1/hand/7", http.MethodGet, "POST", "aip"},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			r := s.do(t, tt.method, tt.path, "")
			if r.status != http.StatusMethodNotAllowed {
				t.Fatalf("status = %d (%s)", r.status, r.body)
			}
			if got := r.header.Get("Allow"); got != tt.allow {
				t.Errorf("Allow = %q, want %q", got, tt.allow)
			}
			body := decode(t, r.body)
			switch tt.shape {
			case "aip":
				if body["code"] != float64(codes.Unimplemented) {
					t.Errorf("body %s", r.body)
				}
			case "v1":
				mustEqualJSON(t, r.body, `{"statusCode":405,"message":"Method Not Allowed"}`)
			case "v2":
				if body["status_code"] != float64(405) {
					t.Errorf("body %s", r.body)
				}
			}
		})
	}
}

func TestHTTPCodeOverrideAndHeaders(t *testing.T) {
	s := startStack(t)
	r := s.do(t, http.MethodPost, "/v1/invoke/share-1?attachments_key=files", `{"a":1,"files":["blob:1"]}`,
		"x-api-key", "key-1", "Authorization", "Bearer tok", "X-Request-Id", "req-42", "Grpc-Metadata-Evil", "x")
	if r.status != http.StatusCreated {
		t.Fatalf("status = %d (%s)", r.status, r.body)
	}
	mustEqualJSON(t, r.body, `{"worker_id":"w-1"}`)
	for k := range r.header {
		lk := strings.ToLower(k)
		if strings.HasPrefix(lk, "grpc-") || lk == "x-http-code" || lk == "internal-secret" {
			t.Errorf("header %s leaked: %v", k, r.header[k])
		}
	}
	if got := r.header.Get("X-Request-Id"); got != "req-42" {
		t.Errorf("X-Request-Id = %q", got)
	}
	s.v1.mu.Lock()
	md, req := s.v1.md, s.v1.req
	s.v1.mu.Unlock()
	if got := md.Get("x-api-key"); len(got) != 1 || got[0] != "key-1" {
		t.Errorf("x-api-key metadata = %v", got)
	}
	if got := md.Get("authorization"); len(got) != 1 || got[0] != "Bearer tok" {
		t.Errorf("authorization metadata = %v", got)
	}
	if got := md.Get("x-request-id"); len(got) != 1 || got[0] != "req-42" {
		t.Errorf("x-request-id metadata = %v", got)
	}
	if len(md.Get("evil")) != 0 {
		t.Error("Grpc-Metadata-* request header forwarded")
	}
	if req.GetAttachmentsKey() != "files" || req.GetParameters().GetFields()["a"].GetNumberValue() != 1 {
		t.Errorf("request = %v", req)
	}
}

func TestRequestIDEverywhere(t *testing.T) {
	s := startStack(t)
	// Made when absent, on success, gRPC errors and routing errors alike.
	for _, p := range []string{"/v2/runs/ok", "/v2/runs/missing", "/no/such/path"} {
		r := s.do(t, http.MethodGet, p, "")
		if id := r.header.Get("X-Request-Id"); len(id) != 32 {
			t.Errorf("%s: X-Request-Id = %q", p, id)
		}
		if len(r.header.Values("X-Request-Id")) != 1 {
			t.Errorf("%s: X-Request-Id repeated: %v", p, r.header.Values("X-Request-Id"))
		}
	}
	r := s.do(t, http.MethodGet, "/v2/runs/missing", "", "X-Request-Id", "mine-1")
	if got := r.header.Get("X-Request-Id"); got != "mine-1" {
		t.Errorf("echo = %q", got)
	}
	if !strings.Contains(s.logs.String(), `"request_id":"mine-1"`) {
		t.Error("request id not in the gRPC log line")
	}
}

func TestNDJSONStream(t *testing.T) {
	s := startStack(t)
	const base = "/api/v1/organizations/o/workspaces/w/automations/a/runs/%s/agents/g/events:stream"
	r := s.do(t, http.MethodGet, strings.Replace(base, "%s", "r1", 1), "")
	if r.status != 200 || r.header.Get("Content-Type") != gateway.NDJSON {
		t.Fatalf("status %d, Content-Type %q, body %s", r.status, r.header.Get("Content-Type"), r.body)
	}
	lines := strings.Split(strings.TrimSuffix(r.body, "\n"), "\n")
	if len(lines) != 2 {
		t.Fatalf("lines = %q", lines)
	}
	mustEqualJSON(t, lines[0], `{"result":{"event":{"name":"e1","state":"STATE_COMPLETE"}}}`)
	mustEqualJSON(t, lines[1], `{"result":{"event":{"name":"e2","state":"STATE_COMPLETE"}}}`)

	// An error after the first message is a last line {"error": rpcStatus}.
	r = s.do(t, http.MethodGet, strings.Replace(base, "%s", "broken", 1), "")
	sc := bufio.NewScanner(strings.NewReader(r.body))
	var got []string
	for sc.Scan() {
		got = append(got, sc.Text())
	}
	if len(got) != 2 {
		t.Fatalf("lines = %q", got)
	}
	last := decode(t, got[1])["error"].(map[string]any)
	if last["code"] != float64(codes.FailedPrecondition) || last["message"] != "the run went away" {
		t.Errorf("error line %s", got[1])
	}
}

func TestOnePortServesGRPCAndHTTP(t *testing.T) {
	s := startStack(t)
	conn, err := grpc.NewClient(s.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	resp, err := healthpb.NewHealthClient(conn).Check(context.Background(), &healthpb.HealthCheckRequest{})
	if err != nil || resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("grpc health over the shared port: %v %v", resp, err)
	}
	// A gRPC error over the shared port keeps its status and details.
	_, err = legacyv2.NewLegacyServiceClient(conn).GetRun(context.Background(), &legacyv2.GetRunRequest{Id: "missing"})
	if status.Code(err) != codes.NotFound || transport.Reason(err) != "RUN_NOT_FOUND" {
		t.Errorf("grpc GetRun: %v", err)
	}
	// Panics over native gRPC too.
	_, err = legacyv2.NewLegacyServiceClient(conn).GetRun(context.Background(), &legacyv2.GetRunRequest{Id: "panic"})
	if status.Code(err) != codes.Internal {
		t.Errorf("grpc panic: %v", err)
	}

	r := s.do(t, http.MethodGet, "/healthz", "")
	if r.status != 200 {
		t.Errorf("/healthz: %d %s", r.status, r.body)
	}
	mustEqualJSON(t, r.body, `{"status":"SERVING"}`)
	if r := s.do(t, http.MethodGet, "/openapi.json", ""); r.status != 200 || r.body != `{"swagger":"2.0"}` {
		t.Errorf("/openapi.json: %d %s", r.status, r.body)
	}
	if r := s.do(t, http.MethodGet, "/metrics", ""); r.status != 200 || !strings.Contains(r.body, `grpc_server_handled_total{grpc_code="NotFound",grpc_method="GetRun"`) {
		t.Errorf("/metrics: %d %s", r.status, r.body)
	}
	if r := s.do(t, http.MethodPost, "/api/v1/hand/7", ""); r.status != 200 || r.body != `{"id":"7"}` {
		t.Errorf("hand route: %d %s", r.status, r.body)
	}
}

func TestH2CGateway(t *testing.T) {
	s := startStack(t)
	var protocols http.Protocols
	protocols.SetUnencryptedHTTP2(true)
	tr := &http.Transport{Protocols: &protocols}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Get(s.base + "/v2/runs/missing")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.ProtoMajor != 2 || resp.StatusCode != 404 || !strings.Contains(string(b), `"status_code":404`) {
		t.Errorf("h2c: proto %d status %d body %s", resp.ProtoMajor, resp.StatusCode, b)
	}
}

func TestStreamErrorBeforeFirstMessage(t *testing.T) {
	s := startStack(t)
	r := s.do(t, http.MethodGet, "/api/v1/organizations/o/workspaces/w/automations/a/runs/missing/agents/g/events:stream", "")
	if r.status != http.StatusNotFound {
		t.Fatalf("status %d body %s", r.status, r.body)
	}
	// An error before the first message is the rpcStatus every other
	// operation answers (issue 30), not the stream's {"error": …} line.
	e := decode(t, strings.TrimSpace(r.body))
	if e["code"] != float64(codes.NotFound) || e["error"] != nil || r.header.Get("Content-Type") != "application/json" {
		t.Errorf("content type %q body %s", r.header.Get("Content-Type"), r.body)
	}
}

func TestHTTPHandlerPanic(t *testing.T) {
	s := startStack(t)
	r := s.do(t, http.MethodPost, "/api/v1/hand/panic", "")
	if r.status != http.StatusInternalServerError {
		t.Fatalf("status %d body %s", r.status, r.body)
	}
	if e := decode(t, r.body); e["code"] != float64(codes.Internal) || strings.Contains(r.body, "exploded") {
		t.Errorf("body %s", r.body)
	}
	if !strings.Contains(s.logs.String(), "hand-written route exploded") {
		t.Error("panic not logged")
	}
	// Still serving.
	if r := s.do(t, http.MethodPost, "/api/v1/hand/1", ""); r.status != 200 {
		t.Errorf("after panic: %d", r.status)
	}
}

func TestGracefulShutdownDrains(t *testing.T) {
	s := startStack(t)
	type result struct {
		r   response
		err error
	}
	got := make(chan result, 1)
	go func() {
		resp, err := s.client.Get(s.base + "/v2/runs/slow")
		if err != nil {
			got <- result{err: err}
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		got <- result{response{resp.StatusCode, resp.Header, string(b)}, err}
	}()
	<-s.v2.entered

	stopped := make(chan error, 1)
	go func() { stopped <- s.stop() }()
	// Wait until the listener is closed: shutdown has begun.
	for {
		c, err := net.Dial("tcp", s.addr)
		if err != nil {
			break
		}
		_ = c.Close()
		select {
		case err := <-stopped:
			t.Fatalf("Serve returned while a request was in flight: %v", err)
		default:
		}
	}
	close(s.v2.release)
	res := <-got
	if res.err != nil || res.r.status != 200 {
		t.Fatalf("in-flight request: %v %+v", res.err, res.r)
	}
	if err := <-stopped; err != nil {
		t.Fatalf("Serve: %v", err)
	}
}

func TestSecondGRPCListener(t *testing.T) {
	srv := chain.NewServer(chain.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Registerer: prometheus.NewRegistry(), InsecureNoAuthorization: true})
	gs := srv.GRPC
	ctx, cancel := context.WithCancel(context.Background())
	h, err := gateway.New(ctx, srv.Local, gateway.Options{DisableMetrics: true})
	if err != nil {
		t.Fatal(err)
	}
	httpLis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	grpcLis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- gateway.Serve(ctx, httpLis, gs, h, nil, gateway.WithGRPCListener(grpcLis)) }()

	conn, err := grpc.NewClient(grpcLis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := healthpb.NewHealthClient(conn).Check(context.Background(), &healthpb.HealthCheckRequest{}); err != nil {
		t.Errorf("health over the gRPC-only listener: %v", err)
	}
	_ = conn.Close()
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Serve: %v", err)
	}
}

// TestNativeGRPCDrainsOnShutdown: a server given to WithNativeGRPC (the
// gRPC-only port, grpc-go's own transport) is served on its listener and
// stopped gracefully with the rest: on shutdown its listener closes, a
// call in flight completes, and then Serve returns.
func TestNativeGRPCDrainsOnShutdown(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	hold := transport.Middleware{Name: "hold", Unary: func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		if info.FullMethod == "/grpc.health.v1.Health/Check" {
			close(entered)
			<-release
		}
		return h(ctx, req)
	}}
	srv := chain.NewServer(chain.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Registerer: prometheus.NewRegistry(),
		InsecureNoAuthorization: true, Extra: []transport.Middleware{hold}, GRPCOnly: &chain.GRPCOnlyOptions{}})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	httpLis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	nativeLis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := nativeLis.Addr().String()
	done := make(chan error, 1)
	go func() {
		done <- gateway.Serve(ctx, httpLis, srv.GRPC, http.NotFoundHandler(), nil, gateway.WithNativeGRPC(nativeLis, srv.GRPCOnly))
	}()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	answered := make(chan error, 1)
	go func() {
		_, err := healthpb.NewHealthClient(conn).Check(context.Background(), &healthpb.HealthCheckRequest{})
		answered <- err
	}()
	<-entered
	cancel()
	// Wait until the native listener is closed: its drain has begun.
	for {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			break
		}
		_ = c.Close()
		select {
		case err := <-done:
			t.Fatalf("Serve returned while a call was in flight: %v", err)
		default:
		}
	}
	select {
	case err := <-done:
		t.Fatalf("Serve returned while a call was in flight: %v", err)
	default:
	}
	close(release)
	if err := <-answered; err != nil {
		t.Fatalf("the call in flight: %v", err)
	}
	if err := <-done; err != nil {
		t.Fatalf("Serve: %v", err)
	}
}

func TestListenAndServeBadAddress(t *testing.T) {
	gs := chain.New(chain.Options{Registerer: prometheus.NewRegistry(), InsecureNoAuthorization: true})
	defer gs.Stop()
	err := gateway.ListenAndServe(context.Background(), "127.0.0.1:-1", gs, http.NotFoundHandler(), nil)
	if err == nil {
		t.Fatal("no error for a bad address")
	}
}
