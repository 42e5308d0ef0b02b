package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/proserun/prose/server/testenv"
)

// TestMain gives this package's tests a PostgreSQL database of their own
// when PROSE_TEST_POSTGRES_URL names a server: the database is created
// before the first test, PROSE_TEST_POSTGRES_URL is pointed at it for the
// tests, and it is dropped when they end. The database the variable named
// is never migrated or written. The prose binary the tests build once
// (proseBinary) is removed when they end.
func TestMain(m *testing.M) {
	code := runTests(m)
	if builtPath != "" {
		_ = os.RemoveAll(filepath.Dir(builtPath))
	}
	os.Exit(code)
}

func runTests(m *testing.M) int {
	return testenv.Main(m, "prose_cmd_test_")
}
