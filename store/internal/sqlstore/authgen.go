package sqlstore

import (
	"context"
	"log/slog"

	"github.com/proserun/prose/store"
)

// AuthChannel is the PostgreSQL LISTEN/NOTIFY channel on which a replica
// announces that it changed what authentication reads (API keys, roles,
// memberships): store/postgres listens on it and calls InvalidateAuth.
const AuthChannel = "prose_auth"

// AuthGeneration implements store.AuthGenerations (the generation of this
// process's writes, and, on PostgreSQL, of the replicas' notices on
// AuthChannel).
func (db *DB) AuthGeneration() uint64 { return db.authGen.Load() }

// InvalidateAuth moves AuthGeneration on: every cached key and permission
// set is read again.
func (db *DB) InvalidateAuth() { db.authGen.Add(1) }

// authChanged is deferred by the writes that change what authentication
// reads, so it runs after their commit (after a failed write too: a cache
// miss is harmless). On PostgreSQL it tells the other replicas.
func (db *DB) authChanged(ctx context.Context) {
	db.InvalidateAuth()
	if db.d != store.Postgres {
		return
	}
	if _, err := db.w.ExecContext(context.WithoutCancel(ctx), `SELECT pg_notify($1, '')`, AuthChannel); err != nil {
		slog.Warn("postgres: notify auth change", "err", err)
	}
}
