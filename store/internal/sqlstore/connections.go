package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"

	"github.com/proserun/prose/store"
)

const bookConnectionCols = "organization_id, workspace_id, id, book_name, book_version, name, descriptor, secret, create_time, update_time"

func scanBookConnection(s interface{ Scan(...any) error }) (store.BookConnection, error) {
	var c store.BookConnection
	err := s.Scan(&c.OrganizationID, &c.WorkspaceID, &c.ID, &c.BookName, &c.BookVersion, &c.Name,
		&c.Descriptor, &c.Secret, ts{&c.CreateTime}, ts{&c.UpdateTime})
	return c, err
}

func bookConnectionWhat(org, ws, id string) string {
	return fmt.Sprintf("connection %q in workspace %q of organization %q", id, ws, org)
}

func (c conn) bookConnection(ctx context.Context, org, ws, id string) (store.BookConnection, error) {
	return scanBookConnection(c.queryRow(ctx, `SELECT `+bookConnectionCols+` FROM book_connections
		WHERE organization_id = ? AND workspace_id = ? AND id = ?`, org, ws, id))
}

// CreateBookConnection implements store.BookConnections.
func (db *DB) CreateBookConnection(ctx context.Context, bc store.BookConnection) (store.BookConnection, error) {
	if bc.ID == "" {
		bc.ID = store.NewID()
	}
	if bc.Descriptor == nil {
		bc.Descriptor = []byte{}
	}
	if bc.Secret == nil {
		bc.Secret = []byte{}
	}
	what := bookConnectionWhat(bc.OrganizationID, bc.WorkspaceID, bc.ID)
	now := db.now()
	bc.CreateTime, bc.UpdateTime = now, now
	err := db.tx(ctx, func(c conn) error {
		if err := c.workspaceExists(ctx, bc.OrganizationID, bc.WorkspaceID); err != nil {
			return err
		}
		var n int
		if err := c.queryRow(ctx, `SELECT COUNT(*) FROM book_connections WHERE organization_id = ? AND workspace_id = ?`,
			bc.OrganizationID, bc.WorkspaceID).Scan(&n); err != nil {
			return db.mapErr(err, "count connections")
		}
		if n >= store.MaxConnectionsPerWorkspace {
			return fmt.Errorf("workspace %q has %d connections, the limit is %d: %w", bc.WorkspaceID, n,
				store.MaxConnectionsPerWorkspace, store.ErrResourceExhausted)
		}
		_, err := c.exec(ctx, `INSERT INTO book_connections (`+bookConnectionCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			bc.OrganizationID, bc.WorkspaceID, bc.ID, bc.BookName, bc.BookVersion, bc.Name, bc.Descriptor, bc.Secret,
			bc.CreateTime, bc.UpdateTime)
		return db.mapErr(err, "create "+what+" named "+fmt.Sprintf("%q", bc.Name))
	})
	if err != nil {
		return store.BookConnection{}, err
	}
	return bc, nil
}

// GetBookConnection implements store.BookConnections.
func (db *DB) GetBookConnection(ctx context.Context, org, ws, id string) (store.BookConnection, error) {
	bc, err := db.reader().bookConnection(ctx, org, ws, id)
	if err != nil {
		return store.BookConnection{}, db.mapErr(err, bookConnectionWhat(org, ws, id))
	}
	return bc, nil
}

// ListBookConnections implements store.BookConnections.
func (db *DB) ListBookConnections(ctx context.Context, org, ws string) ([]store.BookConnection, error) {
	what := fmt.Sprintf("connections of workspace %q in organization %q", ws, org)
	rows, err := db.reader().query(ctx, `SELECT `+bookConnectionCols+` FROM book_connections
		WHERE organization_id = ? AND workspace_id = ? ORDER BY id`, org, ws)
	if err != nil {
		return nil, db.mapErr(err, what)
	}
	defer rows.Close()
	out := []store.BookConnection{}
	for rows.Next() {
		bc, err := scanBookConnection(rows)
		if err != nil {
			return nil, db.mapErr(err, what)
		}
		out = append(out, bc)
	}
	if err := rows.Err(); err != nil {
		return nil, db.mapErr(err, what)
	}
	return out, nil
}

// UpdateBookConnection implements store.BookConnections.
func (db *DB) UpdateBookConnection(ctx context.Context, bc store.BookConnection) (store.BookConnection, error) {
	what := bookConnectionWhat(bc.OrganizationID, bc.WorkspaceID, bc.ID)
	if bc.Descriptor == nil {
		bc.Descriptor = []byte{}
	}
	if bc.Secret == nil {
		bc.Secret = []byte{}
	}
	var out store.BookConnection
	err := db.tx(ctx, func(c conn) error {
		res, err := c.exec(ctx, `UPDATE book_connections SET name = ?, book_version = ?, descriptor = ?, secret = ?, update_time = ?
			WHERE organization_id = ? AND workspace_id = ? AND id = ?`,
			bc.Name, bc.BookVersion, bc.Descriptor, bc.Secret, db.now(), bc.OrganizationID, bc.WorkspaceID, bc.ID)
		if err != nil {
			return db.mapErr(err, "update "+what+" to the name "+fmt.Sprintf("%q", bc.Name))
		}
		if rowsAffected(res) == 0 {
			return fmt.Errorf("%s: %w", what, store.ErrNotFound)
		}
		out, err = c.bookConnection(ctx, bc.OrganizationID, bc.WorkspaceID, bc.ID)
		return db.mapErr(err, what)
	})
	if err != nil {
		return store.BookConnection{}, err
	}
	return out, nil
}

// DeleteBookConnection implements store.BookConnections.
func (db *DB) DeleteBookConnection(ctx context.Context, org, ws, id string) error {
	what := bookConnectionWhat(org, ws, id)
	res, err := db.writer().exec(ctx, `DELETE FROM book_connections
		WHERE organization_id = ? AND workspace_id = ? AND id = ?`, org, ws, id)
	if err != nil {
		return db.mapErr(err, "delete "+what)
	}
	if rowsAffected(res) == 0 {
		return fmt.Errorf("%s: %w", what, store.ErrNotFound)
	}
	return nil
}

// EnsureSecretKey implements store.SecretKeys. The one row of secret_keys
// has id 1; the first insert wins and every caller reads it back.
func (db *DB) EnsureSecretKey(ctx context.Context, candidate []byte) ([]byte, error) {
	if len(candidate) == 0 {
		return nil, fmt.Errorf("secret key: empty candidate: %w", store.ErrInvalidArgument)
	}
	var key []byte
	err := db.tx(ctx, func(c conn) error {
		err := c.queryRow(ctx, `SELECT key FROM secret_keys WHERE id = 1`).Scan(&key)
		if err == nil {
			return nil
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return db.mapErr(err, "read the secret key")
		}
		if _, err := c.exec(ctx, `INSERT INTO secret_keys (id, key, create_time) VALUES (1, ?, ?) ON CONFLICT (id) DO NOTHING`,
			candidate, db.now()); err != nil {
			return db.mapErr(err, "store the secret key")
		}
		return db.mapErr(c.queryRow(ctx, `SELECT key FROM secret_keys WHERE id = 1`).Scan(&key), "read the secret key")
	})
	if err != nil {
		return nil, err
	}
	return key, nil
}

// rekeyBatch is the number of connections RekeyBookConnections reads at once.
const rekeyBatch = 200

// RekeyBookConnections implements store.BookConnections.
func (db *DB) RekeyBookConnections(ctx context.Context, reseal func(store.BookConnection) ([]byte, bool, error)) (int, error) {
	n := 0
	var lastOrg, lastWS, lastID string
	for {
		batch, err := db.connectionBatch(ctx, lastOrg, lastWS, lastID)
		if err != nil {
			return n, err
		}
		for _, bc := range batch {
			secret, changed, err := reseal(bc)
			if err != nil {
				return n, err
			}
			if !changed {
				continue
			}
			if _, err := db.writer().exec(ctx, `UPDATE book_connections SET secret = ?
				WHERE organization_id = ? AND workspace_id = ? AND id = ? AND secret = ?`,
				secret, bc.OrganizationID, bc.WorkspaceID, bc.ID, bc.Secret); err != nil {
				return n, db.mapErr(err, "rekey "+bookConnectionWhat(bc.OrganizationID, bc.WorkspaceID, bc.ID))
			}
			n++
		}
		if len(batch) < rekeyBatch {
			return n, nil
		}
		last := batch[len(batch)-1]
		lastOrg, lastWS, lastID = last.OrganizationID, last.WorkspaceID, last.ID
	}
}

// connectionBatch reads up to rekeyBatch connections after the given key.
func (db *DB) connectionBatch(ctx context.Context, org, ws, id string) ([]store.BookConnection, error) {
	rows, err := db.writer().query(ctx, `SELECT `+bookConnectionCols+` FROM book_connections
		WHERE (organization_id, workspace_id, id) > (?, ?, ?)
		ORDER BY organization_id, workspace_id, id LIMIT ?`, org, ws, id, rekeyBatch)
	if err != nil {
		return nil, db.mapErr(err, "rekey connections")
	}
	defer rows.Close()
	var batch []store.BookConnection
	for rows.Next() {
		bc, err := scanBookConnection(rows)
		if err != nil {
			return nil, db.mapErr(err, "rekey connections")
		}
		batch = append(batch, bc)
	}
	return batch, db.mapErr(rows.Err(), "rekey connections")
}

// RefreshBookConnection implements store.BookConnections. PostgreSQL holds
// the row FOR UPDATE in a transaction around refresh, so a refresh of
// another replica waits and then reads what this one wrote. SQLite holds
// this store's lock of the connection instead: its single writer must not
// wait on a call to another service, and its database has one process.
func (db *DB) RefreshBookConnection(ctx context.Context, org, ws, id string,
	refresh func(ctx context.Context, c store.BookConnection) (*store.BookConnection, error)) (store.BookConnection, error) {
	what := bookConnectionWhat(org, ws, id)
	write := func(c conn, next *store.BookConnection) (store.BookConnection, error) {
		if next != nil {
			desc, secret := next.Descriptor, next.Secret
			if desc == nil {
				desc = []byte{}
			}
			if secret == nil {
				secret = []byte{}
			}
			res, err := c.exec(ctx, `UPDATE book_connections SET descriptor = ?, secret = ?, update_time = ?
				WHERE organization_id = ? AND workspace_id = ? AND id = ?`, desc, secret, db.now(), org, ws, id)
			if err != nil {
				return store.BookConnection{}, db.mapErr(err, "refresh "+what)
			}
			if rowsAffected(res) == 0 {
				return store.BookConnection{}, fmt.Errorf("%s: %w", what, store.ErrNotFound)
			}
		}
		out, err := c.bookConnection(ctx, org, ws, id)
		return out, db.mapErr(err, what)
	}
	var out store.BookConnection
	if db.d == store.Postgres {
		err := db.tx(ctx, func(c conn) error {
			cur, err := scanBookConnection(c.queryRow(ctx, `SELECT `+bookConnectionCols+` FROM book_connections
				WHERE organization_id = ? AND workspace_id = ? AND id = ? FOR UPDATE`, org, ws, id))
			if err != nil {
				return db.mapErr(err, what)
			}
			next, err := refresh(ctx, cur)
			if err != nil {
				return err
			}
			out, err = write(c, next)
			return err
		})
		return out, err
	}
	unlock, err := db.connLocks.lock(ctx, org+"\x00"+ws+"\x00"+id)
	if err != nil {
		return store.BookConnection{}, err
	}
	defer unlock()
	cur, err := db.reader().bookConnection(ctx, org, ws, id)
	if err != nil {
		return store.BookConnection{}, db.mapErr(err, what)
	}
	next, err := refresh(ctx, cur)
	if err != nil {
		return store.BookConnection{}, err
	}
	if next == nil {
		return cur, nil
	}
	err = db.tx(ctx, func(c conn) error {
		out, err = write(c, next)
		return err
	})
	return out, err
}

// keyLocks is a lock per key, waited for under a context.
type keyLocks struct {
	mu    sync.Mutex
	locks map[string]*keyLock
}

type keyLock struct {
	ch      chan struct{} // holds a token while the key is locked
	waiters int           // holders and waiters; the entry goes at 0
}

// lock takes the lock of key, waiting until it is free or ctx ends; unlock
// gives it back.
func (k *keyLocks) lock(ctx context.Context, key string) (unlock func(), err error) {
	k.mu.Lock()
	if k.locks == nil {
		k.locks = map[string]*keyLock{}
	}
	l := k.locks[key]
	if l == nil {
		l = &keyLock{ch: make(chan struct{}, 1)}
		k.locks[key] = l
	}
	l.waiters++
	k.mu.Unlock()
	release := func() {
		k.mu.Lock()
		if l.waiters--; l.waiters == 0 {
			delete(k.locks, key)
		}
		k.mu.Unlock()
	}
	select {
	case l.ch <- struct{}{}:
		return func() { <-l.ch; release() }, nil
	case <-ctx.Done():
		release()
		return nil, ctx.Err()
	}
}
