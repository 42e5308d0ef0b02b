package server_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/proserun/prose/server/testenv"
	"github.com/proserun/prose/store"
)

func TestOrganizationAndAPIKeyEndpoints(t *testing.T) {
	e := newTestEnv(t)
	other := e.NewWorkspace(t, "Other")
	scoped := e.NewKey(t, testenv.KeySpec{Workspaces: []string{other}})
	restricted := e.NewKey(t, testenv.KeySpec{Level: store.PermissionRestricted, Toggles: map[string]bool{"workspaces.get": true}})
	org := "/api/v1/organizations/{org}"
	calls := []apiCall{
		{name: "get organization", rpc: orgSvc + "GetOrganization", method: "GET", path: org, req: `{"organization_id":"{org}"}`,
			check: all(wantField("name", "organizations/{org}"), wantField("title", "Test org"))},
		{name: "my organizations", rpc: orgSvc + "ListCurrentUserOrganizations", method: "GET", path: "/api/v1/me/organizations",
			check: all(wantCount("user_organizations", 1), wantField("user_organizations.0.name", "organizations/{org}"))},
		{name: "my organizations filtered out", rpc: orgSvc + "ListCurrentUserOrganizations", method: "GET", path: "/api/v1/me/organizations?filter=title=%22nope%22",
			req: `{"filter":"title=\"nope\""}`, check: wantCount("user_organizations", 0)},
		{name: "organization roles", rpc: orgSvc + "ListOrganizationRoles", method: "GET", path: org + "/roles", req: `{"organization_id":"{org}"}`,
			check: wantCount("roles", 6)},
		{name: "organization invites", rpc: orgSvc + "ListOrganizationInvites", method: "GET", path: org + "/invites", req: `{"organization_id":"{org}"}`,
			check: wantCount("invitations", 0)},
		{name: "permissions", rpc: orgSvc + "GetCurrentUserPermissions", method: "GET", path: "/api/v1/me/organizations/{org}/permissions?workspace_id={ws}",
			req: `{"organization_id":"{org}","workspace_id":"{ws}"}`, check: all(wantField("user", "users/{user}"), wantField("roles.0.name", "owner"),
				wantField("roles.1.name", "workspace_admin"), wantField("workspace", "organizations/{org}/workspaces/{ws}"))},
		{name: "restricted key permissions", rpc: orgSvc + "GetCurrentUserPermissions", method: "GET", path: "/api/v1/me/organizations/{org}/permissions",
			req: `{"organization_id":"{org}"}`, key: restricted, check: func(t *testing.T, m map[string]any, _ func(string) string) {
				if b, _ := json.Marshal(m["permissions"]); string(b) != `["workspaces.get"]` {
					t.Errorf("permissions %s", b)
				}
			}},
		{name: "restricted key toggle off", rpc: wsSvc + "ListWorkspaces", method: "GET", path: org + "/workspaces", req: `{"organization_id":"{org}"}`,
			key: restricted, want: codes.PermissionDenied, reason: "API_KEY_PERMISSION_DISABLED"},
		{name: "scoped key lists its workspaces only", rpc: wsSvc + "ListWorkspaces", method: "GET", path: org + "/workspaces", req: `{"organization_id":"{org}"}`,
			key: scoped, check: all(wantCount("workspaces", 1), wantField("workspaces.0.title", "Other"))},
		{name: "create key", rpc: keySvc + "CreateApiKey", method: "POST", path: org + "/apiKeys?request_id=k-{t}",
			body: `{"display_name":"ci {t}","expiration":"API_KEY_EXPIRATION_30_DAYS","permission_level":"API_KEY_PERMISSION_LEVEL_READ_ONLY","workspace_ids":["{ws}"]}`,
			req:  `{"organization_id":"{org}","request_id":"k-{t}","api_key":{"display_name":"ci {t}","expiration":"API_KEY_EXPIRATION_30_DAYS","permission_level":"API_KEY_PERMISSION_LEVEL_READ_ONLY","workspace_ids":["{ws}"]}}`,
			check: func(t *testing.T, m map[string]any, _ func(string) string) {
				if k, _ := m["key"].(string); !strings.HasPrefix(k, "prose_") || !strings.HasPrefix(k, testenv.Field(m, "api_key.key_prefix").(string)) {
					t.Errorf("key %v", m)
				}
			}},
		{name: "create key retry hides value", rpc: keySvc + "CreateApiKey", method: "POST", path: org + "/apiKeys?request_id=k-{t}",
			body:  `{"display_name":"ci {t}","expiration":"API_KEY_EXPIRATION_30_DAYS"}`,
			req:   `{"organization_id":"{org}","request_id":"k-{t}","api_key":{"display_name":"ci {t}","expiration":"API_KEY_EXPIRATION_30_DAYS"}}`,
			check: all(wantField("key", "<nil>"), wantField("api_key.display_name", "ci {t}"))},
		{name: "create key without expiration", rpc: keySvc + "CreateApiKey", method: "POST", path: org + "/apiKeys",
			body: `{"display_name":"x"}`, req: `{"organization_id":"{org}","api_key":{"display_name":"x"}}`, want: codes.InvalidArgument},
		{name: "scoped key cannot make an all-workspaces key", rpc: keySvc + "CreateApiKey", method: "POST", path: org + "/apiKeys", key: scoped,
			body: `{"display_name":"x","expiration":"API_KEY_EXPIRATION_7_DAYS"}`, req: `{"organization_id":"{org}","api_key":{"display_name":"x","expiration":"API_KEY_EXPIRATION_7_DAYS"}}`,
			want: codes.PermissionDenied, reason: "WORKSPACE_OUT_OF_SCOPE"},
		{name: "list keys", rpc: keySvc + "ListApiKeys", method: "GET", path: org + "/apiKeys", req: `{"organization_id":"{org}"}`,
			check: func(t *testing.T, m map[string]any, _ func(string) string) {
				if n := count(m, "api_keys"); n < 4 {
					t.Errorf("%d keys: %v", n, m)
				}
				if b, _ := json.Marshal(m); bytes.Contains(b, []byte("secret")) {
					t.Errorf("secret in list: %s", b)
				}
			}},
		{name: "get missing key", rpc: keySvc + "GetApiKey", method: "GET", path: org + "/apiKeys/nope", req: `{"organization_id":"{org}","api_key_id":"nope"}`,
			want: codes.NotFound, reason: "API_KEY_NOT_FOUND"},
	}
	for _, c := range calls {
		e.run(t, c)
	}
}

func TestAPIKeyLimit(t *testing.T) {
	e := newTestEnv(t)
	for i := 0; i < 9; i++ { // the init key is the first
		c, _, raw := e.DoHTTP(t, "POST", "/api/v1/organizations/"+e.Init.OrganizationID+"/apiKeys", `{"display_name":"k","expiration":"API_KEY_EXPIRATION_7_DAYS"}`,
			map[string]string{"Authorization": "Bearer " + e.Init.APIKey})
		if c != 200 {
			t.Fatalf("key %d: %d %s", i+2, c, raw)
		}
	}
	c, m, raw := e.DoHTTP(t, "POST", "/api/v1/organizations/"+e.Init.OrganizationID+"/apiKeys", `{"display_name":"k","expiration":"API_KEY_EXPIRATION_7_DAYS"}`,
		map[string]string{"Authorization": "Bearer " + e.Init.APIKey})
	if c != 429 || testenv.HTTPReason(m) != "API_KEY_LIMIT_REACHED" {
		t.Fatalf("11th key: %d %s", c, raw)
	}
}
