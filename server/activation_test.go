package server_test

import (
	"net/http"
	"testing"

	"github.com/proserun/prose/server/app"
	"github.com/proserun/prose/server/testenv"
)

// setActivation sets an automation's activation_state over HTTP.
func (e *testEnv) setActivation(t *testing.T, automation, state string) {
	t.Helper()
	m := e.API(t, "PATCH", e.AutomationsPath()+"/"+automation+"?update_mask=activation_state", `{"activation_state":"`+state+`"}`, 200)
	if m["activation_state"] != state {
		t.Fatalf("activation_state after update: %v", m)
	}
}

// TestDeactivatedAutomationStartsNothing: an automation whose
// activation_state is AUTOMATION_ACTIVATION_STATE_DEACTIVATED starts no run
// from its schedule (the occurrence passes, the schedule moves on) nor from
// a webhook delivery (409, the reason per automation); active again, both
// start runs.
func TestDeactivatedAutomationStartsNothing(t *testing.T) {
	clk := &fakeClock{}
	clk.Set("2026-03-27T06:00:00Z")
	e := newTestEnvWith(t, func(c *app.Config) { c.Clock = clk.Now })
	a := e.MkAutomation(t, "Morning report", "the output x is 1\n", false)
	path := e.AutomationsPath() + "/" + a.ID + "/schedule"
	e.API(t, "POST", path, weekdayBerlin, 200)
	_, endpoint, secret := e.webhookFixture(t, a.ID)

	e.setActivation(t, a.ID, "AUTOMATION_ACTIVATION_STATE_DEACTIVATED")
	clk.Set("2026-03-27T08:00:00Z")
	e.tick(t)
	if runs := e.scheduledRuns(t, a.ID); len(runs) != 0 {
		t.Fatalf("a deactivated automation's schedule started runs: %v", runs)
	}
	if got := nextTimes(e.API(t, "GET", path, "", 200)); len(got) == 0 || got[0] != "2026-03-30T07:00:00Z" {
		t.Errorf("the schedule did not move past the refused occurrence: %v", got)
	}
	code, m, raw := e.deliver(t, endpoint, secret, `{"x":1}`, "d-1", "")
	if code != http.StatusConflict || testenv.Field(m, "runs.0.run") != nil ||
		testenv.Field(m, "runs.0.error") != "the automation is deactivated (activation_state AUTOMATION_ACTIVATION_STATE_DEACTIVATED)" {
		t.Errorf("delivery to a deactivated automation: %d %s", code, raw)
	}
	if runs := e.scheduledRuns(t, a.ID); len(runs) != 0 {
		t.Fatalf("runs after the refused delivery: %v", runs)
	}

	// Active again (and unspecified counts as active).
	e.setActivation(t, a.ID, "AUTOMATION_ACTIVATION_STATE_ACTIVE")
	clk.Set("2026-03-30T07:00:01Z")
	e.tick(t)
	if n := len(e.scheduledRuns(t, a.ID)); n != 1 {
		t.Fatalf("%d runs after reactivation's occurrence, want 1", n)
	}
	code, m, raw = e.deliver(t, endpoint, secret, `{"x":1}`, "d-1", "")
	if code != http.StatusAccepted || testenv.Field(m, "runs.0.run") == nil {
		t.Errorf("delivery after reactivation: %d %s", code, raw)
	}
	if n := len(e.scheduledRuns(t, a.ID)); n != 2 {
		t.Errorf("%d runs after reactivation, want 2", n)
	}
}
