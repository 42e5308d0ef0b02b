package server_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/proserun/prose/internal/names"
	"github.com/proserun/prose/server/testenv"
	"github.com/proserun/prose/store"
)

// inWorkspace is e acting on another workspace of its organization (the
// owner's key reaches every workspace).
func (e *testEnv) inWorkspace(ws string) *testEnv {
	c := *e.Env
	c.Init.WorkspaceID = ws
	return &testEnv{&c}
}

// raise invokes a new automation whose run waits for guidance, and
// returns the automation and its exception's id.
func (e *testEnv) raise(t *testing.T, name string) (automation, exception string) {
	t.Helper()
	a := e.MkAutomation(t, name, guidedCode, false)
	r := e.invokeAPI(t, a.ID)
	m := e.WaitRun(t, a.ID, r, "awaiting_guidance")
	return a.ID, store.LastSegment(fmt.Sprint(testenv.Field(m, "state.awaiting_guidance.exception")))
}

// pendingGauge is prose_exceptions_pending of one workspace and automation
// in a scrape of e's /metrics (summed over groups).
func (e *testEnv) pendingGauge(t *testing.T, ws, automation string) float64 {
	t.Helper()
	v, _ := metricSum(e.scrape(t), "prose_exceptions_pending", "workspace", names.Workspace(e.Init.OrganizationID, ws), "automation", automation)
	return v
}

// TestExceptionsPendingGauge: prose_exceptions_pending counts the pending
// exceptions of each workspace and automation, as the database holds them
// now: raised in two workspaces, one of them resolved. On PostgreSQL a
// second replica of the database, which ran none of it, says the same.
func TestExceptionsPendingGauge(t *testing.T) {
	e := newTestEnv(t)
	ops := e.Init.WorkspaceID
	other := e.NewWorkspace(t, "Second")
	a1, x1 := e.raise(t, "first")
	a2, _ := e.raise(t, "second")
	e2 := e.inWorkspace(other)
	b1, _ := e2.raise(t, "elsewhere")
	e2.WaitRun(t, b1, e2.invokeAPI(t, b1), "awaiting_guidance")
	e.API(t, "POST", e.WsPath()+"/exceptions/"+x1+":resolve", `{"provide_values":{"values":{"the invoice total":{"number":{"lo":3}}}}}`, 200)
	want := map[[2]string]float64{{ops, a1}: 0, {ops, a2}: 1, {other, b1}: 2}
	check := func(who string, env *testEnv) {
		t.Helper()
		for k, n := range want {
			if got := env.pendingGauge(t, k[0], k[1]); got != n {
				t.Errorf("%s: prose_exceptions_pending of %s/%s = %v, want %v", who, k[0], k[1], got, n)
			}
		}
	}
	check("the replica that raised them", e)
	if os.Getenv("PROSE_TEST_POSTGRES_URL") == "" {
		return // one SQLite database has one replica
	}
	b, _ := startApp(t, testenv.PGReplica(t)(), e.Init, e.Email)
	check("another replica", b)
}
