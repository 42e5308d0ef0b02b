package storetest

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/proserun/prose/store"
)

// The exception benchmarks' data: BenchExceptions exceptions of
// BenchExceptionRuns runs of BenchExceptionAutomations automations in
// organization BenchExceptionOrg, workspace BenchExceptionWorkspace.
// Exception i belongs to run i % runs (automation (i % runs) % automations),
// is created at Epoch + i seconds, is in group i % 3 of missing_values,
// user_system_error, internal_error, and is PENDING when i % 10 < 6,
// RESOLVED when < 8, ARCHIVED otherwise.
const (
	BenchExceptions           = 1_000_000
	BenchExceptionRuns        = 1000
	BenchExceptionAutomations = 50
	BenchExceptionOrg         = "bench"
	BenchExceptionWorkspace   = "ops"
)

// BenchExceptionRunID names the seeded run i.
func BenchExceptionRunID(i int) string { return fmt.Sprintf("r%04d", i) }

// BenchExceptionAutomationID names the seeded automation i.
func BenchExceptionAutomationID(i int) string { return fmt.Sprintf("a%02d", i) }

// SeedExceptionParents creates the organization, workspace, automations and
// runs the exceptions belong to (the backend then bulk-inserts exceptions).
func SeedExceptionParents(tb testing.TB, st store.Store) {
	tb.Helper()
	ctx := context.Background()
	if _, err := st.CreateOrganization(ctx, store.Organization{ID: BenchExceptionOrg}); err != nil {
		tb.Fatal(err)
	}
	if _, err := st.CreateWorkspace(ctx, store.Workspace{OrganizationID: BenchExceptionOrg, ID: BenchExceptionWorkspace, Title: "Ops"}); err != nil {
		tb.Fatal(err)
	}
	for i := range BenchExceptionAutomations {
		if _, err := st.CreateAutomation(ctx, store.Automation{OrganizationID: BenchExceptionOrg, WorkspaceID: BenchExceptionWorkspace,
			ID: BenchExceptionAutomationID(i), DisplayName: "a", Code: "the output x is 1\n"}); err != nil {
			tb.Fatal(err)
		}
	}
	for i := range BenchExceptionRuns {
		if _, _, err := st.CreateRun(ctx, store.Run{OrganizationID: BenchExceptionOrg, WorkspaceID: BenchExceptionWorkspace,
			AutomationID: BenchExceptionAutomationID(i % BenchExceptionAutomations), ID: BenchExceptionRunID(i),
			Stage: store.StageDraft, StageVersion: 1, Steps: []byte("s")}); err != nil {
			tb.Fatal(err)
		}
	}
}

// BenchExceptionsPendingRecent is how many exceptions BenchExceptionFilterText
// selects: i >= BenchExceptions/10 and i % 10 < 6.
const BenchExceptionsPendingRecent = (BenchExceptions - BenchExceptions/10) * 6 / 10

// BenchExceptionFilterText is the filter of the first-page benchmark: the
// pending exceptions of the newest 90% (about 540,000 rows).
func BenchExceptionFilterText() string {
	return `state = PENDING AND create_time >= "` + Epoch.Add(BenchExceptions/10*time.Second).Format(time.RFC3339) + `"`
}

// RowsFilter adds to f a condition no precomputed count keeps (run != "",
// true of every exception), so that the store counts the rows instead of
// using precomputed counts: the exact counting path, as before migration
// 00006. A nil f selects all.
func RowsFilter(f store.Filter) store.Filter {
	return store.And{f, store.Cond{Field: "run", Op: store.OpNe, Value: ""}}
}

// BenchExceptionsList runs the exception benchmarks on a seeded store. It
// reports the median (p50-ms) besides the mean. The rows_ cases count rows
// (RowsFilter): the figures before the counts table.
func BenchExceptionsList(b *testing.B, st store.Store, filter store.Filter) {
	benchExceptionsList(b, st, "", filter, nil)
	benchExceptionsList(b, st, "rows_", RowsFilter(filter), RowsFilter(nil))
}

func benchExceptionsList(b *testing.B, st store.Store, prefix string, filter, all store.Filter) {
	ctx := context.Background()
	measure := func(b *testing.B, op func() error) {
		var ds []time.Duration
		for b.Loop() {
			t0 := time.Now()
			if err := op(); err != nil {
				b.Fatal(err)
			}
			ds = append(ds, time.Since(t0))
		}
		slices.Sort(ds)
		if len(ds) > 0 {
			b.ReportMetric(float64(ds[len(ds)/2].Microseconds())/1000, "p50-ms")
		}
	}
	b.Run(prefix+"first_page_state_time_filter", func(b *testing.B) {
		measure(b, func() error {
			p, total, err := st.ListExceptions(ctx, store.ListExceptionsRequest{OrganizationID: BenchExceptionOrg, WorkspaceID: BenchExceptionWorkspace,
				Filter: filter, PageSize: 50})
			if err == nil && (len(p.Items) != 50 || total == 0) {
				err = fmt.Errorf("page of %d, total %d", len(p.Items), total)
			}
			return err
		})
	})
	b.Run(prefix+"skip_500000", func(b *testing.B) {
		measure(b, func() error {
			p, total, err := st.ListExceptions(ctx, store.ListExceptionsRequest{OrganizationID: BenchExceptionOrg, WorkspaceID: BenchExceptionWorkspace,
				Filter: all, Skip: 500_000, PageSize: 50})
			// Newest first: the skip lands on exception BenchExceptions-1-500000.
			if err == nil && (len(p.Items) != 50 || total != BenchExceptions || p.Items[0].ID != fmt.Sprintf("x%07d", BenchExceptions-1-500_000)) {
				err = fmt.Errorf("page of %d, total %d", len(p.Items), total)
			}
			return err
		})
	})
	b.Run(prefix+"skip_300000_state_time_filter", func(b *testing.B) {
		measure(b, func() error {
			p, total, err := st.ListExceptions(ctx, store.ListExceptionsRequest{OrganizationID: BenchExceptionOrg, WorkspaceID: BenchExceptionWorkspace,
				Filter: filter, Skip: 300_000, PageSize: 50})
			if err == nil && (len(p.Items) != 50 || total != BenchExceptionsPendingRecent) {
				err = fmt.Errorf("page of %d, total %d", len(p.Items), total)
			}
			return err
		})
	})
	b.Run(prefix+"count_by_group", func(b *testing.B) {
		measure(b, func() error {
			p, err := st.CountExceptionsByGroup(ctx, store.CountRequest{OrganizationID: BenchExceptionOrg, WorkspaceID: BenchExceptionWorkspace,
				Filter: all, PageSize: 50})
			if err == nil && (len(p.Counts) != 3 || p.TotalCount != BenchExceptions) {
				err = fmt.Errorf("counts %+v", p)
			}
			return err
		})
	})
	// Pending exceptions are those of runs whose number ends in 0-5, whose
	// automations do too: 30 of the 50.
	b.Run(prefix+"count_by_automation_state_time_filter", func(b *testing.B) {
		measure(b, func() error {
			p, err := st.CountExceptionsByAutomation(ctx, store.CountRequest{OrganizationID: BenchExceptionOrg, WorkspaceID: BenchExceptionWorkspace,
				Filter: filter, PageSize: 50})
			if err == nil && (len(p.Counts) != BenchExceptionAutomations*6/10 || p.TotalCount != BenchExceptionsPendingRecent) {
				err = fmt.Errorf("counts %+v", p)
			}
			return err
		})
	})
}

// BenchExceptionPlan is one statement of the exception benchmarks, for
// EXPLAIN.
type BenchExceptionPlan struct{ Name, SQL string }

// BenchExceptionPlans are statements as ListExceptions and the counts
// render them on the benchmark data (the first-page filter, the skip),
// with times as lit renders them: exact counts of rows (before), then the
// counts table's statements (after).
func BenchExceptionPlans(lit func(time.Time) string) []BenchExceptionPlan {
	const ws = `e.organization_id = '` + BenchExceptionOrg + `' AND e.workspace_id = '` + BenchExceptionWorkspace + `'`
	from := Epoch.Add(BenchExceptions / 10 * time.Second).Truncate(time.Second)
	hour := from.Truncate(time.Hour).Add(time.Hour)
	h := hour.UnixMicro() / int64(time.Hour/time.Microsecond)
	i := func(n int64) string { return fmt.Sprint(n) }
	return []BenchExceptionPlan{
		{"rows: list page (state + create_time)", `SELECT e.id FROM exceptions e WHERE ` + ws + ` AND (e.state = 'PENDING' AND e.create_time >= ` + lit(from) + `) ORDER BY e.create_time DESC, e.id DESC LIMIT 51`},
		{"rows: total (state + create_time)", `SELECT count(*) FROM exceptions e WHERE ` + ws + ` AND (e.state = 'PENDING' AND e.create_time >= ` + lit(from) + `)`},
		{"rows: count by group", `SELECT e.group_id, count(*) FROM exceptions e WHERE ` + ws + ` GROUP BY e.group_id ORDER BY e.group_id`},
		{"counts: partial hour at the range's end (exact)", `SELECT 0 AS k, count(*) AS c FROM exceptions e WHERE ` + ws + ` AND (e.state = 'PENDING') AND e.create_time >= ` + lit(from) + ` AND e.create_time < ` + lit(hour)},
		{"counts: whole hours / days / 30 days", `SELECT 0 AS k, sum(e.n) AS c FROM exception_counts e WHERE ` + ws + ` AND (e.state = 'PENDING') AND e.level = 1 AND e.bucket >= ` + i(h/24+1) + ` AND e.bucket < ` + i(h/24+10)},
		{"counts: by group, no filter", `SELECT e.group_id AS k, sum(e.n) AS c FROM exception_counts e WHERE ` + ws + ` AND e.level = 2 AND e.bucket >= -2982616 AND e.bucket < 2982616 GROUP BY e.group_id`},
		{"skip: bucket counts newest first", `SELECT e.bucket, sum(e.n) AS c FROM exception_counts e WHERE ` + ws + ` AND e.level = 0 AND e.bucket >= ` + i(h) + ` AND e.bucket < ` + i(h+24) + ` GROUP BY e.bucket ORDER BY e.bucket DESC`},
		{"skip: page below the bucket boundary", `SELECT e.id FROM exceptions e WHERE ` + ws + ` AND e.create_time < ` + lit(hour.Add(100*time.Hour)) + ` ORDER BY e.create_time DESC, e.id DESC LIMIT 51 OFFSET 1800`},
	}
}
