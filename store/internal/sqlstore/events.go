package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/proserun/prose/store"
)

const evCols = `ev.organization_id, ev.workspace_id, ev.automation_id, ev.run_id, ev.agent_id, ev.id, ev.exception_id,
	ev.state, ev.payload, ev.seq, ev.revision, ev.change_offset, ev.create_time, ev.update_time`

const evSelect = `SELECT ` + evCols + ` FROM events ev`

func scanEvent(s interface{ Scan(...any) error }) (store.Event, error) {
	var e store.Event
	var state string
	err := s.Scan(&e.OrganizationID, &e.WorkspaceID, &e.AutomationID, &e.RunID, &e.AgentID, &e.ID, &e.ExceptionID,
		&state, &e.Payload, &e.Seq, &e.Revision, &e.Offset, ts{&e.CreateTime}, ts{&e.UpdateTime})
	e.State = store.EventState(state)
	return e, err
}

func validEventState(s store.EventState) bool {
	return s == store.EventStreaming || s == store.EventComplete
}

// threadWhere scopes a query to a thread.
const threadWhere = ` ev.organization_id = ? AND ev.workspace_id = ? AND ev.automation_id = ? AND ev.run_id = ? AND ev.agent_id = ?`

func threadArgs(t store.Thread) []any {
	return []any{t.OrganizationID, t.WorkspaceID, t.AutomationID, t.RunID, t.AgentID}
}

// eventSize refuses a payload over store.MaxStoredEventBytes, whatever
// wrote it (the writers cap events far below).
func eventSize(e store.Event) error {
	if n := len(e.Payload); n > store.MaxStoredEventBytes {
		return fmt.Errorf("%w: event payload is %d bytes; an event may be at most %d bytes", store.ErrInvalidArgument, n, store.MaxStoredEventBytes)
	}
	return nil
}

// CreateEvent implements store.Events.
func (db *DB) CreateEvent(ctx context.Context, e store.Event) (store.Event, error) {
	if e.State == "" {
		e.State = store.EventComplete
	}
	if !validEventState(e.State) {
		return store.Event{}, fmt.Errorf("%w: event state %q", store.ErrInvalidArgument, e.State)
	}
	if e.AgentID == "" {
		return store.Event{}, fmt.Errorf("%w: an event needs an agent", store.ErrInvalidArgument)
	}
	if err := eventSize(e); err != nil {
		return store.Event{}, err
	}
	generated := e.ID == ""
	if e.Payload == nil {
		e.Payload = []byte{}
	}
	// Two writers may pick the same next sequence number (PostgreSQL, read
	// committed): the loser retries.
	var err error
	for attempt := 0; attempt < 8; attempt++ {
		if generated {
			e.ID = store.NewID()
		}
		var out store.Event
		out, err = db.insertEvent(ctx, e)
		if err == nil {
			return out, nil
		}
		if !errors.Is(err, store.ErrAlreadyExists) && !errors.Is(err, store.ErrConflict) {
			return store.Event{}, err
		}
		if !generated {
			// A taken id is reported as such; a sequence collision is
			// retried.
			if _, gerr := db.GetEvent(ctx, e.Thread, e.ID); gerr == nil {
				return store.Event{}, err
			}
		}
	}
	return store.Event{}, err
}

// lockThread makes the writers of one thread take turns until their
// transaction ends, so that each reads the thread's last sequence number and
// change offset after the previous writer committed (PostgreSQL, read
// committed; without it, concurrent writers picked the same next number and
// all but one retried, and under load a writer could lose every retry).
// SQLite has a single writer already.
func (db *DB) lockThread(ctx context.Context, c conn, th store.Thread) error {
	if db.d != store.Postgres {
		return nil
	}
	_, err := c.exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended(?, 0))`, "prose.events/"+th.RunID+"/"+th.AgentID)
	return db.mapErr(err, "lock the event thread")
}

func (db *DB) insertEvent(ctx context.Context, e store.Event) (store.Event, error) {
	now := db.now()
	err := db.tx(ctx, func(c conn) error {
		ok, err := c.exists(ctx, `SELECT 1 FROM runs WHERE id = ? AND organization_id = ? AND workspace_id = ? AND automation_id = ?`,
			e.RunID, e.OrganizationID, e.WorkspaceID, e.AutomationID)
		if err != nil {
			return db.mapErr(err, "find run")
		}
		if !ok {
			return fmt.Errorf("run %q: %w", e.RunID, store.ErrNotFound)
		}
		if err := db.lockThread(ctx, c, e.Thread); err != nil {
			return err
		}
		var seq, offset int64
		if err := c.queryRow(ctx, `SELECT COALESCE(MAX(seq), 0), COALESCE(MAX(change_offset), 0) FROM events WHERE run_id = ? AND agent_id = ?`,
			e.RunID, e.AgentID).Scan(&seq, &offset); err != nil {
			return db.mapErr(err, "next event sequence")
		}
		e.Seq, e.Revision, e.Offset, e.CreateTime, e.UpdateTime = seq+1, 1, offset+1, now, now
		_, err = c.exec(ctx, `INSERT INTO events (run_id, agent_id, id, organization_id, workspace_id, automation_id, seq, revision,
			change_offset, exception_id, state, payload, create_time, update_time) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			e.RunID, e.AgentID, e.ID, e.OrganizationID, e.WorkspaceID, e.AutomationID, e.Seq, e.Revision,
			e.Offset, e.ExceptionID, string(e.State), e.Payload, now, now)
		if err != nil {
			return db.mapErr(err, fmt.Sprintf("create event %q", e.ID))
		}
		return c.notifyEvent(ctx, e.Thread, e.Offset)
	})
	if err != nil {
		return store.Event{}, err
	}
	return e, nil
}

// GetEvent implements store.Events.
func (db *DB) GetEvent(ctx context.Context, t store.Thread, id string) (store.Event, error) {
	e, err := scanEvent(db.reader().queryRow(ctx, evSelect+` WHERE`+threadWhere+` AND ev.id = ?`, append(threadArgs(t), id)...))
	return e, db.mapErr(err, fmt.Sprintf("event %q", id))
}

var eventSort = map[string]sortCol{
	"seq": {Field: "seq", Col: "ev.seq", Kind: keyInt},
}

// ListEvents implements store.Events.
func (db *DB) ListEvents(ctx context.Context, req store.ListEventsRequest) (store.Page[store.Event], int, error) {
	var zero store.Page[store.Event]
	ks, err := newKeyset(nil, store.OrderBy{{Field: "seq"}}, eventSort, "ev.id")
	if err != nil {
		return zero, 0, err
	}
	t := req.Thread
	lq, err := newList(db.d, ks, eventFields, req.Filter, req.PageToken, req.PageSize, evSelect, "events",
		t.OrganizationID, t.WorkspaceID, t.AutomationID, t.RunID, t.AgentID)
	if err != nil {
		return zero, 0, err
	}
	scope := func(a *Args) string {
		return "ev.organization_id = " + a.Add(t.OrganizationID) + " AND ev.workspace_id = " + a.Add(t.WorkspaceID) +
			" AND ev.automation_id = " + a.Add(t.AutomationID) + " AND ev.run_id = " + a.Add(t.RunID) +
			" AND ev.agent_id = " + a.Add(t.AgentID)
	}
	lq.cond(scope(lq.a))
	rows, err := db.reader().queryArgs(ctx, lq.sql(), lq.a) //nolint:rowserrcheck // scanEvents checks rows.Err
	if err != nil {
		return zero, 0, db.mapErr(err, "list events")
	}
	items, err := scanEvents(rows)
	if err != nil {
		return zero, 0, db.mapErr(err, "list events")
	}
	// The total across all pages.
	a := NewArgs(db.d)
	where := scope(a)
	if req.Filter != nil {
		c, err := eventFields.where(a, req.Filter)
		if err != nil {
			return zero, 0, err
		}
		where += " AND (" + c + ")"
	}
	var total int
	if err := db.r.QueryRowContext(ctx, `SELECT count(*) FROM events ev WHERE `+where, a.Values...).Scan(&total); err != nil {
		return zero, 0, db.mapErr(err, "count events")
	}
	return page(lq, items, func(e store.Event) []string { return []string{strconv.FormatInt(e.Seq, 10), e.ID} }, int(db.pageBytes.Load())), total, nil
}

type rowsScanner interface {
	Next() bool
	Scan(...any) error
	Err() error
	Close() error
}

func scanEvents(rows rowsScanner) ([]store.Event, error) {
	defer func() { _ = rows.Close() }()
	var items []store.Event
	for rows.Next() {
		e, err := scanEvent(rows)
		if err != nil {
			return nil, err
		}
		items = append(items, e)
	}
	return items, rows.Err()
}

// EventChannel is the PostgreSQL LISTEN/NOTIFY channel on which every
// write of an event is announced, in its transaction (so at its commit),
// with the payload "{run id}/{agent id} {offset}" (store.Thread.Key and
// store.Event.Offset): just where to read from, never the event.
const EventChannel = "prose_events"

// notifyEvent announces, inside the transaction that writes it, that the
// thread changed up to offset (PostgreSQL; SQLite has one process).
func (c conn) notifyEvent(ctx context.Context, t store.Thread, offset int64) error {
	if c.db.d != store.Postgres {
		return nil
	}
	_, err := c.exec(ctx, `SELECT pg_notify(?, ?)`, EventChannel, t.Key()+" "+strconv.FormatInt(offset, 10))
	return c.db.mapErr(err, "notify event")
}

// UpdateEvent implements store.Events. Two writers of a thread may pick
// the same next offset (PostgreSQL, read committed): the loser retries.
func (db *DB) UpdateEvent(ctx context.Context, e store.Event) (store.Event, error) {
	if err := eventSize(e); err != nil {
		return store.Event{}, err
	}
	var out store.Event
	var err error
	for attempt := 0; attempt < 8; attempt++ {
		out, err = db.updateEvent(ctx, e)
		if !errors.Is(err, store.ErrAlreadyExists) && !errors.Is(err, store.ErrConflict) {
			return out, err
		}
	}
	return out, err
}

func (db *DB) updateEvent(ctx context.Context, e store.Event) (store.Event, error) {
	if !validEventState(e.State) {
		return store.Event{}, fmt.Errorf("%w: event state %q", store.ErrInvalidArgument, e.State)
	}
	if e.Payload == nil {
		e.Payload = []byte{}
	}
	now := db.now()
	var out store.Event
	err := db.tx(ctx, func(c conn) error {
		cur, err := scanEvent(c.queryRow(ctx, evSelect+` WHERE`+threadWhere+` AND ev.id = ?`, append(threadArgs(e.Thread), e.ID)...))
		if err != nil {
			return db.mapErr(err, fmt.Sprintf("event %q", e.ID))
		}
		if cur.State != store.EventStreaming {
			return fmt.Errorf("event %q is complete and cannot change: %w", e.ID, store.ErrFailedPrecondition)
		}
		if !now.After(cur.UpdateTime) {
			// Keep update_time moving forward for readers that follow it.
			now = cur.UpdateTime.Add(time.Microsecond)
		}
		if err := db.lockThread(ctx, c, e.Thread); err != nil {
			return err
		}
		var offset int64
		if err := c.queryRow(ctx, `SELECT COALESCE(MAX(change_offset), 0) FROM events WHERE run_id = ? AND agent_id = ?`,
			e.RunID, e.AgentID).Scan(&offset); err != nil {
			return db.mapErr(err, "next event offset")
		}
		offset++
		res, err := c.exec(ctx, `UPDATE events SET state = ?, payload = ?, exception_id = ?, revision = revision + 1, change_offset = ?, update_time = ?
			WHERE run_id = ? AND agent_id = ? AND id = ? AND state = ?`,
			string(e.State), e.Payload, e.ExceptionID, offset, now, e.RunID, e.AgentID, e.ID, string(store.EventStreaming))
		if err != nil {
			return db.mapErr(err, "update event")
		}
		if rowsAffected(res) == 0 {
			return fmt.Errorf("event %q changed concurrently: %w", e.ID, store.ErrFailedPrecondition)
		}
		out = cur
		out.State, out.Payload, out.ExceptionID = e.State, e.Payload, e.ExceptionID
		out.Revision, out.Offset, out.UpdateTime = cur.Revision+1, offset, now
		return c.notifyEvent(ctx, e.Thread, offset)
	})
	if err != nil {
		return store.Event{}, err
	}
	return out, nil
}

// ListEventsSince implements store.Events.
func (db *DB) ListEventsSince(ctx context.Context, t store.Thread, since time.Time) ([]store.Event, error) {
	rows, err := db.reader().query(ctx, evSelect+` WHERE`+threadWhere+` AND ev.update_time >= ? ORDER BY ev.seq`, //nolint:rowserrcheck // scanEvents checks rows.Err
		append(threadArgs(t), store.Time(since))...)
	if err != nil {
		return nil, db.mapErr(err, "list events")
	}
	items, err := scanEvents(rows)
	return items, db.mapErr(err, "list events")
}

// ListEventsAfter implements store.Events.
func (db *DB) ListEventsAfter(ctx context.Context, t store.Thread, after int64, limit int) ([]store.Event, error) {
	if limit <= 0 {
		limit = 100
	}
	rows, err := db.reader().query(ctx, evSelect+` WHERE`+threadWhere+` AND ev.change_offset > ? ORDER BY ev.change_offset LIMIT ?`, //nolint:rowserrcheck // scanEvents checks rows.Err
		append(threadArgs(t), after, limit)...)
	if err != nil {
		return nil, db.mapErr(err, "list events")
	}
	items, err := scanEvents(rows)
	return items, db.mapErr(err, "list events")
}
