package sqlstore

import (
	"context"
	"sync"
)

// localNotices delivers Notify to the Listen channels of the same DB: the
// notices of a single-process database (SQLite). store/postgres replaces
// both methods with LISTEN/NOTIFY.
type localNotices struct {
	mu        sync.Mutex
	listeners map[chan struct{}]struct{}
}

// Notify implements store.Notifier: every channel returned by Listen (and
// not yet closed by its context) gets a value, unless one already waits.
func (db *DB) Notify(context.Context) {
	n := &db.notices
	n.mu.Lock()
	defer n.mu.Unlock()
	for ch := range n.listeners {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// OnEventChange implements store.Notifier for a single-process database:
// no other replica writes events, so fn is not called.
func (db *DB) OnEventChange(func(threadKey string, offset int64)) {}

// OnRunPause implements store.Notifier for a single-process database:
// the engine that pauses a run is the one executing it, so fn is not
// called.
func (db *DB) OnRunPause(func(runID string)) {}

// NotifyChanges implements store.Notifier for a single-process database:
// there is no other replica to tell.
func (db *DB) NotifyChanges(context.Context, string, []string) {}

// OnChanges implements store.Notifier for a single-process database: fn
// is not called.
func (db *DB) OnChanges(func(origin string, keys []string)) {}

// ChangeChannel is the PostgreSQL LISTEN/NOTIFY channel on which a replica
// tells the others which workspaces' runs or exceptions it changed
// (store.Notifier.NotifyChanges): the payload is the origin, a space, and
// the workspace keys separated by commas.
const ChangeChannel = "prose_changes"

// PauseChannel is the PostgreSQL LISTEN/NOTIFY channel on which the pause
// of an executing run is announced, in the transaction that makes it
// stopping (so at its commit), with the run's id as the payload.
const PauseChannel = "prose_pauses"

// Listen implements store.Notifier for a single-process database: the
// channel receives this DB's notices until ctx is cancelled (then it is
// forgotten; it is not closed).
func (db *DB) Listen(ctx context.Context) <-chan struct{} {
	ch := make(chan struct{}, 1)
	n := &db.notices
	n.mu.Lock()
	if n.listeners == nil {
		n.listeners = map[chan struct{}]struct{}{}
	}
	n.listeners[ch] = struct{}{}
	n.mu.Unlock()
	context.AfterFunc(ctx, func() {
		n.mu.Lock()
		delete(n.listeners, ch)
		n.mu.Unlock()
	})
	return ch
}
