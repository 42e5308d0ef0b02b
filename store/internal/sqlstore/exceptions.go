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
	"github.com/proserun/prose/store/pagination"
	"github.com/proserun/prose/store/statemachine"
)

func isNoRows(err error) bool { return errors.Is(err, sql.ErrNoRows) }

const excCols = `e.organization_id, e.workspace_id, e.id, e.run_id, e.automation_id, e.stage, e.step, e.group_id, e.message,
	e.description, e.loc_start, e.loc_end, e.details, e.state, e.assignee, e.resolver, e.resolution_guide_entry, e.extra, e.create_time, e.update_time,
	COALESCE((SELECT rn.number FROM runs rn WHERE rn.id = e.run_id), 0)`

const excSelect = `SELECT ` + excCols + ` FROM exceptions e`

func scanException(s interface{ Scan(...any) error }) (store.Exception, error) {
	var e store.Exception
	var stage, state string
	err := s.Scan(&e.OrganizationID, &e.WorkspaceID, &e.ID, &e.RunID, &e.AutomationID, &stage, &e.Step, &e.Group, &e.Message,
		&e.Description, &e.Location.Start, &e.Location.End, &e.Details, &state, &e.Assignee, &e.Resolver, &e.ResolutionGuideEntry, jsonCol{&e.Extra},
		ts{&e.CreateTime}, ts{&e.UpdateTime}, &e.RunNumber)
	e.Stage, e.State = store.Stage(stage), store.ExceptionState(state)
	return e, err
}

func (c conn) insertException(ctx context.Context, e store.Exception, now time.Time) error {
	if e.State == "" {
		e.State = store.ExceptionPending
	}
	if e.Extra == nil {
		e.Extra = map[string]string{}
	}
	_, err := c.exec(ctx, `INSERT INTO exceptions (organization_id, workspace_id, id, run_id, automation_id, stage, step, group_id,
		message, description, loc_start, loc_end, details, state, assignee, resolver, resolution_guide_entry, extra, create_time, update_time)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		e.OrganizationID, e.WorkspaceID, e.ID, e.RunID, e.AutomationID, string(e.Stage), e.Step, e.Group,
		e.Message, e.Description, e.Location.Start, e.Location.End, e.Details, string(e.State), e.Assignee, e.Resolver,
		e.ResolutionGuideEntry, jsonArg(e.Extra), now, now)
	return c.db.mapErr(err, fmt.Sprintf("create exception %q", e.ID))
}

func (c conn) getException(ctx context.Context, org, ws, id string, lock bool) (store.Exception, error) {
	q := excSelect + ` WHERE e.organization_id = ? AND e.workspace_id = ? AND e.id = ?`
	if lock {
		q += c.db.forUpdate()
	}
	e, err := scanException(c.queryRow(ctx, q, org, ws, id))
	return e, c.db.mapErr(err, fmt.Sprintf("exception %q in workspace %q", id, ws))
}

// GetException implements store.Exceptions.
func (db *DB) GetException(ctx context.Context, org, ws, id string) (store.Exception, error) {
	return db.reader().getException(ctx, org, ws, id, false)
}

var exceptionSort = map[string]sortCol{
	"create_time": {Field: "create_time", Col: "e.create_time", Kind: keyTime},
}

// ListExceptions implements store.Exceptions.
func (db *DB) ListExceptions(ctx context.Context, req store.ListExceptionsRequest) (store.Page[store.Exception], int, error) {
	var zero store.Page[store.Exception]
	if req.Skip < 0 {
		return zero, 0, fmt.Errorf("%w: skip must not be negative", store.ErrInvalidArgument)
	}
	ks, err := newKeyset(nil, store.OrderBy{{Field: "create_time", Desc: true}}, exceptionSort, "e.id")
	if err != nil {
		return zero, 0, err
	}
	// The token is bound to the skip too (it must come with the same skip,
	// which is not applied again).
	key := store.FilterKey(req.Filter)
	if req.Skip > 0 {
		key = strings.TrimPrefix(key+" skip("+strconv.Itoa(req.Skip)+")", " ")
	}
	lq, err := newListKeyed(db.d, ks, exceptionFields, req.Filter, key, req.PageToken, req.PageSize, excSelect, "exceptions", req.OrganizationID, req.WorkspaceID)
	if err != nil {
		return zero, 0, err
	}
	lq.cond("e.organization_id = " + lq.a.Add(req.OrganizationID))
	lq.cond("e.workspace_id = " + lq.a.Add(req.WorkspaceID))
	if req.PageToken == "" {
		lq.offset = req.Skip
	}
	if p, ok := planExcRollup(req.Filter); ok && req.PageToken == "" && req.Skip >= rollupSkipMin {
		// Skip whole buckets by their counts: the page starts below a bucket
		// boundary, OFFSET only the rest.
		before, offset, none, err := db.excSkip(ctx, req.OrganizationID, req.WorkspaceID, p, req.Skip)
		if err != nil {
			return zero, 0, err
		}
		switch {
		case none:
			lq.cond("1 = 0")
		case !p.hiSet || before < p.hi:
			lq.cond("e.create_time < " + lq.a.Add(time.UnixMicro(before).UTC()))
		}
		lq.offset = offset
	}
	r := db.reader()
	rows, err := r.queryArgs(ctx, lq.sql(), lq.a)
	if err != nil {
		return zero, 0, db.mapErr(err, "list exceptions")
	}
	items, err := func() ([]store.Exception, error) {
		defer rows.Close()
		var items []store.Exception
		var used pageBytes
		for rows.Next() {
			e, err := scanException(rows)
			if err != nil {
				return nil, err
			}
			items = append(items, e)
			if used.full(e, len(items), int(db.pageBytes.Load())) {
				break // the page is full: the next token starts at the row past it
			}
		}
		return items, rows.Err()
	}()
	if err != nil {
		return zero, 0, err
	}
	total, err := db.countExceptions(ctx, req.OrganizationID, req.WorkspaceID, req.Filter)
	if err != nil {
		return zero, 0, err
	}
	return page(lq, items, func(e store.Exception) []string { return []string{timeKey(e.CreateTime), e.ID} }, int(db.pageBytes.Load())), total, nil
}

// where renders the workspace scope and filter of an exception query.
func excWhere(a *Args, org, ws string, f store.Filter) (string, error) {
	conds := []string{"e.organization_id = " + a.Add(org), "e.workspace_id = " + a.Add(ws)}
	if f != nil {
		c, err := exceptionFields.where(a, f)
		if err != nil {
			return "", err
		}
		conds = append(conds, c)
	}
	return strings.Join(conds, " AND "), nil
}

func (db *DB) countExceptions(ctx context.Context, org, ws string, f store.Filter) (int, error) {
	if p, ok := planExcRollup(f); ok {
		return db.countRollup(ctx, org, ws, p)
	}
	a := NewArgs(db.d)
	where, err := excWhere(a, org, ws, f)
	if err != nil {
		return 0, err
	}
	var n int
	if err := db.r.QueryRowContext(ctx, `SELECT count(*) FROM exceptions e WHERE `+where, a.Values...).Scan(&n); err != nil {
		return 0, db.mapErr(err, "count exceptions")
	}
	return n, nil
}

// countBy counts matching exceptions grouped by a column, paged by key.
func (db *DB) countBy(ctx context.Context, col, what string, req store.CountRequest) (store.CountPage, error) {
	var out store.CountPage
	size := pagination.Normalize(req.PageSize)
	bind := pagination.Bind("count-"+what, req.OrganizationID, req.WorkspaceID, "filter="+store.FilterKey(req.Filter))
	keys, err := pagination.Decode(req.PageToken, bind, 1)
	if err != nil {
		return out, err
	}
	a := NewArgs(db.d)
	var q string
	if p, ok := planExcRollup(req.Filter); ok {
		// The counts table's whole buckets plus the edges' rows, by key.
		parts, err := rollupParts(a, req.OrganizationID, req.WorkspaceID, p, col+` AS k`, col)
		if err != nil {
			return out, err
		}
		q = `SELECT k, sum(c) FROM (` + strings.Join(parts, ` UNION ALL `) + `) x GROUP BY k HAVING sum(c) > 0 ORDER BY k`
	} else {
		where, err := excWhere(a, req.OrganizationID, req.WorkspaceID, req.Filter)
		if err != nil {
			return out, err
		}
		// One grouped scan gives the page and the totals over all pages
		// (the keys are few: groups, automations), instead of a second scan
		// for the totals.
		q = `SELECT ` + col + `, count(*) FROM exceptions e WHERE ` + where + ` GROUP BY ` + col + ` ORDER BY ` + col
	}
	rows, err := db.r.QueryContext(ctx, q, a.Values...)
	if err != nil {
		return out, db.mapErr(err, "count exceptions")
	}
	defer rows.Close()
	for rows.Next() {
		var c store.Count
		if err := rows.Scan(&c.Key, &c.Count); err != nil {
			return out, err
		}
		out.TotalKeys++
		out.TotalCount += c.Count
		if (keys == nil || c.Key > keys[0]) && len(out.Counts) <= size {
			out.Counts = append(out.Counts, c)
		}
	}
	if err := rows.Err(); err != nil {
		return out, err
	}
	if len(out.Counts) > size {
		out.Counts = out.Counts[:size]
		out.NextPageToken = pagination.Encode(bind, []string{out.Counts[size-1].Key})
	}
	return out, nil
}

// CountExceptionsByGroup implements store.Exceptions.
func (db *DB) CountExceptionsByGroup(ctx context.Context, req store.CountRequest) (store.CountPage, error) {
	return db.countBy(ctx, "e.group_id", "group", req)
}

// CountExceptionsByAutomation implements store.Exceptions.
func (db *DB) CountExceptionsByAutomation(ctx context.Context, req store.CountRequest) (store.CountPage, error) {
	return db.countBy(ctx, "e.automation_id", "automation", req)
}

// SetExceptionDescription implements store.Exceptions.
func (db *DB) SetExceptionDescription(ctx context.Context, org, ws, id, description string) error {
	res, err := db.writer().exec(ctx, `UPDATE exceptions SET description = ?, update_time = ? WHERE organization_id = ? AND workspace_id = ? AND id = ?`,
		description, db.now(), org, ws, id)
	if err != nil {
		return db.mapErr(err, "set exception description")
	}
	if rowsAffected(res) == 0 {
		return fmt.Errorf("exception %q in workspace %q: %w", id, ws, store.ErrNotFound)
	}
	return nil
}

// transition moves an exception on event ev, from the one state the table
// (store/statemachine) moves on ev to the state it leads to, conditionally
// (moveException), then lets then move its run. check, when set, is called
// with the row read (locked) before anything changes and returns the extra
// columns to set (set, setArgs) or an error that aborts. Exactly one of
// concurrent transitions from the same state succeeds. The row is read
// once: the exception returned is that row with the columns changed here.
func (db *DB) transition(ctx context.Context, org, ws, id string, ev statemachine.Event,
	check func(e *store.Exception) (set string, setArgs []any, err error),
	then func(c conn, e store.Exception, now time.Time) error) (store.Exception, error) {
	from := excMachine.From(ev)[0]
	to, _ := excMachine.Next(ev, from)
	now := db.now()
	var out store.Exception
	err := db.tx(ctx, func(c conn) error {
		e, err := c.getException(ctx, org, ws, id, true)
		if err != nil {
			return err
		}
		var set string
		var setArgs []any
		if check != nil {
			if set, setArgs, err = check(&e); err != nil {
				return err
			}
		}
		if e.State != from {
			return fmt.Errorf("exception %q is %s, not %s: %w", id, e.State, from, store.ErrFailedPrecondition)
		}
		if err := c.moveException(ctx, org, ws, id, ev, from, to, now, set, setArgs...); err != nil {
			return err
		}
		if then != nil {
			if err := then(c, e, now); err != nil {
				return err
			}
		}
		e.State, e.UpdateTime = to, now
		out = e
		return nil
	})
	return out, err
}

// ResolveException implements store.Exceptions.
func (db *DB) ResolveException(ctx context.Context, org, ws, id string, check store.ResolveCheck) (store.Exception, error) {
	var r store.Resolution
	return db.transition(ctx, org, ws, id, statemachine.Resolve,
		func(e *store.Exception) (string, []any, error) {
			var err error
			if r, err = check(*e); err != nil {
				return "", nil, err
			}
			e.Resolver = r.Resolver
			return ", resolver = ?", []any{r.Resolver}, nil
		},
		func(c conn, e store.Exception, now time.Time) error {
			if err := c.insertExceptionEvent(ctx, e, store.ExceptionResolved, r.Resolver, r.Data, now); err != nil {
				return err
			}
			// The run goes on where it stopped; a stopped run keeps the
			// guidance for when it is continued.
			// guided counts human guidance (store.HumanGuidance): the
			// insights' straight-through processing reads it when the run
			// completes (migration 00027).
			guided := 0
			if store.HumanGuidance(r.Resolver) {
				guided = 1
			}
			if _, err := c.exec(ctx, `UPDATE runs SET state = `+resolveTo+`, resolution = ?, guided = guided + ?, state_time = ?, update_time = ?
				WHERE id = ? AND `+resolveFrom+` AND exception_id = ?`, r.Data, guided, now, now, e.RunID, e.ID); err != nil {
				return db.mapErr(err, "resume run")
			}
			_, err := c.exec(ctx, `UPDATE runs SET resolution = ?, guided = guided + ?, update_time = ? WHERE id = ? AND state = ? AND exception_id = ?`,
				r.Data, guided, now, e.RunID, string(store.RunStopped), e.ID)
			return db.mapErr(err, "keep guidance")
		})
}

// only is a transition's check that changes no other column.
func only(check store.ExceptionCheck) func(e *store.Exception) (string, []any, error) {
	if check == nil {
		return nil
	}
	return func(e *store.Exception) (string, []any, error) { return "", nil, check(*e) }
}

// ArchiveException implements store.Exceptions.
func (db *DB) ArchiveException(ctx context.Context, org, ws, id string, check store.ExceptionCheck) (store.Exception, error) {
	return db.transition(ctx, org, ws, id, statemachine.Archive, only(check),
		func(c conn, e store.Exception, now time.Time) error {
			if err := c.insertExceptionEvent(ctx, e, store.ExceptionArchived, "", nil, now); err != nil {
				return err
			}
			_, err := c.exec(ctx, `UPDATE runs SET state = `+archiveTo+`, reason = ?, state_time = ?, update_time = ?
				WHERE id = ? AND `+archiveFrom+` AND exception_id = ?`, "exception "+e.ID+" archived", now, now, e.RunID, e.ID)
			return db.mapErr(err, "abandon run")
		})
}

// UnarchiveException implements store.Exceptions.
func (db *DB) UnarchiveException(ctx context.Context, org, ws, id string, check store.ExceptionCheck) (store.Exception, error) {
	return db.transition(ctx, org, ws, id, statemachine.Unarchive, only(check),
		func(c conn, e store.Exception, now time.Time) error {
			// Only a run still stopped on this exception can wait for it
			// again; a run that was continued (or finished) since has moved
			// on, and the exception stays archived.
			if err := c.insertExceptionEvent(ctx, e, store.ExceptionPending, "", nil, now); err != nil {
				return err
			}
			res, err := c.exec(ctx, `UPDATE runs SET state = `+unarchiveTo+`, reason = '', state_time = ?, update_time = ?
				WHERE id = ? AND `+unarchiveFrom+` AND exception_id = ?`, now, now, e.RunID, e.ID)
			if err != nil {
				return db.mapErr(err, "run waits again")
			}
			if rowsAffected(res) == 0 {
				return fmt.Errorf("exception %q: its run %q is no longer stopped on it: %w", id, e.RunID, store.ErrFailedPrecondition)
			}
			return nil
		})
}

// AssignException implements store.Exceptions.
func (db *DB) AssignException(ctx context.Context, org, ws, id, assignee string, check store.ExceptionCheck) (store.Exception, error) {
	var out store.Exception
	err := db.tx(ctx, func(c conn) error {
		e, err := c.getException(ctx, org, ws, id, true)
		if err != nil {
			return err
		}
		if check != nil {
			if err := check(e); err != nil {
				return err
			}
		}
		if e.State == store.ExceptionResolved {
			return fmt.Errorf("exception %q is RESOLVED, which is final: %w", id, store.ErrFailedPrecondition)
		}
		now := db.now()
		res, err := c.exec(ctx, `UPDATE exceptions SET assignee = ?, update_time = ? WHERE organization_id = ? AND workspace_id = ? AND id = ? AND state <> ?`,
			assignee, now, org, ws, id, string(store.ExceptionResolved))
		if err != nil {
			return db.mapErr(err, "assign exception")
		}
		if rowsAffected(res) == 0 {
			return fmt.Errorf("exception %q changed concurrently: %w", id, store.ErrFailedPrecondition)
		}
		e.Assignee, e.UpdateTime = assignee, now
		out = e
		return nil
	})
	return out, err
}

// ListExceptionIDs implements store.Exceptions.
func (db *DB) ListExceptionIDs(ctx context.Context, org, ws string, f store.Filter, max int) ([]string, error) {
	a := NewArgs(db.d)
	where, err := excWhere(a, org, ws, f)
	if err != nil {
		return nil, err
	}
	rows, err := db.r.QueryContext(ctx, `SELECT e.id FROM exceptions e WHERE `+where+` ORDER BY e.create_time, e.id LIMIT `+strconv.Itoa(max), a.Values...)
	if err != nil {
		return nil, db.mapErr(err, "list exception ids")
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}

// ---------------------------------------------------------------------------
// Counts from the exception_counts table (migration 00006)
//
// Triggers keep, per workspace, state, group, automation and time bucket,
// the number of exceptions, at three levels of buckets (hours, days, 30
// days, counted from the unix epoch). A filter that is a conjunction of
// operands on state, group and automation only (any boolean form inside an
// operand) and create_time comparisons (a range [lo, hi)) counts as: the
// counts of the whole buckets inside the range, fewest buckets first
// (coarse levels in the middle, hours at the ends), plus an exact index
// count of the rows in the range's partial hours at either end. Other
// filters (run, create_time inside OR or NOT, !=) count rows.

// rollupLevels are the bucket sizes of the levels, in hours; each divides
// the next.
var rollupLevels = []int64{1, 24, 720}

const (
	hourMicros = int64(time.Hour / time.Microsecond)
	// rollupOpen is the hour bound of an open end of the range (far beyond
	// any time the columns hold, and within int64 in microseconds).
	rollupOpen = int64(1) << 31
	// rollupSkipMin is the skip from which ListExceptions skips whole
	// buckets by their counts instead of OFFSET alone.
	rollupSkipMin = 2000
)

// rollupFields are the filter fields whose columns the counts table keeps
// (under the same names: alias e).
var rollupFields = []string{"state", "group", "automation"}

// excRollup is a filter split for the counts table: the operands on the
// kept columns, and create_time in [lo, hi) (unix microseconds; an unset
// end is open).
type excRollup struct {
	keys         []store.Filter
	lo, hi       int64
	loSet, hiSet bool
}

func (p *excRollup) setLo(v int64) {
	if !p.loSet || v > p.lo {
		p.lo, p.loSet = v, true
	}
}

func (p *excRollup) setHi(v int64) {
	if !p.hiSet || v < p.hi {
		p.hi, p.hiSet = v, true
	}
}

// planExcRollup splits f for the counts table; false when it cannot.
func planExcRollup(f store.Filter) (excRollup, bool) {
	var p excRollup
	for _, c := range conjuncts(f) {
		if cd, ok := c.(store.Cond); ok && cd.Field == "create_time" {
			t, ok := cd.Value.(time.Time)
			if !ok {
				return p, false
			}
			// The bound value is truncated to microseconds, as stored.
			v := store.Time(t).UnixMicro()
			switch cd.Op {
			case store.OpEq:
				p.setLo(v)
				p.setHi(v + 1)
			case store.OpGe:
				p.setLo(v)
			case store.OpGt:
				p.setLo(v + 1)
			case store.OpLt:
				p.setHi(v)
			case store.OpLe:
				p.setHi(v + 1)
			default:
				return p, false
			}
			continue
		}
		for _, name := range filterFields(c, nil) {
			if !slices.Contains(rollupFields, name) {
				return p, false
			}
		}
		p.keys = append(p.keys, c)
	}
	return p, true
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

func ceilDiv(a, b int64) int64 { return -floorDiv(-a, b) }

// rollupSpan is the buckets [from, to) of one level.
type rollupSpan struct {
	level    int
	from, to int64
}

// decompose covers the hours [a, b) with the fewest buckets, in time
// order: the coarsest level's whole buckets in the middle, finer ones at
// the ends.
func decompose(a, b int64, level int) []rollupSpan {
	if a >= b {
		return nil
	}
	if level == 0 {
		return []rollupSpan{{0, a, b}}
	}
	size := rollupLevels[level]
	from, to := ceilDiv(a, size), floorDiv(b, size)
	if from >= to {
		return decompose(a, b, level-1)
	}
	out := decompose(a, from*size, level-1)
	out = append(out, rollupSpan{level, from, to})
	return append(out, decompose(to*size, b, level-1)...)
}

// hours returns where the range's whole hours [a, b) lie and which partial
// hours (microsecond ranges) lie at its ends.
func (p excRollup) hours() (a, b int64, edges [][2]int64) {
	a, b = -rollupOpen, rollupOpen
	if p.loSet {
		a = ceilDiv(p.lo, hourMicros)
	}
	if p.hiSet {
		b = floorDiv(p.hi, hourMicros)
	}
	if p.loSet && p.hiSet && a > b { // within one hour
		return 0, 0, [][2]int64{{p.lo, p.hi}}
	}
	if p.loSet && p.lo < a*hourMicros {
		edges = append(edges, [2]int64{p.lo, a * hourMicros})
	}
	if p.hiSet && b*hourMicros < p.hi {
		edges = append(edges, [2]int64{b * hourMicros, p.hi})
	}
	return a, b, edges
}

func (p excRollup) empty() bool { return p.loSet && p.hiSet && p.lo >= p.hi }

// keysWhere renders the workspace and the operands on kept columns (alias
// e, either table).
func (p excRollup) keysWhere(a *Args, org, ws string) (string, error) {
	conds := []string{"e.organization_id = " + a.Add(org), "e.workspace_id = " + a.Add(ws)}
	for _, k := range p.keys {
		s, err := exceptionFields.where(a, k)
		if err != nil {
			return "", err
		}
		conds = append(conds, s)
	}
	return strings.Join(conds, " AND "), nil
}

// edgeSQL counts the matching rows created in [from, to).
func (p excRollup) edgeSQL(a *Args, org, ws string, from, to int64, sel, groupBy string) (string, error) {
	where, err := p.keysWhere(a, org, ws)
	if err != nil {
		return "", err
	}
	q := `SELECT ` + sel + `, count(*) AS c FROM exceptions e WHERE ` + where + ` AND e.create_time >= ` +
		a.Add(time.UnixMicro(from).UTC()) + ` AND e.create_time < ` + a.Add(time.UnixMicro(to).UTC())
	if groupBy != "" {
		q += ` GROUP BY ` + groupBy
	}
	return q, nil
}

// spanSQL sums the counts of the matching keys in one span of buckets.
func (p excRollup) spanSQL(a *Args, org, ws string, s rollupSpan, sel, groupBy string) (string, error) {
	where, err := p.keysWhere(a, org, ws)
	if err != nil {
		return "", err
	}
	q := `SELECT ` + sel + `, sum(e.n) AS c FROM exception_counts e WHERE ` + where + ` AND e.level = ` + a.Add(s.level) +
		` AND e.bucket >= ` + a.Add(s.from) + ` AND e.bucket < ` + a.Add(s.to)
	if groupBy != "" {
		q += ` GROUP BY ` + groupBy
	}
	return q, nil
}

// rollupParts are the SELECTs (columns sel, c) whose counts add up to the
// filter's count: the edges' rows and the whole buckets.
func rollupParts(a *Args, org, ws string, p excRollup, sel, groupBy string) ([]string, error) {
	if p.empty() {
		return []string{`SELECT ` + sel + `, 0 AS c FROM exceptions e WHERE 1 = 0`}, nil
	}
	from, to, edges := p.hours()
	var parts []string
	for _, e := range edges {
		q, err := p.edgeSQL(a, org, ws, e[0], e[1], sel, groupBy)
		if err != nil {
			return nil, err
		}
		parts = append(parts, q)
	}
	for _, s := range decompose(from, to, len(rollupLevels)-1) {
		q, err := p.spanSQL(a, org, ws, s, sel, groupBy)
		if err != nil {
			return nil, err
		}
		parts = append(parts, q)
	}
	if len(parts) == 0 {
		parts = append(parts, `SELECT `+sel+`, 0 AS c FROM exceptions e WHERE 1 = 0`)
	}
	return parts, nil
}

// countRollup counts the exceptions matching p.
func (db *DB) countRollup(ctx context.Context, org, ws string, p excRollup) (int, error) {
	a := NewArgs(db.d)
	parts, err := rollupParts(a, org, ws, p, `0 AS k`, ``)
	if err != nil {
		return 0, err
	}
	var n sql.NullInt64
	q := `SELECT sum(c) FROM (` + strings.Join(parts, ` UNION ALL `) + `) x`
	if err := db.r.QueryRowContext(ctx, q, a.Values...).Scan(&n); err != nil {
		return 0, db.mapErr(err, "count exceptions")
	}
	return int(n.Int64), nil
}

// excSkip finds where the skip-th match (newest first) lies: before is a
// time (unix microseconds) such that exactly skip-offset matches are created
// at or after it; the page is then the matches created before it, from the
// offset-th on. none reports that fewer than skip+1 exceptions match. It
// reads bucket counts newest first, going down a level inside the bucket
// that holds the position, and counts the rows of a partial hour at the
// range's top end.
func (db *DB) excSkip(ctx context.Context, org, ws string, p excRollup, skip int) (before int64, offset int, none bool, err error) {
	if p.empty() {
		return 0, 0, true, nil
	}
	from, to := -rollupOpen, rollupOpen
	if p.loSet {
		from = ceilDiv(p.lo, hourMicros)
	}
	if p.hiSet {
		to = floorDiv(p.hi, hourMicros)
		if from > to { // the range is within one hour: OFFSET alone
			return p.hi, skip, false, nil
		}
	}
	above := 0
	query := func(build func(a *Args) (string, error)) (*sql.Rows, error) {
		a := NewArgs(db.d)
		q, err := build(a)
		if err != nil {
			return nil, err
		}
		return db.r.QueryContext(ctx, q, a.Values...)
	}
	if p.hiSet && to*hourMicros < p.hi { // the partial hour at the top
		rows, err := query(func(a *Args) (string, error) {
			return p.edgeSQL(a, org, ws, to*hourMicros, p.hi, `0 AS k`, ``)
		})
		if err != nil {
			return 0, 0, false, db.mapErr(err, "skip exceptions")
		}
		var k, c int
		if err := scanOne(rows, &k, &c); err != nil {
			return 0, 0, false, db.mapErr(err, "skip exceptions")
		}
		if skip < c {
			return p.hi, skip, false, nil
		}
		above = c
	}
	spans := decompose(from, to, len(rollupLevels)-1)
	for len(spans) > 0 {
		s := spans[len(spans)-1]
		spans = spans[:len(spans)-1]
		rows, err := query(func(a *Args) (string, error) {
			q, err := p.spanSQL(a, org, ws, s, `e.bucket`, `e.bucket`)
			return q + ` ORDER BY e.bucket DESC`, err
		})
		if err != nil {
			return 0, 0, false, db.mapErr(err, "skip exceptions")
		}
		found, bucket, err := func() (bool, int64, error) {
			defer rows.Close()
			for rows.Next() {
				var b int64
				var c int
				if err := rows.Scan(&b, &c); err != nil {
					return false, 0, err
				}
				if skip < above+c {
					return true, b, nil
				}
				above += c
			}
			return false, 0, rows.Err()
		}()
		if err != nil {
			return 0, 0, false, db.mapErr(err, "skip exceptions")
		}
		if !found {
			continue
		}
		if s.level == 0 {
			return (bucket + 1) * hourMicros, skip - above, false, nil
		}
		// The position is inside this bucket: its finer buckets add up to
		// its count, the older spans are not needed.
		r := rollupLevels[s.level] / rollupLevels[s.level-1]
		spans = []rollupSpan{{s.level - 1, bucket * r, (bucket + 1) * r}}
	}
	if p.loSet && p.lo < from*hourMicros { // in the partial hour at the bottom
		return from * hourMicros, skip - above, false, nil
	}
	return 0, 0, true, nil
}

// scanOne scans the single row of rows and closes them.
func scanOne(rows *sql.Rows, dest ...any) error {
	defer rows.Close()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return err
		}
		return sql.ErrNoRows
	}
	if err := rows.Scan(dest...); err != nil {
		return err
	}
	return rows.Close()
}
