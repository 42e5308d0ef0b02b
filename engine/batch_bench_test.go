package engine_test

import (
	"testing"

	"github.com/proserun/prose/store/postgres/pgtest"
)

// tempPostgres creates a database on PROSE_TEST_POSTGRES_URL (skipping
// without it), dropped at cleanup, and returns its URL.
func tempPostgres(t *testing.T) string {
	t.Helper()
	return pgtest.TempDatabase(t, "prose_test_")
}
