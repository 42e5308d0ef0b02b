// Package pgtest gives tests a PostgreSQL database of their own on the
// server named by PROSE_TEST_POSTGRES_URL (the PostgreSQL test tier).
package pgtest

import (
	"context"
	"fmt"
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

// CreateDatabase creates a database named prefix plus a random id on the
// server of base (a postgres:// URL) and returns its URL and a function
// that drops it.
func CreateDatabase(ctx context.Context, base, prefix string) (string, func() error, error) {
	u, err := url.Parse(base)
	if err != nil {
		return "", nil, fmt.Errorf("parse: %w", err)
	}
	admin, err := pgx.Connect(ctx, base)
	if err != nil {
		return "", nil, fmt.Errorf("connect: %w", err)
	}
	name := prefix + strings.ToLower(store.NewID())
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		_ = admin.Close(ctx)
		return "", nil, fmt.Errorf("create database: %w", err)
	}
	u.Path = "/" + name
	drop := func() error {
		defer func() { _ = admin.Close(ctx) }()
		if _, err := admin.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
			return fmt.Errorf("drop database %s: %w", name, err)
		}
		return nil
	}
	return u.String(), drop, nil
}

// TempDatabase creates a database (see CreateDatabase) on the EnvURL server
// (skipping the test when EnvURL is unset), drops it when the test ends,
// and returns its URL.
func TempDatabase(t testing.TB, prefix string) string {
	t.Helper()
	base := os.Getenv(EnvURL)
	if base == "" {
		t.Skip(EnvURL + " not set (e.g. postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable): skipping a PostgreSQL test")
	}
	dbURL, drop, err := CreateDatabase(context.Background(), base, prefix)
	if err != nil {
		t.Fatalf("%s: %v", EnvURL, err)
	}
	t.Cleanup(func() {
		if err := drop(); err != nil {
			t.Error(err)
		}
	})
	return dbURL
}
