package postgres

import (
	"context"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/proserun/prose/store/internal/sqlstore"
)

// wakeChannel is the LISTEN/NOTIFY channel on which replicas announce work
// (a run was created, guided or continued).
const wakeChannel = "prose_runs"

// Notify tells every replica listening on the database that there is work.
// It is best effort: replicas also poll.
func (s *Store) Notify(ctx context.Context) {
	if _, err := s.pool.Exec(ctx, "SELECT pg_notify($1, '')", wakeChannel); err != nil && ctx.Err() == nil {
		slog.Debug("postgres: notify", "err", err)
	}
}

// Listen delivers a value on the returned channel whenever a replica calls
// Notify (coalesced: one pending value at most), until ctx is cancelled.
// It also listens for the changes to API keys, roles and memberships that
// replicas announce (sqlstore.AuthChannel) and invalidates this store's
// AuthGeneration on each, and whenever it (re)connects, since a
// notification may have been missed. It holds a connection of its own
// (not one of the pool's) and reconnects after a failure.
func (s *Store) Listen(ctx context.Context) <-chan struct{} {
	out := make(chan struct{}, 1)
	go func() {
		backoff := 100 * time.Millisecond
		for ctx.Err() == nil {
			err := s.listenOnce(ctx, out)
			if ctx.Err() != nil {
				return
			}
			slog.Debug("postgres: listen", "err", err)
			select {
			case <-ctx.Done():
				return
			case <-time.After(backoff):
			}
			if backoff < 5*time.Second {
				backoff *= 2
			}
		}
	}()
	return out
}

// OnEventChange makes the listener of Listen call fn (on its goroutine:
// fn must not block) for every event write any replica announces on
// sqlstore.EventChannel, with the thread's key (store.Thread.Key) and the
// event's new offset, and with ("", 0) whenever it (re)connects, since
// notices may have been missed. It takes effect while Listen runs.
func (s *Store) OnEventChange(fn func(threadKey string, offset int64)) {
	s.onEvent.Store(&fn)
}

// OnRunPause makes the listener of Listen call fn (on its goroutine: fn
// must not block) for every pause of an executing run any replica commits
// (sqlstore.PauseChannel), with the run's id, and with "" whenever it
// (re)connects. It takes effect while Listen runs.
func (s *Store) OnRunPause(fn func(runID string)) {
	s.onPause.Store(&fn)
}

// maxChangePayload keeps a NotifyChanges payload under PostgreSQL's 8000
// bytes: more keys are sent in several notices.
const maxChangePayload = 7000

// NotifyChanges tells every replica listening on the database that runs or
// exceptions of the workspaces keys changed (sqlstore.ChangeChannel). Best
// effort.
func (s *Store) NotifyChanges(ctx context.Context, origin string, keys []string) {
	for len(keys) > 0 {
		payload, n := origin+" ", 0
		for n < len(keys) && (n == 0 || len(payload)+len(keys[n])+1 <= maxChangePayload) {
			if n > 0 {
				payload += ","
			}
			payload += keys[n]
			n++
		}
		keys = keys[n:]
		if _, err := s.pool.Exec(ctx, "SELECT pg_notify($1, $2)", sqlstore.ChangeChannel, payload); err != nil && ctx.Err() == nil {
			slog.Debug("postgres: notify changes", "err", err)
		}
	}
}

// OnChanges makes the listener of Listen call fn (on its goroutine: fn
// must not block) for every NotifyChanges of any replica, with ("", nil)
// whenever it (re)connects. It takes effect while Listen runs.
func (s *Store) OnChanges(fn func(origin string, keys []string)) {
	s.onChanges.Store(&fn)
}

func (s *Store) listenOnce(ctx context.Context, out chan<- struct{}) error {
	// A connection of its own, not one of the pool's: a listener holds its
	// connection for good, and the pool is small (see Open).
	conn, err := pgx.ConnectConfig(ctx, s.pool.Config().ConnConfig.Copy())
	if err != nil {
		return err
	}
	defer func() { _ = conn.Close(context.WithoutCancel(ctx)) }()
	if _, err := conn.Exec(ctx, "LISTEN "+wakeChannel+"; LISTEN "+sqlstore.AuthChannel+"; LISTEN "+sqlstore.EventChannel+"; LISTEN "+sqlstore.PauseChannel+"; LISTEN "+sqlstore.ChangeChannel); err != nil {
		return err
	}
	s.InvalidateAuth()
	if fn := s.onEvent.Load(); fn != nil {
		(*fn)("", 0) // notices may have been missed: every thread may have changed
	}
	if fn := s.onPause.Load(); fn != nil {
		(*fn)("") // a pause may have been missed
	}
	if fn := s.onChanges.Load(); fn != nil {
		(*fn)("", nil) // changes may have been missed
	}
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		if n.Channel == sqlstore.AuthChannel {
			s.InvalidateAuth()
			continue
		}
		if n.Channel == sqlstore.PauseChannel {
			if fn := s.onPause.Load(); fn != nil {
				(*fn)(n.Payload)
			}
			continue
		}
		if n.Channel == sqlstore.ChangeChannel {
			if fn := s.onChanges.Load(); fn != nil {
				origin, keys, _ := strings.Cut(n.Payload, " ")
				(*fn)(origin, strings.Split(keys, ","))
			}
			continue
		}
		if n.Channel == sqlstore.EventChannel {
			if fn := s.onEvent.Load(); fn != nil {
				key, off, _ := strings.Cut(n.Payload, " ")
				offset, _ := strconv.ParseInt(off, 10, 64)
				(*fn)(key, offset)
			}
			continue
		}
		select {
		case out <- struct{}{}:
		default:
		}
	}
}
