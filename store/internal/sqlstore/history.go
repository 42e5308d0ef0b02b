package sqlstore

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/proserun/prose/store"
)

// The run's history (migration 00024): state entries are written by the
// triggers on runs, exception entries by the exception transitions, the
// engine's entries with the progress or outcome that persists them. Every
// writer inserts a run's entries while it holds the run's row (a
// transaction that locked or updated it, or SQLite's single writer), so a
// run's ids grow in commit order and a page token never skips an entry
// committed later.

const runEventCols = `ev.id, ev.run_id, ev.create_time, ev.kind, ev.node_kind, ev.state, ev.reason, ev.ref, ev.loc_start, ev.loc_end, ev.data`

func scanRunEvent(s interface{ Scan(...any) error }) (store.RunEvent, error) {
	var e store.RunEvent
	var kind string
	err := s.Scan(&e.ID, &e.RunID, ts{&e.Time}, &kind, &e.NodeKind, &e.State, &e.Reason, &e.Ref, &e.Location.Start, &e.Location.End, &e.Data)
	e.Kind = store.RunEventKind(kind)
	return e, err
}

var runEventSort = map[string]sortCol{
	"id": {Field: "id", Col: "ev.id", Kind: keyInt},
}

var runEventFields = fields{
	"node_kind": {col: "ev.node_kind"},
}

// ListRunEvents implements store.RunHistory.
func (db *DB) ListRunEvents(ctx context.Context, req store.ListRunEventsRequest) (store.Page[store.RunEvent], error) {
	var zero store.Page[store.RunEvent]
	// Ordered by id alone: the keyset's tiebreaker is the id itself.
	ks := keyset{cols: []sortCol{runEventSort["id"]}, desc: []bool{false}}
	lq, err := newList(db.d, ks, runEventFields, req.Filter, req.PageToken, req.PageSize,
		`SELECT `+runEventCols+` FROM run_events ev`, "run_events", req.RunID)
	if err != nil {
		return zero, err
	}
	lq.cond("ev.run_id = " + lq.a.Add(req.RunID))
	return scanPage(ctx, db, lq, "list run events", scanRunEvent, func(e store.RunEvent) []string {
		return []string{strconv.FormatInt(e.ID, 10)}
	})
}

// maxEventRows bounds the rows of one INSERT of events (10 arguments each:
// SQLite allows 32,766 per statement).
const maxEventRows = 500

// insertRunEvents writes the engine's entries evs of run runID (Kind
// engine unless given, Time now unless given). The caller holds the run's
// row.
func (c conn) insertRunEvents(ctx context.Context, runID string, evs []store.RunEvent, now time.Time) error {
	return c.insertEvents(ctx, len(evs), func(i int) (string, store.RunEvent) { return runID, evs[i] }, now,
		func(left int) int { return min(left, maxEventRows) })
}

// insertEvents writes n history entries, row(i) giving the i-th's run and
// entry (Kind engine unless given, Time now unless given), in order, in
// INSERTs of chunk(entries left) rows.
func (c conn) insertEvents(ctx context.Context, n int, row func(i int) (string, store.RunEvent), now time.Time, chunk func(left int) int) error {
	for done := 0; done < n; {
		k := chunk(n - done)
		var b strings.Builder
		b.WriteString(`INSERT INTO run_events (run_id, create_time, kind, node_kind, state, reason, ref, loc_start, loc_end, data) VALUES `)
		args := make([]any, 0, 10*k)
		for i := range k {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString("(?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")
			runID, e := row(done + i)
			kind, at := e.Kind, e.Time
			if kind == "" {
				kind = store.RunEventEngine
			}
			if at.IsZero() {
				at = now
			}
			args = append(args, runID, at, string(kind), e.NodeKind, e.State, e.Reason, e.Ref, e.Location.Start, e.Location.End, e.Data)
		}
		if _, err := c.exec(ctx, b.String(), args...); err != nil {
			return c.db.mapErr(err, "record the run's history")
		}
		done += k
	}
	return nil
}

// insertRunEventsLeased is insertRunEvents for a run that must be leased
// to owner: the lease is the insert's condition (one statement, no read
// first), so nothing is written for a run owner lost.
func (c conn) insertRunEventsLeased(ctx context.Context, runID, owner string, evs []store.RunEvent, now time.Time) error {
	for len(evs) > 0 {
		n := min(len(evs), maxEventRows)
		var b strings.Builder
		b.WriteString(`INSERT INTO run_events (run_id, create_time, kind, node_kind, state, reason, ref, loc_start, loc_end, data) SELECT * FROM (VALUES `)
		args := make([]any, 0, 10*n+2)
		row := "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
		if c.db.d == store.Postgres {
			// A VALUES list's parameters are text unless cast.
			row = "(?::text, ?::timestamptz, ?::text, ?::text, ?::text, ?::text, ?::text, ?::bigint, ?::bigint, ?::bytea)"
		}
		for i, e := range evs[:n] {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(row)
			kind, at := e.Kind, e.Time
			if kind == "" {
				kind = store.RunEventEngine
			}
			if at.IsZero() {
				at = now
			}
			args = append(args, runID, at, string(kind), e.NodeKind, e.State, e.Reason, e.Ref, e.Location.Start, e.Location.End, e.Data)
		}
		b.WriteString(`) v WHERE EXISTS (SELECT 1 FROM runs WHERE id = ? AND lease_owner = ? AND ` + leasedState + `)`)
		args = append(args, runID, owner)
		if _, err := c.exec(ctx, b.String(), args...); err != nil {
			return c.db.mapErr(err, "record the run's history")
		}
		evs = evs[n:]
	}
	return nil
}

// insertExceptionEvent records an exception's transition to state in its
// run's history: resolver and data (the guidance) for a resolution.
func (c conn) insertExceptionEvent(ctx context.Context, e store.Exception, state store.ExceptionState, resolver string, data []byte, now time.Time) error {
	return c.insertRunEvents(ctx, e.RunID, []store.RunEvent{{
		Kind: store.RunEventException, NodeKind: store.ExceptionNodeKind, State: string(state), Reason: resolver, Ref: e.ID,
		Location: e.Location, Data: data, Time: now,
	}}, now)
}

// engineEvents counts the engine's entries among evs (what
// runs.history_events counts).
func engineEvents(evs []store.RunEvent) int {
	n := 0
	for _, e := range evs {
		if e.Kind == "" || e.Kind == store.RunEventEngine {
			n++
		}
	}
	return n
}
