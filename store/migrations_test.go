package store_test

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// lastLegacyMigration is the highest migration version either backend had
// when the rule below was adopted. Up to it, SQLite and PostgreSQL were
// numbered apart, with gaps; those files are applied on existing databases
// and are never renumbered.
const lastLegacyMigration = 38

// legacyMigrations are the migrations up to lastLegacyMigration, as
// applied: renaming, renumbering or removing one breaks existing
// databases, and one added below lastLegacyMigration would be skipped by
// databases already past it.
var legacyMigrations = map[string][]string{
	"sqlite": {"00001_identity.sql", "00002_runs.sql", "00004_events.sql", "00005_files.sql", "00006_exception_counts.sql",
		"00007_workspace_books.sql", "00009_run_budgets.sql", "00010_workspace_title_order.sql", "00011_event_offsets.sql",
		"00012_console_sessions.sql", "00016_exception_assignee.sql", "00017_child_runs.sql", "00018_schedules_triggers.sql",
		"00019_webhooks.sql", "00020_book_connections.sql", "00024_run_history.sql", "00025_guide_entries.sql",
		"00026_automation_revisions.sql", "00027_run_aggregates.sql", "00029_catalog_search.sql", "00030_run_aggregate_rollups.sql",
		"00032_run_aggregate_value.sql", "00033_run_aggregates_counted_by_creates.sql", "00034_run_aggregate_rollup_index.sql",
		"00038_run_webhooks_created_by_store.sql"},
	"postgres": {"00001_identity.sql", "00002_runs.sql", "00004_events.sql", "00005_files.sql", "00006_exception_counts.sql",
		"00007_workspace_books.sql", "00009_run_budgets.sql", "00010_workspace_title_order.sql", "00011_event_offsets.sql",
		"00012_console_sessions.sql", "00016_exception_assignee.sql", "00017_child_runs.sql", "00018_schedules_triggers.sql",
		"00019_webhooks.sql", "00020_book_connections.sql", "00024_run_history.sql", "00025_guide_entries.sql",
		"00026_automation_revisions.sql", "00027_run_aggregates.sql", "00029_catalog_search.sql", "00030_run_aggregate_rollups.sql",
		"00032_run_aggregate_value.sql", "00033_run_history_created_per_statement.sql", "00034_run_aggregate_rollup_index.sql",
		"00035_run_webhooks_created_per_statement.sql", "00036_run_aggregate_hour_deltas.sql"},
}

// From lastLegacyMigration on, a migration has the same number and name on
// both backends (store/README.md, "Migrations"): a schema change is made
// on both at once, so one version means one schema everywhere. A change
// one backend does not need is still a file there (an empty migration).
func TestMigrationsNumberedAlike(t *testing.T) {
	files := map[string][]string{}
	for _, backend := range []string{"sqlite", "postgres"} {
		ents, err := os.ReadDir(filepath.Join(backend, "migrations"))
		if err != nil {
			t.Fatal(err)
		}
		var legacy []string
		for _, e := range ents {
			name := e.Name()
			num, _, ok := strings.Cut(name, "_")
			v, err := strconv.Atoi(num)
			if !ok || err != nil || len(num) != 5 || !strings.HasSuffix(name, ".sql") {
				t.Errorf("%s/migrations/%s: not named NNNNN_what.sql", backend, name)
				continue
			}
			if v <= lastLegacyMigration {
				legacy = append(legacy, name)
			} else {
				files[backend] = append(files[backend], name)
			}
		}
		if !slices.Equal(legacy, legacyMigrations[backend]) {
			t.Errorf("%s: the migrations up to %05d changed (applied migrations are never renumbered, renamed or added to):\n got %v\nwant %v",
				backend, lastLegacyMigration, legacy, legacyMigrations[backend])
		}
	}
	for _, name := range files["sqlite"] {
		if !slices.Contains(files["postgres"], name) {
			t.Errorf("sqlite/migrations/%s has no postgres/migrations/%s", name, name)
		}
	}
	for _, name := range files["postgres"] {
		if !slices.Contains(files["sqlite"], name) {
			t.Errorf("postgres/migrations/%s has no sqlite/migrations/%s", name, name)
		}
	}
}
