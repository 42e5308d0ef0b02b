package engine_test

import (
	"context"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/proserun/prose/store"
)

// tempPostgres creates a database on PROSE_TEST_POSTGRES_URL (skipping
// without it), dropped at cleanup, and returns its URL.
func tempPostgres(t *testing.T) string {
	t.Helper()
	base := os.Getenv("PROSE_TEST_POSTGRES_URL")
	if base == "" {
		t.Skip("PROSE_TEST_POSTGRES_URL not set")
	}
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatal(err)
	}
	name := "prose_test_" + strings.ToLower(store.NewID())
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		_ = admin.Close(ctx)
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = admin.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)")
		_ = admin.Close(ctx)
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + name
	return u.String()
}
