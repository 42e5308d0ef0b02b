package main

import (
	"context"
	"testing"

	"github.com/proserun/prose/server/apikey"
)

// TestRevocationTakesEffectAtOnce: keys and permission sets are cached by
// the authenticator, yet removing a member's workspace role and deleting a
// key refuse the very next call.
func TestRevocationTakesEffectAtOnce(t *testing.T) {
	e := newTestEnv(t)
	ctx := context.Background()
	org, ws := e.init.orgID, e.init.workspaceID
	zed := e.newViewer(t)
	key := e.newKey(t, keySpec{user: zed.ID})
	get := func() (int, string) {
		t.Helper()
		c, m, _ := e.doHTTP(t, "GET", "/api/v1/organizations/"+org+"/workspaces/"+ws, "", map[string]string{"Authorization": "Bearer " + key})
		return c, httpReason(m)
	}
	for range 3 { // read, then served from the cache
		if c, reason := get(); c != 200 {
			t.Fatalf("viewer reads the workspace: %d %s", c, reason)
		}
	}
	if err := e.st.RemoveWorkspaceMember(ctx, org, ws, zed.ID); err != nil {
		t.Fatal(err)
	}
	if c, reason := get(); c != 403 || reason != "PERMISSION_MISSING" {
		t.Fatalf("after the membership is removed: %d %s, want 403 PERMISSION_MISSING", c, reason)
	}
	if _, err := e.st.AddWorkspaceMember(ctx, org, ws, zed.ID, []string{"workspace_viewer"}); err != nil {
		t.Fatal(err)
	}
	if c, reason := get(); c != 200 {
		t.Fatalf("after the membership is back: %d %s", c, reason)
	}
	prefix, err := apikey.Parse(key)
	if err != nil {
		t.Fatal(err)
	}
	k, err := e.st.GetAPIKeyByPrefix(ctx, prefix)
	if err != nil {
		t.Fatal(err)
	}
	c, _, raw := e.doHTTP(t, "DELETE", "/api/v1/organizations/"+org+"/apiKeys/"+k.ID, "", map[string]string{"Authorization": "Bearer " + key}) // a user deletes their own keys
	if c != 200 {
		t.Fatalf("delete the key: %d %s", c, raw)
	}
	if c, reason := get(); c != 401 || reason != "API_KEY_INVALID" {
		t.Fatalf("after the key is deleted: %d %s, want 401 API_KEY_INVALID", c, reason)
	}
}
