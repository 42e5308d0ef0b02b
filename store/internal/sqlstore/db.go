// Package sqlstore implements store.Store over database/sql for both
// dialects. store/sqlite and store/postgres open the connections, apply the
// migrations and wrap this implementation.
package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/proserun/prose/store"
)

// ErrorKind classifies a driver error.
type ErrorKind int

const (
	KindOther ErrorKind = iota
	KindUnique
	KindForeignKey
	KindBusy // serialization failure / database locked: retryable
)

// Config configures a DB.
type Config struct {
	Dialect store.Dialect
	// Read serves reads outside transactions; Write serves writes and
	// transactions. They may be the same handle (PostgreSQL). For SQLite,
	// Write has one connection (single writer) and Read a pool.
	Read, Write *sql.DB
	// Classify maps driver errors to kinds.
	Classify func(error) ErrorKind
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// OnClose runs at Close (after the handles are closed).
	OnClose func() error
}

// DB implements store.Store.
type DB struct {
	d        store.Dialect
	r, w     *sql.DB
	classify func(error) ErrorKind
	clock    func() time.Time
	onClose  func() error
}

var _ store.Store = (*DB)(nil)

// New returns a store over the handles in c.
func New(c Config) *DB {
	db := &DB{d: c.Dialect, r: c.Read, w: c.Write, classify: c.Classify, clock: c.Now, onClose: c.OnClose}
	if db.clock == nil {
		db.clock = time.Now
	}
	if db.classify == nil {
		db.classify = func(error) ErrorKind { return KindOther }
	}
	if db.r == nil {
		db.r = db.w
	}
	return db
}

func (db *DB) now() time.Time { return store.Time(db.clock()) }

// Ping implements store.Store.
func (db *DB) Ping(ctx context.Context) error {
	if err := db.w.PingContext(ctx); err != nil {
		return err
	}
	return db.r.PingContext(ctx)
}

// Close implements store.Store.
func (db *DB) Close() error {
	var errs []error
	if db.r != db.w {
		errs = append(errs, db.r.Close())
	}
	errs = append(errs, db.w.Close())
	if db.onClose != nil {
		errs = append(errs, db.onClose())
	}
	return errors.Join(errs...)
}

// querier is *sql.DB or *sql.Tx.
type querier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// conn runs queries written with '?' placeholders, rebinding them for
// PostgreSQL, and converts time.Time arguments for the dialect.
type conn struct {
	db *DB
	q  querier
}

func (db *DB) reader() conn { return conn{db, db.r} }
func (db *DB) writer() conn { return conn{db, db.w} }

func (c conn) rebind(q string, args []any) (string, []any) {
	for i, a := range args {
		switch v := a.(type) {
		case time.Time:
			args[i] = c.db.timeArg(v)
		case nullTime:
			if v.IsZero() {
				args[i] = nil
			} else {
				args[i] = c.db.timeArg(time.Time(v))
			}
		}
	}
	if c.db.d != store.Postgres || !strings.Contains(q, "?") {
		return q, args
	}
	var b strings.Builder
	n := 0
	for _, r := range q {
		if r == '?' {
			n++
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(n))
			continue
		}
		b.WriteRune(r)
	}
	return b.String(), args
}

func (c conn) exec(ctx context.Context, q string, args ...any) (sql.Result, error) {
	q, args = c.rebind(q, args)
	return c.q.ExecContext(ctx, q, args...)
}

func (c conn) query(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	q, args = c.rebind(q, args)
	return c.q.QueryContext(ctx, q, args...)
}

func (c conn) queryRow(ctx context.Context, q string, args ...any) *sql.Row {
	q, args = c.rebind(q, args)
	return c.q.QueryRowContext(ctx, q, args...)
}

// queryArgs runs a query built with store.Args (already in the dialect).
func (c conn) queryArgs(ctx context.Context, q string, a *store.Args) (*sql.Rows, error) {
	return c.q.QueryContext(ctx, q, a.Values...)
}

// exists reports whether the query returns a row.
func (c conn) exists(ctx context.Context, q string, args ...any) (bool, error) {
	var one int
	err := c.queryRow(ctx, q, args...).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	return err == nil, err
}

// tx runs fn in a write transaction.
func (db *DB) tx(ctx context.Context, fn func(c conn) error) error {
	tx, err := db.w.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := fn(conn{db, tx}); err != nil {
		_ = tx.Rollback()
		return err
	}
	return tx.Commit()
}

func (db *DB) timeArg(t time.Time) any {
	return store.NewArgs(db.d).TimeValue(t)
}

// nullTime is a time argument stored as NULL when zero.
type nullTime time.Time

func (t nullTime) IsZero() bool { return time.Time(t).IsZero() }

// ts scans a timestamp column of either dialect (integer micros or
// timestamptz; NULL → zero time).
type ts struct{ t *time.Time }

func (s ts) Scan(src any) error {
	switch v := src.(type) {
	case nil:
		*s.t = time.Time{}
	case int64:
		*s.t = time.UnixMicro(v).UTC()
	case time.Time:
		*s.t = v.UTC()
	default:
		return fmt.Errorf("cannot scan %T into a timestamp", src)
	}
	return nil
}

// jsonCol scans a JSON text column into a value.
type jsonCol struct{ v any }

func (j jsonCol) Scan(src any) error {
	var b []byte
	switch v := src.(type) {
	case nil:
		return nil
	case string:
		b = []byte(v)
	case []byte:
		b = v
	default:
		return fmt.Errorf("cannot scan %T into JSON", src)
	}
	return json.Unmarshal(b, j.v)
}

func jsonArg(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return "null"
	}
	return string(b)
}

// mapErr converts driver errors to store sentinels with context.
func (db *DB) mapErr(err error, what string) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("%s: %w", what, store.ErrNotFound)
	}
	switch db.classify(err) {
	case KindUnique:
		return fmt.Errorf("%s: %w", what, store.ErrAlreadyExists)
	case KindForeignKey:
		return fmt.Errorf("%s: a referenced record does not exist: %w", what, store.ErrNotFound)
	case KindBusy:
		return fmt.Errorf("%s: %w: %w", what, store.ErrConflict, err)
	}
	return fmt.Errorf("%s: %w", what, err)
}

func rowsAffected(res sql.Result) int64 {
	n, err := res.RowsAffected()
	if err != nil {
		return -1
	}
	return n
}

func placeholders(n int) string {
	if n <= 0 {
		return ""
	}
	return strings.Repeat("?, ", n-1) + "?"
}

func anySlice[T any](xs []T) []any {
	out := make([]any, len(xs))
	for i, x := range xs {
		out[i] = x
	}
	return out
}
