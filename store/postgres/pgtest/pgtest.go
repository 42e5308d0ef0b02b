// Package pgtest gives tests a PostgreSQL database of their own on the
// server named by PROSE_TEST_POSTGRES_URL (the PostgreSQL test tier).
package pgtest

import (
	"context"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/proserun/prose/store"
)

// EnvURL names the variable holding the URL of a PostgreSQL server the tests
// may create databases on; the PostgreSQL tests are skipped without it.
const EnvURL = "PROSE_TEST_POSTGRES_URL"

// TempDatabase creates a database named prefix plus a random id on the
// EnvURL server (skipping the test when EnvURL is unset), drops it when the
// test ends, and returns its URL.
func TempDatabase(t testing.TB, prefix string) string {
	t.Helper()
	base := os.Getenv(EnvURL)
	if base == "" {
		t.Skip(EnvURL + " not set (e.g. postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable): skipping a PostgreSQL test")
	}
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatalf("connect %s: %v", EnvURL, err)
	}
	name := prefix + strings.ToLower(store.NewID())
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
		t.Fatalf("parse %s: %v", EnvURL, err)
	}
	u.Path = "/" + name
	return u.String()
}
