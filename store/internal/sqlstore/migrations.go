package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"io/fs"

	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"

	"github.com/proserun/prose/store"
)

// Migrations are a backend's goose migrations (its embedded SQL files and
// GoMigrations) and the ways both backends apply them: all at Open
// (UpTo), and for the migrate command and the migration tests (Migrate,
// MigrateTo, ApplyMigration) on a database opened without migrating.
type Migrations struct {
	// Name names the backend in errors ("sqlite", "postgres").
	Name    string
	Dialect store.Dialect
	Goose   goose.Dialect
	// Files holds the SQL migrations under migrations/.
	Files fs.FS
	// Locker, when set, makes a session lock for each provider (so that
	// two replicas do not migrate at once; a locker's retries are counted,
	// so each provider gets its own).
	Locker func() (lock.SessionLocker, error)
	// Open opens the database without migrating it; close closes it.
	Open func(ctx context.Context) (db *sql.DB, close func() error, err error)
}

// Provider is the goose provider of the migrations on db.
func (m Migrations) Provider(db *sql.DB) (*goose.Provider, error) {
	sub, err := fs.Sub(m.Files, "migrations")
	if err != nil {
		return nil, err
	}
	opts := []goose.ProviderOption{goose.WithDisableGlobalRegistry(true), goose.WithGoMigrations(GoMigrations(m.Dialect)...)}
	if m.Locker != nil {
		l, err := m.Locker()
		if err != nil {
			return nil, err
		}
		opts = append(opts, goose.WithSessionLocker(l))
	}
	p, err := goose.NewProvider(m.Goose, db, sub, opts...)
	if err != nil {
		return nil, fmt.Errorf("%s: migrations: %w", m.Name, err)
	}
	return p, nil
}

// UpTo applies the migrations up to version (and no further) to db and
// returns the version reached.
func (m Migrations) UpTo(ctx context.Context, db *sql.DB, version int64) (int64, error) {
	p, err := m.Provider(db)
	if err != nil {
		return 0, err
	}
	if _, err := p.UpTo(ctx, version); err != nil {
		return 0, fmt.Errorf("%s: migrate: %w", m.Name, err)
	}
	return p.GetDBVersion(ctx)
}

// Migrate applies every migration and returns the version reached.
func (m Migrations) Migrate(ctx context.Context) (int64, error) {
	return m.withDB(ctx, func(db *sql.DB) (int64, error) { return m.UpTo(ctx, db, goose.MaxVersion) })
}

// MigrateTo applies the migrations up to version (and no further). It is
// for tests of the migrations: a store opened on the database must be
// opened WithoutMigrations.
func (m Migrations) MigrateTo(ctx context.Context, version int64) error {
	_, err := m.withDB(ctx, func(db *sql.DB) (int64, error) { return m.UpTo(ctx, db, version) })
	return err
}

// ApplyMigration applies one migration, up or down, whatever the others'
// state. It is for tests of a migration that rewrites rows: take it down,
// write rows in the shape it converts, apply it up.
func (m Migrations) ApplyMigration(ctx context.Context, version int64, up bool) error {
	_, err := m.withDB(ctx, func(db *sql.DB) (int64, error) {
		p, err := m.Provider(db)
		if err != nil {
			return 0, err
		}
		_, err = p.ApplyVersion(ctx, version, up)
		return 0, err
	})
	return err
}

func (m Migrations) withDB(ctx context.Context, fn func(db *sql.DB) (int64, error)) (int64, error) {
	db, closeDB, err := m.Open(ctx)
	if err != nil {
		return 0, err
	}
	defer func() { _ = closeDB() }()
	return fn(db)
}

// LatestVersion is the highest version among the SQL migrations of m and
// the GoMigrations (what a database migrated to the end is at).
func (m Migrations) LatestVersion() int64 {
	var v int64
	for _, g := range GoMigrations(m.Dialect) {
		v = max(v, g.Version)
	}
	ents, _ := fs.ReadDir(m.Files, "migrations")
	for _, e := range ents {
		var n int64
		if _, err := fmt.Sscanf(e.Name(), "%d_", &n); err == nil {
			v = max(v, n)
		}
	}
	return v
}
