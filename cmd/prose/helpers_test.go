package main

import (
	"testing"

	"github.com/proserun/prose/server/app"
	"github.com/proserun/prose/server/testenv"
)

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
