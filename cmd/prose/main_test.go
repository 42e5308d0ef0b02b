package main

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/proserun/prose/store/postgres/pgtest"
)

// TestMain gives this package's tests a PostgreSQL database of their own
// when PROSE_TEST_POSTGRES_URL names a server: the database is created
// before the first test, PROSE_TEST_POSTGRES_URL is pointed at it for the
// tests, and it is dropped when they end. The database the variable named
// is never migrated or written.
func TestMain(m *testing.M) {
	base := os.Getenv("PROSE_TEST_POSTGRES_URL")
	if base == "" {
		os.Exit(m.Run())
	}
	dbURL, drop, err := createTestDatabase(base)
	if err != nil {
		fmt.Fprintf(os.Stderr, "PROSE_TEST_POSTGRES_URL: %v\n", err)
		os.Exit(1)
	}
	if err := os.Setenv("PROSE_TEST_POSTGRES_URL", dbURL); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	if err := drop(); err != nil {
		fmt.Fprintf(os.Stderr, "drop the test database: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}

// createTestDatabase creates a fresh database on the server of base and
// returns its URL and a function that drops it.
func createTestDatabase(base string) (string, func() error, error) {
	return pgtest.CreateDatabase(context.Background(), base, "prose_cmd_test_")
}
