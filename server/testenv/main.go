package testenv

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/proserun/prose/store/postgres/pgtest"
)

// mainRan tells Config that the package's TestMain called Main: without
// it, PROSE_TEST_POSTGRES_URL still names the shared server's database,
// which the tests must never migrate or write.
var mainRan bool

// Main runs a package's tests (call it from TestMain) and returns their
// exit code. When PROSE_TEST_POSTGRES_URL names a server, the package gets
// a PostgreSQL database of its own: created before the first test (named
// prefix and a random suffix; logged where PROSE_TEST_CREATED_DATABASES
// says, see pgtest), PROSE_TEST_POSTGRES_URL pointed at it for the tests,
// and dropped when they end. The database the variable named is never
// migrated or written.
func Main(m *testing.M, prefix string) int {
	mainRan = true
	base := os.Getenv("PROSE_TEST_POSTGRES_URL")
	if base == "" {
		return m.Run()
	}
	dbURL, drop, err := pgtest.CreateDatabase(context.Background(), base, prefix)
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
