package sqlite_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/proserun/prose/store/sqlfilter"
	"github.com/proserun/prose/store/sqlite"
	"github.com/proserun/prose/store/sqlite/sqlitetest"
	"github.com/proserun/prose/store/storetest"
)

// openExceptionBench opens the seeded benchmark database, seeding it the
// first time. It is kept in $PROSE_BENCH_DIR (default: the system temporary
// directory) so that later runs skip the seeding; delete it to reseed.
func openExceptionBench(b *testing.B) *sqlite.Store {
	b.Helper()
	ctx := context.Background()
	base := os.Getenv("PROSE_BENCH_DIR")
	if base == "" {
		base = os.TempDir()
	}
	dir := filepath.Join(base, "prose-bench-exceptions-sqlite")
	done := filepath.Join(dir, "seeded")
	if _, err := os.Stat(done); err != nil {
		_ = os.RemoveAll(dir)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			b.Fatal(err)
		}
		s, err := sqlite.Open(ctx, dir)
		if err != nil {
			b.Fatal(err)
		}
		storetest.SeedExceptionParents(b, s)
		sqlitetest.SeedBenchExceptions(b, s, false)
		if err := s.Close(); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(done, nil, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	s, err := sqlite.Open(ctx, dir)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close() })
	return s
}

// BenchmarkExceptions: 1,000,000 exceptions, 1,000 runs, 50 automations.
//
//	go test ./store/sqlite -run '^$' -bench BenchmarkExceptions -benchtime 50x
func BenchmarkExceptions(b *testing.B) {
	s := openExceptionBench(b)
	lit := func(t time.Time) string { return fmt.Sprint(t.UnixMicro()) }
	for _, q := range storetest.BenchExceptionPlans(lit) {
		rows, err := s.ReadDB().Query("EXPLAIN QUERY PLAN " + q.SQL)
		if err != nil {
			b.Fatal(err)
		}
		var lines []string
		for rows.Next() {
			var id, parent, notused int
			var detail string
			if err := rows.Scan(&id, &parent, &notused, &detail); err != nil {
				b.Fatal(err)
			}
			lines = append(lines, detail)
		}
		rows.Close()
		b.Logf("%s: %s", q.Name, strings.Join(lines, "; "))
	}
	f, err := sqlfilter.Exceptions.Parse(storetest.BenchExceptionFilterText())
	if err != nil {
		b.Fatal(err)
	}
	storetest.BenchExceptionsList(b, s, f)
}

// BenchmarkCountPendingExceptions: the read behind prose_exceptions_pending
// at each scrape, on the 1,000,000 exceptions of BenchmarkExceptions
// (600,000 pending: 90 rows of 30 automations and 3 groups).
//
//	go test ./store/sqlite -run '^$' -bench BenchmarkCountPendingExceptions
func BenchmarkCountPendingExceptions(b *testing.B) {
	s := openExceptionBench(b)
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
