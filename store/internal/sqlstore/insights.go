package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/proserun/prose/store"
)

// The levels of run_aggregates (migrations 00027 and 00032): hours, UTC
// days, 7 and 56 UTC days from the epoch, their sizes in hours. Rows with
// automation_id ” are a workspace's rollups (migration 00030), indexed
// apart (run_aggregates_rollups, migration 00034).
var levelHours = []int64{1, 24, 7 * 24, 56 * 24}

// hourInf stands for a range without start or end (in hours from the
// epoch, a whole number of the largest level; far past any time a run is
// created).
const hourInf = int64(56*24) << 38

// bucketRange is the buckets [lo, hi) of one level.
type bucketRange struct {
	level  int
	lo, hi int64
}

// hourOf is the index of the first hour bucket starting at or after t.
func hourOf(t time.Time) int64 {
	s := t.Unix()
	h := floorDiv(s, 3600)
	if h*3600 < s || t.Nanosecond() > 0 && h*3600 == s {
		h++
	}
	return h
}

// nearest is the boundary of the buckets of size hours nearest to hour h.
func nearest(h, size int64) int64 {
	return floorDiv(h+size/2, size) * size
}

// signedRange is a range of buckets counted into a period with a weight:
// +1, or −1 for the buckets a larger one adds beyond the period's edge.
type signedRange struct {
	r bucketRange
	w int
}

// periodRanges decomposes the hours [lo, hi) of a period into few rows:
// the whole buckets of the largest level between the boundaries nearest
// its edges, corrected at each edge by the span between the edge and that
// boundary, added or taken away, decomposed the same way at the levels
// below (at most half a bucket of each level an edge). A day in New York
// (midnight at 05:00 UTC) is its UTC day, less 00:00–05:00, plus
// 00:00–05:00 of the next day; a year is a few 56-day buckets, a few weeks
// and days at its edges and the hours of the time zone's offset.
// Consecutive periods share their corrections (SumRunAggregates reads each
// once).
func periodRanges(lo, hi int64) []signedRange {
	var out []signedRange
	decomposeRange(lo, hi, len(levelHours)-1, 1, &out)
	return out
}

func decomposeRange(lo, hi int64, level, w int, out *[]signedRange) {
	if hi <= lo {
		return
	}
	if level == 0 {
		*out = append(*out, signedRange{bucketRange{0, lo, hi}, w})
		return
	}
	size := levelHours[level]
	sl, sh := nearest(lo, size), nearest(hi, size)
	if sl >= sh || hi-lo < size {
		decomposeRange(lo, hi, level-1, w, out)
		return
	}
	*out = append(*out, signedRange{bucketRange{level, sl / size, sh / size}, w})
	if lo < sl {
		decomposeRange(lo, sl, level-1, w, out)
	} else {
		decomposeRange(sl, lo, level-1, -w, out)
	}
	if hi > sh {
		decomposeRange(sh, hi, level-1, w, out)
	} else {
		decomposeRange(hi, sh, level-1, -w, out)
	}
}

func argList(a *Args, vals []string) string {
	ph := make([]string, len(vals))
	for i, v := range vals {
		ph[i] = a.Add(v)
	}
	return strings.Join(ph, ", ")
}

// countCreatedRuns adds runs, just created in c's transaction, to the run
// aggregates on SQLite (migration 00033: the insert trigger of 00032
// made eight upserts a run; runs created together share their create time,
// so a batch is one upsert per automation and level, plus the workspace's
// rollups). On PostgreSQL a statement trigger counts them (deltas).
func (c conn) countCreatedRuns(ctx context.Context, runs []store.Run) error {
	if c.db.d != store.SQLite || len(runs) == 0 {
		return nil
	}
	type key struct {
		org, ws, auto string
		at            time.Time
	}
	type counts struct{ runs, completed, failed, awaiting int }
	var keys []key
	sums := map[key]*counts{}
	for _, r := range runs {
		k := key{r.OrganizationID, r.WorkspaceID, r.AutomationID, r.CreateTime}
		n := sums[k]
		if n == nil {
			n = &counts{}
			sums[k] = n
			keys = append(keys, k)
		}
		n.runs++
		switch r.State {
		case store.RunCompleted:
			n.completed++ // not guided: a run is created unguided
		case store.RunFailed:
			n.failed++
		case store.RunAwaitingGuidance:
			n.awaiting++
		}
	}
	var b strings.Builder
	args := make([]any, 0, 8*len(keys))
	b.WriteString(`WITH v (organization_id, workspace_id, automation_id, create_time, runs, completed, failed, awaiting) AS (VALUES `)
	for i, k := range keys {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("(?, ?, ?, ?, ?, ?, ?, ?)")
		n := sums[k]
		args = append(args, k.org, k.ws, k.auto, k.at, n.runs, n.completed, n.failed, n.awaiting)
	}
	// As the trigger of migration 00032 did for each run (duplicate keys
	// of the rollup rows are upserted in turn): the workspace's rollups
	// (automation '') also keep the value of the runs created completed,
	// their automation's estimate each (exact decimals: prose_dec_sum,
	// prose_dec_add); the rows per automation keep counts only.
	b.WriteString(`)
	INSERT INTO run_aggregates (organization_id, workspace_id, level, bucket, automation_id, runs, completed, guided_completed, failed, awaiting, saved_usd, saved_secs)
	SELECT v.organization_id, v.workspace_id, l.level, (v.create_time - ((v.create_time % l.size) + l.size) % l.size) / l.size,
		v.automation_id, v.runs, v.completed, 0, v.failed, v.awaiting, '0', 0
	FROM v, run_aggregate_levels l WHERE true
	UNION ALL
	SELECT v.organization_id, v.workspace_id, l.level, (v.create_time - ((v.create_time % l.size) + l.size) % l.size) / l.size,
		'', sum(v.runs), sum(v.completed), 0, sum(v.failed), sum(v.awaiting),
		prose_dec_sum(e.cost_usd, v.completed), coalesce(sum(e.time_saved_secs * v.completed), 0)
	FROM v CROSS JOIN run_aggregate_levels l
	LEFT JOIN automation_estimates e ON e.organization_id = v.organization_id AND e.workspace_id = v.workspace_id AND e.automation_id = v.automation_id
	GROUP BY 1, 2, 3, 4
	ON CONFLICT (organization_id, workspace_id, level, bucket, automation_id) DO UPDATE SET
		runs = runs + excluded.runs, completed = completed + excluded.completed, guided_completed = guided_completed + excluded.guided_completed,
		failed = failed + excluded.failed, awaiting = awaiting + excluded.awaiting,
		saved_usd = prose_dec_add(saved_usd, excluded.saved_usd, 1), saved_secs = saved_secs + excluded.saved_secs`)
	if _, err := c.exec(ctx, b.String(), args...); err != nil {
		return c.db.mapErr(err, "count the runs created")
	}
	return nil
}

// compactRunAggregates folds the run aggregates' deltas (PostgreSQL,
// migration 00027) into their rows; ClaimRuns calls it with its recovery of
// expired leases, at most once a second. Best effort: the reads add the
// deltas not folded, so a compaction that fails loses nothing.
func (db *DB) compactRunAggregates(ctx context.Context) {
	if db.d != store.Postgres {
		return
	}
	_, _ = db.writer().exec(ctx, `SELECT run_aggregates_compact()`)
}

// SumRunAggregates implements store.RunAggregates.
func (db *DB) SumRunAggregates(ctx context.Context, req store.RunAggregatesRequest) ([]store.RunAggregate, error) {
	if len(req.WorkspaceIDs) == 0 {
		return nil, fmt.Errorf("%w: run aggregates need at least one workspace", store.ErrInvalidArgument)
	}
	if len(req.Periods) == 0 {
		return nil, nil
	}
	if len(req.Periods) > store.MaxAggregatePeriods {
		return nil, store.InvalidField("periods", "at most %d periods (data points) in one query, not %d", store.MaxAggregatePeriods, len(req.Periods))
	}
	if err := checkPeriods(req.Periods); err != nil {
		return nil, err
	}

	// Each distinct range once, and what it adds to which period.
	ranges, targets := periodTargets(req.Periods)
	if len(ranges) == 0 {
		return nil, nil
	}
	// The ranges are a table joined with the counts, each range one index
	// range scan of run_aggregates' primary key (organization, workspace,
	// level, bucket); their sums are then spread over the periods with
	// their weights. Arguments in the order of the text (SQLite's
	// placeholders are positional).
	a := NewArgs(db.d)
	auto := "''"
	if req.ByAutomation {
		auto = "g.automation_id"
	}
	// The value is kept in the workspace's rollups only (migration 00032).
	rollup := !req.ByAutomation && len(req.AutomationIDs) == 0
	usdSum, usdSpread := "'0'", "'0'"
	switch {
	case rollup && db.d == store.Postgres:
		usdSum, usdSpread = "SUM(g.saved_usd)", "CAST(SUM(s.usd * m.w) AS TEXT)"
	case rollup:
		usdSum, usdSpread = "prose_dec_sum(g.saved_usd, 1)", "prose_dec_sum(s.usd, m.w)"
	}
	var b strings.Builder
	db.writeAggregateRanges(&b, a, ranges, targets)
	fmt.Fprintf(&b, `), s AS (SELECT g.workspace_id AS ws, %s AS auto, r.id AS id, CAST(SUM(g.runs) AS BIGINT) AS runs,
		CAST(SUM(g.completed) AS BIGINT) AS completed, CAST(SUM(g.guided_completed) AS BIGINT) AS guided,
		CAST(SUM(g.failed) AS BIGINT) AS failed, CAST(SUM(g.awaiting) AS BIGINT) AS awaiting,
		%s AS usd, CAST(SUM(g.saved_secs) AS BIGINT) AS secs FROM r `, auto, usdSum)
	inList := func(vals []string) string {
		if db.d == store.Postgres {
			return "= ANY(" + a.Add(vals) + "::text[])"
		}
		return "IN (" + argList(a, vals) + ")"
	}
	where := fmt.Sprintf("g.organization_id = %s AND g.workspace_id %s", a.Add(req.OrganizationID), inList(req.WorkspaceIDs))
	cond := where + " AND g.level = r.level AND g.bucket >= r.lo AND g.bucket < r.hi"
	// The deltas (PostgreSQL, migration 00036) are hours, of the
	// automations (their value is the rollups') and of the changes of
	// estimates (automation '', a value only): the range's hours, and for
	// the rollups every automation's.
	dcond, dsaved := where+" AND g.bucket >= r.lo * r.hours AND g.bucket < r.hi * r.hours", "g.saved_usd, g.saved_secs"
	switch {
	case len(req.AutomationIDs) > 0:
		autos := fmt.Sprintf(" AND g.automation_id %s AND g.automation_id <> ''", inList(req.AutomationIDs))
		cond += autos
		dcond, dsaved = dcond+autos, "0, 0"
	case req.ByAutomation:
		cond += " AND g.automation_id <> ''"
		dcond, dsaved = dcond+" AND g.automation_id <> ''", "0, 0"
	default:
		// The workspace's rollup rows (migration 00030): one row per
		// bucket instead of one per automation, read through their own
		// index (migration 00034), which holds the rollups only: in the
		// primary key a range of them ran over every automation's rows
		// of the range too.
		cond += " AND g.automation_id = ''"
	}
	if db.d == store.Postgres {
		// LATERAL with OFFSET 0 (so that it is not pulled up into a join):
		// a nested loop over the ranges, each an index range scan (a plain
		// join is hashed over the whole workspace's rows).
		// The deltas not folded yet are added (migrations 00027, 00036).
		// The condition's arguments are written twice: PostgreSQL's are
		// numbered.
		b.WriteString("CROSS JOIN LATERAL (SELECT g.workspace_id, g.automation_id, g.runs, g.completed, g.guided_completed, g.failed, g.awaiting, g.saved_usd, g.saved_secs FROM run_aggregates g WHERE " + cond +
			" UNION ALL SELECT g.workspace_id, g.automation_id, g.runs, g.completed, g.guided_completed, g.failed, g.awaiting, " + dsaved + " FROM run_aggregate_deltas g WHERE " + dcond + " OFFSET 0) g")
	} else {
		// SQLite loops over the small table r and seeks the index: CROSS
		// JOIN keeps r the outer loop (with a plain join and the rollups'
		// equality its planner scanned run_aggregates first: 1.1 s
		// instead of 30 ms for 366 days in Kolkata), and the rollups are
		// read INDEXED BY their index: with the statistics of ANALYZE, the
		// planner built an automatic index on automation_id over the
		// whole table for each query instead (3–4 s for Kolkata).
		index := ""
		if rollup {
			index = " INDEXED BY run_aggregates_rollups"
		}
		b.WriteString("CROSS JOIN run_aggregates g" + index + " ON " + cond)
	}
	fmt.Fprintf(&b, ` GROUP BY 1, 2, 3)
		SELECT s.ws, s.auto, m.p, CAST(SUM(s.runs * m.w) AS BIGINT), CAST(SUM(s.completed * m.w) AS BIGINT),
			CAST(SUM(s.guided * m.w) AS BIGINT), CAST(SUM(s.failed * m.w) AS BIGINT), CAST(SUM(s.awaiting * m.w) AS BIGINT),
			%s, CAST(SUM(s.secs * m.w) AS BIGINT)
		FROM s JOIN m ON m.id = s.id GROUP BY 1, 2, 3`, usdSpread)
	rows, err := db.reader().queryArgs(ctx, b.String(), a)
	if err != nil {
		return nil, db.mapErr(err, "sum run aggregates")
	}
	defer func() { _ = rows.Close() }()
	return scanAggregates(rows, rollup)
}

// checkPeriods checks that periods do not end before they start nor
// overlap (a bucket is counted in one period).
func checkPeriods(periods []store.TimeRange) error {
	// Periods must not overlap (a bucket is counted in one period).
	order := make([]int, len(periods))
	for i, p := range periods {
		if !p.Start.IsZero() && !p.End.IsZero() && p.End.Before(p.Start) {
			return store.InvalidField("periods", "a period ends (%s) before it starts (%s)", p.End.Format(time.RFC3339), p.Start.Format(time.RFC3339))
		}
		order[i] = i
	}
	slices.SortFunc(order, func(x, y int) int { return periods[x].Start.Compare(periods[y].Start) })
	for k := 1; k < len(order); k++ {
		prev, cur := periods[order[k-1]], periods[order[k]]
		if prev.End.IsZero() || cur.Start.IsZero() || prev.End.After(cur.Start) {
			return store.InvalidField("periods", "periods overlap")
		}
	}
	return nil
}

// aggTarget is what the sum of range id adds to a period: w times.
type aggTarget struct{ id, period, w int }

// periodTargets are the distinct bucket ranges that cover the periods, and
// what each adds to which period.
func periodTargets(periods []store.TimeRange) (ranges []bucketRange, targets []aggTarget) {
	ids := map[bucketRange]int{}
	for i, p := range periods {
		lo, hi := -hourInf, hourInf
		if !p.Start.IsZero() {
			lo = hourOf(p.Start)
		}
		if !p.End.IsZero() {
			hi = hourOf(p.End)
		}
		for _, sr := range periodRanges(lo, hi) {
			id, ok := ids[sr.r]
			if !ok {
				id = len(ranges)
				ids[sr.r] = id
				ranges = append(ranges, sr.r)
			}
			targets = append(targets, aggTarget{id, i, sr.w})
		}
	}
	return ranges, targets
}

// writeAggregateRanges writes the CTEs r (the ranges: id, level, lo, hi;
// PostgreSQL: and hours) and m (the targets), the last one left open.
func (db *DB) writeAggregateRanges(b *strings.Builder, a *Args, ranges []bucketRange, targets []aggTarget) {
	if db.d == store.Postgres {
		// The ranges and their targets as arrays: the text is the same
		// for any periods, so the statement is prepared once and its plan
		// kept (with a VALUES row of parameters per range, 366 days in
		// Kolkata took 7 ms to parse and 4–7 ms to plan each call).
		n := len(ranges)
		rid, rl, rlo, rhi, rh := make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n)
		for i, r := range ranges {
			rid[i], rl[i], rlo[i], rhi[i], rh[i] = int64(i), int64(r.level), r.lo, r.hi, levelHours[r.level]
		}
		mid, mp, mw := make([]int64, len(targets)), make([]int64, len(targets)), make([]int64, len(targets))
		for i, t := range targets {
			mid[i], mp[i], mw[i] = int64(t.id), int64(t.period), int64(t.w)
		}
		// hours: the size of the range's buckets in hours (the deltas
		// are hours, migration 00036).
		fmt.Fprintf(b, "WITH r (id, level, lo, hi, hours) AS (SELECT * FROM unnest(%s::bigint[], %s::bigint[], %s::bigint[], %s::bigint[], %s::bigint[])), ",
			a.Add(rid), a.Add(rl), a.Add(rlo), a.Add(rhi), a.Add(rh))
		fmt.Fprintf(b, "m (id, p, w) AS (SELECT * FROM unnest(%s::bigint[], %s::bigint[], %s::bigint[])", a.Add(mid), a.Add(mp), a.Add(mw))
	} else {
		b.WriteString("WITH r (id, level, lo, hi) AS (VALUES ")
		for i, r := range ranges {
			if i > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(b, "(%d, %d, CAST(%s AS BIGINT), CAST(%s AS BIGINT))", i, r.level, a.Add(r.lo), a.Add(r.hi))
		}
		b.WriteString("), m (id, p, w) AS (VALUES ")
		for i, t := range targets {
			if i > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(b, "(%d, %d, %d)", t.id, t.period, t.w)
		}
	}
}

// scanAggregates reads SumRunAggregates' rows, leaving out the empty ones
// (the value only with the rollups, which keep it).
func scanAggregates(rows *sql.Rows, rollup bool) ([]store.RunAggregate, error) {
	var out []store.RunAggregate
	for rows.Next() {
		var g store.RunAggregate
		c := &g.Counts
		if err := rows.Scan(&g.WorkspaceID, &g.AutomationID, &g.Period, &c.Runs, &c.Completed, &c.GuidedCompleted, &c.Failed, &c.Awaiting,
			&g.SavedUSD, &g.SavedSecs); err != nil {
			return nil, err
		}
		if !rollup {
			g.SavedUSD = ""
		}
		if *c != (store.RunCounts{}) || g.SavedSecs != 0 || !decimalZero(g.SavedUSD) {
			out = append(out, g)
		}
	}
	return out, rows.Err()
}

// SetAutomationEstimates implements store.RunAggregates.
func (db *DB) SetAutomationEstimates(ctx context.Context, org, ws string, es []store.AutomationEstimate) ([]store.AutomationEstimate, error) {
	now := db.now()
	var out []store.AutomationEstimate
	err := db.tx(ctx, func(c conn) error {
		if err := c.workspaceExists(ctx, org, ws); err != nil {
			return err
		}
		for _, e := range es {
			if _, err := c.getAutomation(ctx, org, ws, e.AutomationID); err != nil {
				return err
			}
			if _, err := c.exec(ctx, `INSERT INTO automation_estimates (organization_id, workspace_id, automation_id, cost_usd, time_saved_secs, update_time)
				VALUES (?, ?, ?, ?, ?, ?)
				ON CONFLICT (organization_id, workspace_id, automation_id) DO UPDATE SET cost_usd = excluded.cost_usd,
					time_saved_secs = excluded.time_saved_secs, update_time = excluded.update_time`,
				org, ws, e.AutomationID, e.CostUSD, e.TimeSavedSecs, now); err != nil {
				return db.mapErr(err, "set automation estimate")
			}
		}
		var err error
		out, err = c.listEstimates(ctx, org, []string{ws})
		return err
	})
	return out, err
}

// ListAutomationEstimates implements store.RunAggregates.
func (db *DB) ListAutomationEstimates(ctx context.Context, org string, wss []string) ([]store.AutomationEstimate, error) {
	return db.reader().listEstimates(ctx, org, wss)
}

func (c conn) listEstimates(ctx context.Context, org string, wss []string) ([]store.AutomationEstimate, error) {
	if len(wss) == 0 {
		return nil, nil
	}
	a := NewArgs(c.db.d)
	q := `SELECT organization_id, workspace_id, automation_id, cost_usd, time_saved_secs, update_time FROM automation_estimates
		WHERE organization_id = ` + a.Add(org) + ` AND workspace_id IN (` + argList(a, wss) + `) ORDER BY workspace_id, automation_id`
	rows, err := c.queryArgs(ctx, q, a)
	if err != nil {
		return nil, c.db.mapErr(err, "list automation estimates")
	}
	defer func() { _ = rows.Close() }()
	var out []store.AutomationEstimate
	for rows.Next() {
		var e store.AutomationEstimate
		if err := rows.Scan(&e.OrganizationID, &e.WorkspaceID, &e.AutomationID, &e.CostUSD, &e.TimeSavedSecs, ts{&e.UpdateTime}); err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, rows.Err()
}

// decimalZero reports whether the decimal text s is zero (or empty).
func decimalZero(s string) bool {
	return strings.Trim(s, "0.-+") == ""
}

// RebuildRunAggregates recomputes the run aggregates (every level, the
// rows per automation and the workspaces' rollups with their value) from
// runs and automation_estimates in one transaction, set-based: the runs
// are counted per hour, and the larger buckets summed from the hours.
// For bulk loads that insert runs with the triggers off (the benchmarks'
// seeds); a test checks that it keeps what the triggers keep.
func (db *DB) RebuildRunAggregates(ctx context.Context) error {
	levels := make([]string, len(levelHours))
	for i, h := range levelHours {
		levels[i] = fmt.Sprintf("SELECT %d AS level, %d AS hours", i, h)
	}
	// hour: the run's hour from the epoch (as the triggers bucket it);
	// div: floor division.
	hour, div := "floor(floor(extract(epoch FROM r.create_time)) / 3600)::BIGINT", func(x, n string) string { return "floor(" + x + " / " + n + "::NUMERIC)::BIGINT" }
	usd, zero := "sum(e.cost_usd::NUMERIC * h.completed)", "0"
	if db.d == store.SQLite {
		zero = "'0'"
		hour = "(r.create_time - ((r.create_time % 3600000000) + 3600000000) % 3600000000) / 3600000000"
		div = func(x, n string) string {
			return "(" + x + " - ((" + x + " % " + n + ") + " + n + ") % " + n + ") / " + n
		}
		usd = "prose_dec_sum(e.cost_usd, h.completed)"
	}
	q := `WITH h AS (SELECT r.organization_id, r.workspace_id, r.automation_id, ` + hour + ` AS hour, count(*) AS runs,
			sum(CASE WHEN r.state = ` + lit(store.RunCompleted) + ` THEN 1 ELSE 0 END) AS completed,
			sum(CASE WHEN r.state = ` + lit(store.RunCompleted) + ` AND r.guided > 0 THEN 1 ELSE 0 END) AS guided,
			sum(CASE WHEN r.state = ` + lit(store.RunFailed) + ` THEN 1 ELSE 0 END) AS failed,
			sum(CASE WHEN r.state = ` + lit(store.RunAwaitingGuidance) + ` THEN 1 ELSE 0 END) AS awaiting
		FROM runs r GROUP BY 1, 2, 3, 4)
	INSERT INTO run_aggregates (organization_id, workspace_id, level, bucket, automation_id, runs, completed, guided_completed, failed, awaiting, saved_usd, saved_secs)
	SELECT h.organization_id, h.workspace_id, l.level, ` + div("h.hour", "l.hours") + `, CASE WHEN x.rollup = 1 THEN '' ELSE h.automation_id END,
		sum(h.runs), sum(h.completed), sum(h.guided), sum(h.failed), sum(h.awaiting),
		CASE WHEN x.rollup = 1 THEN coalesce(` + usd + `, ` + zero + `) ELSE ` + zero + ` END,
		CASE WHEN x.rollup = 1 THEN coalesce(sum(e.time_saved_secs * h.completed), 0) ELSE 0 END
	FROM h LEFT JOIN automation_estimates e ON e.organization_id = h.organization_id AND e.workspace_id = h.workspace_id AND e.automation_id = h.automation_id,
		(` + strings.Join(levels, " UNION ALL ") + `) AS l, (SELECT 0 AS rollup UNION ALL SELECT 1) AS x
	GROUP BY 1, 2, 3, 4, 5, x.rollup`
	return db.tx(ctx, func(c conn) error {
		for _, s := range []string{`DELETE FROM run_aggregate_deltas`, `DELETE FROM run_aggregates`, q} {
			if db.d == store.SQLite && s == `DELETE FROM run_aggregate_deltas` {
				continue
			}
			if _, err := c.exec(ctx, s); err != nil {
				return fmt.Errorf("rebuild run aggregates: %w", err)
			}
		}
		return nil
	})
}

// dropRunAggregates deletes the run aggregates of a deleted workspace or
// organization (where: their condition), after the cascade deleted its
// runs: their counts are 0 then, but on PostgreSQL the value's deltas
// depend on the order in which the cascade deleted the runs and the
// estimates (a run deleted after its estimate takes no value away).
func (c conn) dropRunAggregates(ctx context.Context, where string, args ...any) error {
	tables := []string{"run_aggregates"}
	if c.db.d == store.Postgres {
		tables = append(tables, "run_aggregate_deltas")
	}
	for _, t := range tables {
		if _, err := c.exec(ctx, "DELETE FROM "+t+" WHERE "+where, args...); err != nil {
			return c.db.mapErr(err, "delete run aggregates")
		}
	}
	return nil
}
