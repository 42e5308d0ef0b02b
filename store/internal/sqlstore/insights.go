package sqlstore

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/proserun/prose/store"
)

// The levels of run_aggregates (migration 00027): hours and UTC days.
const (
	hoursPerDay = 24
	// hourInf stands for a range without start or end (in hours from the
	// epoch; far past any time a run is created).
	hourInf = int64(1) << 50
)

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

// periodRanges decomposes a period into the fewest level ranges: the whole
// UTC days inside it, and the hours at its edges.
func periodRanges(p store.TimeRange) []bucketRange {
	lo, hi := -hourInf, hourInf
	if !p.Start.IsZero() {
		lo = hourOf(p.Start)
	}
	if !p.End.IsZero() {
		hi = hourOf(p.End)
	}
	if hi <= lo {
		return nil
	}
	dlo := floorDiv(lo+hoursPerDay-1, hoursPerDay) // first whole day
	dhi := floorDiv(hi, hoursPerDay)               // past the last whole day
	if dlo >= dhi {
		return []bucketRange{{0, lo, hi}}
	}
	var out []bucketRange
	if lo < dlo*hoursPerDay {
		out = append(out, bucketRange{0, lo, dlo * hoursPerDay})
	}
	out = append(out, bucketRange{1, dlo, dhi})
	if dhi*hoursPerDay < hi {
		out = append(out, bucketRange{0, dhi * hoursPerDay, hi})
	}
	return out
}

func argList(a *Args, vals []string) string {
	ph := make([]string, len(vals))
	for i, v := range vals {
		ph[i] = a.Add(v)
	}
	return strings.Join(ph, ", ")
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
	// Periods must not overlap (a bucket is counted in one period).
	order := make([]int, len(req.Periods))
	for i, p := range req.Periods {
		if !p.Start.IsZero() && !p.End.IsZero() && p.End.Before(p.Start) {
			return nil, store.InvalidField("periods", "a period ends (%s) before it starts (%s)", p.End.Format(time.RFC3339), p.Start.Format(time.RFC3339))
		}
		order[i] = i
	}
	slices.SortFunc(order, func(x, y int) int { return req.Periods[x].Start.Compare(req.Periods[y].Start) })
	for k := 1; k < len(order); k++ {
		prev, cur := req.Periods[order[k-1]], req.Periods[order[k]]
		if prev.End.IsZero() || cur.Start.IsZero() || prev.End.After(cur.Start) {
			return nil, store.InvalidField("periods", "periods overlap")
		}
	}

	type ranged struct {
		period int
		r      bucketRange
	}
	var rs []ranged
	for i, p := range req.Periods {
		for _, r := range periodRanges(p) {
			rs = append(rs, ranged{i, r})
		}
	}
	if len(rs) == 0 {
		return nil, nil
	}
	// The arguments in the order of the text (SQLite's placeholders are
	// positional); levels are constants of ours, buckets arguments.
	a := NewArgs(db.d)
	cond := func(r bucketRange) string {
		return fmt.Sprintf("(level = %d AND bucket >= %s AND bucket < %s)", r.level, a.Add(r.lo), a.Add(r.hi))
	}
	auto := "''"
	if req.ByAutomation {
		auto = "automation_id"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "SELECT workspace_id, %s, CASE", auto)
	for _, r := range rs {
		fmt.Fprintf(&b, " WHEN %s THEN %d", cond(r.r), r.period)
	}
	fmt.Fprintf(&b, ` END AS p, CAST(SUM(runs) AS BIGINT), CAST(SUM(completed) AS BIGINT),
		CAST(SUM(guided_completed) AS BIGINT), CAST(SUM(failed) AS BIGINT), CAST(SUM(awaiting) AS BIGINT)
		FROM run_aggregates WHERE organization_id = %s AND workspace_id IN (%s)`, a.Add(req.OrganizationID), argList(a, req.WorkspaceIDs))
	if len(req.AutomationIDs) > 0 {
		fmt.Fprintf(&b, " AND automation_id IN (%s)", argList(a, req.AutomationIDs))
	}
	b.WriteString(" AND (")
	for i, r := range rs {
		if i > 0 {
			b.WriteString(" OR ")
		}
		b.WriteString(cond(r.r))
	}
	b.WriteString(") GROUP BY 1, 2, 3 ORDER BY 1, 2, 3")
	rows, err := db.reader().queryArgs(ctx, b.String(), a)
	if err != nil {
		return nil, db.mapErr(err, "sum run aggregates")
	}
	defer func() { _ = rows.Close() }()
	var out []store.RunAggregate
	for rows.Next() {
		var g store.RunAggregate
		c := &g.Counts
		if err := rows.Scan(&g.WorkspaceID, &g.AutomationID, &g.Period, &c.Runs, &c.Completed, &c.GuidedCompleted, &c.Failed, &c.Awaiting); err != nil {
			return nil, err
		}
		if *c != (store.RunCounts{}) {
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
