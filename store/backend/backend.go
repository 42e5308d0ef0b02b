// Package backend opens the store backend a target names: a postgres:// or
// postgresql:// URL opens PostgreSQL; anything else is a SQLite data
// directory (holding prose.db, created if missing) or a path ending in .db.
//
// cmd/prose uses Open for serve and Migrate for migrate.
package backend

import (
	"context"
	"strings"

	"github.com/proserun/prose/store"
	"github.com/proserun/prose/store/postgres"
	"github.com/proserun/prose/store/sqlite"
)

// IsPostgres reports whether target is a PostgreSQL URL.
func IsPostgres(target string) bool {
	return strings.HasPrefix(target, "postgres://") || strings.HasPrefix(target, "postgresql://")
}

// Open opens (and migrates, unless store.WithoutMigrations) the store at
// target.
func Open(ctx context.Context, target string, opts ...store.Option) (store.Store, error) {
	if IsPostgres(target) {
		return postgres.Open(ctx, target, opts...)
	}
	return sqlite.Open(ctx, target, opts...)
}

// Migrate applies the embedded migrations of the backend at target and
// returns the schema version reached.
func Migrate(ctx context.Context, target string) (int64, error) {
	if IsPostgres(target) {
		return postgres.Migrate(ctx, target)
	}
	return sqlite.Migrate(ctx, target)
}
