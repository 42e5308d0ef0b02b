package sqlstore

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/proserun/prose/store"
)

// createRuns is CreateRuns (and CreateRun) on either database: what
// creating each run of in does, in order, with the statements made once
// per batch instead of once per run. The results are those of creating
// in[0], in[1], … one after the other:
//
//   - the request ids already used are looked up per organization; a
//     request id used twice in the batch gives the second run the first
//     one's result (created false);
//   - each automation of the batch is read once, with whether its
//     workspace has a webhook taking runs and whether a run of its
//     organization waits in the queue: a run to be created executed or
//     leased is created pending when one of its organization waits or an
//     earlier run of the batch of its organization is created pending (it
//     must not go before them; another organization's queue does not hold
//     it back, docs/fairness.md);
//   - the runs, the engine's history entries of those created completed
//     or failed and the webhook deliveries of their creation are written
//     by the statements the dialect renders (createDialect);
//   - a run those statements skipped (PostgreSQL: its request id was
//     inserted meanwhile by another transaction) gets the run holding its
//     request id, or its own error;
//   - the insights' counts once (countCreatedRuns).
//
// Only the SQL differs between the databases. On SQLite c is the writer's
// transaction; on PostgreSQL the runs are written by one statement, atomic
// by itself (see CreateRuns). err is a failure after which nothing may be
// committed.
func (c conn) createRuns(ctx context.Context, in []store.Run, now time.Time) (runs []store.Run, created []bool, errs []error, err error) {
	b := newCreateBatch(in, now)
	if err := c.readRequestRuns(ctx, b); err != nil {
		return nil, nil, nil, err
	}
	if err := c.readAutomations(ctx, b); err != nil {
		return nil, nil, nil, err
	}
	b.decide()
	skipped, err := c.writeCreated(ctx, b)
	if err != nil {
		return nil, nil, nil, err
	}
	counted := make([]store.Run, 0, len(b.ins))
	for _, i := range b.ins {
		if skipped[b.in[i].ID] {
			c.resolveSkipped(ctx, b, i)
			continue
		}
		b.runs[i], b.created[i] = createdRun(b.in[i], b.cols[i], now, c.db.d), true
		counted = append(counted, b.runs[i])
	}
	if err := c.countCreatedRuns(ctx, counted); err != nil {
		return nil, nil, nil, err
	}
	for i, j := range b.sameAs {
		if j >= 0 {
			b.runs[i], b.created[i], b.errs[i] = b.runs[j], false, b.errs[j]
		}
	}
	return b.runs, b.created, b.errs, nil
}

// createBatch is the state of one createRuns call.
type createBatch struct {
	in   []store.Run // a copy: ids and pending states are set in it
	now  time.Time
	runs []store.Run
	// created and errs are the results; sameAs[i] is the index whose result
	// run i shares (its request id came first there), or -1.
	created []bool
	errs    []error
	sameAs  []int
	live    []bool // passed checkCreateState and is the first of its request id

	orgs     []string            // the organizations with request ids, in order
	byOrg    map[string][]string // their request ids
	existing map[reqKey]store.Run
	autos    map[autoKey]autoRow
	queued   map[string]bool // the organizations a run of which waits in the queue

	ins  []int        // indexes of the runs to insert, in order
	cols []createCols // their state-dependent columns
}

// reqKey is a request id of an organization.
type reqKey struct{ org, req string }

// autoKey names an automation; autoRow is what createRuns reads of it.
type autoKey struct{ org, ws, id string }

type autoRow struct {
	found, deleted, webhooks bool
	version, published       int64
}

func newCreateBatch(in []store.Run, now time.Time) *createBatch {
	n := len(in)
	b := &createBatch{
		in: append([]store.Run(nil), in...), now: now,
		runs: make([]store.Run, n), created: make([]bool, n), errs: make([]error, n), sameAs: make([]int, n), live: make([]bool, n),
		byOrg: map[string][]string{}, existing: map[reqKey]store.Run{}, autos: map[autoKey]autoRow{}, cols: make([]createCols, n),
		queued: map[string]bool{},
	}
	first := map[reqKey]int{}
	for i, r := range b.in {
		b.sameAs[i] = -1
		if err := checkCreateState(r); err != nil {
			b.errs[i] = err
			continue
		}
		if rq := r.RequestID; rq != "" {
			k := reqKey{r.OrganizationID, rq}
			if j, ok := first[k]; ok {
				b.sameAs[i] = j
				continue
			}
			first[k] = i
			if _, ok := b.byOrg[k.org]; !ok {
				b.orgs = append(b.orgs, k.org)
			}
			b.byOrg[k.org] = append(b.byOrg[k.org], rq)
		}
		b.live[i] = true
	}
	return b
}

// holder is the run already holding run i's request id, if any.
func (b *createBatch) holder(i int) (store.Run, bool) {
	r := b.in[i]
	if r.RequestID == "" {
		return store.Run{}, false
	}
	x, ok := b.existing[reqKey{r.OrganizationID, r.RequestID}]
	return x, ok
}

// readRequestRuns reads the runs already holding a request id of the
// batch, in the chunks the dialect takes.
func (c conn) readRequestRuns(ctx context.Context, b *createBatch) error {
	d := c.db.createDialect()
	for _, org := range b.orgs {
		for reqs := b.byOrg[org]; len(reqs) > 0; {
			k := d.requestChunk(len(reqs))
			q, args := d.requestRuns(org, reqs[:k])
			if err := c.scanRequestRuns(ctx, q, args, b.existing); err != nil {
				return err
			}
			reqs = reqs[k:]
		}
	}
	return nil
}

func (c conn) scanRequestRuns(ctx context.Context, q string, args []any, existing map[reqKey]store.Run) error {
	rows, err := c.query(ctx, q, args...)
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

// readAutomations reads each automation of the runs to insert once (an
// automation not read is not found), and whether a run of its organization
// waits in the queue.
func (c conn) readAutomations(ctx context.Context, b *createBatch) error {
	var keys []autoKey
	for i, r := range b.in {
		if _, held := b.holder(i); !b.live[i] || held {
			continue
		}
		k := autoKey{r.OrganizationID, r.WorkspaceID, r.AutomationID}
		if _, seen := b.autos[k]; !seen {
			b.autos[k] = autoRow{} // not found unless read
			keys = append(keys, k)
		}
	}
	d := c.db.createDialect()
	for len(keys) > 0 {
		k := d.automationChunk(len(keys))
		q, args := d.automations(keys[:k])
		if err := c.scanAutomations(ctx, q, args, b); err != nil {
			return err
		}
		keys = keys[k:]
	}
	return nil
}

func (c conn) scanAutomations(ctx context.Context, q string, args []any, b *createBatch) error {
	rows, err := c.query(ctx, q, args...)
	if err != nil {
		return c.db.mapErr(err, "create runs: read the automations")
	}
	defer func() { _ = rows.Close() }()
	for rows.Next() {
		var k autoKey
		a := autoRow{found: true}
		var queued bool
		if err := rows.Scan(&k.org, &k.ws, &k.id, &a.version, &a.published, &a.deleted, &a.webhooks, &queued); err != nil {
			return c.db.mapErr(err, "create runs: read the automations")
		}
		b.autos[k] = a
		b.queued[k.org] = b.queued[k.org] || queued
	}
	return c.db.mapErr(rows.Err(), "create runs: read the automations")
}

// decide settles each live run's fate, in order: the run holding its
// request id, its automation's error, or an insert (b.ins) in the state it
// is created in.
func (b *createBatch) decide() {
	queued := b.queued // from here on, earlier runs of the batch included
	for i := range b.in {
		if !b.live[i] {
			continue
		}
		if x, ok := b.holder(i); ok {
			b.runs[i] = x
			continue
		}
		r := b.in[i]
		a := b.autos[autoKey{r.OrganizationID, r.WorkspaceID, r.AutomationID}]
		if !a.found {
			b.errs[i] = automationErr(r, store.ErrNotFound)
			continue
		}
		if runErr := stageErr(r, a.version, a.published, a.deleted); runErr != nil {
			b.errs[i] = runErr
			continue
		}
		if r.ID == "" {
			r.ID = store.NewOrderedID(b.now)
		}
		if r.FileIDs == nil {
			r.FileIDs = []string{}
		}
		if r.State != store.RunPending && r.State != "" && queued[r.OrganizationID] {
			r = asPending(r)
		}
		ci := createInsert(r)
		queued[r.OrganizationID] = queued[r.OrganizationID] || ci.state == string(store.RunPending)
		b.in[i], b.cols[i] = r, ci
		b.ins = append(b.ins, i)
	}
}

// hooked reports whether run i's workspace has a webhook taking runs.
func (b *createBatch) hooked(i int) bool {
	r := b.in[i]
	return b.autos[autoKey{r.OrganizationID, r.WorkspaceID, r.AutomationID}].webhooks
}

// writeCreated runs the dialect's statements that write the batch's runs
// and returns the ids of the runs they skipped.
func (c conn) writeCreated(ctx context.Context, b *createBatch) (skipped map[string]bool, err error) {
	if len(b.ins) == 0 {
		return nil, nil
	}
	d := c.db.createDialect()
	if err := d.allocate(ctx, c, b); err != nil {
		return nil, err
	}
	for _, st := range d.writes(b) {
		if !st.returnsIDs {
			if _, err := c.exec(ctx, st.q, st.args...); err != nil {
				return nil, c.db.mapErr(err, st.context())
			}
			continue
		}
		ids, err := c.queryIDs(ctx, st.q, st.args)
		if err != nil {
			return nil, c.db.mapErr(err, st.context())
		}
		for _, i := range b.ins {
			n, ok := ids[b.in[i].ID]
			b.cols[i].number = max(b.cols[i].number, n)
			if !ok {
				if skipped == nil {
					skipped = map[string]bool{}
				}
				skipped[b.in[i].ID] = true
			}
		}
	}
	return skipped, nil
}

// queryIDs runs a write returning the ids and numbers of the runs it
// inserted.
func (c conn) queryIDs(ctx context.Context, q string, args []any) (map[string]int64, error) {
	rows, err := c.query(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer func() { _ = rows.Close() }()
	ids := map[string]int64{}
	for rows.Next() {
		var id string
		var n int64
		if err := rows.Scan(&id, &n); err != nil {
			return nil, err
		}
		ids[id] = n
	}
	return ids, rows.Err()
}

// byAutomation groups the indexes of b.ins by automation, each group in
// batch order, the groups in the order of their automations' keys.
func (b *createBatch) byAutomation() [][]int {
	groups := map[autoKey][]int{}
	var keys []autoKey
	for _, i := range b.ins {
		r := b.in[i]
		k := autoKey{r.OrganizationID, r.WorkspaceID, r.AutomationID}
		if _, ok := groups[k]; !ok {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], i)
	}
	slices.SortFunc(keys, func(x, y autoKey) int {
		return cmp.Or(cmp.Compare(x.org, y.org), cmp.Compare(x.ws, y.ws), cmp.Compare(x.id, y.id))
	})
	out := make([][]int, len(keys))
	for j, k := range keys {
		out[j] = groups[k]
	}
	return out
}

// resolveSkipped gives run i, which the write skipped, its result: no run
// held its request id when the batch was read, so another transaction
// inserted that request id meanwhile (its run is the result), or its
// automation changed or went away since.
func (c conn) resolveSkipped(ctx context.Context, b *createBatch, i int) {
	r := b.in[i]
	if r.RequestID != "" {
		got, err := scanRun(c.queryRow(ctx, runSelect+` WHERE r.organization_id = ? AND r.request_id = ? AND r.request_id != ''`, r.OrganizationID, r.RequestID))
		if err == nil {
			b.runs[i] = got
			return
		}
		if !isNoRows(err) {
			b.errs[i] = c.db.mapErr(err, "find run by request id")
			return
		}
	}
	runErr, err := c.checkAutomation(ctx, r)
	switch {
	case err != nil:
		b.errs[i] = err
	case runErr != nil:
		b.errs[i] = runErr
	default:
		b.errs[i] = fmt.Errorf("create run: request id %q is being used by a concurrent request: %w", r.RequestID, store.ErrConflict)
	}
}
