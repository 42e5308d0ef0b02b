package server_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"

	"google.golang.org/grpc"

	"github.com/proserun/prose/server/app"
	"github.com/proserun/prose/server/testenv"
	"github.com/proserun/prose/server/transport"

	_ "github.com/proserun/prose/gen/prose/book/v1"
	_ "github.com/proserun/prose/gen/prose/legacy/v1"
	_ "github.com/proserun/prose/gen/prose/legacy/v2"
	_ "github.com/proserun/prose/gen/prose/platform/v1"
)

// callRecorder records the full method name of every RPC the server
// receives (an interceptor entry outside the chain, so that refused calls
// count too).
type callRecorder struct {
	mu    sync.Mutex
	calls []string
}

func (r *callRecorder) record(method string) {
	r.mu.Lock()
	r.calls = append(r.calls, method)
	r.mu.Unlock()
}

func (r *callRecorder) middleware() transport.Middleware {
	return transport.Middleware{
		Name: "record",
		Unary: func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
			r.record(info.FullMethod)
			return handler(ctx, req)
		},
		Stream: func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
			r.record(info.FullMethod)
			return handler(srv, ss)
		},
	}
}

func (r *callRecorder) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.calls
	r.calls = nil
	return c
}

func newRouteTestServer(t *testing.T) (*httptest.Server, *callRecorder) {
	t.Helper()
	rec := &callRecorder{}
	cfg := testenv.Config(t)
	cfg.Outer = []transport.Middleware{rec.middleware()}
	a, err := app.New(context.Background(), cfg, slog.New(slog.DiscardHandler), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Close)
	srv := httptest.NewServer(a.HTTP)
	t.Cleanup(srv.Close)
	return srv, rec
}

type route struct {
	method, path, rpc string
}

var pathVar = regexp.MustCompile(`\{([a-z_]+)(=[^}]*)?\}`)

// contractRoutes lists the HTTP binding of every RPC of every Prose service,
// with sample values in place of path variables.
func contractRoutes(t *testing.T) []route {
	t.Helper()
	var routes []route
	for _, b := range testenv.ContractBindings() {
		if b.Err != "" {
			t.Error(b.Err)
			continue
		}
		path := pathVar.ReplaceAllStringFunc(b.Path, func(v string) string {
			return "x" + strings.ReplaceAll(pathVar.FindStringSubmatch(v)[1], "_", "")
		})
		routes = append(routes, route{b.Method, path, b.RPC})
	}
	if len(routes) < 80 {
		t.Fatalf("found only %d routes in the contract", len(routes))
	}
	return routes
}

// seedRoutes are the method and path of every operation the two seed documents
// show, written as the documents write them.
var seedRoutes = []route{
	{"GET", "/api/v1/organizations/o1/workspaces/w1/automations/a1/runs/r1", "/prose.platform.v1.RunService/GetRun"},
	{"GET", "/api/v1/organizations/o1/workspaces", "/prose.platform.v1.WorkspaceService/ListWorkspaces"},
	{"GET", "/api/v1/organizations/o1/workspaces/w1", "/prose.platform.v1.WorkspaceService/GetWorkspace"},
	{"GET", "/api/v1/me/organizations/o1/workspaces", "/prose.platform.v1.WorkspaceService/ListCurrentUserWorkspaces"},
	{"GET", "/api/v1/organizations/o1/workspaces/w1/preferences", "/prose.platform.v1.WorkspaceService/GetWorkspacePreferences"},
	{"GET", "/api/v1/organizations/o1/workspaces/w1/invites", "/prose.platform.v1.WorkspaceService/ListWorkspaceInvites"},
	{"GET", "/api/v1/organizations/o1/workspaces/w1/roles", "/prose.platform.v1.WorkspaceService/ListWorkspaceRoles"},
	{"GET", "/api/v1/organizations/o1/workspaces/w1/users", "/prose.platform.v1.WorkspaceService/ListWorkspaceUsers"},
	{"POST", "/api/v1/organizations/o1/workspaces:countUsers", "/prose.platform.v1.WorkspaceService/CountWorkspaceUsers"},
	{"GET", "/api/v1/organizations/o1/workspaces/w1/exceptions/e1", "/prose.platform.v1.ExceptionService/GetException"},
	{"GET", "/api/v1/organizations/o1/workspaces/w1/exceptions", "/prose.platform.v1.ExceptionService/ListExceptions"},
	{"GET", "/api/v1/organizations/o1/workspaces/w1/exceptionGroups", "/prose.platform.v1.ExceptionService/ListExceptionGroups"},
	{"GET", "/api/v1/organizations/o1/workspaces/w1/exceptions:countByGroup", "/prose.platform.v1.ExceptionService/CountExceptionsByGroup"},
	{"GET", "/api/v1/organizations/o1/workspaces/w1/exceptions:countByAutomation", "/prose.platform.v1.ExceptionService/CountExceptionsByAutomation"},
	{"GET", "/api/v1/organizations/o1/workspaces/w1/automations/a1/runs/r1/agents/g1/events", "/prose.platform.v1.EventService/ListEvents"},
	{"POST", "/api/v1/organizations/o1/workspaces/w1/automations/a1/runs/r1/agents/g1/events", "/prose.platform.v1.EventService/CreateEvent"},
	{"GET", "/api/v1/organizations/o1/workspaces/w1/automations/a1/runs/r1/agents/g1/events/ev1", "/prose.platform.v1.EventService/GetEvent"},
	{"GET", "/api/v1/organizations/o1/workspaces/w1/automations/a1/runs/r1/agents/g1/events:stream", "/prose.platform.v1.EventService/StreamEvents"},
	{"POST", "/api/v1/organizations/o1/workspaces/w1/automations/a1/runs/r1/agents/g1/events:cancelGeneration", "/prose.platform.v1.EventService/CancelGeneration"},
	{"GET", "/api/v1/books", "/prose.book.v1.BookService/ListBooks"},
	{"GET", "/api/v1/books:latest", "/prose.book.v1.BookService/ListLatestBooks"},
	{"GET", "/api/v1/books/std/1.0.0", "/prose.book.v1.BookService/GetBook"},
	{"GET", "/api/v1/books/std/1.0.0/procedures", "/prose.book.v1.BookService/ListBookProcedures"},
	{"GET", "/api/v1/tags", "/prose.book.v1.BookService/ListTags"},
	{"GET", "/api/v1/books/std/versions", "/prose.book.v1.BookService/ListBookVersions"},
	{"GET", "/api/v1/books/std/1.0.0/concepts", "/prose.book.v1.BookService/ListBookConcepts"},
	{"GET", "/api/v1/organizations/o1/workspaces/w1/books/std/1.0.0/concepts", "/prose.book.v1.BookService/ListWorkspaceBookConcepts"},
	{"GET", "/api/v1/organizations/o1/workspaces/w1/books", "/prose.book.v1.BookService/ListWorkspaceBooks"},
	{"GET", "/api/v1/organizations/o1/workspaces/w1/books/std/1.0.0/procedures", "/prose.book.v1.BookService/ListWorkspaceBookProcedures"},
	{"POST", "/v1/invoke/s1", "/prose.legacy.v1.LegacyService/Invoke"},
	{"POST", "/v1/invoke/s1?attachments_key=files", "/prose.legacy.v1.LegacyService/Invoke"},
	{"GET", "/v1/run/k1", "/prose.legacy.v1.LegacyService/GetRunStatus"},
	{"POST", "/v1/upload", "/prose.legacy.v1.LegacyService/Upload"},
	{"GET", "/v2/health", "/prose.legacy.v2.LegacyService/Health"},
	{"GET", "/v2/processes?agent_id=w1&limit=5", "/prose.legacy.v2.LegacyService/ListProcesses"},
	{"GET", "/v2/processes/p1?agent_id=w1", "/prose.legacy.v2.LegacyService/GetProcess"},
	{"GET", "/v2/runs?process_id=p1&agent_id=w1&limit=5", "/prose.legacy.v2.LegacyService/ListRuns"},
	{"POST", "/v2/runs", "/prose.legacy.v2.LegacyService/CreateRun"},
	{"GET", "/v2/runs/r1", "/prose.legacy.v2.LegacyService/GetRun"},
	{"POST", "/v2/files", "/prose.legacy.v2.LegacyService/CreateFile"},
}

// TestRoutes sends every route of the contract and of the seeds over HTTP and
// checks that each reaches its RPC, not the mux's 404 or 405.
func TestRoutes(t *testing.T) {
	srv, rec := newRouteTestServer(t)
	all := append(append([]route{}, seedRoutes...), contractRoutes(t)...)
	for _, r := range all {
		t.Run(r.method+" "+r.path, func(t *testing.T) {
			var body io.Reader
			if r.method == http.MethodPost || r.method == http.MethodPatch || r.method == http.MethodPut {
				body = strings.NewReader("{}")
			}
			req, err := http.NewRequest(r.method, srv.URL+r.path, body)
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			resp, err := srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			calls := rec.take()
			found := false
			for _, c := range calls {
				if c == r.rpc {
					found = true
				}
			}
			if !found {
				t.Errorf("HTTP %d; RPCs called: %v, want %s", resp.StatusCode, calls, r.rpc)
			}
			if resp.StatusCode == http.StatusMethodNotAllowed {
				t.Errorf("HTTP 405 from the mux")
			}
		})
	}
}
