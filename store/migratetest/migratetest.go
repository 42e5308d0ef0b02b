// Package migratetest runs a test of a migration that rewrites rows on
// both backends: the schema is taken to the latest version, the migration
// under test is taken down, rows are written in the shape it converts by
// today's store code (opened without migrations), and the migration is
// applied up again (see engine's TestRowsOfVersion13ReadBack and server's
// TestRowsOfVersion21ReadBack).
package migratetest

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/proserun/prose/store"
	"github.com/proserun/prose/store/postgres"
	"github.com/proserun/prose/store/postgres/pgtest"
	"github.com/proserun/prose/store/sqlite"
)

// Backend is one backend's database, fresh for the test.
type Backend struct {
	// MigrateTo applies the migrations up to version.
	MigrateTo func(ctx context.Context, version int64) error
	// Apply applies one migration, up or down.
	Apply func(ctx context.Context, version int64, up bool) error
	// Open opens the store (WithoutMigrations while a migration is down).
	Open func(ctx context.Context, opts ...store.Option) (store.Store, error)
}

// ForEachBackend runs f as a subtest on a new SQLite database, then on a
// new PostgreSQL one (skipped without PROSE_TEST_POSTGRES_URL).
func ForEachBackend(t *testing.T, f func(t *testing.T, b Backend)) {
	t.Run("sqlite", func(t *testing.T) {
		dir := tempDir(t)
		f(t, Backend{
			MigrateTo: func(ctx context.Context, v int64) error { return sqlite.MigrateTo(ctx, dir, v) },
			Apply:     func(ctx context.Context, v int64, up bool) error { return sqlite.ApplyMigration(ctx, dir, v, up) },
			Open: func(ctx context.Context, opts ...store.Option) (store.Store, error) {
				return sqlite.Open(ctx, dir, opts...)
			},
		})
	})
	t.Run("postgres", func(t *testing.T) {
		url := pgtest.TempDatabase(t, "prose_test_")
		f(t, Backend{
			MigrateTo: func(ctx context.Context, v int64) error { return postgres.MigrateTo(ctx, url, v) },
			Apply:     func(ctx context.Context, v int64, up bool) error { return postgres.ApplyMigration(ctx, url, v, up) },
			Open: func(ctx context.Context, opts ...store.Option) (store.Store, error) {
				return postgres.Open(ctx, url, opts...)
			},
		})
	})
}

// tempDir is a directory removed when the test ends. Unlike t.TempDir, a
// removal that finds a file appearing meanwhile is tried again: a store's
// last pooled connection may still close (and SQLite remove its -wal and
// -shm files, or checkpoint into them) just after Close returned, and
// that must not fail the test (seen once in CI: "directory not empty").
func tempDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "prose-migrate-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for try := 0; ; try++ {
			err := os.RemoveAll(dir)
			if err == nil {
				return
			}
			if try == 20 {
				t.Errorf("remove %s: %v", dir, err)
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
	})
	return dir
}
