package postgres_test

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/proserun/prose/store/postgres"
	"github.com/proserun/prose/store/sqlfilter"
	"github.com/proserun/prose/store/storetest"
)

// benchExceptionsDB is the database the exception benchmark keeps between
// runs on the server of PROSE_TEST_POSTGRES_URL; drop it to reseed.
const benchExceptionsDB = "prose_bench_exceptions"

// openExceptionBench opens the seeded benchmark database, creating and
// seeding it the first time (one INSERT … SELECT over generate_series with
// the counts trigger off, then the counts built in one grouped INSERT, as
// migration 00006 does; about a minute).
func openExceptionBench(b *testing.B) *postgres.Store {
	b.Helper()
	base := testingURL()
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
	u.Path = "/" + benchExceptionsDB
	var exists bool
	if err := admin.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)`, benchExceptionsDB).Scan(&exists); err != nil {
		b.Fatal(err)
	}
	if exists {
		s, err := postgres.Open(ctx, u.String())
		if err != nil {
			b.Fatal(err)
		}
		var seeded bool
		if err := s.Pool().QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_tables WHERE tablename = 'bench_seeded')`).Scan(&seeded); err != nil {
			b.Fatal(err)
		}
		if seeded {
			b.Cleanup(func() { _ = s.Close() })
			return s
		}
		_ = s.Close()
		if _, err := admin.Exec(ctx, "DROP DATABASE "+pgx.Identifier{benchExceptionsDB}.Sanitize()+" WITH (FORCE)"); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{benchExceptionsDB}.Sanitize()); err != nil {
		b.Fatal(err)
	}
	s, err := postgres.Open(ctx, u.String())
	if err != nil {
		b.Fatal(err)
	}
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
	b.Cleanup(func() { _ = s.Close() })
	return s
}

// BenchmarkExceptions: 1,000,000 exceptions, 1,000 runs, 50 automations,
// on PostgreSQL (PROSE_TEST_POSTGRES_URL).
//
//	go test ./store/postgres -run '^$' -bench BenchmarkExceptions -benchtime 20x -v
func BenchmarkExceptions(b *testing.B) {
	s := openExceptionBench(b)
	lit := func(t time.Time) string { return "'" + t.UTC().Format(time.RFC3339Nano) + "'::timestamptz" }
	for _, q := range storetest.BenchExceptionPlans(lit) {
		rows, err := s.SQLDB().Query("EXPLAIN (ANALYZE, COSTS OFF) " + q.SQL)
		if err != nil {
			b.Fatal(err)
		}
		var lines []string
		for rows.Next() {
			var line string
			if err := rows.Scan(&line); err != nil {
				b.Fatal(err)
			}
			lines = append(lines, line)
		}
		rows.Close()
		b.Logf("%s:\n%s", q.Name, strings.Join(lines, "\n"))
	}
	f, err := sqlfilter.Exceptions.Parse(storetest.BenchExceptionFilterText())
	if err != nil {
		b.Fatal(err)
	}
	storetest.BenchExceptionsList(b, s, f)
}
