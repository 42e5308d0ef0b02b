package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/proserun/prose/internal/console"
	"github.com/proserun/prose/server/app"
)

// prose login-link prints a link for the owner, or for --email.
func TestLoginLinkCommand(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	var out, errb bytes.Buffer
	if rc := initCmd(ctx, []string{"--data", dir, "--email", "ann@example.test", "--json"}, nil, &out, &errb); rc != 0 {
		t.Fatalf("init: %d %s", rc, errb.String())
	}
	for _, args := range [][]string{{}, {"--email", "ANN@example.test"}} {
		out.Reset()
		if rc := loginLinkCmd(ctx, append([]string{"--data", dir, "--url", "https://prose.example/"}, args...), nil, &out, &errb); rc != 0 {
			t.Fatalf("login-link %v: %d %s", args, rc, errb.String())
		}
		link := strings.TrimSpace(out.String())
		if !strings.HasPrefix(link, "https://prose.example/signin?link=") {
			t.Errorf("login-link %v printed %q", args, link)
		}
	}
	for _, tc := range []struct {
		args []string
		rc   int
		want string
	}{
		{[]string{"--email", "nobody@example.test"}, 1, "no user"},
		{[]string{"--ttl", "0s"}, 2, "--ttl"},
		{[]string{"extra"}, 2, "unexpected argument"},
	} {
		errb.Reset()
		if rc := loginLinkCmd(ctx, append([]string{"--data", dir}, tc.args...), nil, &out, &errb); rc != tc.rc || !strings.Contains(errb.String(), tc.want) {
			t.Errorf("login-link %v: %d %q, want %d %q", tc.args, rc, errb.String(), tc.rc, tc.want)
		}
	}
	st, err := app.OpenStore(ctx, dir, "")
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	// The links are stored as links (hashes only), usable once each.
	n, err := st.DeleteExpiredConsoleSessions(ctx, time.Now().Add(console.DefaultLinkTTL+time.Minute))
	if err != nil || n != 2 {
		t.Errorf("stored links: %d %v, want 2", n, err)
	}
}
