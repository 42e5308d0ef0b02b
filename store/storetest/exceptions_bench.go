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

// BenchExceptionRunID and BenchExceptionAutomationID name the seeded rows.
func BenchExceptionRunID(i int) string        { return fmt.Sprintf("r%04d", i) }
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

// BenchExceptionFilterText is the filter of the first-page benchmark: the
// pending exceptions of the newest 90% (about 540,000 rows).
func BenchExceptionFilterText() string {
	return `state = PENDING AND create_time >= "` + Epoch.Add(BenchExceptions/10*time.Second).Format(time.RFC3339) + `"`
}

// BenchExceptionsList runs the exception benchmarks on a seeded store. It
// reports the median (p50-ms) besides the mean.
func BenchExceptionsList(b *testing.B, st store.Store, filter store.Filter) {
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
	b.Run("first_page_state_time_filter", func(b *testing.B) {
		measure(b, func() error {
			p, total, err := st.ListExceptions(ctx, store.ListExceptionsRequest{OrganizationID: BenchExceptionOrg, WorkspaceID: BenchExceptionWorkspace,
				Filter: filter, PageSize: 50})
			if err == nil && (len(p.Items) != 50 || total == 0) {
				err = fmt.Errorf("page of %d, total %d", len(p.Items), total)
			}
			return err
		})
	})
	b.Run("skip_500000", func(b *testing.B) {
		measure(b, func() error {
			p, total, err := st.ListExceptions(ctx, store.ListExceptionsRequest{OrganizationID: BenchExceptionOrg, WorkspaceID: BenchExceptionWorkspace,
				Skip: 500_000, PageSize: 50})
			if err == nil && (len(p.Items) != 50 || total != BenchExceptions) {
				err = fmt.Errorf("page of %d, total %d", len(p.Items), total)
			}
			return err
		})
	})
	b.Run("count_by_group", func(b *testing.B) {
		measure(b, func() error {
			p, err := st.CountExceptionsByGroup(ctx, store.CountRequest{OrganizationID: BenchExceptionOrg, WorkspaceID: BenchExceptionWorkspace, PageSize: 50})
			if err == nil && (len(p.Counts) != 3 || p.TotalCount != BenchExceptions) {
				err = fmt.Errorf("counts %+v", p)
			}
			return err
		})
	})
}
