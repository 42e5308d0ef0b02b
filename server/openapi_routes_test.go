package server_test

import (
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/proserun/prose/gen/openapi"
)

// TestOpenAPIRoutesReachTheirMethod sends every operation of the served
// OpenAPI document (its path with sample values for the variables, its
// method) over HTTP and checks that the RPC the operation names is the one
// called: the gateway's route index (gateway/routes.go) sends each path to
// the same route the whole mux would.
func TestOpenAPIRoutesReachTheirMethod(t *testing.T) {
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(openapi.JSON, &doc); err != nil {
		t.Fatal(err)
	}
	type op struct{ method, path, template, id string }
	var ops []op
	for tmpl, methods := range doc.Paths {
		for m, raw := range methods {
			var o struct {
				OperationID string `json:"operationId"`
			}
			if err := json.Unmarshal(raw, &o); err != nil || o.OperationID == "" {
				continue // "parameters" and the like
			}
			path := pathVar.ReplaceAllStringFunc(tmpl, func(v string) string {
				return "x" + strings.ReplaceAll(pathVar.FindStringSubmatch(v)[1], "_", "")
			})
			ops = append(ops, op{strings.ToUpper(m), path, tmpl, o.OperationID})
		}
	}
	sort.Slice(ops, func(i, j int) bool { return ops[i].template+ops[i].method < ops[j].template+ops[j].method })
	if len(ops) < 100 {
		t.Fatalf("the OpenAPI document has only %d operations", len(ops))
	}
	srv, rec := newRouteTestServer(t)
	for _, o := range ops {
		t.Run(o.method+" "+o.template, func(t *testing.T) {
			var body io.Reader
			if o.method != http.MethodGet && o.method != http.MethodDelete {
				body = strings.NewReader("{}")
			}
			req, err := http.NewRequest(o.method, srv.URL+o.path, body)
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
			// "/prose.platform.v1.WorkspaceService/GetWorkspace" is the
			// operation "WorkspaceService_GetWorkspace".
			var ids []string
			for _, c := range calls {
				ids = append(ids, strings.ReplaceAll(c[strings.LastIndexByte(c, '.')+1:], "/", "_"))
			}
			if !slices.Contains(ids, o.id) {
				t.Errorf("HTTP %d; operations called: %v, want %s", resp.StatusCode, ids, o.id)
			}
		})
	}
}
