package postgres_test

import (
	"context"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/proserun/prose/store"
	"github.com/proserun/prose/store/postgres"
	"github.com/proserun/prose/store/storetest"
)

// EnvURL names the variable holding the URL of a PostgreSQL server the tests
// may create databases on.
const EnvURL = "PROSE_TEST_POSTGRES_URL"

// tempDatabase creates a randomly named database and drops it at cleanup;
// it returns its URL.
func tempDatabase(t testing.TB) string {
	t.Helper()
	base := os.Getenv(EnvURL)
	if base == "" {
		t.Skip("PROSE_TEST_POSTGRES_URL not set: skipping the PostgreSQL store suite")
	}
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatalf("connect %s: %v", EnvURL, err)
	}
	name := "prose_test_" + strings.ToLower(store.NewID())
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

func open(t *testing.T, opts ...store.Option) store.Store {
	t.Helper()
	s, err := postgres.Open(t.Context(), tempDatabase(t), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func testingURL() string { return os.Getenv(EnvURL) }

func skipWithoutServer(t *testing.T) {
	if testingURL() == "" {
		t.Skip("PROSE_TEST_POSTGRES_URL not set: skipping the PostgreSQL store suite")
	}
}

func TestConformance(t *testing.T) {
	skipWithoutServer(t)
	storetest.Run(t, open)
}

func TestMigrateIsIdempotent(t *testing.T) {
	u := tempDatabase(t)
	for i := range 2 {
		v, err := postgres.Migrate(t.Context(), u)
		if err != nil || v < 1 {
			t.Fatalf("Migrate #%d = %d, %v", i+1, v, err)
		}
	}
}
