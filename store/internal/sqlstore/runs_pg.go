package sqlstore

import (
	"context"
	"time"

	"github.com/proserun/prose/store"
)

// finishRunsPG is FinishRuns on PostgreSQL: one UPDATE … FROM unnest(…)
// whose condition is each run's lease check, returning the ids it
// finished; the others are not leased to owner (ErrConflict). The caller
// has checked that every outcome is completed or failed.
func (db *DB) finishRunsPG(ctx context.Context, owner string, runIDs []string, outcomes []store.RunOutcome, now time.Time) ([]error, error) {
	n := len(runIDs)
	states, errIDs, descs := make([]string, n), make([]string, n), make([]string, n)
	outputs := make([][]byte, n)
	starts, ends, steps := make([]int64, n), make([]int64, n), make([]int64, n)
	for i, o := range outcomes {
		states[i], steps[i] = string(o.State), int64(o.Step)
		if o.State == store.RunCompleted {
			outputs[i] = o.Outputs
		} else {
			errIDs[i], descs[i], starts[i], ends[i] = o.ErrorID, o.Description, o.Location.Start, o.Location.End
		}
	}
	// A completed run keeps its error and location columns and a failed
	// run its outputs, as FinishRun leaves them.
	// A completed outcome of a run being paused leaves it stopped after its
	// last step (the table's complete from stopping: finishToPG).
	q := `UPDATE runs r SET state = ` + finishToPG + `,
		step = ` + finishStepPG + `,
		outputs = CASE WHEN ` + outcomeCompleted + ` THEN v.outputs ELSE r.outputs END,
		error_id = CASE WHEN ` + outcomeFailed + ` THEN v.error_id ELSE r.error_id END,
		loc_start = CASE WHEN ` + outcomeFailed + ` THEN v.loc_start ELSE r.loc_start END,
		loc_end = CASE WHEN ` + outcomeFailed + ` THEN v.loc_end ELSE r.loc_end END,
		description = v.description, checkpoint = NULL, resolution = NULL, exception_id = '',
		lease_owner = '', lease_expire_time = ?, state_time = ?, update_time = ?
		FROM unnest(?::text[], ?::text[], ?::bytea[], ?::text[], ?::text[], ?::bigint[], ?::bigint[], ?::bigint[])
			AS v(id, state, outputs, error_id, description, loc_start, loc_end, step)
		WHERE r.id = v.id AND r.lease_owner = ? AND ` + finishFromPG + `
		RETURNING r.id`
	// Runs with history entries: the same statement after a CTE that locks
	// the runs still leased to owner and one that writes their entries (row
	// triggers, the entries of their final states, fire at the end of the
	// statement: after them).
	var evRuns, evKinds, evNodeKinds []string
	var evTimes []time.Time
	var evStarts, evEnds []int64
	var evData [][]byte
	histories := make([]int64, n)
	for i, o := range outcomes {
		histories[i] = int64(engineEvents(o.Events))
		for _, e := range o.Events {
			kind, at := e.Kind, e.Time
			if kind == "" {
				kind = store.RunEventEngine
			}
			if at.IsZero() {
				at = now
			}
			evRuns, evKinds, evNodeKinds = append(evRuns, runIDs[i]), append(evKinds, string(kind)), append(evNodeKinds, e.NodeKind)
			evTimes, evStarts, evEnds, evData = append(evTimes, at), append(evStarts, e.Location.Start), append(evEnds, e.Location.End), append(evData, e.Data)
		}
	}
	query, args := q, []any{time.Time{}, now, now, runIDs, states, outputs, errIDs, descs, starts, ends, steps, owner}
	if len(evRuns) > 0 {
		withHistory := `WITH l AS (
			SELECT id FROM runs r WHERE id = ANY(?::text[]) AND lease_owner = ? AND ` + finishFromPG + ` FOR UPDATE
		), ev AS (
			INSERT INTO run_events (run_id, create_time, kind, node_kind, loc_start, loc_end, data)
			SELECT e.run_id, e.create_time, e.kind, e.node_kind, e.loc_start, e.loc_end, e.data
			FROM unnest(?::text[], ?::timestamptz[], ?::text[], ?::text[], ?::bigint[], ?::bigint[], ?::bytea[]) WITH ORDINALITY
				AS e(run_id, create_time, kind, node_kind, loc_start, loc_end, data, ord)
			WHERE e.run_id IN (SELECT id FROM l)
			ORDER BY e.ord
		), h AS (
			SELECT * FROM unnest(?::text[], ?::bigint[]) AS h(id, n)
		)
		UPDATE runs r SET state = ` + finishToPG + `,
			step = ` + finishStepPG + `,
			outputs = CASE WHEN ` + outcomeCompleted + ` THEN v.outputs ELSE r.outputs END,
			error_id = CASE WHEN ` + outcomeFailed + ` THEN v.error_id ELSE r.error_id END,
			loc_start = CASE WHEN ` + outcomeFailed + ` THEN v.loc_start ELSE r.loc_start END,
			loc_end = CASE WHEN ` + outcomeFailed + ` THEN v.loc_end ELSE r.loc_end END,
			description = v.description, checkpoint = NULL, resolution = NULL, exception_id = '',
			lease_owner = '', lease_expire_time = ?, state_time = ?, update_time = ?,
			history_events = r.history_events + (SELECT h.n FROM h WHERE h.id = r.id)
			FROM unnest(?::text[], ?::text[], ?::bytea[], ?::text[], ?::text[], ?::bigint[], ?::bigint[], ?::bigint[])
				AS v(id, state, outputs, error_id, description, loc_start, loc_end, step)
			WHERE r.id = v.id AND r.id IN (SELECT id FROM l)
			RETURNING r.id`
		query, args = withHistory, []any{runIDs, owner, evRuns, evTimes, evKinds, evNodeKinds, evStarts, evEnds, evData, runIDs, histories,
			time.Time{}, now, now, runIDs, states, outputs, errIDs, descs, starts, ends, steps}
	}
	rows, err := db.writer().query(ctx, query, args...)
	if err != nil {
		return nil, db.mapErr(err, "finish runs")
	}
	defer func() { _ = rows.Close() }()
	finished := make(map[string]bool, n)
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, db.mapErr(err, "finish runs")
		}
		finished[id] = true
	}
	if err := rows.Err(); err != nil {
		return nil, db.mapErr(err, "finish runs")
	}
	errs := make([]error, n)
	for i, id := range runIDs {
		if !finished[id] {
			errs[i] = notLeased(id, owner)
		}
	}
	return errs, nil
}
