// Package sqlitetest seeds SQLite stores for benchmarks, in bulk statements
// (the SQL stays in store/).
package sqlitetest

import (
	"context"
	"testing"

	"github.com/proserun/prose/store"
	"github.com/proserun/prose/store/sqlite"
	"github.com/proserun/prose/store/storetest"
)

// SeedBenchExceptions inserts the exception benchmark's
// storetest.BenchExceptions exceptions (60 % pending, 20 % resolved, 20 %
// archived, one second apart from storetest.Epoch) into s in one statement;
// their organization, workspace, automations and runs must exist
// (storetest.SeedExceptionParents). With failRuns every run is then marked
// failed, so that an engine leaves them alone. It ends with ANALYZE.
func SeedBenchExceptions(tb testing.TB, s *sqlite.Store, failRuns bool) {
	tb.Helper()
	ctx := context.Background()
	w := s.WriteDB()
	start := storetest.Epoch.UnixMicro()
	if _, err := w.ExecContext(ctx, `WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < ?)
		INSERT INTO exceptions (organization_id, workspace_id, id, run_id, automation_id, stage, step, group_id, message, description,
			loc_start, loc_end, details, state, assignee, resolver, extra, create_time, update_time)
		SELECT ?, ?, printf('x%07d', i), printf('r%04d', i % ?), printf('a%02d', (i % ?) % ?), 'draft', 0,
			CASE i % 3 WHEN 0 THEN 'missing_values' WHEN 1 THEN 'user_system_error' ELSE 'internal_error' END,
			'Please provide the invoice total', '', 0, 21, NULL,
			CASE WHEN i % 10 < 6 THEN 'PENDING' WHEN i % 10 < 8 THEN 'RESOLVED' ELSE 'ARCHIVED' END,
			'', '', '{}', ? + i * 1000000, ? + i * 1000000 FROM n`,
		storetest.BenchExceptions-1, storetest.BenchExceptionOrg, storetest.BenchExceptionWorkspace,
		storetest.BenchExceptionRuns, storetest.BenchExceptionRuns, storetest.BenchExceptionAutomations, start, start); err != nil {
		tb.Fatal(err)
	}
	if failRuns {
		if _, err := w.ExecContext(ctx, `UPDATE runs SET state = 'failed'`); err != nil {
			tb.Fatal(err)
		}
	}
	if _, err := w.ExecContext(ctx, `ANALYZE`); err != nil {
		tb.Fatal(err)
	}
}

// SeedBenchInsightsRuns inserts the insights benchmark's runs (see
// storetest.BenchInsightsRuns) into s in one transaction: the triggers on
// runs dropped (no run history, no webhooks, no aggregates kept row by
// row), a recursive CTE a million runs per statement, the triggers
// created again from their SQL as the schema holds it, then the run
// aggregates built set-based (RebuildRunAggregates, which a conformance
// test holds equal to what the store's creates and the triggers keep);
// the parents must exist
// (storetest.SeedInsightsParents). It ends with ANALYZE.
func SeedBenchInsightsRuns(tb testing.TB, s *sqlite.Store) {
	tb.Helper()
	ctx := context.Background()
	tx, err := s.WriteDB().BeginTx(ctx, nil)
	if err != nil {
		tb.Fatal(err)
	}
	defer func() { _ = tx.Rollback() }()
	rows, err := tx.QueryContext(ctx, `SELECT name, sql FROM sqlite_schema WHERE type = 'trigger' AND tbl_name = 'runs'`)
	if err != nil {
		tb.Fatal(err)
	}
	var names, triggers []string
	for rows.Next() {
		var n, q string
		if err := rows.Scan(&n, &q); err != nil {
			tb.Fatal(err)
		}
		names, triggers = append(names, n), append(triggers, q)
	}
	if err := rows.Err(); err != nil {
		tb.Fatal(err)
	}
	_ = rows.Close()
	for _, n := range names {
		if _, err := tx.ExecContext(ctx, `DROP TRIGGER "`+n+`"`); err != nil {
			tb.Fatal(err)
		}
	}
	const chunk = 1_000_000
	per := storetest.BenchInsightsAutomations / storetest.BenchInsightsWorkspaces
	for from := 0; from < storetest.BenchInsightsRuns; from += chunk {
		if _, err := tx.ExecContext(ctx, `WITH RECURSIVE n(i) AS (SELECT ? UNION ALL SELECT i + 1 FROM n WHERE i < ?)
			INSERT INTO runs (id, organization_id, workspace_id, automation_id, stage, stage_version, state, state_time, create_time, update_time, guided)
			SELECT printf('r%08d', i), ?, printf('w%d', (i % ?) / ?), printf('a%02d', i % ?), 'draft', 1,
				CASE WHEN i % 20 < 14 THEN 'completed' WHEN i % 20 < 16 THEN 'failed' WHEN i % 20 = 16 THEN 'awaiting_guidance' ELSE 'stopped' END,
				? + i * ?, ? + i * ?, ? + i * ?, CASE WHEN i % 20 < 14 AND i % 5 = 0 THEN 1 ELSE 0 END
			FROM n`,
			from, min(from+chunk, storetest.BenchInsightsRuns)-1, storetest.BenchInsightsOrg,
			storetest.BenchInsightsAutomations, per, storetest.BenchInsightsAutomations,
			start(), step(), start(), step(), start(), step()); err != nil {
			tb.Fatal(err)
		}
	}
	for _, q := range triggers {
		if _, err := tx.ExecContext(ctx, q); err != nil {
			tb.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		tb.Fatal(err)
	}
	if err := s.RebuildRunAggregates(ctx); err != nil {
		tb.Fatal(err)
	}
	if _, err := s.WriteDB().ExecContext(ctx, `ANALYZE`); err != nil {
		tb.Fatal(err)
	}
}

func start() int64 { return storetest.BenchInsightsStart.UnixMicro() }
func step() int64  { return storetest.BenchInsightsStep.Microseconds() }

// SchemaVersion is the latest migration applied to s (0 for none), for a
// kept benchmark database that may be of an older schema.
func SchemaVersion(tb testing.TB, s *sqlite.Store) int64 {
	tb.Helper()
	var version int64
	if err := s.WriteDB().QueryRowContext(context.Background(),
		`SELECT coalesce(max(version_id), 0) FROM goose_db_version WHERE is_applied`).Scan(&version); err != nil {
		tb.Fatal(err)
	}
	return version
}

// InsertRunRows writes runs (organization, workspace, automation, stage
// version, state and create time; the draft stage, unguided) as rows,
// counted by the triggers on runs of the schema s has: the runs of a
// database of a version before the store counted the runs it creates
// (migration 00033), for the migration tests.
func InsertRunRows(tb testing.TB, s *sqlite.Store, runs []store.Run) {
	tb.Helper()
	for _, r := range runs {
		id := r.ID
		if id == "" {
			id = store.NewID()
		}
		at := r.CreateTime.UnixMicro()
		if _, err := s.WriteDB().ExecContext(context.Background(), `INSERT INTO runs (id, organization_id, workspace_id, automation_id, stage, stage_version,
			state, state_time, create_time, update_time, guided) VALUES (?, ?, ?, ?, 'draft', ?, ?, ?, ?, ?, 0)`,
			id, r.OrganizationID, r.WorkspaceID, r.AutomationID, r.StageVersion, string(r.State), at, at, at); err != nil {
			tb.Fatal(err)
		}
	}
}
