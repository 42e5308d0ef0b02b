package sqlstore

import (
	"context"
	"fmt"
	"math/bits"
	"strings"
	"sync"
	"time"

	"github.com/proserun/prose/store"
)

// createRunsSQLite is CreateRuns (and CreateRun) on SQLite inside the
// writer's transaction: what createRun does for each run in turn, with the
// statements made once per batch instead of once per run. The results are
// those of createRun called for in[0], in[1], … in order:
//
//   - the request ids already used are looked up in one statement per
//     organization; a request id used twice in the batch gives the second
//     run the first one's result (created false);
//   - each automation of the batch is read once, with whether its
//     workspace has a webhook taking runs;
//   - whether a run waits in the queue is read once: a run to be created
//     executed or leased is created pending when one waits or an earlier
//     run of the batch is created pending;
//   - the engine's history entries of the runs created completed or failed
//     go in one INSERT (before their rows: the foreign key is deferred, and
//     the entry of the state a run is created in, written by the row
//     trigger runs_history_insert, comes last for each run);
//   - the runs go in multi-row INSERTs of 64, 32, …, 1 rows (a bounded set
//     of statement texts, prepared once each);
//   - the webhook deliveries of their creation are written here (migration
//     00038 dropped the row trigger runs_webhook_insert that made an
//     INSERT … SELECT per run, for every run, whether or not its workspace
//     had a webhook): one per run and webhook of its workspace taking runs,
//     the rows the trigger wrote;
//   - the insights' counts once (countCreatedRuns).
//
// err is a failure after which the transaction must not be committed.
func (c conn) createRunsSQLite(ctx context.Context, in []store.Run, now time.Time) (runs []store.Run, created []bool, errs []error, err error) {
	n := len(in)
	runs, created, errs = make([]store.Run, n), make([]bool, n), make([]error, n)
	in = append([]store.Run(nil), in...) // the caller's runs are not changed
	first := map[reqKey]int{}
	sameAs := make([]int, n)
	live := make([]bool, n) // passed checkCreateState and is the first of its request id
	byOrg := map[string][]string{}
	var orgs []string
	for i := range in {
		sameAs[i] = -1
		if err := checkCreateState(in[i]); err != nil {
			errs[i] = err
			continue
		}
		if rq := in[i].RequestID; rq != "" {
			k := reqKey{in[i].OrganizationID, rq}
			if j, ok := first[k]; ok {
				sameAs[i] = j
				continue
			}
			first[k] = i
			if _, ok := byOrg[k.org]; !ok {
				orgs = append(orgs, k.org)
			}
			byOrg[k.org] = append(byOrg[k.org], rq)
		}
		live[i] = true
	}
	// The runs already holding a request id of the batch.
	existing := map[reqKey]store.Run{}
	for _, org := range orgs {
		reqs := byOrg[org]
		for len(reqs) > 0 {
			k := chunkSize(len(reqs), maxCreateChunk)
			args := make([]any, 0, k+1)
			args = append(args, org)
			for _, rq := range reqs[:k] {
				args = append(args, rq)
			}
			if err := c.runsOfRequests(ctx, k, args, existing); err != nil {
				return nil, nil, nil, err
			}
			reqs = reqs[k:]
		}
	}
	// The automations, once each.
	type autoKey struct{ org, ws, id string }
	type autoRow struct {
		found, deleted, webhooks bool
		version, published       int64
	}
	autos := map[autoKey]autoRow{}
	needQueue := false
	for i, r := range in {
		if !live[i] {
			continue
		}
		if _, ok := existing[reqKey{r.OrganizationID, r.RequestID}]; ok && r.RequestID != "" {
			continue
		}
		if r.State != store.RunPending && r.State != "" {
			needQueue = true
		}
		k := autoKey{r.OrganizationID, r.WorkspaceID, r.AutomationID}
		if _, ok := autos[k]; ok {
			continue
		}
		var a autoRow
		err := c.queryRow(ctx, `SELECT version, published_version, delete_time IS NOT NULL,
			EXISTS (SELECT 1 FROM webhooks w WHERE w.organization_id = a.organization_id AND w.workspace_id = a.workspace_id AND w.runs = 1)
			FROM automations a WHERE a.organization_id = ? AND a.workspace_id = ? AND a.id = ?`,
			k.org, k.ws, k.id).Scan(&a.version, &a.published, &a.deleted, &a.webhooks)
		switch {
		case isNoRows(err):
		case err != nil:
			return nil, nil, nil, c.db.mapErr(err, fmt.Sprintf("automation %q in workspace %q", k.id, k.ws))
		default:
			a.found = true
		}
		autos[k] = a
	}
	queued := false
	if needQueue {
		if err := c.queryRow(ctx, `SELECT EXISTS (SELECT 1 FROM runs WHERE state = 'pending')`).Scan(&queued); err != nil {
			return nil, nil, nil, c.db.mapErr(err, "create runs")
		}
	}
	// Each run's fate, in order.
	var (
		ins    []int // indexes of the runs inserted, in order
		cols   = make([]createCols, n)
		events []eventRow
		hooked bool
	)
	for i := range in {
		if !live[i] {
			continue
		}
		r := in[i]
		if r.RequestID != "" {
			if x, ok := existing[reqKey{r.OrganizationID, r.RequestID}]; ok {
				runs[i] = x
				continue
			}
		}
		a := autos[autoKey{r.OrganizationID, r.WorkspaceID, r.AutomationID}]
		if !a.found {
			errs[i] = automationErr(r, store.ErrNotFound)
			continue
		}
		if runErr := stageErr(r, a.version, a.published, a.deleted); runErr != nil {
			errs[i] = runErr
			continue
		}
		if r.ID == "" {
			r.ID = store.NewOrderedID(now)
		}
		if r.FileIDs == nil {
			r.FileIDs = []string{}
		}
		if r.State != store.RunPending && r.State != "" && queued {
			r = asPending(r)
		}
		ci := createInsert(r)
		if ci.state == string(store.RunPending) {
			queued = true
		}
		if ci.events > 0 {
			for _, e := range r.Events {
				events = append(events, eventRow{runID: r.ID, e: e})
			}
		}
		hooked = hooked || a.webhooks
		in[i], cols[i] = r, ci
		ins = append(ins, i)
	}
	if len(events) > 0 {
		if err := c.insertEventRows(ctx, events, now); err != nil {
			return nil, nil, nil, err
		}
	}
	for rest := ins; len(rest) > 0; {
		k := chunkSize(len(rest), maxCreateChunk)
		args := make([]any, 0, k*runInsertCols)
		for _, i := range rest[:k] {
			r, ci := in[i], cols[i]
			args = append(args, r.ID, r.OrganizationID, r.WorkspaceID, r.AutomationID, r.Name, string(r.Stage), r.StageVersion, r.Steps,
				r.UserInputs, r.InvocationDetails, jsonArg(r.FileIDs), r.PreviousRun, r.RequestID, ci.state, now, r.StepInputs, now, now,
				ci.outputs, ci.step, ci.errorID, ci.description, ci.locStart, ci.locEnd, ci.leaseOwner, ci.leaseExpire, r.ParentRun, ci.events)
		}
		if _, err := c.exec(ctx, runInsertSQL(k), args...); err != nil {
			what := "create runs"
			if k == 1 {
				what = fmt.Sprintf("create run %q", in[rest[0]].ID)
			}
			return nil, nil, nil, c.db.mapErr(err, what)
		}
		rest = rest[k:]
	}
	counted := make([]store.Run, 0, len(ins))
	for _, i := range ins {
		runs[i], created[i] = createdRun(in[i], cols[i], now, c.db.d), true
		counted = append(counted, runs[i])
		if !hooked || !autos[autoKey{in[i].OrganizationID, in[i].WorkspaceID, in[i].AutomationID}].webhooks {
			continue
		}
		// As the trigger runs_webhook_insert of migration 00019 did.
		if _, err := c.exec(ctx, `INSERT INTO webhook_deliveries (id, organization_id, workspace_id, webhook_id, event_type, automation_id, run_id, resource_state,
			next_attempt_time, create_time, update_time)
			SELECT lower(hex(randomblob(16))), w.organization_id, w.workspace_id, w.id, 'run.state_changed', ?, ?, ?, ?, ?, ?
			FROM webhooks w WHERE w.organization_id = ? AND w.workspace_id = ? AND w.runs = 1`,
			in[i].AutomationID, in[i].ID, cols[i].state, now, now, now, in[i].OrganizationID, in[i].WorkspaceID); err != nil {
			return nil, nil, nil, c.db.mapErr(err, "record the run's webhook deliveries")
		}
	}
	if err := c.countCreatedRuns(ctx, counted); err != nil {
		return nil, nil, nil, err
	}
	for i, j := range sameAs {
		if j >= 0 {
			runs[i], created[i], errs[i] = runs[j], false, errs[j]
		}
	}
	return runs, created, errs, nil
}

// runsOfRequests adds to existing the runs of an organization holding one
// of k request ids (args: the organization, then the request ids).
func (c conn) runsOfRequests(ctx context.Context, k int, args []any, existing map[reqKey]store.Run) error {
	rows, err := c.query(ctx, runSelect+` WHERE r.organization_id = ? AND r.request_id IN ( `+placeholders(k)+`) AND r.request_id != ''`, args...)
	if err != nil {
		return c.db.mapErr(err, "create runs")
	}
	defer func() { _ = rows.Close() }()
	for rows.Next() {
		r, err := scanRun(rows)
		if err != nil {
			return c.db.mapErr(err, "create runs")
		}
		existing[reqKey{r.OrganizationID, r.RequestID}] = r
	}
	return c.db.mapErr(rows.Err(), "create runs")
}

// reqKey is a request id of an organization.
type reqKey struct{ org, req string }

// maxCreateChunk is the most runs one INSERT of createRunsSQLite writes
// (28 arguments each; SQLite allows 32,766 per statement).
const maxCreateChunk = 64

// chunkSize is the largest power of two up to n and limit (a power of
// two; n > 0): statements are made for these sizes only, so that a handful
// of texts are prepared and cached (the request ids' IN list is written
// "IN ( ?" to be cached: see cacheable).
func chunkSize(n, limit int) int {
	if n >= limit {
		return limit
	}
	return 1 << (bits.Len(uint(n)) - 1)
}

const runInsertCols = 28

var runInsertTexts sync.Map // chunk size → INSERT text

// runInsertSQL is the INSERT of k runs.
func runInsertSQL(k int) string {
	if s, ok := runInsertTexts.Load(k); ok {
		return s.(string)
	}
	var b strings.Builder
	b.WriteString(`INSERT INTO runs (id, organization_id, workspace_id, automation_id, name, stage, stage_version, steps,
		user_inputs, invocation_details, file_ids, previous_run, request_id, state, state_time, step_inputs, create_time, update_time,
		outputs, step, error_id, description, loc_start, loc_end, lease_owner, lease_expire_time, parent_run, history_events) VALUES `)
	row := "(" + placeholders(runInsertCols) + ")"
	for i := range k {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(row)
	}
	s := b.String()
	runInsertTexts.Store(k, s)
	return s
}

// eventRow is an engine history entry of a run created completed or failed.
type eventRow struct {
	runID string
	e     store.RunEvent
}

// insertEventRows writes the history entries of several runs, in order, in
// INSERTs of 256, 128, …, 1 rows.
func (c conn) insertEventRows(ctx context.Context, evs []eventRow, now time.Time) error {
	return c.insertEvents(ctx, len(evs), func(i int) (string, store.RunEvent) { return evs[i].runID, evs[i].e }, now,
		func(left int) int { return chunkSize(left, 256) })
}
