package sqlite_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/proserun/prose/store/sqlite"
	"github.com/proserun/prose/store/storetest"
)

// go test -run '^$' -bench CreateRunsCompleted -benchmem ./store/sqlite/
func BenchmarkCreateRunsCompleted(b *testing.B) {
	for _, say := range []int{0, 5} {
		b.Run(fmt.Sprintf("say=%d", say), func(b *testing.B) {
			s, err := sqlite.Open(context.Background(), b.TempDir())
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			storetest.BenchCreateRunsCompleted(b, s, 64, say)
		})
	}
}
