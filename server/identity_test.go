package server_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"github.com/proserun/prose/server/testenv"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/dynamicpb"
)

// apiCall is one call made over HTTP and over gRPC. In every string,
// {org}, {ws} and {user} are replaced by the test organization's ids, and
// {t} by "h" over HTTP and "g" over gRPC (so creates do not collide).
type apiCall struct {
	name         string
	rpc          string
	method, path string // HTTP
	body         string // HTTP body
	req          string // gRPC request, proto JSON
	key          string // default: the owner's key (level All)
	want         codes.Code
	reason       string // ErrorInfo reason of an error
	check        func(t *testing.T, resp map[string]any, x func(string) string)
}

// run makes c over both transports.
func (e *testEnv) run(t *testing.T, c apiCall) {
	t.Helper()
	key := c.key
	if key == "" {
		key = e.Init.APIKey
	}
	t.Run(c.name+"/http", func(t *testing.T) {
		code, m, raw := e.DoHTTP(t, c.method, e.Expand(c.path, "h"), e.Expand(c.body, "h"), map[string]string{"Authorization": "Bearer " + key})
		if want := runtime.HTTPStatusFromCode(c.want); code != want {
			t.Fatalf("HTTP %d, want %d: %s", code, want, raw)
		}
		if c.want != codes.OK {
			if c.reason != "" && testenv.HTTPReason(m) != c.reason {
				t.Errorf("reason %q, want %q: %s", testenv.HTTPReason(m), c.reason, raw)
			}
			return
		}
		if c.check != nil {
			c.check(t, m, func(s string) string { return e.Expand(s, "h") })
		}
	})
	t.Run(c.name+"/grpc", func(t *testing.T) {
		in := dynamicpb.NewMessage(testenv.MethodDescriptor(t, c.rpc).Input())
		if c.req != "" {
			if err := protojson.Unmarshal([]byte(e.Expand(c.req, "g")), in); err != nil {
				t.Fatalf("request: %v", err)
			}
		}
		m, err := e.DoGRPC(t, c.rpc, in, metadata.Pairs("authorization", "Bearer "+key))
		if status.Code(err) != c.want {
			t.Fatalf("code %v (%v), want %v", status.Code(err), err, c.want)
		}
		if err != nil {
			if c.reason != "" && testenv.GRPCReason(err) != c.reason {
				t.Errorf("reason %q, want %q", testenv.GRPCReason(err), c.reason)
			}
			return
		}
		if c.check != nil {
			c.check(t, m, func(s string) string { return e.Expand(s, "g") })
		}
	})
}

func count(m map[string]any, list string) int {
	l, _ := m[list].([]any)
	return len(l)
}

type checkFunc = func(*testing.T, map[string]any, func(string) string)

func wantField(path string, want any) checkFunc {
	return func(t *testing.T, m map[string]any, x func(string) string) {
		t.Helper()
		path, want := x(path), want
		if s, ok := want.(string); ok {
			want = x(s)
		}
		if got := testenv.Field(m, path); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s = %v, want %v (response %v)", path, got, want, m)
		}
	}
}

func wantCount(list string, n int) checkFunc {
	return func(t *testing.T, m map[string]any, _ func(string) string) {
		t.Helper()
		if got := count(m, list); got != n {
			t.Errorf("len(%s) = %d, want %d (response %v)", list, got, n, m)
		}
	}
}

func all(checks ...checkFunc) checkFunc {
	return func(t *testing.T, m map[string]any, x func(string) string) {
		t.Helper()
		for _, c := range checks {
			c(t, m, x)
		}
	}
}

const (
	wsSvc  = "/prose.platform.v1.WorkspaceService/"
	orgSvc = "/prose.platform.v1.OrganizationService/"
	keySvc = "/prose.platform.v1.ApiKeyService/"
)

func TestWorkspaceEndpoints(t *testing.T) {
	e := newTestEnv(t)
	org := e.Init.OrganizationID
	for _, title := range []string{"Ops east", "OPS west", "Finance", "ops"} {
		e.NewWorkspace(t, title)
	}
	// A second member with a workspace role, for the users filters.
	u := e.NewViewer(t)
	base := "/api/v1/organizations/{org}/workspaces"
	wsPath := base + "/{ws}"
	calls := []apiCall{
		{name: "list all", rpc: wsSvc + "ListWorkspaces", method: "GET", path: base, req: `{"organization_id":"{org}"}`,
			check: wantCount("workspaces", 5)},
		{name: "list title contains ops (case-insensitive)", rpc: wsSvc + "ListWorkspaces", method: "GET", path: base + `?filter=title:%22ops%22`,
			req: `{"organization_id":"{org}","filter":"title:\"ops\""}`, check: all(wantCount("workspaces", 4))},
		{name: "list title equals", rpc: wsSvc + "ListWorkspaces", method: "GET", path: base + `?filter=title=%22ops%22`,
			req: `{"organization_id":"{org}","filter":"title=\"ops\""}`, check: all(wantCount("workspaces", 1), wantField("workspaces.0.title", "ops"))},
		{name: "list order by title", rpc: wsSvc + "ListWorkspaces", method: "GET", path: base + `?order_by=title`,
			req: `{"organization_id":"{org}","order_by":"title"}`, check: wantField("workspaces.0.title", "Finance")},
		{name: "list page size 2", rpc: wsSvc + "ListWorkspaces", method: "GET", path: base + `?page_size=2`,
			req: `{"organization_id":"{org}","page_size":2}`, check: func(t *testing.T, m map[string]any, _ func(string) string) {
				if count(m, "workspaces") != 2 || m["next_page_token"] == nil {
					t.Errorf("want 2 workspaces and a token: %v", m)
				}
			}},
		{name: "list page size over 1000 coerced", rpc: wsSvc + "ListWorkspaces", method: "GET", path: base + `?page_size=5000`,
			req: `{"organization_id":"{org}","page_size":5000}`, check: wantCount("workspaces", 5)},
		{name: "list negative page size", rpc: wsSvc + "ListWorkspaces", method: "GET", path: base + `?page_size=-1`,
			req: `{"organization_id":"{org}","page_size":-1}`, want: codes.InvalidArgument},
		{name: "list bad filter field", rpc: wsSvc + "ListWorkspaces", method: "GET", path: base + `?filter=name=%22x%22`,
			req: `{"organization_id":"{org}","filter":"name=\"x\""}`, want: codes.InvalidArgument, reason: "INVALID_FILTER"},
		{name: "list bad order_by", rpc: wsSvc + "ListWorkspaces", method: "GET", path: base + `?order_by=name`,
			req: `{"organization_id":"{org}","order_by":"name"}`, want: codes.InvalidArgument, reason: "INVALID_ORDER_BY"},
		{name: "list bad token", rpc: wsSvc + "ListWorkspaces", method: "GET", path: base + `?page_token=zzz`,
			req: `{"organization_id":"{org}","page_token":"zzz"}`, want: codes.InvalidArgument, reason: "INVALID_PAGE_TOKEN"},
		{name: "get", rpc: wsSvc + "GetWorkspace", method: "GET", path: wsPath, req: `{"organization_id":"{org}","workspace_id":"{ws}"}`,
			check: all(wantField("name", "organizations/"+org+"/workspaces/"+e.Init.WorkspaceID), wantField("title", "Ops"), wantField("creator_email", "{email}"))},
		{name: "get missing", rpc: wsSvc + "GetWorkspace", method: "GET", path: base + "/nope", req: `{"organization_id":"{org}","workspace_id":"nope"}`,
			want: codes.NotFound, reason: "WORKSPACE_NOT_FOUND"},
		{name: "me workspaces", rpc: wsSvc + "ListCurrentUserWorkspaces", method: "GET", path: "/api/v1/me/organizations/{org}/workspaces",
			req: `{"organization_id":"{org}"}`, check: all(wantCount("user_workspaces", 1), wantField("user_workspaces.0.title", "Ops"))},
		{name: "create", rpc: wsSvc + "CreateWorkspace", method: "POST", path: base + "?workspace_id=new-{t}&request_id=r-{t}",
			body:  `{"title":"New {t}","workspace_icon":"rocket"}`,
			req:   `{"organization_id":"{org}","workspace_id":"new-{t}","request_id":"r-{t}","workspace":{"title":"New {t}","workspace_icon":"rocket"}}`,
			check: all(wantField("title", "New {t}"), wantField("workspace_icon", "rocket"))},
		{name: "create retry same request_id", rpc: wsSvc + "CreateWorkspace", method: "POST", path: base + "?request_id=r-{t}",
			body: `{"title":"Other"}`, req: `{"organization_id":"{org}","request_id":"r-{t}","workspace":{"title":"Other"}}`,
			check: wantField("title", "New {t}")},
		{name: "create duplicate id", rpc: wsSvc + "CreateWorkspace", method: "POST", path: base + "?workspace_id=new-{t}",
			body: `{"title":"Dup"}`, req: `{"organization_id":"{org}","workspace_id":"new-{t}","workspace":{"title":"Dup"}}`,
			want: codes.AlreadyExists, reason: "WORKSPACE_ALREADY_EXISTS"},
		{name: "create without title", rpc: wsSvc + "CreateWorkspace", method: "POST", path: base,
			body: `{}`, req: `{"organization_id":"{org}","workspace":{}}`, want: codes.InvalidArgument},
		{name: "update title", rpc: wsSvc + "UpdateWorkspace", method: "PATCH", path: base + "/new-{t}?update_mask=title",
			body: `{"title":"Renamed {t}"}`, req: `{"organization_id":"{org}","workspace_id":"new-{t}","workspace":{"title":"Renamed {t}"},"update_mask":"title"}`,
			check: all(wantField("title", "Renamed {t}"), wantField("workspace_icon", "rocket"))},
		{name: "update bad mask", rpc: wsSvc + "UpdateWorkspace", method: "PATCH", path: base + "/new-{t}?update_mask=name",
			body: `{"title":"x"}`, req: `{"organization_id":"{org}","workspace_id":"new-{t}","workspace":{"title":"x"},"update_mask":"name"}`,
			want: codes.InvalidArgument},
		{name: "preferences", rpc: wsSvc + "GetWorkspacePreferences", method: "GET", path: wsPath + "/preferences",
			req: `{"organization_id":"{org}","workspace_id":"{ws}"}`, check: wantField("name", "organizations/"+org+"/workspaces/"+e.Init.WorkspaceID+"/preferences")},
		{name: "update preferences", rpc: wsSvc + "UpdateWorkspacePreferences", method: "PATCH", path: wsPath + "/preferences?update_mask=general.time_zone,general.time_format",
			body:  `{"general":{"time_zone":"Europe/Paris","time_format":"TIME_FORMAT_24_HOUR"}}`,
			req:   `{"organization_id":"{org}","workspace_id":"{ws}","preferences":{"general":{"time_zone":"Europe/Paris","time_format":"TIME_FORMAT_24_HOUR"}},"update_mask":"general.timeZone,general.timeFormat"}`,
			check: all(wantField("general.time_zone", "Europe/Paris"), wantField("general.time_format", "TIME_FORMAT_24_HOUR"))},
		{name: "invite", rpc: wsSvc + "CreateWorkspaceInvite", method: "POST", path: wsPath + "/invites",
			body: `{"email":"new-{t}@example.test","request_id":"inv-{t}"}`, req: `{"organization_id":"{org}","workspace_id":"{ws}","email":"new-{t}@example.test","request_id":"inv-{t}"}`,
			check: wantField("email", "new-{t}@example.test")},
		{name: "invite bad email", rpc: wsSvc + "CreateWorkspaceInvite", method: "POST", path: wsPath + "/invites",
			body: `{"email":"not an email"}`, req: `{"organization_id":"{org}","workspace_id":"{ws}","email":"not an email"}`, want: codes.InvalidArgument},
		{name: "invite org role refused", rpc: wsSvc + "CreateWorkspaceInvite", method: "POST", path: wsPath + "/invites",
			body: `{"email":"o-{t}@example.test","roles":["owner"]}`, req: `{"organization_id":"{org}","workspace_id":"{ws}","email":"o-{t}@example.test","roles":["owner"]}`, want: codes.InvalidArgument},
		{name: "list invites", rpc: wsSvc + "ListWorkspaceInvites", method: "GET", path: wsPath + "/invites",
			req: `{"organization_id":"{org}","workspace_id":"{ws}"}`, check: func(t *testing.T, m map[string]any, _ func(string) string) {
				if count(m, "invitations") < 1 || testenv.Field(m, "invitations.0.invitation_id") == nil {
					t.Errorf("invitations: %v", m)
				}
			}},
		{name: "delete missing invite", rpc: wsSvc + "DeleteWorkspaceInvite", method: "DELETE", path: wsPath + "/invites/nope",
			req: `{"organization_id":"{org}","workspace_id":"{ws}","invitation_id":"nope"}`, want: codes.NotFound, reason: "INVITATION_NOT_FOUND"},
		{name: "roles", rpc: wsSvc + "ListWorkspaceRoles", method: "GET", path: wsPath + "/roles",
			req: `{"organization_id":"{org}","workspace_id":"{ws}"}`, check: all(wantCount("roles", 3), wantField("roles.0.name", "workspace_admin"))},
		{name: "users", rpc: wsSvc + "ListWorkspaceUsers", method: "GET", path: wsPath + "/users",
			req: `{"organization_id":"{org}","workspace_id":"{ws}"}`, check: wantCount("users", 2)},
		{name: "users role filter case-insensitive", rpc: wsSvc + "ListWorkspaceUsers", method: "GET", path: wsPath + `/users?filter=role=%22WORKSPACE_VIEWER%22`,
			req:   `{"organization_id":"{org}","workspace_id":"{ws}","filter":"role=\"WORKSPACE_VIEWER\""}`,
			check: all(wantCount("users", 1), wantField("users.0.user.display_name", "Zed Viewer"), wantField("users.0.roles.1.role_scope", "ROLE_SCOPE_WORKSPACE"))},
		{name: "users role_scope organization", rpc: wsSvc + "ListWorkspaceUsers", method: "GET", path: wsPath + `/users?filter=role_scope=organization`,
			req: `{"organization_id":"{org}","workspace_id":"{ws}","filter":"role_scope=organization"}`, check: wantCount("users", 2)},
		{name: "users search", rpc: wsSvc + "ListWorkspaceUsers", method: "GET", path: wsPath + `/users?filter=search:%22zed%22`,
			req: `{"organization_id":"{org}","workspace_id":"{ws}","filter":"search:\"zed\""}`, check: wantCount("users", 1)},
		{name: "users order by display_name", rpc: wsSvc + "ListWorkspaceUsers", method: "GET", path: wsPath + `/users?order_by=display_name`,
			req: `{"organization_id":"{org}","workspace_id":"{ws}","order_by":"display_name"}`, check: wantField("users.0.user.display_name", "Zed Viewer")},
		{name: "users bad order", rpc: wsSvc + "ListWorkspaceUsers", method: "GET", path: wsPath + `/users?order_by=create_time`,
			req: `{"organization_id":"{org}","workspace_id":"{ws}","order_by":"create_time"}`, want: codes.InvalidArgument},
		{name: "add user", rpc: wsSvc + "CreateWorkspaceUser", method: "POST", path: base + "/new-{t}/users",
			body: `{"user_id":"` + u.ID + `","roles":["workspace_member"]}`, req: `{"organization_id":"{org}","workspace_id":"new-{t}","user_id":"` + u.ID + `","roles":["workspace_member"]}`,
			check: wantField("user.name", "users/"+u.ID)},
		{name: "update user roles", rpc: wsSvc + "UpdateWorkspaceUser", method: "PATCH", path: base + "/new-{t}/users/" + u.ID,
			body: `{"roles":["workspace_admin"]}`, req: `{"organization_id":"{org}","workspace_id":"new-{t}","user_id":"` + u.ID + `","roles":["workspace_admin"]}`,
			check: func(t *testing.T, m map[string]any, _ func(string) string) {
				if !strings.Contains(fmt.Sprint(m["roles"]), "workspace_admin") {
					t.Errorf("roles: %v", m["roles"])
				}
			}},
		{name: "count users", rpc: wsSvc + "CountWorkspaceUsers", method: "POST", path: base + ":countUsers",
			body: `{"workspace_ids":["{ws}","new-{t}","missing"]}`, req: `{"organization_id":"{org}","workspace_ids":["{ws}","new-{t}","missing"]}`,
			check: all(wantField("workspace_user_counts.{ws}", 2), wantField("workspace_user_counts.new-{t}", 2))},
		{name: "remove user", rpc: wsSvc + "DeleteWorkspaceUser", method: "DELETE", path: base + "/new-{t}/users/" + u.ID,
			req: `{"organization_id":"{org}","workspace_id":"new-{t}","user_id":"` + u.ID + `"}`},
		{name: "remove user again", rpc: wsSvc + "DeleteWorkspaceUser", method: "DELETE", path: base + "/new-{t}/users/" + u.ID,
			req: `{"organization_id":"{org}","workspace_id":"new-{t}","user_id":"` + u.ID + `"}`, want: codes.NotFound},
		{name: "delete", rpc: wsSvc + "DeleteWorkspace", method: "DELETE", path: base + "/new-{t}",
			req: `{"organization_id":"{org}","workspace_id":"new-{t}"}`},
		{name: "delete again", rpc: wsSvc + "DeleteWorkspace", method: "DELETE", path: base + "/new-{t}",
			req: `{"organization_id":"{org}","workspace_id":"new-{t}"}`, want: codes.NotFound, reason: "WORKSPACE_NOT_FOUND"},
	}
	for _, c := range calls {
		e.run(t, c)
	}
}
