package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/proserun/prose/store/postgres/pgtest"
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
	base := os.Getenv("PROSE_TEST_POSTGRES_URL")
	if base == "" {
		return m.Run()
	}
	dbURL, drop, err := createTestDatabase(base)
	if err != nil {
		fmt.Fprintf(os.Stderr, "PROSE_TEST_POSTGRES_URL: %v\n", err)
		return 1
	}
	if err := os.Setenv("PROSE_TEST_POSTGRES_URL", dbURL); err != nil {
		fmt.Fprintln(os.Stderr, err)
		_ = drop()
		return 1
	}
	code := m.Run()
	if err := drop(); err != nil {
		fmt.Fprintf(os.Stderr, "drop the test database: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}

// createTestDatabase creates a fresh database on the server of base and
// returns its URL and a function that drops it.
func createTestDatabase(base string) (string, func() error, error) {
	return pgtest.CreateDatabase(context.Background(), base, "prose_cmd_test_")
}
