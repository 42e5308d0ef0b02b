// Package sqlite is the embedded store backend: one SQLite database file
// (modernc.org/sqlite, pure Go) in WAL mode with foreign keys on and a busy
// timeout. Writes go through a single connection (SQLite has one writer;
// queuing in Go beats spinning on SQLITE_BUSY); reads use a pool.
package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/pressly/goose/v3"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/proserun/prose/store"
	"github.com/proserun/prose/store/internal/sqlstore"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// FileName is the database file inside a data directory.
const FileName = "prose.db"

// Store is the SQLite store.
type Store struct {
	*sqlstore.DB
	w, r *sql.DB
	path string
}

var _ store.Store = (*Store)(nil)

// Path returns the database file path for a data directory or file path:
// a path ending in ".db" is the file itself; anything else is a directory
// holding prose.db.
func Path(dirOrFile string) string {
	if strings.HasSuffix(dirOrFile, ".db") {
		return dirOrFile
	}
	return filepath.Join(dirOrFile, FileName)
}

func dsn(path string, readOnly bool) string {
	q := url.Values{}
	q.Add("_pragma", "foreign_keys(1)")
	q.Add("_pragma", "busy_timeout(10000)")
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous(NORMAL)")
	// Temporary files in memory: the statement journals of a transaction's
	// statements (the pages a statement changed, to undo it alone if it
	// fails) spilled to a temporary file past 64 KiB. They serve no
	// recovery: the WAL and synchronous above decide what a crash keeps.
	q.Add("_pragma", "temp_store(MEMORY)")
	if readOnly {
		q.Add("_pragma", "query_only(1)")
	} else {
		q.Set("_txlock", "immediate")
	}
	return "file:" + path + "?" + q.Encode()
}

// Open opens (creating the directory and file if missing) the database in
// dirOrFile and applies the migrations.
func Open(ctx context.Context, dirOrFile string, opts ...store.Option) (*Store, error) {
	o := store.ApplyOptions(opts)
	path := Path(dirOrFile)
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return nil, fmt.Errorf("sqlite: create data directory: %w", err)
	}
	w, err := sql.Open("sqlite", dsn(path, false))
	if err != nil {
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)
	w.SetConnMaxIdleTime(0)
	if err := w.PingContext(ctx); err != nil {
		_ = w.Close()
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	if !o.SkipMigrations {
		if _, err := migrations("").UpTo(ctx, w, goose.MaxVersion); err != nil {
			_ = w.Close()
			return nil, err
		}
	}
	r, err := sql.Open("sqlite", dsn(path, true))
	if err != nil {
		_ = w.Close()
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	n := max(4, runtime.GOMAXPROCS(0))
	r.SetMaxOpenConns(n)
	r.SetMaxIdleConns(n)
	r.SetConnMaxIdleTime(0)
	r.SetConnMaxLifetime(0)
	s := &Store{w: w, r: r, path: path}
	s.DB = sqlstore.New(sqlstore.Config{Dialect: store.SQLite, Read: r, Write: w, Classify: classify, Now: o.Now, MaxLostLeases: o.MaxLostLeases, PageBytes: o.PageBytes})
	return s, nil
}

// Migrate applies the embedded migrations to the database in dirOrFile
// (creating it if missing) and returns the version reached.
func Migrate(ctx context.Context, dirOrFile string) (int64, error) {
	return migrations(dirOrFile).Migrate(ctx)
}

// ApplyMigration applies one migration, up or down, to the database in
// dirOrFile, whatever the others' state (see sqlstore.Migrations).
func ApplyMigration(ctx context.Context, dirOrFile string, version int64, up bool) error {
	return migrations(dirOrFile).ApplyMigration(ctx, version, up)
}

// MigrateTo applies the embedded migrations up to version (and no
// further) to the database in dirOrFile, creating it if missing. It is for
// tests of the migrations: a store opened on it must be opened
// WithoutMigrations.
func MigrateTo(ctx context.Context, dirOrFile string, version int64) error {
	return migrations(dirOrFile).MigrateTo(ctx, version)
}

// migrations are the migrations of the database in dirOrFile ("" when
// only UpTo is used, on a database already open).
func migrations(dirOrFile string) sqlstore.Migrations {
	return sqlstore.Migrations{Name: "sqlite", Dialect: store.SQLite, Goose: goose.DialectSQLite3, Files: migrationFiles,
		Open: func(ctx context.Context) (*sql.DB, func() error, error) {
			s, err := Open(ctx, dirOrFile, store.WithoutMigrations())
			if err != nil {
				return nil, nil, err
			}
			return s.w, s.Close, nil
		}}
}

// WriteDB is the single-connection write handle (for bulk loads in
// benchmarks and tools). Do not hold it across calls into the store.
func (s *Store) WriteDB() *sql.DB { return s.w }

// ReadDB is the read pool.
func (s *Store) ReadDB() *sql.DB { return s.r }

// FilePath is the database file.
func (s *Store) FilePath() string { return s.path }

func classify(err error) sqlstore.ErrorKind {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return sqlstore.KindOther
	}
	switch se.Code() {
	case sqlite3.SQLITE_CONSTRAINT_UNIQUE, sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY:
		return sqlstore.KindUnique
	case sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY:
		return sqlstore.KindForeignKey
	case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED, sqlite3.SQLITE_BUSY_SNAPSHOT:
		return sqlstore.KindBusy
	}
	return sqlstore.KindOther
}

// LatestMigration is the schema version Open migrates a database to.
func LatestMigration() int64 { return migrations("").LatestVersion() }
