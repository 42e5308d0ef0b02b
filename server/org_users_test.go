package server_test

import (
	"context"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/proserun/prose/store"
)

func TestListOrganizationUsers(t *testing.T) {
	e := newTestEnv(t)
	ctx := context.Background()
	org := e.Init.OrganizationID
	// The owner (from init), a member with a workspace role, a member with none.
	e.NewViewer(t)
	amy, err := e.Store.CreateUser(ctx, store.User{DisplayName: "Amy Admin", Email: "amy-" + store.NewID() + "@example.test"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Store.AddOrganizationMember(ctx, org, amy.ID, []string{"admin"}); err != nil {
		t.Fatal(err)
	}
	path := "/api/v1/organizations/{org}/users"
	rpc := "/prose.platform.v1.OrganizationService/ListOrganizationUsers"
	calls := []apiCall{
		{name: "all", rpc: rpc, method: "GET", path: path, req: `{"organization_id":"{org}"}`, check: wantCount("users", 3)},
		{name: "order by display_name", rpc: rpc, method: "GET", path: path + "?order_by=display_name",
			req: `{"organization_id":"{org}","order_by":"display_name"}`,
			check: all(wantField("users.0.user.display_name", "Amy Admin"), wantField("users.0.roles.0.name", "admin"),
				wantField("users.0.roles.0.role_scope", "ROLE_SCOPE_ORGANIZATION"))},
		{name: "workspace role in any workspace", rpc: rpc, method: "GET", path: path + `?filter=role=%22Workspace_Viewer%22`,
			req: `{"organization_id":"{org}","filter":"role=\"Workspace_Viewer\""}`,
			check: all(wantCount("users", 1), wantField("users.0.user.display_name", "Zed Viewer"),
				wantField("users.0.roles.1.name", "workspace_viewer"), wantField("users.0.roles.1.role_scope", "ROLE_SCOPE_WORKSPACE"))},
		{name: "role_scope workspace", rpc: rpc, method: "GET", path: path + `?filter=role_scope=workspace`,
			req: `{"organization_id":"{org}","filter":"role_scope=workspace"}`, check: wantCount("users", 2)}, // the owner administers the first workspace
		{name: "search", rpc: rpc, method: "GET", path: path + `?filter=search:%22AMY%22`,
			req: `{"organization_id":"{org}","filter":"search:\"AMY\""}`, check: all(wantCount("users", 1), wantField("users.0.user.display_name", "Amy Admin"))},
		{name: "page of 1", rpc: rpc, method: "GET", path: path + "?page_size=1",
			req: `{"organization_id":"{org}","page_size":1}`, check: func(t *testing.T, m map[string]any, _ func(string) string) {
				if count(m, "users") != 1 || m["next_page_token"] == nil {
					t.Errorf("want one user and a token: %v", m)
				}
			}},
		{name: "bad filter", rpc: rpc, method: "GET", path: path + `?filter=name=%22x%22`,
			req: `{"organization_id":"{org}","filter":"name=\"x\""}`, want: codes.InvalidArgument, reason: "INVALID_FILTER"},
		{name: "bad order", rpc: rpc, method: "GET", path: path + "?order_by=title",
			req: `{"organization_id":"{org}","order_by":"title"}`, want: codes.InvalidArgument, reason: "INVALID_ORDER_BY"},
	}
	for _, c := range calls {
		e.run(t, c)
	}
}
