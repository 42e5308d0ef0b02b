package main

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/proserun/prose/server/app"
	"github.com/proserun/prose/server/testenv"
)

func TestInitKeysMigrateCommands(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	run := func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := realMain(args, strings.NewReader(""), &out, &errb)
		return code, out.String(), errb.String()
	}
	tests := []struct {
		args     []string
		wantCode int
		check    func(t *testing.T, out string)
	}{
		{[]string{"migrate", "--data", dir}, 0, func(t *testing.T, out string) {
			if !strings.HasPrefix(out, "schema version ") {
				t.Errorf("out %q", out)
			}
		}},
		{[]string{"init", "--data", dir, "--json", "--organization", "Acme"}, 0, func(t *testing.T, out string) {
			var r map[string]string
			if err := json.Unmarshal([]byte(out), &r); err != nil || len(r) != 7 || !strings.HasPrefix(r["api_key"], "prose_") ||
				!strings.HasPrefix(r["organization"], "organizations/") || !strings.HasPrefix(r["user"], "users/") ||
				!strings.Contains(r["workspace"], "/workspaces/") {
				t.Errorf("init output %q (%v)", out, err)
			}
		}},
		{[]string{"init", "--data", dir}, 1, nil},
		{[]string{"keys", "create", "--data", dir, "--name", "ops", "--permission", "read-only", "--expires", "7d", "--json"}, 0, func(t *testing.T, out string) {
			if !strings.Contains(out, `"api_key":"prose_`) {
				t.Errorf("out %q", out)
			}
		}},
		{[]string{"keys", "create", "--data", dir, "--name", "x", "--expires", "2d"}, 2, nil},
		{[]string{"keys", "create", "--data", dir, "--name", "x", "--permission", "admin"}, 2, nil},
		{[]string{"keys", "list", "--data", dir}, 0, func(t *testing.T, out string) {
			if !strings.Contains(out, "initial key") || !strings.Contains(out, "read_only") {
				t.Errorf("out %q", out)
			}
		}},
		{[]string{"keys", "delete", "--data", dir, "nope"}, exitNotFound, nil},
		{[]string{"keys", "frobnicate"}, 2, nil},
	}
	for _, tt := range tests {
		code, out, errOut := run(tt.args...)
		if code != tt.wantCode {
			t.Fatalf("%v: exit %d, want %d; stderr %s", tt.args, code, tt.wantCode, errOut)
		}
		if tt.check != nil {
			tt.check(t, out)
		}
	}
}

func TestServeInitialisesEmptyStore(t *testing.T) {
	cfg := app.Config{Addr: "127.0.0.1:0", Data: t.TempDir(), LogLevel: "error"}
	var stderr bytes.Buffer
	a, err := app.New(t.Context(), cfg, testenv.Discard(), &stderr)
	if err != nil {
		t.Fatal(err)
	}
	if a.Bootstrap == nil || !strings.Contains(stderr.String(), a.Bootstrap.APIKey) {
		a.Close()
		t.Fatalf("no key printed: %q", stderr.String())
	}
	a.Close()
	stderr.Reset()
	b, err := app.New(t.Context(), cfg, testenv.Discard(), &stderr)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if b.Bootstrap != nil || strings.Contains(stderr.String(), "prose_") {
		t.Fatalf("second start initialised again: %q", stderr.String())
	}
}
