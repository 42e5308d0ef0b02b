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

// createDialect renders the statements of createRuns for one database. The
// work is the same; what differs is the form that is fast there:
//
//   - SQLite (one writer, in process, statements prepared and cached):
//     short statements of a bounded set of texts, multi-row VALUES of 64,
//     32, …, 1 runs and 256, …, 1 history entries, run in the writer's
//     transaction, and the webhook deliveries written here (migration
//     00038 dropped the row trigger that made an INSERT … SELECT per run);
//   - PostgreSQL (every statement a round trip): one statement per step
//     whatever the batch's size, the rows travelling as arrays (unnest) so
//     that the text is the same for every size and pgx keeps it prepared;
//     the runs and their history entries go in one INSERT … ON CONFLICT
//     DO NOTHING RETURNING id (a request id inserted meanwhile by another
//     transaction skips its run), and a statement trigger writes the
//     webhook deliveries (migration 00035).
type createDialect interface {
	// requestChunk is how many of n request ids one requestRuns takes.
	requestChunk(n int) int
	// requestRuns selects the runs (runCols) of org holding one of reqs.
	requestRuns(org string, reqs []string) (string, []any)
	// automationChunk is how many of n automations one automations takes.
	automationChunk(n int) int
	// automations selects, for each of keys that exists: its names,
	// version, published version, whether it is deleted, whether its
	// workspace has a webhook taking runs, and whether a run of its
	// organization waits in the queue.
	automations(keys []autoKey) (string, []any)
	// allocate gives the runs b.ins their numbers (createCols.number)
	// where the writes do not (their RETURNING does).
	allocate(ctx context.Context, c conn, b *createBatch) error
	// writes are the statements that write the runs b.ins, in order.
	writes(b *createBatch) []createStmt
}

// createStmt is a statement of createDialect.writes. returnsIDs: it
// returns the ids and numbers of the runs it inserted (the others were
// skipped).
type createStmt struct {
	q          string
	args       []any
	returnsIDs bool
	what       string // the error's context
	runID      string // the one run it inserts, named in the error's context
}

// context is the context of the statement's error.
func (st createStmt) context() string {
	if st.runID != "" {
		return fmt.Sprintf("%s %q", st.what, st.runID)
	}
	return st.what
}

func (db *DB) createDialect() createDialect {
	if db.d == store.Postgres {
		return pgCreate{}
	}
	return sqliteCreate{}
}

// automationsSelect is the select list of createDialect.automations
// (webhooks.runs: w.runs is the boolean, or 1, of the dialect).
func automationsSelect(webhookRuns string) string {
	return `SELECT a.organization_id, a.workspace_id, a.id, a.version, a.published_version, a.delete_time IS NOT NULL,
		EXISTS (SELECT 1 FROM webhooks w WHERE w.organization_id = a.organization_id AND w.workspace_id = a.workspace_id AND ` + webhookRuns + `),
		EXISTS (SELECT 1 FROM runs q WHERE q.organization_id = a.organization_id AND ` + queuedIn("q.state") + `)`
}

const runInsertColumns = `id, organization_id, workspace_id, automation_id, name, stage, stage_version, steps,
		user_inputs, invocation_details, file_ids, previous_run, request_id, state, state_time, step_inputs, create_time, update_time,
		outputs, step, error_id, description, loc_start, loc_end, lease_owner, lease_expire_time, parent_run, history_events, number`

const eventInsertColumns = `run_id, create_time, kind, node_kind, state, reason, ref, loc_start, loc_end, data`

// sqliteCreate: see createDialect.
type sqliteCreate struct{}

// maxCreateChunk is the most runs one INSERT on SQLite writes (28
// arguments each; SQLite allows 32,766 per statement), and the most
// request ids one look-up takes.
const maxCreateChunk = 64

func (sqliteCreate) requestChunk(n int) int { return chunkSize(n, maxCreateChunk) }

// The IN list is written "IN ( ?" to be cached (see cacheable).
func (sqliteCreate) requestRuns(org string, reqs []string) (string, []any) {
	args := make([]any, 0, len(reqs)+1)
	args = append(args, org)
	for _, rq := range reqs {
		args = append(args, rq)
	}
	return runSelect + ` WHERE r.organization_id = ? AND r.request_id IN ( ` + placeholders(len(reqs)) + `) AND r.request_id != ''`, args
}

// One automation a statement: one text, prepared once (a batch usually
// names one or a few).
func (sqliteCreate) automationChunk(int) int { return 1 }

var sqliteAutomationSQL = automationsSelect("w.runs = 1") + ` FROM automations a WHERE a.organization_id = ? AND a.workspace_id = ? AND a.id = ?`

func (sqliteCreate) automations(keys []autoKey) (string, []any) {
	return sqliteAutomationSQL, []any{keys[0].org, keys[0].ws, keys[0].id}
}

// writes: the history entries first (their foreign key is deferred, and
// the entry of the state a run is created in, written by the row trigger
// runs_history_insert, comes last for each run), then the runs, then the
// webhook deliveries of their creation (one per run and webhook of its
// workspace taking runs, as the trigger runs_webhook_insert of migration
// 00019 wrote them).
func (sqliteCreate) writes(b *createBatch) []createStmt {
	var sts []createStmt
	var evs []eventRow
	for _, i := range b.ins {
		if b.cols[i].events > 0 {
			for _, e := range b.in[i].Events {
				evs = append(evs, eventRow{runID: b.in[i].ID, e: e})
			}
		}
	}
	for len(evs) > 0 {
		k := chunkSize(len(evs), 256)
		args := make([]any, 0, k*eventInsertCols)
		for _, ev := range evs[:k] {
			args = appendEventArgs(args, ev, b.now)
		}
		sts = append(sts, createStmt{q: batchInsertSQL(&eventInsertTexts, "run_events", eventInsertColumns, eventInsertCols, k), args: args,
			what: "record the run's history"})
		evs = evs[k:]
	}
	for rest := b.ins; len(rest) > 0; {
		k := chunkSize(len(rest), maxCreateChunk)
		args := make([]any, 0, k*runInsertCols)
		for _, i := range rest[:k] {
			r, ci, now := b.in[i], b.cols[i], b.now
			args = append(args, r.ID, r.OrganizationID, r.WorkspaceID, r.AutomationID, r.Name, string(r.Stage), r.StageVersion, r.Steps,
				r.UserInputs, r.InvocationDetails, jsonArg(r.FileIDs), r.PreviousRun, r.RequestID, ci.state, now, r.StepInputs, now, now,
				ci.outputs, ci.step, ci.errorID, ci.description, ci.locStart, ci.locEnd, ci.leaseOwner, ci.leaseExpire, r.ParentRun, ci.events, ci.number)
		}
		st := createStmt{q: batchInsertSQL(&runInsertTexts, "runs", runInsertColumns, runInsertCols, k), args: args, what: "create runs"}
		if k == 1 {
			st.what, st.runID = "create run", b.in[rest[0]].ID
		}
		sts = append(sts, st)
		rest = rest[k:]
	}
	for _, i := range b.ins {
		if !b.hooked(i) {
			continue
		}
		r, now := b.in[i], b.now
		sts = append(sts, createStmt{q: `INSERT INTO webhook_deliveries (id, organization_id, workspace_id, webhook_id, event_type, automation_id, run_id, resource_state,
			next_attempt_time, create_time, update_time)
			SELECT lower(hex(randomblob(16))), w.organization_id, w.workspace_id, w.id, 'run.state_changed', ?, ?, ?, ?, ?, ?
			FROM webhooks w WHERE w.organization_id = ? AND w.workspace_id = ? AND w.runs = 1`,
			args: []any{r.AutomationID, r.ID, b.cols[i].state, now, now, now, r.OrganizationID, r.WorkspaceID},
			what: "record the run's webhook deliveries"})
	}
	return sts
}

// sqliteLastNumberSQL reads the last number given to an automation's runs
// (runs are never deleted but with their automation): one probe of the
// index runs_number.
const sqliteLastNumberSQL = `SELECT COALESCE(MAX(number), 0) FROM runs
	WHERE organization_id = ? AND workspace_id = ? AND automation_id = ? AND number > 0`

// allocate: one read per automation of the batch, in the writer's
// transaction (the one writer orders the batches, so the next numbers are
// those after the last one given). It reads the runs' own index rather
// than raising a counter row: a batch of one run wrote a page more that
// way (BENCHMARKS.md, "Run numbers").
func (sqliteCreate) allocate(ctx context.Context, c conn, b *createBatch) error {
	for _, g := range b.byAutomation() {
		r := b.in[g[0]]
		var last int64
		if err := c.queryRow(ctx, sqliteLastNumberSQL, r.OrganizationID, r.WorkspaceID, r.AutomationID).Scan(&last); err != nil {
			return c.db.mapErr(err, "number the runs")
		}
		for j, i := range g {
			b.cols[i].number = last + 1 + int64(j)
		}
	}
	return nil
}

// chunkSize is the largest power of two up to n and limit (a power of
// two; n > 0): statements are made for these sizes only, so that a handful
// of texts are prepared and cached.
func chunkSize(n, limit int) int {
	if n >= limit {
		return limit
	}
	return 1 << (bits.Len(uint(n)) - 1)
}

const (
	runInsertCols   = 29
	eventInsertCols = 10
)

var runInsertTexts, eventInsertTexts sync.Map // chunk size → INSERT text

// batchInsertSQL is the INSERT of k rows of n columns into table, its
// text kept in texts.
func batchInsertSQL(texts *sync.Map, table, columns string, n, k int) string {
	if s, ok := texts.Load(k); ok {
		return s.(string)
	}
	var b strings.Builder
	b.WriteString(`INSERT INTO ` + table + ` (` + columns + `) VALUES `)
	row := "(" + placeholders(n) + ")"
	for i := range k {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(row)
	}
	s := b.String()
	texts.Store(k, s)
	return s
}

// eventRow is an engine history entry of a run created completed or failed.
type eventRow struct {
	runID string
	e     store.RunEvent
}

// eventValues is ev's kind and time (engine and now unless given).
func eventValues(ev eventRow, now time.Time) (store.RunEventKind, time.Time) {
	kind, at := ev.e.Kind, ev.e.Time
	if kind == "" {
		kind = store.RunEventEngine
	}
	if at.IsZero() {
		at = now
	}
	return kind, at
}

func appendEventArgs(args []any, ev eventRow, now time.Time) []any {
	e := ev.e
	kind, at := eventValues(ev, now)
	return append(args, ev.runID, at, string(kind), e.NodeKind, e.State, e.Reason, e.Ref, e.Location.Start, e.Location.End, e.Data)
}

// pgCreate: see createDialect.
type pgCreate struct{}

func (pgCreate) requestChunk(n int) int { return n }

// A probe of the unique index per request id (LATERAL): "request_id =
// ANY(…)" was planned as a scan of all the organization's runs, filtered
// (the statistics of a table growing fast are stale), 7–40 ms a batch at
// 6,400 runs.
const pgRequestRunsSQL = `SELECT ` + runCols + ` FROM unnest(?::text[]) AS q(request_id) CROSS JOIN LATERAL (
		SELECT * FROM runs x WHERE x.organization_id = ? AND x.request_id = q.request_id AND x.request_id != '' LIMIT 1
	) r`

func (pgCreate) requestRuns(org string, reqs []string) (string, []any) {
	return pgRequestRunsSQL, []any{reqs, org}
}

func (pgCreate) automationChunk(n int) int { return n }

var pgAutomationsSQL = automationsSelect("w.runs") + `
	FROM unnest(?::text[], ?::text[], ?::text[]) AS k(organization_id, workspace_id, id)
	JOIN automations a ON a.organization_id = k.organization_id AND a.workspace_id = k.workspace_id AND a.id = k.id`

func (pgCreate) automations(keys []autoKey) (string, []any) {
	orgs, wss, ids := make([]string, len(keys)), make([]string, len(keys)), make([]string, len(keys))
	for i, k := range keys {
		orgs[i], wss[i], ids[i] = k.org, k.ws, k.id
	}
	return pgAutomationsSQL, []any{orgs, wss, ids}
}

// pgCreateSQL numbers the runs, writes them and, for those it inserted,
// their history entries (row triggers, the entry of the state a run is
// created in, fire at the end of the statement: these come first). The
// numbers: each automation's counter row (run_counters) is raised once by
// its runs in the batch, in key order (no deadlock between batches naming
// the same automations); its lock, held to the commit, orders concurrent
// creates of an automation across replicas, and its new value is the last
// number of the batch's runs.
const pgCreateSQL = `WITH u AS (
		SELECT * FROM unnest(?::text[], ?::text[], ?::text[], ?::text[], ?::text[], ?::text[], ?::bigint[], ?::bytea[], ?::bytea[],
			?::bytea[], ?::text[], ?::text[], ?::text[], ?::bytea[],
			?::text[], ?::bytea[], ?::bigint[], ?::text[], ?::text[], ?::bigint[], ?::bigint[], ?::text[], ?::timestamptz[], ?::text[],
			?::bigint[])
		WITH ORDINALITY AS u(id, organization_id, workspace_id, automation_id, name, stage, stage_version, steps, user_inputs,
			invocation_details, file_ids, previous_run, request_id, step_inputs,
			state, outputs, step, error_id, description, loc_start, loc_end, lease_owner, lease_expire_time, parent_run, history_events, ord)
	), counts AS (
		SELECT organization_id, workspace_id, automation_id, count(*) AS n FROM u GROUP BY organization_id, workspace_id, automation_id
	), alloc AS (
		INSERT INTO run_counters (organization_id, workspace_id, automation_id, last_number)
		SELECT organization_id, workspace_id, automation_id, n FROM counts ORDER BY organization_id, workspace_id, automation_id
		ON CONFLICT (organization_id, workspace_id, automation_id) DO UPDATE SET last_number = run_counters.last_number + excluded.last_number
		RETURNING organization_id, workspace_id, automation_id, last_number
	), ins AS (
		INSERT INTO runs (` + runInsertColumns + `)
		SELECT u.id, u.organization_id, u.workspace_id, u.automation_id, u.name, u.stage, u.stage_version, u.steps,
			u.user_inputs, u.invocation_details, u.file_ids, u.previous_run, u.request_id, u.state, ?, u.step_inputs, ?, ?,
			u.outputs, u.step, u.error_id, u.description, u.loc_start, u.loc_end, u.lease_owner, u.lease_expire_time, u.parent_run, u.history_events,
			a.last_number - c.n + row_number() OVER (PARTITION BY u.organization_id, u.workspace_id, u.automation_id ORDER BY u.ord)
		FROM u JOIN counts c USING (organization_id, workspace_id, automation_id)
		JOIN alloc a USING (organization_id, workspace_id, automation_id)
		ORDER BY u.ord
		ON CONFLICT (organization_id, request_id) WHERE request_id != '' DO NOTHING
		RETURNING id, number
	), history AS (
		INSERT INTO run_events (` + eventInsertColumns + `)
		SELECT e.run_id, e.create_time, e.kind, e.node_kind, e.state, e.reason, e.ref, e.loc_start, e.loc_end, e.data
		FROM unnest(?::text[], ?::timestamptz[], ?::text[], ?::text[], ?::text[], ?::text[], ?::text[], ?::bigint[], ?::bigint[], ?::bytea[])
			WITH ORDINALITY AS e(run_id, create_time, kind, node_kind, state, reason, ref, loc_start, loc_end, data, ord)
		JOIN ins ON ins.id = e.run_id
		ORDER BY e.ord
	)
	SELECT id, number FROM ins`

// allocate: the write statement numbers the runs.
func (pgCreate) allocate(context.Context, conn, *createBatch) error { return nil }

func (pgCreate) writes(b *createBatch) []createStmt {
	n := len(b.ins)
	strs := func() []string { return make([]string, 0, n) }
	bytes := func() [][]byte { return make([][]byte, 0, n) }
	ints := func() []int64 { return make([]int64, 0, n) }
	var (
		ids, orgs, wss, autos, names, stages, files, prevs, reqs = strs(), strs(), strs(), strs(), strs(), strs(), strs(), strs(), strs()
		states, errIDs, descs, owners, parents                   = strs(), strs(), strs(), strs(), strs()
		steps, userIn, inv, stepInputs, outputs                  = bytes(), bytes(), bytes(), bytes(), bytes()
		versions, stepNs, locStarts, locEnds, histories          = ints(), ints(), ints(), ints(), ints()
		expires                                                  = make([]time.Time, 0, n)
		ev                                                       pgEvents
	)
	for _, i := range b.ins {
		r, ci := b.in[i], b.cols[i]
		ids, orgs, wss, autos = append(ids, r.ID), append(orgs, r.OrganizationID), append(wss, r.WorkspaceID), append(autos, r.AutomationID)
		names, stages, versions = append(names, r.Name), append(stages, string(r.Stage)), append(versions, r.StageVersion)
		steps, userIn, inv = append(steps, r.Steps), append(userIn, r.UserInputs), append(inv, r.InvocationDetails)
		files, prevs, reqs, stepInputs = append(files, jsonArg(r.FileIDs)), append(prevs, r.PreviousRun), append(reqs, r.RequestID), append(stepInputs, r.StepInputs)
		states, outputs, errIDs, descs, owners = append(states, ci.state), append(outputs, ci.outputs), append(errIDs, ci.errorID), append(descs, ci.description), append(owners, ci.leaseOwner)
		stepNs, locStarts, locEnds, expires = append(stepNs, int64(ci.step)), append(locStarts, ci.locStart), append(locEnds, ci.locEnd), append(expires, ci.leaseExpire)
		parents, histories = append(parents, r.ParentRun), append(histories, int64(ci.events))
		if ci.events > 0 {
			for _, e := range r.Events {
				ev.add(eventRow{runID: r.ID, e: e}, b.now)
			}
		}
	}
	args := []any{ids, orgs, wss, autos, names, stages, versions, steps, userIn,
		inv, files, prevs, reqs, stepInputs, states, outputs, stepNs, errIDs, descs, locStarts, locEnds, owners, expires, parents, histories,
		b.now, b.now, b.now}
	args = append(args, ev.args()...)
	return []createStmt{{q: pgCreateSQL, args: args, returnsIDs: true, what: "create runs"}}
}

// pgEvents are history entries as the columns of an unnest.
type pgEvents struct {
	runs, kinds, nodeKinds, states, reasons, refs []string
	times                                         []time.Time
	starts, ends                                  []int64
	data                                          [][]byte
}

func (p *pgEvents) add(ev eventRow, now time.Time) {
	e := ev.e
	kind, at := eventValues(ev, now)
	p.runs, p.times, p.kinds, p.nodeKinds = append(p.runs, ev.runID), append(p.times, at), append(p.kinds, string(kind)), append(p.nodeKinds, e.NodeKind)
	p.states, p.reasons, p.refs = append(p.states, e.State), append(p.reasons, e.Reason), append(p.refs, e.Ref)
	p.starts, p.ends, p.data = append(p.starts, e.Location.Start), append(p.ends, e.Location.End), append(p.data, e.Data)
}

func (p *pgEvents) args() []any {
	return []any{p.runs, p.times, p.kinds, p.nodeKinds, p.states, p.reasons, p.refs, p.starts, p.ends, p.data}
}
