package sqlite_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/proserun/prose/store/sqlite"
	"github.com/proserun/prose/store/storetest"
)

// go test -run '^$' -bench CreateRunsCompleted -benchmem ./store/sqlite/
//
// batch=64 say=0 and say=5 as before; say=0 at the batch sizes seen under
// prose-load --concurrency 32 (BENCHMARKS.md, "SQLite runs/s: last pass and
// the ceiling").
func BenchmarkCreateRunsCompleted(b *testing.B) {
	for _, c := range []struct{ batch, say int }{{64, 0}, {64, 5}, {1, 0}, {8, 0}, {16, 0}, {32, 0}} {
		name := fmt.Sprintf("say=%d", c.say)
		if c.batch != 64 {
			name = fmt.Sprintf("say=%d,batch=%d", c.say, c.batch)
		}
		b.Run(name, func(b *testing.B) {
			s, err := sqlite.Open(context.Background(), b.TempDir())
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			cpu := storetest.StartCPU(nil)
			storetest.BenchCreateRunsCompleted(b, s, c.batch, c.say)
			cpu.Report(b)
		})
	}
}

// go test -run '^$' -bench CreateClaimFinish -benchmem ./store/sqlite/
func BenchmarkCreateClaimFinish(b *testing.B) {
	for _, batch := range []int{8, 16, 32, 64} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) {
			s, err := sqlite.Open(context.Background(), b.TempDir())
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			storetest.BenchCreateClaimFinish(b, s, batch)
		})
	}
}
