// Package pgtest gives tests a PostgreSQL database of their own on the
// server named by PROSE_TEST_POSTGRES_URL (the PostgreSQL test tier).
package pgtest

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/proserun/prose/store"
	"github.com/proserun/prose/store/postgres"
	"github.com/proserun/prose/store/storetest"
)

// EnvURL names the variable holding the URL of a PostgreSQL server the tests
// may create databases on; the PostgreSQL tests are skipped without it.
const EnvURL = "PROSE_TEST_POSTGRES_URL"

// EnvCreatedLog names a file CreateDatabase appends the name of each
// database it creates to, one a line (unset: none). CI reads it after the
// tests and fails when one of them is still on the server: a test that
// does not drop its database.
const EnvCreatedLog = "PROSE_TEST_CREATED_DATABASES"

// CreateDatabase creates a database named prefix plus a random id on the
// server of base (a postgres:// URL) and returns its URL and a function
// that drops it.
func CreateDatabase(ctx context.Context, base, prefix string) (string, func() error, error) {
	u, err := url.Parse(base)
	if err != nil {
		return "", nil, fmt.Errorf("parse: %w", err)
	}
	admin, err := pgx.Connect(ctx, base)
	if err != nil {
		return "", nil, fmt.Errorf("connect: %w", err)
	}
	name := prefix + strings.ToLower(store.NewID())
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		_ = admin.Close(ctx)
		return "", nil, fmt.Errorf("create database: %w", err)
	}
	if log := os.Getenv(EnvCreatedLog); log != "" {
		if err := appendLine(log, name); err != nil {
			_, _ = admin.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize())
			_ = admin.Close(ctx)
			return "", nil, fmt.Errorf("%s: %w", EnvCreatedLog, err)
		}
	}
	u.Path = "/" + name
	drop := func() error {
		defer func() { _ = admin.Close(ctx) }()
		if _, err := admin.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
			return fmt.Errorf("drop database %s: %w", name, err)
		}
		return nil
	}
	return u.String(), drop, nil
}

// appendLine appends line and a newline to the file at path, creating it.
func appendLine(path, line string) error {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600) //nolint:gosec // the path is the test runner's own (EnvCreatedLog)
	if err != nil {
		return err
	}
	_, err = f.WriteString(line + "\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// TempDatabase creates a database (see CreateDatabase) on the EnvURL server
// (skipping the test when EnvURL is unset), drops it when the test ends,
// and returns its URL.
func TempDatabase(t testing.TB, prefix string) string {
	t.Helper()
	base := os.Getenv(EnvURL)
	if base == "" {
		t.Skip(EnvURL + " not set (e.g. postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable): skipping a PostgreSQL test")
	}
	dbURL, drop, err := CreateDatabase(context.Background(), base, prefix)
	if err != nil {
		t.Fatalf("%s: %v", EnvURL, err)
	}
	t.Cleanup(func() {
		if err := drop(); err != nil {
			t.Error(err)
		}
	})
	return dbURL
}

// openKeptBench opens the benchmark database name that benchmarks keep
// between runs on the server of PROSE_TEST_POSTGRES_URL (skipped without
// it). A database that exists, holds the table bench_seeded and whose
// schema is at the latest migration is used as it is, one of an older
// schema is migrated in place (the migrations since its seed applied to
// its data, as to any database: a migration that rewrites the runs takes
// as long on it); otherwise it is (dropped and) created, and seed fills
// it, its last statement creating bench_seeded.
func openKeptBench(b testing.TB, name string, seed func(testing.TB, *postgres.Store)) *postgres.Store {
	b.Helper()
	base := os.Getenv(EnvURL)
	if base == "" {
		b.Skip("PROSE_TEST_POSTGRES_URL not set")
	}
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, base)
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = admin.Close(ctx) }()
	u, err := url.Parse(base)
	if err != nil {
		b.Fatal(err)
	}
	u.Path = "/" + name
	var exists bool
	if err := admin.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)`, name).Scan(&exists); err != nil {
		b.Fatal(err)
	}
	if exists {
		s, err := postgres.Open(ctx, u.String(), store.WithoutMigrations())
		if err != nil {
			b.Fatal(err)
		}
		var seeded bool
		var version int64
		if err := s.Pool().QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_tables WHERE tablename = 'bench_seeded')`).Scan(&seeded); err != nil {
			b.Fatal(err)
		}
		if seeded {
			if err := s.Pool().QueryRow(ctx, `SELECT coalesce(max(version_id), 0) FROM goose_db_version WHERE is_applied`).Scan(&version); err != nil {
				b.Fatal(err)
			}
		}
		_ = s.Close()
		if seeded {
			if version < postgres.LatestMigration() {
				b.Logf("%s: schema version %d of %d: migrated in place", name, version, postgres.LatestMigration())
			}
			t0 := time.Now()
			s, err := postgres.Open(ctx, u.String())
			if err != nil {
				b.Fatal(err)
			}
			if version < postgres.LatestMigration() {
				b.Logf("%s: migrated in %s", name, time.Since(t0).Round(time.Second))
			}
			b.Cleanup(func() { _ = s.Close() })
			return s
		}
		b.Logf("%s: not seeded to the end: dropped and seeded again", name)
		if _, err := admin.Exec(ctx, "DROP DATABASE "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		b.Fatal(err)
	}
	s, err := postgres.Open(ctx, u.String())
	if err != nil {
		b.Fatal(err)
	}
	t0 := time.Now()
	seed(b, s)
	b.Logf("%s: seeded in %s", name, time.Since(t0).Round(time.Second))
	b.Cleanup(func() { _ = s.Close() })
	return s
}

// BenchExceptionsDB is the database the exception benchmarks keep between
// runs on the server of PROSE_TEST_POSTGRES_URL; drop it to reseed.
const BenchExceptionsDB = "prose_bench_exceptions"

// OpenExceptionBench opens the database of the exception benchmarks
// (storetest.BenchExceptions exceptions of storetest.SeedExceptionParents'
// runs, in BenchExceptionsDB on the server of PROSE_TEST_POSTGRES_URL;
// skipped without it), creating and seeding it the first time (one INSERT … SELECT over generate_series with
// the counts trigger off, then the counts built in one grouped INSERT, as
// migration 00006 does; about a minute).
func OpenExceptionBench(b testing.TB) *postgres.Store {
	b.Helper()
	return openKeptBench(b, BenchExceptionsDB, seedExceptionBench)
}

// seedExceptionBench seeds the exception benchmarks' database (see
// OpenExceptionBench).
func seedExceptionBench(b testing.TB, s *postgres.Store) {
	ctx := context.Background()
	storetest.SeedExceptionParents(b, s)
	for _, q := range []string{
		`ALTER TABLE exceptions DISABLE TRIGGER exception_counts`,
		`INSERT INTO exceptions (organization_id, workspace_id, id, run_id, automation_id, stage, step, group_id, message, description,
			loc_start, loc_end, details, state, assignee, resolver, extra, create_time, update_time)
		SELECT $1, $2, 'x' || lpad(i::text, 7, '0'), 'r' || lpad((i % $3)::text, 4, '0'), 'a' || lpad(((i % $3) % $4)::text, 2, '0'), 'draft', 0,
			CASE i % 3 WHEN 0 THEN 'missing_values' WHEN 1 THEN 'user_system_error' ELSE 'internal_error' END,
			'Please provide the invoice total', '', 0, 21, NULL,
			CASE WHEN i % 10 < 6 THEN 'PENDING' WHEN i % 10 < 8 THEN 'RESOLVED' ELSE 'ARCHIVED' END,
			'', '', '{}', $5::timestamptz + i * interval '1 second', $5::timestamptz + i * interval '1 second'
		FROM generate_series(0, $6 - 1) AS i`,
		`INSERT INTO exception_counts (organization_id, workspace_id, level, bucket, state, group_id, automation_id, n)
		SELECT e.organization_id, e.workspace_id, l.level, floor(extract(epoch FROM e.create_time) * 1000000 / l.size)::BIGINT,
			e.state, e.group_id, e.automation_id, count(*)
		FROM exceptions e, (VALUES (0, 3600000000), (1, 86400000000), (2, 2592000000000)) AS l (level, size)
		GROUP BY 1, 2, 3, 4, 5, 6, 7`,
		`ALTER TABLE exceptions ENABLE TRIGGER exception_counts`,
		`VACUUM ANALYZE`,
		`CREATE TABLE bench_seeded ()`,
	} {
		var args []any
		if strings.Contains(q, "$6") {
			args = []any{storetest.BenchExceptionOrg, storetest.BenchExceptionWorkspace, storetest.BenchExceptionRuns,
				storetest.BenchExceptionAutomations, storetest.Epoch, storetest.BenchExceptions}
		}
		if _, err := s.Pool().Exec(ctx, q, args...); err != nil {
			b.Fatalf("%.60s…: %v", q, err)
		}
	}
}

// FailBenchRuns makes every run of s failed, so that an engine serving the
// benchmark's database leaves its runs (which are not real programs)
// alone, as sqlitetest.SeedBenchExceptions does with failRuns.
func FailBenchRuns(tb testing.TB, s *postgres.Store) {
	tb.Helper()
	if _, err := s.Pool().Exec(context.Background(), `UPDATE runs SET state = 'failed' WHERE state <> 'failed'`); err != nil {
		tb.Fatal(err)
	}
}

// BenchInsightsDB is the database the insights benchmarks keep between
// runs on the server of PROSE_TEST_POSTGRES_URL; drop it to reseed.
const BenchInsightsDB = "prose_bench_insights"

// OpenInsightsBench opens the database of the insights benchmarks
// (storetest.BenchInsightsRuns runs of storetest.SeedInsightsParents'
// automations, in BenchInsightsDB; skipped without PROSE_TEST_POSTGRES_URL),
// creating and seeding it the first time, inside the database: the runs'
// triggers off (no run history, no webhooks, no aggregates kept row by
// row, no foreign-key checks) and their secondary indexes built after, INSERT … SELECT over generate_series, a million runs per
// statement, then the run aggregates built set-based
// (RebuildRunAggregates, which a conformance test holds equal to what the
// triggers keep), VACUUM ANALYZE.
func OpenInsightsBench(b testing.TB) *postgres.Store {
	b.Helper()
	return openKeptBench(b, BenchInsightsDB, seedInsightsBench)
}

// seedInsightsBench seeds the insights benchmarks' database (see
// OpenInsightsBench).
func seedInsightsBench(b testing.TB, s *postgres.Store) {
	ctx := context.Background()
	storetest.SeedInsightsParents(b, s)
	// The runs' indexes other than their keys are built after the load,
	// and their triggers (the foreign keys' checks too: the automations
	// exist) are off during it.
	rows, err := s.Pool().Query(ctx, `SELECT indexname, indexdef FROM pg_indexes i WHERE tablename = 'runs'
		AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conname = i.indexname)`)
	if err != nil {
		b.Fatal(err)
	}
	var indexes, defs []string
	for rows.Next() {
		var n, d string
		if err := rows.Scan(&n, &d); err != nil {
			b.Fatal(err)
		}
		indexes, defs = append(indexes, n), append(defs, d)
	}
	if rows.Close(); rows.Err() != nil {
		b.Fatal(rows.Err())
	}
	for _, n := range indexes {
		if _, err := s.Pool().Exec(ctx, `DROP INDEX `+pgx.Identifier{n}.Sanitize()); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := s.Pool().Exec(ctx, `ALTER TABLE runs DISABLE TRIGGER ALL`); err != nil {
		b.Fatal(err)
	}
	const chunk = 1_000_000
	per := storetest.BenchInsightsAutomations / storetest.BenchInsightsWorkspaces
	for from := 0; from < storetest.BenchInsightsRuns; from += chunk {
		if _, err := s.Pool().Exec(ctx, `INSERT INTO runs (id, organization_id, workspace_id, automation_id, stage, stage_version, state, state_time, create_time, update_time, guided)
			SELECT 'r' || lpad(i::text, 8, '0'), $1, 'w' || ((i % $2) / $3), 'a' || lpad((i % $2)::text, 2, '0'), 'draft', 1,
				CASE WHEN i % 20 < 14 THEN 'completed' WHEN i % 20 < 16 THEN 'failed' WHEN i % 20 = 16 THEN 'awaiting_guidance' ELSE 'stopped' END,
				$4::timestamptz + i * $5::bigint * interval '1 microsecond', $4::timestamptz + i * $5::bigint * interval '1 microsecond', $4::timestamptz + i * $5::bigint * interval '1 microsecond',
				CASE WHEN i % 20 < 14 AND i % 5 = 0 THEN 1 ELSE 0 END
			FROM generate_series($6::bigint, $7::bigint) AS i`,
			storetest.BenchInsightsOrg, storetest.BenchInsightsAutomations, per, storetest.BenchInsightsStart,
			storetest.BenchInsightsStep.Microseconds(), from, min(from+chunk, storetest.BenchInsightsRuns)-1); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := s.Pool().Exec(ctx, `ALTER TABLE runs ENABLE TRIGGER ALL`); err != nil {
		b.Fatal(err)
	}
	for _, d := range defs {
		if _, err := s.Pool().Exec(ctx, d); err != nil {
			b.Fatal(err)
		}
	}
	if err := s.RebuildRunAggregates(ctx); err != nil {
		b.Fatal(err)
	}
	for _, q := range []string{`VACUUM ANALYZE`, `CREATE TABLE bench_seeded ()`} {
		if _, err := s.Pool().Exec(ctx, q); err != nil {
			b.Fatal(err)
		}
	}
}
