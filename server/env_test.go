package server_test

import (
	"log/slog"
	"os"
	"testing"

	"github.com/proserun/prose/server/app"
	"github.com/proserun/prose/server/testenv"
)

// TestMain gives this package's tests a PostgreSQL database of their own
// when PROSE_TEST_POSTGRES_URL names a server (testenv.Main).
func TestMain(m *testing.M) {
	os.Exit(testenv.Main(m, "prose_server_test_"))
}

// testEnv is the shared harness (testenv.Env) with this package's own
// helpers as methods.
type testEnv struct{ *testenv.Env }

// newTestEnv starts the app on testenv.Config and creates an organization.
func newTestEnv(t *testing.T) *testEnv {
	t.Helper()
	return &testEnv{testenv.New(t)}
}

// newTestEnvWith is newTestEnv with a configuration changed by edit.
func newTestEnvWith(t *testing.T, edit func(*app.Config)) *testEnv {
	t.Helper()
	return &testEnv{testenv.NewWith(t, edit)}
}

// newTestEnvLogged is newTestEnvWith with the app logging to logger.
func newTestEnvLogged(t *testing.T, edit func(*app.Config), logger *slog.Logger) *testEnv {
	t.Helper()
	return &testEnv{testenv.NewLogged(t, edit, logger)}
}
