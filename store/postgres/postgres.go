// Package postgres is the PostgreSQL store backend over a pgx connection
// pool (github.com/jackc/pgx/v5/pgxpool), used through pgx's database/sql
// adapter so both backends share one implementation.
package postgres

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"embed"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync/atomic"
	"syscall"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"

	"github.com/proserun/prose/store"
	"github.com/proserun/prose/store/internal/sqlstore"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// Store is the PostgreSQL store.
type Store struct {
	*sqlstore.DB
	pool    *pgxpool.Pool
	db      *sql.DB
	ownPool bool
	// onEvent receives the event writes announced on
	// sqlstore.EventChannel (see OnEventChange).
	onEvent atomic.Pointer[func(threadKey string, offset int64)]
	// onPause receives the pauses announced on sqlstore.PauseChannel (see
	// OnRunPause).
	onPause atomic.Pointer[func(runID string)]
	// onChanges receives the changes announced on sqlstore.ChangeChannel
	// (see OnChanges).
	onChanges atomic.Pointer[func(origin string, keys []string)]
}

var _ store.Store = (*Store)(nil)

// Open connects to the database at url (postgres://...), applies the
// migrations (under an advisory lock, so several servers may start at once)
// and returns the store. Close closes the pool. The pool is pgxpool's
// (at most max(4, CPUs) connections; pool_max_conns=N and the other pool_
// parameters of the URL change it): on a 2-core machine 4 connections
// gave 1.6-2.0 k runs/s and 16 gave 1.3-1.5 k (the server's backends then
// compete for the same cores). Listen holds a connection of its own.
func Open(ctx context.Context, url string, opts ...store.Option) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("postgres: parse url: %w", err)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: connect: %w", err)
	}
	s, err := New(ctx, pool, opts...)
	if err != nil {
		pool.Close()
		return nil, err
	}
	s.ownPool = true
	return s, nil
}

// New wraps an existing pool (migrating it unless WithoutMigrations). Close
// does not close a pool passed to New.
func New(ctx context.Context, pool *pgxpool.Pool, opts ...store.Option) (*Store, error) {
	o := store.ApplyOptions(opts)
	db := stdlib.OpenDBFromPool(pool)
	if err := db.PingContext(ctx); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("postgres: ping: %w", err)
	}
	if !o.SkipMigrations {
		if _, err := migrations("").UpTo(ctx, db, goose.MaxVersion); err != nil {
			_ = db.Close()
			return nil, err
		}
	}
	s := &Store{pool: pool, db: db}
	s.DB = sqlstore.New(sqlstore.Config{
		Dialect: store.Postgres, Read: db, Write: db, Classify: classify, Now: o.Now, MaxLostLeases: o.MaxLostLeases, PageBytes: o.PageBytes,
		OnClose: func() error {
			if s.ownPool {
				s.pool.Close()
			}
			return nil
		},
	})
	return s, nil
}

// Migrate applies the embedded migrations to the database at url and
// returns the version reached.
func Migrate(ctx context.Context, url string) (int64, error) { return migrations(url).Migrate(ctx) }

// ApplyMigration applies one migration, up or down, to the database at
// url, whatever the others' state (see sqlstore.Migrations).
func ApplyMigration(ctx context.Context, url string, version int64, up bool) error {
	return migrations(url).ApplyMigration(ctx, version, up)
}

// MigrateTo applies the embedded migrations up to version (and no
// further) to the database at url. It is for tests of the migrations: a
// store opened on it must be opened WithoutMigrations.
func MigrateTo(ctx context.Context, url string, version int64) error {
	return migrations(url).MigrateTo(ctx, version)
}

// migrations are the migrations of the database at url ("" when only
// UpTo is used, on a database already open).
func migrations(url string) sqlstore.Migrations {
	return sqlstore.Migrations{Name: "postgres", Dialect: store.Postgres, Goose: goose.DialectPostgres, Files: migrationFiles,
		Locker: func() (lock.SessionLocker, error) { return lock.NewPostgresSessionLocker() },
		Open: func(ctx context.Context) (*sql.DB, func() error, error) {
			s, err := Open(ctx, url, store.WithoutMigrations())
			if err != nil {
				return nil, nil, err
			}
			return s.db, s.Close, nil
		}}
}

// Pool is the pgx pool (for bulk loads with CopyFrom in benchmarks and
// tools).
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// SQLDB is the database/sql view of the pool.
func (s *Store) SQLDB() *sql.DB { return s.db }

func classify(err error) sqlstore.ErrorKind {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		return classifyConnection(err)
	}
	switch {
	case pe.Code == "23505":
		return sqlstore.KindUnique
	case pe.Code == "23503":
		return sqlstore.KindForeignKey
	case pe.Code == "40001", pe.Code == "40P01":
		return sqlstore.KindBusy
	case pe.Code == "57P03": // cannot_connect_now: starting up or shutting down
		return sqlstore.KindUnsent
	case strings.HasPrefix(pe.Code, "08"), // connection exceptions
		pe.Code == "57P01", pe.Code == "57P02", // admin or crash shutdown
		pe.Code == "53300", // too many connections
		pe.Code == "25006": // read-only transaction: a standby after a failover
		return sqlstore.KindUnavailable
	}
	return sqlstore.KindOther
}

// classifyConnection tells a database that is away (refused, closed or
// lost connections) from other failures: a statement that pgx reports as
// never sent (SafeToRetry), or a connection that could not be made, may
// be sent again.
func classifyConnection(err error) sqlstore.ErrorKind {
	var ce *pgconn.ConnectError
	switch {
	case errors.As(err, &ce), pgconn.SafeToRetry(err):
		return sqlstore.KindUnsent
	case errors.Is(err, driver.ErrBadConn), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF),
		errors.Is(err, net.ErrClosed), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.ECONNREFUSED):
		return sqlstore.KindUnavailable
	}
	var ne net.Error
	if errors.As(err, &ne) && !errors.Is(err, context.DeadlineExceeded) {
		return sqlstore.KindUnavailable
	}
	return sqlstore.KindOther
}

// LatestMigration is the schema version Open migrates a database to.
func LatestMigration() int64 { return migrations("").LatestVersion() }
