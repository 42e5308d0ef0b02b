package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/proserun/prose/store"
	"github.com/proserun/prose/store/statemachine"
)

const runCols = `r.id, r.organization_id, r.workspace_id, r.automation_id, r.name, r.stage, r.stage_version, r.steps, r.user_inputs,
	r.invocation_details, r.file_ids, r.previous_run, r.request_id, r.state, r.state_time, r.reason, r.exception_id, r.description,
	r.loc_start, r.loc_end, r.error_id, r.outputs, r.step, r.step_inputs, r.checkpoint, r.resolution, r.lease_owner,
	r.lease_expire_time, r.create_time, r.update_time, r.parent_run, r.history_events, r.number`

const runSelect = `SELECT ` + runCols + ` FROM runs r`

// runReturning is runCols for a RETURNING clause (no alias).
var runReturning = strings.ReplaceAll(runCols, "r.", "")

func scanRun(s interface{ Scan(...any) error }) (store.Run, error) {
	var r store.Run
	var stage, state string
	err := s.Scan(&r.ID, &r.OrganizationID, &r.WorkspaceID, &r.AutomationID, &r.Name, &stage, &r.StageVersion, &r.Steps, &r.UserInputs,
		&r.InvocationDetails, jsonCol{&r.FileIDs}, &r.PreviousRun, &r.RequestID, &state, ts{&r.StateTime}, &r.Reason, &r.ExceptionID, &r.Description,
		&r.Location.Start, &r.Location.End, &r.ErrorID, &r.Outputs, &r.Step, &r.StepInputs, &r.Checkpoint, &r.Resolution, &r.LeaseOwner,
		ts{&r.LeaseExpireTime}, ts{&r.CreateTime}, ts{&r.UpdateTime}, &r.ParentRun, &r.HistoryEvents, &r.Number)
	r.Stage, r.State = store.Stage(stage), store.RunState(state)
	if r.FileIDs == nil {
		r.FileIDs = []string{}
	}
	return r, err
}

// scanAlso scans a row of runCols followed by the columns also.
type scanAlso struct {
	s    interface{ Scan(...any) error }
	also []any
}

func (a scanAlso) Scan(dest ...any) error { return a.s.Scan(append(dest, a.also...)...) }

func (c conn) getRunByID(ctx context.Context, id string) (store.Run, error) {
	r, err := scanRun(c.queryRow(ctx, runSelect+` WHERE r.id = ?`, id))
	return r, c.db.mapErr(err, fmt.Sprintf("run %q", id))
}

// CreateRun implements store.Runs: CreateRuns of one run.
func (db *DB) CreateRun(ctx context.Context, r store.Run) (store.Run, bool, error) {
	runs, created, errs, err := db.CreateRuns(ctx, []store.Run{r})
	if err != nil {
		return store.Run{}, false, err
	}
	return runs[0], created[0], errs[0]
}

// createdRun is run r as CreateRun wrote it with the columns ci at now, as
// reading it back would give it (store/storetest checks that it does).
func createdRun(r store.Run, ci createCols, now time.Time, d store.Dialect) store.Run {
	r.CurrentStage = false // an input, not stored
	r.State, r.StateTime, r.CreateTime, r.UpdateTime = store.RunState(ci.state), now, now, now
	r.Reason, r.ExceptionID, r.Checkpoint, r.Resolution = "", "", nil, nil
	r.Outputs, r.Step, r.ErrorID, r.Description = ci.outputs, ci.step, ci.errorID, ci.description
	r.Location = store.Location{Start: ci.locStart, End: ci.locEnd}
	r.LeaseOwner, r.LeaseExpireTime = ci.leaseOwner, store.Time(ci.leaseExpire)
	r.HistoryEvents, r.Events, r.Number = ci.events, nil, ci.number
	if d == store.SQLite {
		// SQLite reads an empty blob back as NULL.
		for _, b := range []*[]byte{&r.Steps, &r.UserInputs, &r.InvocationDetails, &r.StepInputs, &r.Outputs} {
			if len(*b) == 0 {
				*b = nil
			}
		}
	}
	return r
}

// checkCreateState checks the state a run is to be created in (see
// store.Run.State).
func checkCreateState(r store.Run) error {
	switch r.State {
	case "", store.RunPending, store.RunCompleted, store.RunFailed:
		return nil
	case store.RunExecuting:
		if r.LeaseOwner == "" || r.LeaseExpireTime.IsZero() {
			return fmt.Errorf("create run: %w: a run created executing needs a lease owner and expiry", store.ErrInvalidArgument)
		}
		return nil
	}
	return fmt.Errorf("create run: %w: a run cannot be created %s", store.ErrInvalidArgument, r.State)
}

// asPending is r to be created pending: what an execution at creation
// wrote is dropped (a worker executes it again; it made no call).
func asPending(r store.Run) store.Run {
	r.State, r.Outputs, r.Step, r.ErrorID, r.Description, r.Location = store.RunPending, nil, 0, "", "", store.Location{}
	r.LeaseOwner, r.LeaseExpireTime = "", time.Time{}
	r.Events = nil
	return r
}

// createCols are the columns of a new run that depend on the state it is
// created in (store.Run.State): pending (the default), completed (outputs,
// step), failed (error id, description, location) or executing (lease).
type createCols struct {
	state                string
	outputs              []byte
	step                 int
	errorID, description string
	locStart, locEnd     int64
	leaseOwner           string
	leaseExpire          time.Time
	// events: the engine's history entries written with a run created
	// completed or failed (store.Run.Events).
	events int
	// number: the run's number in its automation (createDialect.allocate
	// or the write's RETURNING).
	number int64
}

func createInsert(r store.Run) createCols {
	// The lease expiry is the column's default (the epoch) for a run never
	// leased, the zero time for a finished run (as FinishRun leaves it).
	switch r.State {
	case store.RunCompleted:
		return createCols{state: string(r.State), outputs: r.Outputs, step: r.Step, events: engineEvents(r.Events)}
	case store.RunFailed:
		return createCols{state: string(r.State), errorID: r.ErrorID, description: r.Description, locStart: r.Location.Start, locEnd: r.Location.End,
			events: engineEvents(r.Events)}
	case store.RunExecuting:
		return createCols{state: string(r.State), leaseOwner: r.LeaseOwner, leaseExpire: r.LeaseExpireTime}
	}
	return createCols{state: string(store.RunPending), leaseExpire: time.Unix(0, 0).UTC()}
}

// checkAutomation checks that the automation of a run about to be created
// exists and, with CurrentStage, that it is not deleted and its stage is
// at the run's StageVersion. runErr is the run's own error (ErrNotFound,
// ErrStageChanged); err is a failure of the query.
func (c conn) checkAutomation(ctx context.Context, r store.Run) (runErr, err error) {
	var version, published int64
	var deleted bool
	err = c.queryRow(ctx, `SELECT version, published_version, delete_time IS NOT NULL FROM automations WHERE organization_id = ? AND workspace_id = ? AND id = ?`,
		r.OrganizationID, r.WorkspaceID, r.AutomationID).Scan(&version, &published, &deleted)
	if isNoRows(err) {
		return automationErr(r, store.ErrNotFound), nil
	}
	if err != nil {
		return nil, c.db.mapErr(err, fmt.Sprintf("automation %q in workspace %q", r.AutomationID, r.WorkspaceID))
	}
	return stageErr(r, version, published, deleted), nil
}

// stageErr is ErrStageChanged when r is created with CurrentStage and its
// automation (at version, published, deleted) is deleted or at another
// version of r's stage.
func stageErr(r store.Run, version, published int64, deleted bool) error {
	if r.CurrentStage {
		at := version
		if r.Stage == store.StagePublished {
			at = published
		}
		if deleted || at != r.StageVersion {
			return automationErr(r, store.ErrStageChanged)
		}
	}
	return nil
}

func automationErr(r store.Run, err error) error {
	return fmt.Errorf("automation %q in workspace %q: %w", r.AutomationID, r.WorkspaceID, err)
}

// CreateRuns creates several runs in one transaction: each is what
// CreateRun does, in order (a request id already used, even by an earlier
// run of the batch, gives that run back with created false). runs[i],
// created[i] and errs[i] are the result of in[i]; errs[i] is an error of
// that run alone (its automation does not exist) and the others are still
// created. A non-nil err means nothing was written (e.g. a constraint
// violation on an insert): create them one by one to get each result.
// The engine uses it on a single-writer database to create the runs of
// concurrent invokes in one writer transaction.
func (db *DB) CreateRuns(ctx context.Context, in []store.Run) (runs []store.Run, created []bool, errs []error, err error) {
	runs, created, errs = make([]store.Run, len(in)), make([]bool, len(in)), make([]error, len(in))
	if len(in) == 0 {
		return runs, created, errs, nil
	}
	now := db.now()
	if db.d == store.Postgres {
		// The runs are written by one statement (createDialect): a
		// transaction around it would add two round trips and no atomicity.
		return db.writer().createRuns(ctx, in, now)
	}
	err = db.tx(ctx, func(c conn) error {
		var err error
		runs, created, errs, err = c.createRuns(ctx, in, now)
		return err
	})
	if err != nil {
		return nil, nil, nil, err
	}
	return runs, created, errs, nil
}

// GetRun implements store.Runs.
func (db *DB) GetRun(ctx context.Context, org, ws, automation, id string) (store.Run, error) {
	r, err := scanRun(db.reader().queryRow(ctx, runSelect+` WHERE r.id = ? AND r.organization_id = ? AND r.workspace_id = ? AND r.automation_id = ?`,
		id, org, ws, automation))
	return r, db.mapErr(err, fmt.Sprintf("run %q", id))
}

// GetRunByID implements store.Runs.
func (db *DB) GetRunByID(ctx context.Context, id string) (store.Run, error) {
	return db.reader().getRunByID(ctx, id)
}

var runSort = map[string]sortCol{
	"create_time": {Field: "create_time", Col: "r.create_time", Kind: keyTime},
	"update_time": {Field: "update_time", Col: "r.update_time", Kind: keyTime},
}

// ListRuns implements store.Runs.
func (db *DB) ListRuns(ctx context.Context, req store.ListRunsRequest) (store.Page[store.Run], error) {
	var zero store.Page[store.Run]
	ks, err := newKeyset(req.OrderBy, store.RunOrdering.Default, runSort, "r.id")
	if err != nil {
		return zero, err
	}
	auto := req.AutomationID
	if auto == "-" {
		auto = ""
	}
	lq, err := newList(db.d, ks, runFields, req.Filter, req.PageToken, req.PageSize, runSelect, "runs", req.OrganizationID, req.WorkspaceID, auto)
	if err != nil {
		return zero, err
	}
	lq.cond("r.organization_id = " + lq.a.Add(req.OrganizationID))
	lq.cond("r.workspace_id = " + lq.a.Add(req.WorkspaceID))
	if auto != "" {
		lq.cond("r.automation_id = " + lq.a.Add(auto))
	}
	return scanPage(ctx, db, lq, "list runs", scanRun, func(r store.Run) []string {
		out := make([]string, len(ks.cols))
		for i, c := range ks.cols {
			switch c.Field {
			case "create_time":
				out[i] = timeKey(r.CreateTime)
			case "update_time":
				out[i] = timeKey(r.UpdateTime)
			case "id":
				out[i] = r.ID
			}
		}
		return out
	})
}

// ListJournal implements store.Runs.
func (db *DB) ListJournal(ctx context.Context, runID string) ([]store.JournalEntry, error) {
	rows, err := db.reader().query(ctx, `SELECT step, seq, kind, key, data FROM run_journal WHERE run_id = ? ORDER BY step, seq`, runID)
	if err != nil {
		return nil, db.mapErr(err, "list journal")
	}
	defer rows.Close()
	var out []store.JournalEntry
	for rows.Next() {
		var e store.JournalEntry
		if err := rows.Scan(&e.Step, &e.Seq, &e.Kind, &e.Key, &e.Data); err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, rows.Err()
}

// CopyJournal implements store.Runs.
func (db *DB) CopyJournal(ctx context.Context, from, to string, steps []int) error {
	if len(steps) == 0 {
		return nil
	}
	args := append([]any{to, from}, anySlice(steps)...)
	_, err := db.writer().exec(ctx, `INSERT INTO run_journal (run_id, step, seq, kind, key, data)
		SELECT ?, step, seq, kind, key, data FROM run_journal WHERE run_id = ? AND step IN (`+placeholders(len(steps))+`)
		ON CONFLICT DO NOTHING`, args...)
	return db.mapErr(err, "copy journal")
}

func (db *DB) skipLocked() string {
	if db.d == store.Postgres {
		return " FOR UPDATE SKIP LOCKED"
	}
	return ""
}

// recoverEvery is how often ClaimRuns looks for expired leases (by the
// store's clock). Leases last tens of seconds, so a run whose worker died
// waits at most this much longer; a claim without the recovery is one
// statement instead of a transaction of two.
const recoverEvery = time.Second

// recoveryDue reports whether the claim at now should recover expired
// leases, and if so records it (a clock that went back makes it due).
func (db *DB) recoveryDue(now time.Time) bool {
	last := db.lastRecover.Load()
	t := now.UnixNano()
	if t >= last && t-last < int64(recoverEvery) {
		return false
	}
	return db.lastRecover.CompareAndSwap(last, t)
}

// claimWindow is how many of the oldest pending runs a fair claim shares
// out between organizations (see ClaimRunsFair): it bounds the cost of a
// claim whatever the length of the queue.
const claimWindow = 1000

// ClaimRuns implements store.Runs. Every recoverEvery (the first claim
// included) it first gives runs whose lease expired back to the queue, and
// fails those that lost it more than maxLostLeases times in a row (poison
// runs).
func (db *DB) ClaimRuns(ctx context.Context, owner string, max int, leaseUntil time.Time) ([]store.Run, error) {
	return db.claimRuns(ctx, owner, max, leaseUntil, false, nil)
}

// ClaimRunsFair implements store.FairClaimer: ClaimRuns, with the runs
// shared fairly between organizations, and between the workspaces of each
// organization. Among the oldest claimWindow pending runs, a run's
// workspace turn is its rank among its workspace's pending runs plus the
// runs its workspace holds (executing or stopping); an organization's
// pending runs are ranked by workspace turn (then age), and a run's turn is
// that rank plus the runs its organization holds. The runs with the
// earliest turns are claimed (then by workspace turn, oldest first among
// equals). A freed worker goes to the organization holding the fewest, and
// within it to the workspace holding the fewest, so neither one
// organization's long runs nor one workspace's can keep another's waiting. It costs more than ClaimRuns (a
// window over the oldest pending runs instead of an index range).
func (db *DB) ClaimRunsFair(ctx context.Context, owner string, max int, leaseUntil time.Time) ([]store.Run, error) {
	return db.claimRuns(ctx, owner, max, leaseUntil, true, nil)
}

// ClaimRunsSkipping implements store.FairClaimer: the claim (fair or
// oldest first) reads the pending runs of the other organizations only.
// Their runs are found in the index runs_pending past the skipped ones, so
// a claim costs more as the skipped organizations' queue grows.
//
// When no run of the others waits and no recovery of expired leases is due,
// it only reads: the engine claims skipping an organization whenever a
// run is created, and an empty claim was still a writer transaction that
// the creations waited for on SQLite.
func (db *DB) ClaimRunsSkipping(ctx context.Context, owner string, max int, leaseUntil time.Time, fair bool, skip []string) ([]store.Run, error) {
	if len(skip) > 0 && max > 0 {
		last, now := db.lastRecover.Load(), db.now().UnixNano()
		if now >= last && now-last < int64(recoverEvery) {
			var one int
			err := db.reader().queryRow(ctx, `SELECT 1 FROM runs WHERE `+queuedRun+` AND organization_id NOT IN (`+placeholders(len(skip))+`) LIMIT 1`,
				anySlice(skip)...).Scan(&one)
			if isNoRows(err) {
				return nil, nil
			}
			if err != nil {
				return nil, db.mapErr(err, "claim runs")
			}
		}
	}
	return db.claimRuns(ctx, owner, max, leaseUntil, fair, skip)
}

func (db *DB) claimRuns(ctx context.Context, owner string, max int, leaseUntil time.Time, fair bool, skip []string) ([]store.Run, error) {
	if max <= 0 {
		return nil, nil
	}
	now := db.now()
	var out []store.Run
	claim := func(c conn) error {
		// Lease the oldest pending runs (fair: the runs whose turn is next)
		// and read them back in one statement.
		// The organizations skipped: a condition on the pending runs read
		// (parameters, never literals).
		skipCond, skipArgs := "", anySlice(skip)
		if len(skip) > 0 {
			skipCond = " AND organization_id NOT IN (" + placeholders(len(skip)) + ")"
		}
		q, args := `UPDATE runs SET state = `+claimTo+`, lease_owner = ?, lease_expire_time = ?, state_time = ?, update_time = ?
			WHERE id IN (SELECT id FROM runs WHERE `+queuedRun+skipCond+` ORDER BY create_time, id LIMIT ?`+db.skipLocked()+`)
			RETURNING `+runReturning, append(append([]any{owner, leaseUntil, now, now}, skipArgs...), max)
		if fair {
			lock := ""
			if db.d == store.Postgres {
				lock = " FOR UPDATE OF r SKIP LOCKED"
			}
			// Two levels of turns: a run's workspace turn (its rank among
			// its workspace's pending runs plus the runs its workspace
			// holds) orders the runs of an organization, and its turn is
			// its rank in that order plus the runs its organization holds.
			q, args = `UPDATE runs SET state = `+claimTo+`, lease_owner = ?, lease_expire_time = ?, state_time = ?, update_time = ?
			WHERE id IN (
				SELECT r.id FROM (
					SELECT w.id, w.create_time, w.ws_turn,
						ROW_NUMBER() OVER (PARTITION BY w.organization_id ORDER BY w.ws_turn, w.create_time, w.id) + COALESCE(h.n, 0) AS turn
					FROM (
						SELECT p.id, p.organization_id, p.create_time,
							ROW_NUMBER() OVER (PARTITION BY p.organization_id, p.workspace_id ORDER BY p.create_time, p.id) + COALESCE(hw.n, 0) AS ws_turn
						FROM (SELECT id, organization_id, workspace_id, create_time FROM runs WHERE `+queuedRun+skipCond+` ORDER BY create_time, id LIMIT ?) p
						LEFT JOIN (SELECT organization_id, workspace_id, COUNT(*) AS n FROM runs WHERE `+leasedState+` GROUP BY organization_id, workspace_id) hw
							ON hw.organization_id = p.organization_id AND hw.workspace_id = p.workspace_id
					) w
					LEFT JOIN (SELECT organization_id, COUNT(*) AS n FROM runs WHERE `+leasedState+` GROUP BY organization_id) h
						ON h.organization_id = w.organization_id
				) q JOIN runs r ON r.id = q.id
				WHERE `+queuedIn("r.state")+`
				ORDER BY q.turn, q.ws_turn, q.create_time, q.id LIMIT ?`+lock+`)
			RETURNING `+runReturning, append(append([]any{owner, leaseUntil, now, now}, skipArgs...), claimWindow, max)
		}
		rows, err := c.query(ctx, q, args...)
		if err != nil {
			return db.mapErr(err, "claim runs")
		}
		defer rows.Close()
		for rows.Next() {
			r, err := scanRun(rows)
			if err != nil {
				return err
			}
			out = append(out, r)
		}
		return rows.Err()
	}
	var err error
	var recovered int64 // runs whose lease expired, taken back
	if db.recoveryDue(now) {
		db.compactRunAggregates(ctx)
		err = db.tx(ctx, func(c conn) error {
			// Recover runs whose worker lost its lease: executing ones go
			// back to pending, stopping ones to stopped. One statement whose
			// condition is that of the partial index runs_leased, so it
			// reads only leased runs (two statements on state = … scanned
			// the whole table).
			// An executing run that lost its lease more than maxLostLeases
			// times in a row fails (all right-hand sides read the row as it
			// was).
			poison, to := recoverSQL(db.maxLostLeases)
			res, err := c.exec(ctx, `UPDATE runs SET state = `+to+`,
				lost_leases = CASE WHEN `+poisonFrom+` THEN lost_leases + 1 ELSE lost_leases END,
				error_id = CASE WHEN `+poison+` THEN 'poison-' || id ELSE error_id END,
				description = CASE WHEN `+poison+` THEN ? ELSE description END,
				checkpoint = CASE WHEN `+poison+` THEN NULL ELSE checkpoint END,
				resolution = CASE WHEN `+poison+` THEN NULL ELSE resolution END,
				state_time = ?, update_time = ?, lease_owner = ''
				WHERE `+leaseLostFrom+` AND lease_expire_time < ?`, poisonDescription(db.maxLostLeases), now, now, now)
			if err != nil {
				return db.mapErr(err, "recover leased runs")
			}
			if n, err := res.RowsAffected(); err == nil && n > 0 {
				recovered = n
			}
			// Parents whose children all settled without waking them (a
			// child finished in a batch, or its worker died between the
			// two statements of FinishRun) go back to the queue.
			if _, err := c.exec(ctx, `UPDATE runs SET state = `+childFinishedTo+`, state_time = ?, update_time = ?
				WHERE `+childFinishedFrom+` AND `+noUnsettledChildren, now, now); err != nil {
				return db.mapErr(err, "wake waiting runs")
			}
			return claim(c)
		})
	} else {
		// One statement, its own transaction.
		err = claim(db.writer())
	}
	if err != nil {
		return nil, err
	}
	if recovered > 0 {
		if fn, _ := db.onRecovered.Load().(func(int64)); fn != nil {
			fn(recovered)
		}
	}
	slices.SortFunc(out, func(a, b store.Run) int {
		if c := a.CreateTime.Compare(b.CreateTime); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out, nil
}

// CountPendingRuns implements store.QueueStats.
func (db *DB) CountPendingRuns(ctx context.Context) (int64, error) {
	var n int64
	err := db.reader().queryRow(ctx, `SELECT COUNT(*) FROM runs WHERE `+queuedRun).Scan(&n)
	return n, db.mapErr(err, "count pending runs")
}

// CountPendingExceptions implements store.QueueStats. It reads the coarsest
// level of exception_counts (30-day buckets, level 2), reached through its
// primary key's (organization, workspace, level) prefix from each
// workspace, so no exception row is read (CROSS JOIN: SQLite keeps
// workspaces as the outer loop; PostgreSQL plans it as any inner join).
func (db *DB) CountPendingExceptions(ctx context.Context) ([]store.PendingExceptionCount, error) {
	rows, err := db.reader().query(ctx, `SELECT c.organization_id, c.workspace_id, c.automation_id, c.group_id, sum(c.n)
		FROM workspaces w CROSS JOIN exception_counts c
		WHERE c.organization_id = w.organization_id AND c.workspace_id = w.id AND c.level = ? AND c.state = ?
		GROUP BY c.organization_id, c.workspace_id, c.automation_id, c.group_id
		HAVING sum(c.n) > 0`, len(rollupLevels)-1, string(store.ExceptionPending))
	if err != nil {
		return nil, db.mapErr(err, "count pending exceptions")
	}
	defer func() { _ = rows.Close() }()
	var out []store.PendingExceptionCount
	for rows.Next() {
		var c store.PendingExceptionCount
		if err := rows.Scan(&c.OrganizationID, &c.WorkspaceID, &c.AutomationID, &c.Group, &c.N); err != nil {
			return nil, db.mapErr(err, "count pending exceptions")
		}
		out = append(out, c)
	}
	return out, db.mapErr(rows.Err(), "count pending exceptions")
}

// OnLeasesRecovered implements store.QueueStats.
func (db *DB) OnLeasesRecovered(fn func(n int64)) { db.onRecovered.Store(fn) }

// HasPendingRuns reports whether runs wait in the queue (one lookup in the
// index runs_pending). The engine asks it when every worker is busy, to
// decide whether long runs should give their workers up for a turn.
func (db *DB) HasPendingRuns(ctx context.Context) (bool, error) {
	var one int
	err := db.reader().queryRow(ctx, `SELECT 1 FROM runs WHERE `+queuedRun+` LIMIT 1`).Scan(&one)
	if isNoRows(err) {
		return false, nil
	}
	return err == nil, db.mapErr(err, "look for pending runs")
}

// RenewLeases implements store.Runs.
func (db *DB) RenewLeases(ctx context.Context, owner string, ids []string, leaseUntil time.Time) (map[string]store.RunState, error) {
	out := map[string]store.RunState{}
	if len(ids) == 0 {
		return out, nil
	}
	err := db.tx(ctx, func(c conn) error {
		args := append([]any{leaseUntil, owner}, anySlice(ids)...)
		if _, err := c.exec(ctx, `UPDATE runs SET lease_expire_time = ? WHERE lease_owner = ? AND `+leasedState+`
			AND id IN (`+placeholders(len(ids))+`)`, args...); err != nil {
			return db.mapErr(err, "renew leases")
		}
		rows, err := c.query(ctx, `SELECT id, state FROM runs WHERE lease_owner = ? AND `+leasedState+`
			AND id IN (`+placeholders(len(ids))+`)`, append([]any{owner}, anySlice(ids)...)...)
		if err != nil {
			return db.mapErr(err, "renew leases")
		}
		defer rows.Close()
		for rows.Next() {
			var id, state string
			if err := rows.Scan(&id, &state); err != nil {
				return err
			}
			out[id] = store.RunState(state)
		}
		return rows.Err()
	})
	return out, err
}

// ReleaseRuns implements store.Runs: one statement.
func (db *DB) ReleaseRuns(ctx context.Context, owner string, ids []string) (int, error) {
	if len(ids) == 0 {
		return 0, nil
	}
	now := db.now()
	args := append([]any{time.Time{}, now, now, owner}, anySlice(ids)...)
	res, err := db.writer().exec(ctx, `UPDATE runs SET state = `+releaseTo+`,
		lease_owner = '', lease_expire_time = ?, state_time = ?, update_time = ?
		WHERE lease_owner = ? AND `+releaseFrom+` AND id IN (`+placeholders(len(ids))+`)`, args...)
	if err != nil {
		return 0, db.mapErr(err, "release runs")
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, db.mapErr(err, "release runs")
	}
	return int(n), nil
}

// leased checks, inside a transaction, that run id is leased to owner, and
// returns its state and reason.
func (c conn) leased(ctx context.Context, owner, id string) (store.RunState, string, error) {
	var state, reason string
	err := c.queryRow(ctx, `SELECT state, reason FROM runs WHERE id = ? AND lease_owner = ? AND `+leasedState+c.db.forUpdate(),
		id, owner).Scan(&state, &reason)
	if isNoRows(err) {
		return "", "", notLeased(id, owner)
	}
	if err != nil {
		return "", "", c.db.mapErr(err, "check lease")
	}
	return store.RunState(state), reason, nil
}

func (db *DB) forUpdate() string {
	if db.d == store.Postgres {
		return " FOR UPDATE"
	}
	return ""
}

// AppendJournal implements store.Runs.
func (db *DB) AppendJournal(ctx context.Context, owner, runID string, entries []store.JournalEntry) error {
	if len(entries) == 0 {
		return nil
	}
	return db.tx(ctx, func(c conn) error {
		if _, _, err := c.leased(ctx, owner, runID); err != nil {
			return err
		}
		for _, e := range entries {
			if _, err := c.exec(ctx, `INSERT INTO run_journal (run_id, step, seq, kind, key, data) VALUES (?, ?, ?, ?, ?, ?)
				ON CONFLICT DO NOTHING`, runID, e.Step, e.Seq, e.Kind, e.Key, e.Data); err != nil {
				return db.mapErr(err, "append journal")
			}
		}
		return nil
	})
}

// SaveProgress implements store.Runs.
func (db *DB) SaveProgress(ctx context.Context, owner, runID string, p store.Progress) error {
	return db.tx(ctx, func(c conn) error {
		now := db.now()
		res, err := c.exec(ctx, `UPDATE runs SET step = ?, step_inputs = ?, checkpoint = ?, resolution = NULL, lost_leases = 0, update_time = ?,
			history_events = history_events + ?
			WHERE id = ? AND lease_owner = ? AND `+leasedState, p.Step, p.StepInputs, p.Checkpoint, now, engineEvents(p.Events), runID, owner)
		if err != nil {
			return db.mapErr(err, "save progress")
		}
		if rowsAffected(res) == 0 {
			return notLeased(runID, owner)
		}
		if err := c.insertRunEvents(ctx, runID, p.Events, now); err != nil {
			return err
		}
		for _, e := range p.Journal {
			if _, err := c.exec(ctx, `INSERT INTO run_journal (run_id, step, seq, kind, key, data) VALUES (?, ?, ?, ?, ?, ?)
				ON CONFLICT DO NOTHING`, runID, e.Step, e.Seq, e.Kind, e.Key, e.Data); err != nil {
				return db.mapErr(err, "append journal")
			}
		}
		return nil
	})
}

// FinishRun implements store.Runs.
func (db *DB) FinishRun(ctx context.Context, owner, runID string, o store.RunOutcome) (store.Run, error) {
	now := db.now()
	if o.State == store.RunCompleted || o.State == store.RunFailed {
		// One statement, outside a transaction: the lease check is its
		// condition and RETURNING reads the run back. With history
		// entries, two in a transaction: the entries first (the lease is
		// their insert's condition), then the update (whose state entry
		// comes after them).
		finish := func(c conn) (store.Run, error) {
			if len(o.Events) > 0 {
				if err := c.insertRunEventsLeased(ctx, runID, owner, o.Events, now); err != nil {
					return store.Run{}, err
				}
			}
			const cond = ` WHERE id = ? AND lease_owner = ? AND `
			var row *sql.Row
			if o.State == store.RunCompleted {
				row = c.queryRow(ctx, `UPDATE runs SET state = `+completeTo+`, step = `+completeStepSQL+`, outputs = ?, checkpoint = NULL, resolution = NULL,
				exception_id = '', description = '', lease_owner = '', lease_expire_time = ?, state_time = ?, update_time = ?, history_events = history_events + ?`+
					cond+completeFrom+` RETURNING `+runReturning,
					o.Step, o.Outputs, time.Time{}, now, now, engineEvents(o.Events), runID, owner)
			} else {
				row = c.queryRow(ctx, `UPDATE runs SET state = `+failTo+`, error_id = ?, description = ?, loc_start = ?, loc_end = ?,
				checkpoint = NULL, resolution = NULL, exception_id = '', lease_owner = '', lease_expire_time = ?, state_time = ?, update_time = ?,
				history_events = history_events + ?`+cond+failFrom+` RETURNING `+runReturning,
					o.ErrorID, o.Description, o.Location.Start, o.Location.End, time.Time{}, now, now, engineEvents(o.Events), runID, owner)
			}
			r, err := scanRun(row)
			if isNoRows(err) {
				return store.Run{}, notLeased(runID, owner)
			}
			if err == nil && r.ParentRun != "" {
				err = db.wakeParent(ctx, c, r.ParentRun, now)
			}
			return r, db.mapErr(err, "finish run")
		}
		if len(o.Events) == 0 {
			return finish(db.writer())
		}
		var out store.Run
		err := db.tx(ctx, func(c conn) error {
			var err error
			out, err = finish(c)
			return err
		})
		return out, err
	}
	var out store.Run
	err := db.tx(ctx, func(c conn) error {
		state, _, err := c.leased(ctx, owner, runID)
		if err != nil {
			return err
		}
		if len(o.Events) > 0 {
			// What the run did since its last progress, before the entry of
			// the state it now enters (written by the update below).
			if err := c.insertRunEvents(ctx, runID, o.Events, now); err != nil {
				return err
			}
			if _, err := c.exec(ctx, `UPDATE runs SET history_events = history_events + ? WHERE id = ?`, engineEvents(o.Events), runID); err != nil {
				return db.mapErr(err, "finish run")
			}
		}
		// Each update changes the run from the state read above (locked),
		// to the state the table gives for the outcome's event.
		const release = `, lease_owner = '', lease_expire_time = ?, lost_leases = 0, state_time = ?, update_time = ?`
		var res error
		switch o.State {
		case store.RunCompleted:
			_, res = c.exec(ctx, `UPDATE runs SET state = `+completeTo+`, step = `+completeStepSQL+`, outputs = ?, checkpoint = NULL, resolution = NULL,
				exception_id = '', description = ''`+release+` WHERE id = ? AND `+completeFrom, o.Step, o.Outputs, time.Time{}, now, now, runID)
		case store.RunFailed:
			_, res = c.exec(ctx, `UPDATE runs SET state = `+failTo+`, error_id = ?, description = ?, loc_start = ?, loc_end = ?,
				checkpoint = NULL, resolution = NULL, exception_id = ''`+release+` WHERE id = ? AND `+failFrom,
				o.ErrorID, o.Description, o.Location.Start, o.Location.End, time.Time{}, now, now, runID)
		case store.RunAwaitingGuidance:
			if o.Exception == nil {
				return errors.New("finish run: awaiting_guidance needs an exception")
			}
			run, err := c.getRunByID(ctx, runID)
			if err != nil {
				return err
			}
			e := *o.Exception
			if e.ID == "" {
				e.ID = store.NewID()
			}
			e.OrganizationID, e.WorkspaceID, e.RunID, e.AutomationID, e.Stage = run.OrganizationID, run.WorkspaceID, run.ID, run.AutomationID, run.Stage
			if err := c.insertException(ctx, e, now); err != nil {
				return err
			}
			if err := c.insertExceptionEvent(ctx, e, store.ExceptionPending, "", nil, now); err != nil {
				return err
			}
			_, res = c.moveRun(ctx, runID, statemachine.RaiseException, state, nextRun(statemachine.RaiseException, state),
				`, exception_id = ?, description = ?, loc_start = ?, loc_end = ?, checkpoint = ?, resolution = NULL, step = ?, step_inputs = ?`+release,
				e.ID, e.Message, e.Location.Start, e.Location.End, o.Checkpoint, o.Step, o.StepInputs, time.Time{}, now, now)
		case store.RunStopped:
			if o.Checkpoint != nil {
				// Stopped between statements: continue from there.
				_, res = c.moveRun(ctx, runID, statemachine.Stop, state, nextRun(statemachine.Stop, state),
					`, checkpoint = ?, resolution = NULL, step = ?, step_inputs = ?`+release, o.Checkpoint, o.Step, o.StepInputs, time.Time{}, now, now)
			} else {
				_, res = c.moveRun(ctx, runID, statemachine.Stop, state, nextRun(statemachine.Stop, state), release, time.Time{}, now, now)
			}
		case store.RunWaiting:
			// The run waits for its children (waitTo), or stops if it is
			// being paused.
			if o.Checkpoint == nil {
				return fmt.Errorf("finish run: %w: a waiting outcome needs the state to continue from", store.ErrInvalidArgument)
			}
			_, res = c.moveRunTo(ctx, runID, state, waitTo(state), `, checkpoint = ?, resolution = NULL, step = ?, step_inputs = ?`+release,
				o.Checkpoint, o.Step, o.StepInputs, time.Time{}, now, now)
		case store.RunPending:
			// The run gave its worker up (a turn for other runs): back to the
			// queue, or stopped if it is being paused.
			if o.Checkpoint == nil {
				return fmt.Errorf("finish run: %w: a pending outcome needs the state to continue from", store.ErrInvalidArgument)
			}
			_, res = c.moveRun(ctx, runID, statemachine.Yield, state, nextRun(statemachine.Yield, state),
				`, checkpoint = ?, resolution = NULL, step = ?, step_inputs = ?`+release, o.Checkpoint, o.Step, o.StepInputs, time.Time{}, now, now)
		default:
			return fmt.Errorf("finish run: %w: outcome state %q", store.ErrInvalidArgument, o.State)
		}
		if res != nil {
			return db.mapErr(res, "finish run")
		}
		if out, err = c.getRunByID(ctx, runID); err != nil {
			return err
		}
		if out.ParentRun != "" && out.State.Settled() {
			// As the one-statement path does.
			return db.mapErr(db.wakeParent(ctx, c, out.ParentRun, now), "finish run")
		}
		return nil
	})
	return out, err
}

// wakeParent moves a waiting parent to pending when it has no unsettled
// child left. On PostgreSQL a parent whose waiting outcome is being written
// concurrently holds its row lock, so this statement runs after that
// transaction commits and sees the state it wrote.
func (db *DB) wakeParent(ctx context.Context, c conn, parent string, now time.Time) error {
	_, err := c.exec(ctx, `UPDATE runs SET state = `+childFinishedTo+`, state_time = ?, update_time = ?
		WHERE id = ? AND `+childFinishedFrom+` AND `+noUnsettledChildren, now, now, parent)
	return err
}

// poisonDescription is the description of a run failed because its worker
// lost its lease more than max times in a row.
func poisonDescription(max int) string {
	return "Internal error: the run was executing when its worker stopped (crashed or hung) " + strconv.Itoa(max+1) +
		" times in a row without progress; it is failed instead of being retried again"
}

// notLeased is the ErrConflict of a worker method on a run not leased to
// owner.
func notLeased(id, owner string) error {
	return fmt.Errorf("run %q is not leased to %q: %w", id, owner, store.ErrConflict)
}

// SingleWriter reports whether the database has one writer connection
// (SQLite): there, creating and finishing runs in batches (CreateRuns,
// FinishRuns) saves writer transactions; PostgreSQL does better with them in
// parallel.
func (db *DB) SingleWriter() bool { return db.d == store.SQLite }

// FinishRuns finishes several runs leased to owner in one transaction:
// each is what FinishRun does for a completed or failed outcome (the lease
// check is the condition of the run's UPDATE). errs[i] is the result of
// runIDs[i]: nil, ErrConflict when the run is not leased to owner (the
// other runs are still finished) or ErrInvalidArgument for an outcome other
// than completed or failed. A non-nil err means nothing was written.
// The engine uses it to write the completions of several workers in one
// writer transaction.
func (db *DB) FinishRuns(ctx context.Context, owner string, runIDs []string, outcomes []store.RunOutcome) (errs []error, err error) {
	if len(runIDs) != len(outcomes) {
		return nil, fmt.Errorf("finish runs: %w: %d ids and %d outcomes", store.ErrInvalidArgument, len(runIDs), len(outcomes))
	}
	errs = make([]error, len(runIDs))
	if len(runIDs) == 0 {
		return errs, nil
	}
	// Outcomes other than completed and failed are the caller's mistake:
	// they get their error and are not written.
	var ids []string
	var outs []store.RunOutcome
	var at []int // index in runIDs of ids[k]
	for i, o := range outcomes {
		if o.State != store.RunCompleted && o.State != store.RunFailed {
			errs[i] = fmt.Errorf("finish runs: %w: outcome state %q (only completed or failed)", store.ErrInvalidArgument, o.State)
			continue
		}
		ids, outs, at = append(ids, runIDs[i]), append(outs, o), append(at, i)
	}
	if len(ids) == 0 {
		return errs, nil
	}
	now := db.now()
	if db.d == store.Postgres {
		res, err := db.finishRunsPG(ctx, owner, ids, outs, now)
		if err != nil {
			return nil, err
		}
		for k, i := range at {
			errs[i] = res[k]
		}
		return errs, nil
	}
	err = db.tx(ctx, func(c conn) error {
		const cond = ` WHERE id = ? AND lease_owner = ? AND `
		for k, id := range ids {
			o := outs[k]
			var res sql.Result
			var err error
			if len(o.Events) > 0 {
				// What the run did since its last progress goes before the
				// entry of its final state (written by the update below);
				// nothing is written for a run not leased to owner (the
				// insert's condition, and then the update's).
				if err := c.insertRunEventsLeased(ctx, id, owner, o.Events, now); err != nil {
					return err
				}
			}
			if o.State == store.RunCompleted {
				res, err = c.exec(ctx, `UPDATE runs SET state = `+completeTo+`, step = `+completeStepSQL+`, outputs = ?, checkpoint = NULL, resolution = NULL,
				exception_id = '', description = '', lease_owner = '', lease_expire_time = ?, state_time = ?, update_time = ?, history_events = history_events + ?`+cond+completeFrom,
					o.Step, o.Outputs, time.Time{}, now, now, engineEvents(o.Events), id, owner)
			} else {
				res, err = c.exec(ctx, `UPDATE runs SET state = `+failTo+`, error_id = ?, description = ?, loc_start = ?, loc_end = ?,
				checkpoint = NULL, resolution = NULL, exception_id = '', lease_owner = '', lease_expire_time = ?, state_time = ?, update_time = ?,
				history_events = history_events + ?`+cond+failFrom,
					o.ErrorID, o.Description, o.Location.Start, o.Location.End, time.Time{}, now, now, engineEvents(o.Events), id, owner)
			}
			if err != nil {
				return db.mapErr(err, "finish runs")
			}
			if rowsAffected(res) == 0 {
				errs[at[k]] = notLeased(id, owner)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return errs, nil
}

// ChangeRun implements store.Runs.
func (db *DB) ChangeRun(ctx context.Context, org, ws, automation, id string, check store.RunCheck) (store.Run, error) {
	now := db.now()
	var out store.Run
	err := db.tx(ctx, func(c conn) error {
		// The run, locked, and its newest pending exception: one read.
		var pending string
		r, err := scanRun(scanAlso{c.queryRow(ctx, `SELECT `+runCols+`, COALESCE((SELECT x.id FROM exceptions x WHERE x.run_id = r.id AND x.state = `+lit(store.ExceptionPending)+`
			ORDER BY x.create_time DESC LIMIT 1), '') FROM runs r WHERE r.id = ? AND r.organization_id = ? AND r.workspace_id = ? AND r.automation_id = ?`+db.forUpdate(),
			id, org, ws, automation), []any{&pending}})
		if err != nil {
			return db.mapErr(err, fmt.Sprintf("run %q", id))
		}
		if check == nil {
			return fmt.Errorf("change run %q: no check decides the change: %w", id, store.ErrInvalidArgument)
		}
		ch, err := check(r, pending)
		if err != nil {
			return err
		}
		ev, err := clientEvent(r, ch)
		if err != nil {
			return err
		}
		node := store.ContinueNodeKind
		if ev == statemachine.Pause {
			node = store.PauseNodeKind
		}
		if err := c.insertRunEvents(ctx, id, []store.RunEvent{{Kind: store.RunEventControl, NodeKind: node, Reason: ch.Actor}}, now); err != nil {
			return err
		}
		from := r.State
		r.State, r.StateTime, r.UpdateTime = ch.State, now, now
		switch ch.State {
		case store.RunStopping, store.RunStopped:
			r.Reason = ch.Reason
		case store.RunAwaitingGuidance:
			r.ExceptionID = ch.ExceptionID
		}
		_, err = c.moveRun(ctx, id, ev, from, r.State, `, reason = ?, exception_id = ?, state_time = ?, update_time = ?`,
			r.Reason, r.ExceptionID, now, now)
		if err == nil && ch.State == store.RunStopping && db.d == store.Postgres {
			// The replica executing the run stops it at once
			// (store.Notifier.OnRunPause), not at its next renewal.
			_, err = c.exec(ctx, `SELECT pg_notify(?, ?)`, PauseChannel, id)
		}
		if err != nil {
			return db.mapErr(err, "change run")
		}
		out = r
		return nil
	})
	return out, err
}
