package server_test

import (
	"context"
	"hash/crc32"
	"sync/atomic"
	"testing"
	"time"

	"github.com/proserun/prose/server/apikey"
	"github.com/proserun/prose/server/app"
	"github.com/proserun/prose/server/testenv"
)

// TestRevocationTakesEffectAtOnce: keys and permission sets are cached by
// the authenticator, yet removing a member's workspace role and deleting a
// key refuse the very next call.
func TestRevocationTakesEffectAtOnce(t *testing.T) {
	e := newTestEnv(t)
	ctx := context.Background()
	org, ws := e.Init.OrganizationID, e.Init.WorkspaceID
	zed := e.NewViewer(t)
	key := e.NewKey(t, testenv.KeySpec{User: zed.ID})
	get := func() (int, string) {
		t.Helper()
		c, m, _ := e.DoHTTP(t, "GET", "/api/v1/organizations/"+org+"/workspaces/"+ws, "", map[string]string{"Authorization": "Bearer " + key})
		return c, testenv.HTTPReason(m)
	}
	for range 3 { // read, then served from the cache
		if c, reason := get(); c != 200 {
			t.Fatalf("viewer reads the workspace: %d %s", c, reason)
		}
	}
	if err := e.Store.RemoveWorkspaceMember(ctx, org, ws, zed.ID); err != nil {
		t.Fatal(err)
	}
	if c, reason := get(); c != 403 || reason != "PERMISSION_MISSING" {
		t.Fatalf("after the membership is removed: %d %s, want 403 PERMISSION_MISSING", c, reason)
	}
	if _, err := e.Store.AddWorkspaceMember(ctx, org, ws, zed.ID, []string{"workspace_viewer"}); err != nil {
		t.Fatal(err)
	}
	if c, reason := get(); c != 200 {
		t.Fatalf("after the membership is back: %d %s", c, reason)
	}
	prefix, err := apikey.Parse(key)
	if err != nil {
		t.Fatal(err)
	}
	k, err := e.Store.GetAPIKeyByPrefix(ctx, prefix)
	if err != nil {
		t.Fatal(err)
	}
	c, _, raw := e.DoHTTP(t, "DELETE", "/api/v1/organizations/"+org+"/apiKeys/"+k.ID, "", map[string]string{"Authorization": "Bearer " + key}) // a user deletes their own keys
	if c != 200 {
		t.Fatalf("delete the key: %d %s", c, raw)
	}
	if c, reason := get(); c != 401 || reason != "API_KEY_INVALID" {
		t.Fatalf("after the key is deleted: %d %s, want 401 API_KEY_INVALID", c, reason)
	}
}

// withChecksum is body (a key's prefix and secret) with its CRC-32
// checksum, as apikey makes keys: a value that passes apikey.Parse.
func withChecksum(body string) string {
	const alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	v := crc32.ChecksumIEEE([]byte(body))
	var out [apikey.ChecksumLen]byte
	for i := apikey.ChecksumLen - 1; i >= 0; i-- {
		out[i] = alphabet[v%62]
		v /= 62
	}
	return body + string(out[:])
}

// TestVerifiedKeyIsComparedWhole: once a key has been verified (and its
// record cached), a value sharing its prefix is still the key only if it
// is the same value: another secret with a valid checksum, a value one
// character off, a truncated one are refused, and the key goes on being
// accepted after them; the key's expiry is checked on every call, a
// verified value's too.
func TestVerifiedKeyIsComparedWhole(t *testing.T) {
	start := time.Now()
	var elapsed atomic.Int64
	clock := func() time.Time { return start.Add(time.Duration(elapsed.Load())) }
	e := newTestEnvWith(t, func(c *app.Config) { c.SessionClock = clock })
	key := e.NewKey(t, testenv.KeySpec{}) // expires in an hour
	path := "/api/v1/organizations/" + e.Init.OrganizationID + "/workspaces/" + e.Init.WorkspaceID
	get := func(value string) (int, string) {
		t.Helper()
		c, m, _ := e.DoHTTP(t, "GET", path, "", map[string]string{"Authorization": "Bearer " + value})
		return c, testenv.HTTPReason(m)
	}
	for range 3 { // verified, then compared with the verified value
		if c, reason := get(key); c != 200 {
			t.Fatalf("the key: %d %s", c, reason)
		}
	}
	body := key[:len(key)-apikey.ChecksumLen]
	last := body[len(body)-1]
	other := byte('A')
	if last == other {
		other = 'B'
	}
	forged := withChecksum(body[:len(body)-1] + string(other)) // same prefix, another secret, a valid checksum
	if _, err := apikey.Parse(forged); err != nil {
		t.Fatalf("the forged value should pass the checksum: %v", err)
	}
	sumOff := key[:len(key)-1] + string(map[bool]byte{true: '0', false: '1'}[key[len(key)-1] != '0'])
	for name, v := range map[string]string{
		"another secret":   forged,
		"checksum one off": sumOff,
		"truncated":        key[:len(key)-1],
		"longer":           key + "0",
		"prefix only":      key[:apikey.PrefixLen],
	} {
		for range 2 {
			if c, reason := get(v); c != 401 || reason != "API_KEY_INVALID" {
				t.Fatalf("%s: %d %s, want 401 API_KEY_INVALID", name, c, reason)
			}
		}
		if c, reason := get(key); c != 200 {
			t.Fatalf("the key after %s: %d %s", name, c, reason)
		}
	}
	elapsed.Store(int64(2 * time.Hour)) // past the key's expiry; its record is still cached
	if c, reason := get(key); c != 401 || reason != "API_KEY_EXPIRED" {
		t.Fatalf("the key past its expiry: %d %s, want 401 API_KEY_EXPIRED", c, reason)
	}
}
