package main

import (
	"testing"

	"github.com/proserun/prose/store/postgres/pgtest"
)

// TestCrashTwoReplicasPostgres runs the crash test with two `prose serve`
// replicas on one PostgreSQL database: 500 runs spread over both, replica 0
// killed with SIGKILL mid-way and not restarted; replica 1 takes over the
// victim's runs when their leases (3 s) expire.
func TestCrashTwoReplicasPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test: builds the binary and runs 500 runs across a SIGKILL")
	}
	dbURL := crashTempDatabase(t)
	runCrashScenario(t, crashScenario{storeArgs: []string{"--database", dbURL}, replicas: 2})
}

// crashTempDatabase creates a fresh database on the PROSE_TEST_POSTGRES_URL
// server (skipping the test when it is unset) and drops it at cleanup.
func crashTempDatabase(t *testing.T) string {
	t.Helper()
	return pgtest.TempDatabase(t, "prose_crash_")
}
