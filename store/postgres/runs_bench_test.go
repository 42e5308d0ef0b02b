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
			storetest.BenchCreateRunsCompleted(b, s, 64, say)
		})
	}
}
