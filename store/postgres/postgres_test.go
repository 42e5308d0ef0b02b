package postgres_test

import (
	"context"
	"os"
	"testing"

	"github.com/proserun/prose/store"
	"github.com/proserun/prose/store/postgres"
	"github.com/proserun/prose/store/postgres/pgtest"
	"github.com/proserun/prose/store/storetest"
)

// EnvURL names the variable holding the URL of a PostgreSQL server the tests
// may create databases on.
const EnvURL = pgtest.EnvURL

func tempDatabase(t testing.TB) string {
	t.Helper()
	return pgtest.TempDatabase(t, "prose_test_")
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

// TestTitleKeyMigration: migration 00013 recomputes the title keys of the
// workspaces written before it (Unicode folding).
func TestTitleKeyMigration(t *testing.T) {
	skipWithoutServer(t)
	u := tempDatabase(t)
	if err := postgres.MigrateTo(t.Context(), u, 12); err != nil {
		t.Fatal(err)
	}
	old, err := postgres.Open(t.Context(), u, store.WithoutMigrations())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = old.Close() })
	storetest.TitleKeyMigration(t, old, func(ctx context.Context) error {
		_, err := old.Pool().Exec(ctx, `UPDATE workspaces SET title_key = lower(title)`)
		return err
	}, func(ctx context.Context) store.Store {
		s, err := postgres.Open(ctx, u)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		return s
	})
}
