package postgres_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/proserun/prose/store/postgres/pgtest"
	"github.com/proserun/prose/store/sqlfilter"
	"github.com/proserun/prose/store/storetest"
)

// BenchmarkExceptions: 1,000,000 exceptions, 1,000 runs, 50 automations,
// on PostgreSQL (PROSE_TEST_POSTGRES_URL).
//
//	go test ./store/postgres -run '^$' -bench BenchmarkExceptions -benchtime 20x -v
func BenchmarkExceptions(b *testing.B) {
	s := pgtest.OpenExceptionBench(b)
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

// BenchmarkCountPendingExceptions: the read behind prose_exceptions_pending
// at each scrape, on the 1,000,000 exceptions of BenchmarkExceptions.
//
//	PROSE_TEST_POSTGRES_URL=… go test ./store/postgres -run '^$' -bench BenchmarkCountPendingExceptions
func BenchmarkCountPendingExceptions(b *testing.B) {
	s := pgtest.OpenExceptionBench(b)
	ctx := context.Background()
	for b.Loop() {
		rows, err := s.CountPendingExceptions(ctx)
		var n int64
		for _, r := range rows {
			n += r.N
		}
		if err != nil || n != storetest.BenchExceptions*6/10 {
			b.Fatalf("%d pending in %d rows, %v", n, len(rows), err)
		}
	}
}
