package main

import (
	"context"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/proserun/prose/store"
)

// TestCrashTwoReplicasPostgres runs the crash test with two `prose serve`
// replicas on one PostgreSQL database: 500 runs spread over both, replica 0
// killed with SIGKILL mid-way and not restarted; replica 1 takes over the
// victim's runs when their leases (3 s) expire.
func TestCrashTwoReplicasPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test: builds the binary and runs 500 runs across a SIGKILL")
	}
	dbURL := crashTempDatabase(t)
	runCrashScenario(t, crashScenario{storeArgs: []string{"--database", dbURL}, replicas: 2})
}

// crashTempDatabase creates a fresh database on the PROSE_TEST_POSTGRES_URL
// server (skipping the test when it is unset) and drops it at cleanup.
func crashTempDatabase(t *testing.T) string {
	t.Helper()
	base := os.Getenv("PROSE_TEST_POSTGRES_URL")
	if base == "" {
		t.Skip("PROSE_TEST_POSTGRES_URL not set (e.g. postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable): skipping the two-replica PostgreSQL crash test")
	}
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatalf("connect PROSE_TEST_POSTGRES_URL: %v", err)
	}
	name := "prose_crash_" + strings.ToLower(store.NewID())
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		_ = admin.Close(ctx)
		t.Fatalf("create database: %v", err)
	}
	t.Cleanup(func() {
		if _, err := admin.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
			t.Errorf("drop database %s: %v", name, err)
		}
		_ = admin.Close(ctx)
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("parse PROSE_TEST_POSTGRES_URL: %v", err)
	}
	u.Path = "/" + name
	return u.String()
}
