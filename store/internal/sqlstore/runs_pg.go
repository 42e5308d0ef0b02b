package sqlstore

import (
	"context"
	"fmt"
	"time"

	"github.com/proserun/prose/store"
)

// PostgreSQL batches: one statement per batch, whatever its size. Every
// statement is a round trip to the server and, outside a transaction, one
// commit: the per-run statements that suit SQLite's single writer (one
// transaction, a statement per run) cost PostgreSQL a round trip each.
// The rows travel as arrays (unnest), so the statement text is the same for
// every batch size and pgx's statement cache keeps it prepared.

// createRunsPG is CreateRuns on PostgreSQL: one INSERT … SELECT FROM
// unnest(…) … ON CONFLICT DO NOTHING that skips runs whose request id is
// already used, and returns the inserted runs together with the runs that
// hold those request ids (neither an OR nor NOT EXISTS: PostgreSQL planned
// those as a hashed subplan, a scan of the whole runs table per statement,
// when the table was small at planning time and kept the plan);
// a run whose automation does not exist is not inserted (ErrNotFound for
// it alone). A request id repeated inside the batch is sent once; the
// later runs get the first one's run back with created false. A request id
// inserted concurrently by another transaction gives that run back. An
// automation deleted meanwhile (foreign key) fails the whole statement:
// nothing is written, and the caller creates the runs one by one to get
// each one's error.
func (db *DB) createRunsPG(ctx context.Context, in []store.Run, now time.Time) (runs []store.Run, created []bool, errs []error, err error) {
	n := len(in)
	runs, created, errs = make([]store.Run, n), make([]bool, n), make([]error, n)
	type reqKey struct{ org, req string }
	first := map[reqKey]int{} // request id → index of the run that carries it
	sameAs := make([]int, n)  // index whose result run i shares, or -1
	idAt := map[string]int{}  // run id → index
	var (
		ids, orgs, wss, autos, names, stages, files, prevs, reqs = make([]string, 0, n), make([]string, 0, n), make([]string, 0, n),
			make([]string, 0, n), make([]string, 0, n), make([]string, 0, n), make([]string, 0, n), make([]string, 0, n), make([]string, 0, n)
		versions                       = make([]int64, 0, n)
		current                        = make([]bool, 0, n)
		steps, userIn, inv, stepInputs = make([][]byte, 0, n), make([][]byte, 0, n), make([][]byte, 0, n), make([][]byte, 0, n)
		// The columns that depend on the state the run is created in
		// (createInsert).
		states, outputs, errIDs, descs, owners = make([]string, 0, n), make([][]byte, 0, n), make([]string, 0, n), make([]string, 0, n), make([]string, 0, n)
		stepNs, locStarts, locEnds             = make([]int64, 0, n), make([]int64, 0, n), make([]int64, 0, n)
		expires                                = make([]time.Time, 0, n)
		parents                                = make([]string, 0, n)
		histories                              = make([]int64, 0, n)
		// The engine's history entries of runs created completed or
		// failed (store.Run.Events), written by the same statement.
		evRuns, evKinds, evNodeKinds []string
		evTimes                      []time.Time
		evStarts, evEnds             []int64
		evData                       [][]byte
	)
	bad := make([]bool, n) // a state a run cannot be created in: errs[i]
	for i, r := range in {
		sameAs[i] = -1
		if err := checkCreateState(r); err != nil {
			errs[i], bad[i] = err, true
			continue
		}
		if r.RequestID != "" {
			k := reqKey{r.OrganizationID, r.RequestID}
			if j, ok := first[k]; ok {
				sameAs[i] = j
				continue
			}
			first[k] = i
		}
		if r.ID == "" {
			r.ID = store.NewOrderedID(now)
		}
		if r.FileIDs == nil {
			r.FileIDs = []string{}
		}
		idAt[r.ID] = i
		ids, orgs, wss, autos = append(ids, r.ID), append(orgs, r.OrganizationID), append(wss, r.WorkspaceID), append(autos, r.AutomationID)
		names, stages, versions = append(names, r.Name), append(stages, string(r.Stage)), append(versions, r.StageVersion)
		current = append(current, r.CurrentStage)
		steps, userIn, inv = append(steps, r.Steps), append(userIn, r.UserInputs), append(inv, r.InvocationDetails)
		files, prevs, reqs, stepInputs = append(files, jsonArg(r.FileIDs)), append(prevs, r.PreviousRun), append(reqs, r.RequestID), append(stepInputs, r.StepInputs)
		ci := createInsert(r)
		states, outputs, errIDs, descs, owners = append(states, ci.state), append(outputs, ci.outputs), append(errIDs, ci.errorID), append(descs, ci.description), append(owners, ci.leaseOwner)
		stepNs, locStarts, locEnds, expires = append(stepNs, int64(ci.step)), append(locStarts, ci.locStart), append(locEnds, ci.locEnd), append(expires, ci.leaseExpire)
		parents, histories = append(parents, r.ParentRun), append(histories, int64(ci.events))
		if ci.events > 0 {
			for _, e := range r.Events {
				kind, at := e.Kind, e.Time
				if kind == "" {
					kind = store.RunEventEngine
				}
				if at.IsZero() {
					at = now
				}
				evRuns, evKinds, evNodeKinds = append(evRuns, r.ID), append(evKinds, string(kind)), append(evNodeKinds, e.NodeKind)
				evTimes, evStarts, evEnds, evData = append(evTimes, at), append(evStarts, e.Location.Start), append(evEnds, e.Location.End), append(evData, e.Data)
			}
		}
	}
	// A run to be created in another state than pending (executed or
	// leased at creation) is created pending when a run waits in the queue
	// or an earlier run of the batch is created pending: it must not go
	// before them (as on SQLite, see createRun).
	const q = `WITH u AS (
		SELECT * FROM unnest(?::text[], ?::text[], ?::text[], ?::text[], ?::text[], ?::text[], ?::bigint[], ?::bytea[], ?::bytea[],
			?::bytea[], ?::text[], ?::text[], ?::text[], ?::bytea[], ?::boolean[],
			?::text[], ?::bytea[], ?::bigint[], ?::text[], ?::text[], ?::bigint[], ?::bigint[], ?::text[], ?::timestamptz[], ?::text[],
			?::bigint[]) WITH ORDINALITY
		AS u(id, organization_id, workspace_id, automation_id, name, stage, stage_version, steps, user_inputs,
			invocation_details, file_ids, previous_run, request_id, step_inputs, current_stage,
			state, outputs, step, error_id, description, loc_start, loc_end, lease_owner, lease_expire_time, parent_run, history_events, ord)
	), queued AS (
		SELECT EXISTS (SELECT 1 FROM runs WHERE state = 'pending') AS any
	), v AS (
		SELECT u.*, u.state = 'pending' OR queued.any OR EXISTS (SELECT 1 FROM u w WHERE w.ord < u.ord AND w.state = 'pending') AS as_pending
		FROM u, queued
	), ins AS (
		INSERT INTO runs AS r (id, organization_id, workspace_id, automation_id, name, stage, stage_version, steps,
			user_inputs, invocation_details, file_ids, previous_run, request_id, state, state_time, step_inputs, create_time, update_time,
			outputs, step, error_id, description, loc_start, loc_end, lease_owner, lease_expire_time, parent_run, history_events)
		SELECT v.id, v.organization_id, v.workspace_id, v.automation_id, v.name, v.stage, v.stage_version, v.steps,
			v.user_inputs, v.invocation_details, v.file_ids, v.previous_run, v.request_id,
			CASE WHEN v.as_pending THEN 'pending' ELSE v.state END, ?, v.step_inputs, ?, ?,
			CASE WHEN v.as_pending THEN NULL ELSE v.outputs END, CASE WHEN v.as_pending THEN 0 ELSE v.step END,
			CASE WHEN v.as_pending THEN '' ELSE v.error_id END, CASE WHEN v.as_pending THEN '' ELSE v.description END,
			CASE WHEN v.as_pending THEN 0 ELSE v.loc_start END, CASE WHEN v.as_pending THEN 0 ELSE v.loc_end END,
			CASE WHEN v.as_pending THEN '' ELSE v.lease_owner END, CASE WHEN v.as_pending THEN 'epoch' ELSE v.lease_expire_time END,
			v.parent_run, CASE WHEN v.as_pending THEN 0 ELSE v.history_events END
		FROM v
		WHERE EXISTS (SELECT 1 FROM automations a WHERE a.organization_id = v.organization_id AND a.workspace_id = v.workspace_id AND a.id = v.automation_id
			AND (NOT v.current_stage OR a.delete_time IS NULL
				AND CASE WHEN v.stage = 'published' THEN a.published_version ELSE a.version END = v.stage_version))
		ON CONFLICT (organization_id, request_id) WHERE request_id != '' DO NOTHING
		RETURNING ` + runCols + `
	), history AS (
		-- What a run created completed or failed said. Row triggers (the
		-- entry of the state the run is created in) fire at the end of the
		-- statement, so these entries come first.
		INSERT INTO run_events (run_id, create_time, kind, node_kind, loc_start, loc_end, data)
		SELECT e.run_id, e.create_time, e.kind, e.node_kind, e.loc_start, e.loc_end, e.data
		FROM unnest(?::text[], ?::timestamptz[], ?::text[], ?::text[], ?::bigint[], ?::bigint[], ?::bytea[]) WITH ORDINALITY
			AS e(run_id, create_time, kind, node_kind, loc_start, loc_end, data, ord)
		JOIN ins ON ins.id = e.run_id AND ins.state IN ('completed', 'failed')
		ORDER BY e.ord
	)
	SELECT true, ` + runCols + ` FROM ins r
	UNION ALL
	SELECT false, ` + runCols + ` FROM v CROSS JOIN LATERAL (
		SELECT * FROM runs x WHERE x.organization_id = v.organization_id AND x.request_id = v.request_id AND x.request_id != '' LIMIT 1
	) r WHERE v.request_id != ''`
	rows, err := db.writer().query(ctx, q, ids, orgs, wss, autos, names, stages, versions, steps, userIn,
		inv, files, prevs, reqs, stepInputs, current, states, outputs, stepNs, errIDs, descs, locStarts, locEnds, owners, expires, parents, histories,
		now, now, now, evRuns, evTimes, evKinds, evNodeKinds, evStarts, evEnds, evData)
	if err != nil {
		return nil, nil, nil, db.mapErr(err, "create runs")
	}
	defer func() { _ = rows.Close() }()
	done := make([]bool, n)
	for rows.Next() {
		var inserted bool
		r, err := scanRun(prefixed{rows, &inserted})
		if err != nil {
			return nil, nil, nil, db.mapErr(err, "create runs")
		}
		i, ok := idAt[r.ID]
		if !inserted {
			i, ok = first[reqKey{r.OrganizationID, r.RequestID}]
		}
		if ok && !done[i] {
			runs[i], created[i], done[i] = r, inserted, true
		}
	}
	if err := rows.Err(); err != nil {
		return nil, nil, nil, db.mapErr(err, "create runs")
	}
	for i, r := range in {
		if sameAs[i] >= 0 || done[i] || bad[i] {
			continue
		}
		// Not inserted and no run held its request id when the statement
		// began: another transaction inserted that request id meanwhile
		// (the insert waited for it and skipped), the run's automation does
		// not exist, or its stage changed (CurrentStage).
		if r.RequestID != "" {
			got, err := scanRun(db.reader().queryRow(ctx, runSelect+` WHERE r.organization_id = ? AND r.request_id = ? AND r.request_id != ''`, r.OrganizationID, r.RequestID))
			if err == nil {
				runs[i] = got
				continue
			}
			if !isNoRows(err) {
				errs[i] = db.mapErr(err, "find run by request id")
				continue
			}
		}
		runErr, err := db.reader().checkAutomation(ctx, r)
		switch {
		case err != nil:
			errs[i] = err
		case runErr != nil:
			errs[i] = runErr
		default:
			errs[i] = fmt.Errorf("create run: request id %q is being used by a concurrent request: %w", r.RequestID, store.ErrConflict)
		}
	}
	for i, j := range sameAs {
		if j >= 0 {
			runs[i], errs[i] = runs[j], errs[j]
		}
	}
	return runs, created, errs, nil
}

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
	// last step (finishState, completedStateSQL).
	const q = `UPDATE runs r SET state = CASE WHEN v.state = 'completed' AND r.state = 'stopping' THEN 'stopped' ELSE v.state END,
		step = CASE WHEN v.state = 'completed' AND r.state = 'stopping' THEN v.step ELSE r.step END,
		outputs = CASE WHEN v.state = 'completed' THEN v.outputs ELSE r.outputs END,
		error_id = CASE WHEN v.state = 'failed' THEN v.error_id ELSE r.error_id END,
		loc_start = CASE WHEN v.state = 'failed' THEN v.loc_start ELSE r.loc_start END,
		loc_end = CASE WHEN v.state = 'failed' THEN v.loc_end ELSE r.loc_end END,
		description = v.description, checkpoint = NULL, resolution = NULL, exception_id = '',
		lease_owner = '', lease_expire_time = ?, state_time = ?, update_time = ?
		FROM unnest(?::text[], ?::text[], ?::bytea[], ?::text[], ?::text[], ?::bigint[], ?::bigint[], ?::bigint[])
			AS v(id, state, outputs, error_id, description, loc_start, loc_end, step)
		WHERE r.id = v.id AND r.lease_owner = ? AND r.state IN ('executing', 'stopping')
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
		const withHistory = `WITH l AS (
			SELECT id FROM runs WHERE id = ANY(?::text[]) AND lease_owner = ? AND state IN ('executing', 'stopping') FOR UPDATE
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
		UPDATE runs r SET state = CASE WHEN v.state = 'completed' AND r.state = 'stopping' THEN 'stopped' ELSE v.state END,
			step = CASE WHEN v.state = 'completed' AND r.state = 'stopping' THEN v.step ELSE r.step END,
			outputs = CASE WHEN v.state = 'completed' THEN v.outputs ELSE r.outputs END,
			error_id = CASE WHEN v.state = 'failed' THEN v.error_id ELSE r.error_id END,
			loc_start = CASE WHEN v.state = 'failed' THEN v.loc_start ELSE r.loc_start END,
			loc_end = CASE WHEN v.state = 'failed' THEN v.loc_end ELSE r.loc_end END,
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

// prefixed scans leading columns into pre and the rest into the
// destinations its caller gives.
type prefixed struct {
	s   interface{ Scan(...any) error }
	pre any
}

func (p prefixed) Scan(dest ...any) error { return p.s.Scan(append([]any{p.pre}, dest...)...) }
