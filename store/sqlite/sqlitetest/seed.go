// Package sqlitetest seeds SQLite stores for benchmarks, in bulk statements
// (the SQL stays in store/).
package sqlitetest

import (
	"context"
	"database/sql"
	"strings"
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
// storetest.BenchInsightsRuns) into the database file path, which no
// store may hold open; the parents must exist
// (storetest.SeedInsightsParents). It is a bulk load on a connection of its
// own, with the settings of a load that may be thrown away on failure (no
// rollback journal, no syncs, an exclusive lock, a 1 GB page cache): the
// triggers on runs and their secondary indexes dropped (no run history, no
// webhooks, no aggregates kept row by row), a recursive CTE a million runs
// per statement in the order of their keys, the indexes built again and
// the triggers created again from their SQL as the schema held it, the
// database back in WAL mode; then the store is opened and the run
// aggregates are built set-based (RebuildRunAggregates, which a
// conformance test holds equal to what the store's creates and the
// triggers keep), and it ends with ANALYZE. The runs are those of
// pgtest.OpenInsightsBench, value for value.
func SeedBenchInsightsRuns(tb testing.TB, path string) {
	tb.Helper()
	ctx := context.Background()
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(OFF)&_pragma=synchronous(OFF)&_pragma=locking_mode(EXCLUSIVE)"+
		"&_pragma=cache_size(-1000000)&_pragma=foreign_keys(0)")
	if err != nil {
		tb.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	defer func() { _ = db.Close() }()
	exec := func(q string, args ...any) {
		tb.Helper()
		if _, err := db.ExecContext(ctx, q, args...); err != nil {
			tb.Fatalf("%.60s…: %v", q, err)
		}
	}
	// The triggers and the indexes other than the key's (autoindexes have
	// no SQL), to drop and to create again.
	var drops, creates []string
	func() {
		rows, err := db.QueryContext(ctx, `SELECT type, name, sql FROM sqlite_schema
			WHERE type IN ('trigger', 'index') AND tbl_name = 'runs' AND sql IS NOT NULL ORDER BY type = 'trigger', name`)
		if err != nil {
			tb.Fatal(err)
		}
		defer func() { _ = rows.Close() }()
		for rows.Next() {
			var t, n, q string
			if err := rows.Scan(&t, &n, &q); err != nil {
				tb.Fatal(err)
			}
			drops, creates = append(drops, "DROP "+strings.ToUpper(t)+` "`+n+`"`), append(creates, q)
		}
		if err := rows.Err(); err != nil {
			tb.Fatal(err)
		}
	}()
	for _, q := range drops {
		exec(q)
	}
	const chunk = 1_000_000
	per := storetest.BenchInsightsAutomations / storetest.BenchInsightsWorkspaces
	for from := 0; from < storetest.BenchInsightsRuns; from += chunk {
		exec(`WITH RECURSIVE n(i) AS (SELECT ? UNION ALL SELECT i + 1 FROM n WHERE i < ?)
			INSERT INTO runs (id, organization_id, workspace_id, automation_id, stage, stage_version, state, state_time, create_time, update_time, guided)
			SELECT printf('r%08d', i), ?, printf('w%d', (i % ?) / ?), printf('a%02d', i % ?), 'draft', 1,
				CASE WHEN i % 20 < 14 THEN 'completed' WHEN i % 20 < 16 THEN 'failed' WHEN i % 20 = 16 THEN 'awaiting_guidance' ELSE 'stopped' END,
				? + i * ?, ? + i * ?, ? + i * ?, CASE WHEN i % 20 < 14 AND i % 5 = 0 THEN 1 ELSE 0 END
			FROM n`,
			from, min(from+chunk, storetest.BenchInsightsRuns)-1, storetest.BenchInsightsOrg,
			storetest.BenchInsightsAutomations, per, storetest.BenchInsightsAutomations,
			start(), step(), start(), step(), start(), step())
	}
	for _, q := range creates {
		exec(q)
	}
	exec(`PRAGMA journal_mode=WAL`)
	if err := db.Close(); err != nil {
		tb.Fatal(err)
	}
	s, err := sqlite.Open(ctx, path)
	if err != nil {
		tb.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	// The rebuild groups the 10,000,000 runs: a large cache for its sort.
	if _, err := s.WriteDB().ExecContext(ctx, `PRAGMA cache_size=-1000000`); err != nil {
		tb.Fatal(err)
	}
	if err := s.RebuildRunAggregates(ctx); err != nil {
		tb.Fatal(err)
	}
	for _, q := range []string{`ANALYZE`, `PRAGMA wal_checkpoint(TRUNCATE)`} {
		if _, err := s.WriteDB().ExecContext(ctx, q); err != nil {
			tb.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
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
