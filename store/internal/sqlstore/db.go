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
	"sync"
	"sync/atomic"
	"time"

	"github.com/proserun/prose/store"
)

// ErrorKind classifies a driver error.
type ErrorKind int

// The kinds of driver error the store tells apart.
const (
	KindOther ErrorKind = iota
	KindUnique
	KindForeignKey
	KindBusy // serialization failure / database locked: retryable
	// KindUnavailable: the database is away (a restart, a failover, a
	// refused or lost connection); the statement may have reached it.
	KindUnavailable
	// KindUnsent: the database is away and the statement never reached
	// it, so it is safe to send again.
	KindUnsent
)

// Retries of a statement that never reached the database (KindUnsent) and
// of a transaction that could not begin: at most unsentRetries, waiting
// firstRetryWait, doubled each time (about 3 s in all: a PostgreSQL restart
// or a failover's switch), within the caller's deadline.
const (
	unsentRetries  = 5
	firstRetryWait = 100 * time.Millisecond
)

// retryUnsent runs op again while it fails with an error that classify
// says never reached the database (or, when begin, that a transaction
// could not begin with), waiting between tries.
func retryUnsent[T any](ctx context.Context, db *DB, begin bool, op func() (T, error)) (T, error) {
	wait := firstRetryWait
	for i := 0; ; i++ {
		v, err := op()
		if err == nil || i == unsentRetries {
			return v, err
		}
		k := db.classify(err)
		if k != KindUnsent && (!begin || k != KindUnavailable) {
			return v, err
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return v, err
		case <-t.C:
		}
		wait *= 2
	}
}

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
	// MaxLostLeases: see store.Options.
	MaxLostLeases int
	// PageBytes: see store.Options.
	PageBytes int
}

// DB implements store.Store.
type DB struct {
	d        store.Dialect
	r, w     *sql.DB
	rs, ws   *stmtCache // prepared statements of r and w (the same when r == w)
	classify func(error) ErrorKind
	clock    func() time.Time
	onClose  func() error
	// onRecovered is OnLeasesRecovered's func(int64).
	onRecovered atomic.Value
	// maxLostLeases: see store.Options.MaxLostLeases.
	maxLostLeases int
	// pageBytes is a list page's byte budget (store.Options.PageBytes,
	// SetPageBytes).
	pageBytes atomic.Int64

	authGen     atomic.Uint64             // see AuthGeneration
	wsCache     wsCache                   // GetWorkspace's cache, under authGen
	notices     localNotices              // Notify and Listen on a single-process database
	lastRecover atomic.Int64              // ClaimRuns' last recovery of expired leases (UnixNano of the store's clock)
	connLocks   keyLocks                  // RefreshBookConnection's locks on SQLite
	sealer      atomic.Pointer[sealerBox] // SetSealer's
}

var _ store.Store = (*DB)(nil)

// SetPageBytes sets a list page's byte budget (store.Sizes.PageBytes; 0 or
// less: store.MaxPageBytes), for the lists that start after it.
func (db *DB) SetPageBytes(n int) {
	if n <= 0 {
		n = store.MaxPageBytes
	}
	db.pageBytes.Store(int64(n))
}

// New returns a store over the handles in c.
func New(c Config) *DB {
	db := &DB{d: c.Dialect, r: c.Read, w: c.Write, classify: c.Classify, clock: c.Now, onClose: c.OnClose, maxLostLeases: c.MaxLostLeases}
	if db.maxLostLeases <= 0 {
		db.maxLostLeases = store.DefaultMaxLostLeases
	}
	db.SetPageBytes(c.PageBytes)
	if db.clock == nil {
		db.clock = time.Now
	}
	if db.classify == nil {
		db.classify = func(error) ErrorKind { return KindOther }
	}
	if db.r == nil {
		db.r = db.w
	}
	// SQLite (modernc) prepares a statement on every unprepared call; pgx
	// already keeps a statement cache per connection, and preparing through
	// database/sql on top of it made PostgreSQL slower (447 -> 355 runs/s
	// over HTTP): PostgreSQL runs queries unprepared (nil caches).
	if db.d == store.SQLite {
		db.ws = newStmtCache(db.w, stmtCacheSize)
		db.rs = db.ws
		if db.r != db.w {
			db.rs = newStmtCache(db.r, stmtCacheSize)
		}
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
	if db.rs != db.ws {
		errs = append(errs, db.rs.close())
	}
	if db.ws != nil {
		errs = append(errs, db.ws.close())
	}
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
// PostgreSQL, and converts time.Time arguments for the dialect. Queries go
// through the prepared statement cache of the handle (inside a transaction,
// bound to it with Tx.StmtContext).
type conn struct {
	db *DB
	q  querier
	sc *stmtCache
	tx *sql.Tx // set inside a transaction
}

func (db *DB) reader() conn { return conn{db: db, q: db.r, sc: db.rs} }
func (db *DB) writer() conn { return conn{db: db, q: db.w, sc: db.ws} }

// args converts time arguments for the dialect (in place).
func (c conn) args(args []any) []any {
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
	return args
}

// rebindQuery rewrites '?' placeholders as $n for PostgreSQL.
func (db *DB) rebindQuery(q string) string {
	if db.d != store.Postgres || !strings.Contains(q, "?") {
		return q
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
	return b.String()
}

// stmt returns the prepared statement for q (nil: run q unprepared) and
// the function to call when the call is done with it.
func (c conn) stmt(ctx context.Context, q string) (*sql.Stmt, func()) {
	if c.sc == nil {
		return nil, nil
	}
	e := c.sc.get(ctx, c.db, q, c.tx != nil)
	if e == nil {
		return nil, nil
	}
	s := e.st
	if c.tx != nil {
		// Tx.StmtContext reuses the statement already prepared on the
		// transaction's connection (or prepares it there once).
		s = c.tx.StmtContext(ctx, s)
	}
	return s, func() { c.sc.release(e) }
}

func (c conn) exec(ctx context.Context, q string, args ...any) (sql.Result, error) {
	res, err := c.execOnce(ctx, q, args...)
	if err != nil && c.tx == nil && c.db.classify(err) == KindUnsent {
		return retryUnsent(ctx, c.db, false, func() (sql.Result, error) { return c.execOnce(ctx, q, args...) })
	}
	return res, err
}

func (c conn) execOnce(ctx context.Context, q string, args ...any) (sql.Result, error) {
	args = c.args(args)
	if s, done := c.stmt(ctx, q); s != nil { //nolint:sqlclosecheck // cached: closed by the cache
		defer done()
		return s.ExecContext(ctx, args...)
	}
	return c.q.ExecContext(ctx, c.db.rebindQuery(q), args...)
}

func (c conn) query(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	rows, err := c.queryOnce(ctx, q, args...)
	if err != nil && c.tx == nil && c.db.classify(err) == KindUnsent {
		return retryUnsent(ctx, c.db, false, func() (*sql.Rows, error) { return c.queryOnce(ctx, q, args...) })
	}
	return rows, err
}

func (c conn) queryOnce(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	args = c.args(args)
	if s, done := c.stmt(ctx, q); s != nil { //nolint:sqlclosecheck // cached: closed by the cache
		defer done()
		return s.QueryContext(ctx, args...) //nolint:sqlclosecheck // the caller closes the rows
	}
	return c.q.QueryContext(ctx, c.db.rebindQuery(q), args...) //nolint:sqlclosecheck // the caller closes the rows
}

func (c conn) queryRow(ctx context.Context, q string, args ...any) *sql.Row {
	args = c.args(args)
	if s, done := c.stmt(ctx, q); s != nil { //nolint:sqlclosecheck // cached: closed by the cache
		defer done()
		return s.QueryRowContext(ctx, args...)
	}
	return c.q.QueryRowContext(ctx, c.db.rebindQuery(q), args...)
}

// stmtCacheSize bounds the prepared statements kept per handle (the store
// has ~150 distinct statement texts; the least recently used is closed
// beyond this).
const stmtCacheSize = 256

// stmtCache keeps statements prepared on one *sql.DB by query text
// (before rebinding: the text identifies the statement in either dialect).
// database/sql prepares a statement lazily on each connection of the pool
// that runs it and keeps it there. Queries with a bound IN-list ("IN (?")
// vary in length and are not cached; the rest are the fixed texts of this
// package, and the LRU bound keeps the cache finite anyway.
type stmtCache struct {
	h   *sql.DB
	max int

	mu     sync.Mutex
	m      map[string]*cachedStmt
	head   cachedStmt // LRU ring sentinel: head.next is the most recent
	closed bool
}

type cachedStmt struct {
	key        string
	st         *sql.Stmt // nil while being prepared
	refs       int       // calls using st
	evicted    bool      // out of the map: close when refs drops to 0
	prev, next *cachedStmt
}

func newStmtCache(h *sql.DB, max int) *stmtCache {
	c := &stmtCache{h: h, max: max, m: map[string]*cachedStmt{}}
	c.head.prev, c.head.next = &c.head, &c.head
	return c
}

func cacheable(q string) bool { return !strings.Contains(q, "IN (?") }

// get returns the entry of q with a reference taken, or nil when q is not
// prepared (yet). It prepares q on a miss: synchronously outside a
// transaction; in the background inside one (preparing on the handle needs
// a connection, and SQLite's single writer connection is the
// transaction's), so the next call finds it.
func (c *stmtCache) get(ctx context.Context, db *DB, q string, inTx bool) *cachedStmt {
	if !cacheable(q) {
		return nil
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	if e, ok := c.m[q]; ok {
		if e.st == nil { // being prepared
			c.mu.Unlock()
			return nil
		}
		e.refs++
		c.unlink(e)
		c.pushFront(e)
		c.mu.Unlock()
		return e
	}
	e := &cachedStmt{key: q}
	c.m[q] = e
	c.pushFront(e)
	c.mu.Unlock()
	if inTx {
		go c.prepare(context.WithoutCancel(ctx), db, e)
		return nil
	}
	if !c.prepare(ctx, db, e) {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e.evicted {
		return nil
	}
	e.refs++
	return e
}

// prepare prepares e and stores it; false (and e dropped) on failure.
func (c *stmtCache) prepare(ctx context.Context, db *DB, e *cachedStmt) bool {
	st, err := c.h.PrepareContext(ctx, db.rebindQuery(e.key))
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil || c.closed || e.evicted {
		if c.m[e.key] == e {
			delete(c.m, e.key)
			c.unlink(e)
		}
		if st != nil {
			_ = st.Close() //nolint:sqlclosecheck // not kept
		}
		return false
	}
	e.st = st
	for len(c.m) > c.max {
		old := c.head.prev
		delete(c.m, old.key)
		c.unlink(old)
		old.evicted = true
		if old.refs == 0 && old.st != nil {
			_ = old.st.Close()
		}
	}
	return true
}

// release drops a reference taken by get.
func (c *stmtCache) release(e *cachedStmt) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e.refs--
	if e.refs == 0 && e.evicted && e.st != nil {
		_ = e.st.Close()
	}
}

func (c *stmtCache) unlink(e *cachedStmt) {
	if e.prev != nil {
		e.prev.next, e.next.prev = e.next, e.prev
		e.prev, e.next = nil, nil
	}
}

func (c *stmtCache) pushFront(e *cachedStmt) {
	e.prev, e.next = &c.head, c.head.next
	c.head.next.prev = e
	c.head.next = e
}

// close closes the cached statements (one a call is still using is closed
// by release when the call ends).
func (c *stmtCache) close() error {
	c.mu.Lock()
	c.closed = true
	var errs []error
	for k, e := range c.m {
		delete(c.m, k)
		c.unlink(e)
		e.evicted = true
		if e.st != nil && e.refs == 0 {
			errs = append(errs, e.st.Close())
		}
	}
	c.mu.Unlock()
	return errors.Join(errs...)
}

// queryArgs runs a query built with store.Args (already in the dialect).
func (c conn) queryArgs(ctx context.Context, q string, a *Args) (*sql.Rows, error) {
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
		if k := db.classify(err); k == KindUnsent || k == KindUnavailable {
			tx, err = retryUnsent(ctx, db, true, func() (*sql.Tx, error) { return db.w.BeginTx(ctx, nil) })
		}
		if err != nil {
			return db.mapErr(err, "begin a transaction")
		}
	}
	if err := fn(conn{db: db, q: tx, sc: db.ws, tx: tx}); err != nil {
		_ = tx.Rollback()
		return err
	}
	return tx.Commit()
}

func (db *DB) timeArg(t time.Time) any {
	return NewArgs(db.d).TimeValue(t)
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
	case KindUnavailable, KindUnsent:
		return fmt.Errorf("%s: %w: %w", what, store.ErrUnavailable, err)
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
