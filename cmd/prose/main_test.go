package main

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

// TestMain gives this package's tests a PostgreSQL database of their own
// when PROSE_TEST_POSTGRES_URL names a server: the database is created
// before the first test, PROSE_TEST_POSTGRES_URL is pointed at it for the
// tests, and it is dropped when they end. The database the variable named
// is never migrated or written.
func TestMain(m *testing.M) {
	base := os.Getenv("PROSE_TEST_POSTGRES_URL")
	if base == "" {
		os.Exit(m.Run())
	}
	dbURL, drop, err := createTestDatabase(base)
	if err != nil {
		fmt.Fprintf(os.Stderr, "PROSE_TEST_POSTGRES_URL: %v\n", err)
		os.Exit(1)
	}
	if err := os.Setenv("PROSE_TEST_POSTGRES_URL", dbURL); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	if err := drop(); err != nil {
		fmt.Fprintf(os.Stderr, "drop the test database: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}

// createTestDatabase creates a fresh database on the server of base and
// returns its URL and a function that drops it.
func createTestDatabase(base string) (string, func() error, error) {
	ctx := context.Background()
	u, err := url.Parse(base)
	if err != nil {
		return "", nil, fmt.Errorf("parse: %w", err)
	}
	admin, err := pgx.Connect(ctx, base)
	if err != nil {
		return "", nil, fmt.Errorf("connect: %w", err)
	}
	name := "prose_cmd_test_" + strings.ToLower(store.NewID())
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		_ = admin.Close(ctx)
		return "", nil, fmt.Errorf("create database: %w", err)
	}
	u.Path = "/" + name
	drop := func() error {
		defer admin.Close(ctx)
		_, err := admin.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)")
		return err
	}
	return u.String(), drop, nil
}
