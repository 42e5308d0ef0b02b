// Package bare is the physical reference of the transport benchmarks
// (BENCHMARKS.md, "Issue 13: the transport path", "gRPC path"): what the
// machine does when a server does nothing but check the caller's
// authorization header and answer the same bytes as prose serve. The
// command cmd/prose-bare serves it on ports of its own; cmd/prose's
// BenchmarkGetWorkspaceGRPC starts it in process beside prose's server.
package bare

import (
	"context"
	"crypto/subtle"
	"io"
	"net/http"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
)

// authorizer reports whether an authorization header value is
// "Bearer <key>" (constant time).
func authorizer(key string) func(string) bool {
	want := []byte("Bearer " + key)
	return func(v string) bool { return subtle.ConstantTimeCompare([]byte(v), want) == 1 }
}

// HTTPHandler is a bare net/http handler that refuses a request without
// "Authorization: Bearer <key>" (401) and answers body (the JSON of
// GET /api/v1/.../workspaces/{w}) to any other.
func HTTPHandler(body []byte, key string) http.Handler {
	authorized := authorizer(key)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !authorized(r.Header.Get("Authorization")) {
			http.Error(w, `{"code":16,"message":"unauthenticated"}`, http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	})
}

// InvokeHandler is HTTPHandler that also answers prose-load's calls as
// prose serve does, with no database and no engine (BENCHMARKS.md, "SQLite
// runs/s: last pass and the ceiling"): a POST to .../automations reads the
// request body and answers automation (the body prose serve answered to
// prose-load's create); a POST to ...:invoke reads the request body and
// answers invoke (the body of an invoke's answer); a GET of .../runs
// answers no runs (prose-load's wait for unfinished runs ends at once).
// Anything else is answered as HTTPHandler does.
func InvokeHandler(workspace, automation, invoke []byte, key string) http.Handler {
	authorized := authorizer(key)
	noRuns := []byte(`{"runs":[],"nextPageToken":""}`)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !authorized(r.Header.Get("Authorization")) {
			http.Error(w, `{"code":16,"message":"unauthenticated"}`, http.StatusUnauthorized)
			return
		}
		body := workspace
		switch p := r.URL.Path; {
		case r.Method == http.MethodPost && strings.HasSuffix(p, ":invoke"):
			body = invoke
		case r.Method == http.MethodPost && strings.HasSuffix(p, "/automations"):
			body = automation
		case r.Method == http.MethodGet && strings.HasSuffix(p, "/runs"):
			body = noRuns
		}
		if _, err := io.Copy(io.Discard, r.Body); err != nil {
			http.Error(w, `{"code":3,"message":"body"}`, http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	})
}

// RegisterWorkspaces registers on s a WorkspaceService whose GetWorkspace
// refuses a call without the authorization metadata "Bearer <key>"
// (UNAUTHENTICATED) and answers ws to any other; its other methods are
// UNIMPLEMENTED. Give s no interceptor: it is the bare grpc-go server.
func RegisterWorkspaces(s grpc.ServiceRegistrar, ws *platformv1.Workspace, key string) {
	platformv1.RegisterWorkspaceServiceServer(s, workspaces{ws: ws, authorized: authorizer(key)})
}

type workspaces struct {
	platformv1.UnimplementedWorkspaceServiceServer
	ws         *platformv1.Workspace
	authorized func(string) bool
}

func (b workspaces) GetWorkspace(ctx context.Context, _ *platformv1.GetWorkspaceRequest) (*platformv1.Workspace, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	if v := md.Get("authorization"); len(v) != 1 || !b.authorized(v[0]) {
		return nil, status.Error(codes.Unauthenticated, "unauthenticated")
	}
	return b.ws, nil
}
