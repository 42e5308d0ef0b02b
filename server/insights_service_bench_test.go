package server_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/type/date"
	"google.golang.org/protobuf/types/known/timestamppb"

	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/server"
	"github.com/proserun/prose/store"
	"github.com/proserun/prose/store/postgres/pgtest"
	"github.com/proserun/prose/store/sqlite"
	"github.com/proserun/prose/store/sqlite/sqlitetest"
	"github.com/proserun/prose/store/storetest"
)

// openInsightsBenchSQLite opens the seeded insights benchmark database,
// seeding it the first time (minutes: see sqlitetest.SeedBenchInsightsRuns;
// a database of an older schema is migrated in place). It is kept in
// $PROSE_BENCH_DIR (default: the system temporary directory); delete it to
// reseed.
func openInsightsBenchSQLite(b *testing.B) store.Store {
	b.Helper()
	ctx := context.Background()
	base := os.Getenv("PROSE_BENCH_DIR")
	if base == "" {
		base = os.TempDir()
	}
	dir := filepath.Join(base, "prose-bench-insights-sqlite")
	done := filepath.Join(dir, "seeded")
	if _, err := os.Stat(done); err == nil {
		old, err := sqlite.Open(ctx, dir, store.WithoutMigrations())
		if err != nil {
			b.Fatal(err)
		}
		version := sqlitetest.SchemaVersion(b, old)
		_ = old.Close()
		if version < sqlite.LatestMigration() {
			// Migrated in place (sqlite.Open below), as any database.
			b.Logf("%s: schema version %d of %d: migrated in place", dir, version, sqlite.LatestMigration())
		}
	}
	if _, err := os.Stat(done); err != nil {
		_ = os.RemoveAll(dir)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			b.Fatal(err)
		}
		t0 := time.Now()
		s, err := sqlite.Open(ctx, dir)
		if err != nil {
			b.Fatal(err)
		}
		storetest.SeedInsightsParents(b, s)
		if err := s.Close(); err != nil {
			b.Fatal(err)
		}
		sqlitetest.SeedBenchInsightsRuns(b, sqlite.Path(dir))
		if err := os.WriteFile(done, nil, 0o644); err != nil {
			b.Fatal(err)
		}
		b.Logf("seeded %s in %s", dir, time.Since(t0).Round(time.Second))
	}
	s, err := sqlite.Open(ctx, dir)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close() })
	return s
}

// BenchmarkInsightsSQLite: the insights of 10,000,000 runs (100
// automations in 10 workspaces, over 2025) on SQLite.
//
//	go test ./server -run '^$' -bench BenchmarkInsightsSQLite -benchtime 200x
func BenchmarkInsightsSQLite(b *testing.B) { benchInsights(b, openInsightsBenchSQLite(b)) }

// BenchmarkInsightsPostgres: the same on PostgreSQL (PROSE_TEST_POSTGRES_URL).
//
//	go test ./server -run '^$' -bench BenchmarkInsightsPostgres -benchtime 200x
func BenchmarkInsightsPostgres(b *testing.B) { benchInsights(b, pgtest.OpenInsightsBench(b)) }

func benchInsights(b *testing.B, st store.Store) {
	ctx := context.Background()
	org := storetest.BenchInsightsOrg
	ws := storetest.BenchInsightsWorkspaceID(3)
	end := storetest.BenchInsightsStart.AddDate(1, 0, 0)
	s := server.NewInsightsService(st, func() time.Time { return end })
	day := func(t time.Time) *date.Date {
		return &date.Date{Year: int32(t.Year()), Month: int32(t.Month()), Day: int32(t.Day())}
	}
	window := func(days int, zone string) *platformv1.InsightsFilter {
		return &platformv1.InsightsFilter{TimeWindow: &platformv1.InsightsTimeWindow{StartTime: timestamppb.New(end.AddDate(0, 0, -days)),
			EndTime: timestamppb.New(end.Add(-time.Microsecond)), TimeZone: zone}}
	}
	// The whole year counts every run.
	all, err := s.QueryInsights(ctx, &platformv1.QueryInsightsRequest{OrganizationId: org, Filter: &platformv1.InsightsFilter{
		TimeWindow: &platformv1.InsightsTimeWindow{StartTime: timestamppb.New(storetest.BenchInsightsStart), EndTime: timestamppb.New(end.Add(-time.Microsecond))}}})
	if err != nil {
		b.Fatal(err)
	}
	if got := all.GetRunInsight().GetTotalRunsCount(); got != storetest.BenchInsightsRuns {
		b.Fatalf("the year counts %d runs, want %d", got, storetest.BenchInsightsRuns)
	}
	for _, bc := range []struct {
		name string
		call func() error
	}{
		{"automationRunAggregates", func() error {
			_, err := s.QueryAutomationRunAggregates(ctx, &platformv1.QueryAutomationRunAggregatesRequest{OrganizationId: org, WorkspaceId: ws})
			return err
		}},
		{"dailyRunAggregates_30d_NewYork", func() error {
			_, err := s.QueryDailyRunAggregates(ctx, &platformv1.QueryDailyRunAggregatesRequest{OrganizationId: org, WorkspaceId: ws, TimeZone: "America/New_York"})
			return err
		}},
		{"dailyRunAggregates_366d_Kolkata", func() error {
			_, err := s.QueryDailyRunAggregates(ctx, &platformv1.QueryDailyRunAggregatesRequest{OrganizationId: org, WorkspaceId: ws, TimeZone: "Asia/Kolkata",
				StartDate: day(end.AddDate(0, 0, -365)), EndDate: day(end)})
			return err
		}},
		{"queryInsights_30d_NewYork", func() error {
			_, err := s.QueryInsights(ctx, &platformv1.QueryInsightsRequest{OrganizationId: org, Filter: window(30, "America/New_York")})
			return err
		}},
		{"queryInsights_90d_UTC", func() error {
			_, err := s.QueryInsights(ctx, &platformv1.QueryInsightsRequest{OrganizationId: org, Filter: window(90, "UTC")})
			return err
		}},
		{"queryInsights_365d_Berlin", func() error {
			_, err := s.QueryInsights(ctx, &platformv1.QueryInsightsRequest{OrganizationId: org, Filter: window(365, "Europe/Berlin")})
			return err
		}},
		{"queryAutomationEstimates", func() error {
			_, err := s.QueryAutomationEstimates(ctx, &platformv1.QueryAutomationEstimatesRequest{OrganizationId: org})
			return err
		}},
		{"metrics_runs_by_day_30d_by_workspace", func() error {
			_, err := s.QueryMetrics(ctx, &platformv1.QueryMetricsRequest{OrganizationId: org, Metrics: []string{"runs", "straight_through_runs"},
				GroupBy: []string{"workspace_id"}, StartTime: timestamppb.New(end.AddDate(0, 0, -30)), EndTime: timestamppb.New(end),
				Interval: platformv1.MetricInterval_METRIC_INTERVAL_DAY})
			return err
		}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			var took []time.Duration
			for b.Loop() {
				t0 := time.Now()
				if err := bc.call(); err != nil {
					b.Fatal(err)
				}
				took = append(took, time.Since(t0))
			}
			slices.Sort(took)
			b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(took[len(took)*95/100].Microseconds())/1000, "p95-ms")
		})
	}
}
