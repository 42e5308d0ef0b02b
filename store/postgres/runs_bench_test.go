package postgres_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/proserun/prose/store/postgres"
	"github.com/proserun/prose/store/storetest"
)

// PROSE_TEST_POSTGRES_URL=… go test -run '^$' -bench CreateRunsCompleted -benchmem ./store/postgres/
func BenchmarkCreateRunsCompleted(b *testing.B) {
	if testingURL() == "" {
		b.Skip("PROSE_TEST_POSTGRES_URL not set: skipping the PostgreSQL store benchmarks")
	}
	for _, say := range []int{0, 5} {
		b.Run(fmt.Sprintf("say=%d", say), func(b *testing.B) {
			s, err := postgres.Open(context.Background(), tempDatabase(b))
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			cpu := storetest.StartCPU(backends(b, s))
			storetest.BenchCreateRunsCompleted(b, s, 64, say)
			cpu.Report(b)
		})
	}
}

// backends lists the server's processes serving s's database (its pool's
// connections), for storetest.StartCPU.
func backends(b *testing.B, s *postgres.Store) func() []int {
	return func() []int {
		rows, err := s.SQLDB().Query(`SELECT pid FROM pg_stat_activity WHERE datname = current_database()`)
		if err != nil {
			b.Fatal(err)
		}
		defer rows.Close()
		var pids []int
		for rows.Next() {
			var pid int
			if err := rows.Scan(&pid); err != nil {
				b.Fatal(err)
			}
			pids = append(pids, pid)
		}
		if err := rows.Err(); err != nil {
			b.Fatal(err)
		}
		return pids
	}
}
