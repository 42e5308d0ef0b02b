package testenv

import (
	"context"
	"math"
	"testing"

	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/internal/engine"
	"github.com/proserun/prose/server"
	"github.com/proserun/prose/store"
)

// Programs that stop for guidance.
const (
	ExcMissingCode  = "get the invoice total\nthe output total is the invoice total * 2\n"
	ExcDivisionCode = "the x is 10 / 0\nthe output x is the x\n"
	ExcSkipCode     = "the x is 10 / 0\nthe output done is \"yes\"\n"
	ExcAskCode      = "ask \"Approve?\"\nthe output approved is the answer\n"
	ExcChoiceCode   = "ask \"Colour?\" with\n  the choices are \"red\", \"blue\"\nthe output colour is the answer\n"
	ExcValidateCode = "the quantity is 3\nvalidate the following\n  ensure the quantity is greater than 5\nthe output quantity is the quantity\n"
)

// ExcAutomation stores an automation with code in the test workspace.
func (e *Env) ExcAutomation(t *testing.T, code string) store.Automation {
	t.Helper()
	a, err := e.Store.CreateAutomation(context.Background(), store.Automation{
		OrganizationID: e.Init.OrganizationID, WorkspaceID: e.Init.WorkspaceID, DisplayName: "exceptions", Code: code, AuthorID: e.Init.UserID,
	})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// ExcRun invokes a and waits for it to wait for guidance; it returns the run.
func (e *Env) ExcRun(t *testing.T, a store.Automation) store.Run {
	t.Helper()
	r, _, err := e.App.Engine.Invoke(context.Background(), engine.InvokeRequest{
		OrganizationID: e.Init.OrganizationID, WorkspaceID: e.Init.WorkspaceID, AutomationID: a.ID, Stage: store.StageDraft,
	})
	if err != nil {
		t.Fatal(err)
	}
	return e.WaitRunState(t, a.ID, r.ID, store.RunAwaitingGuidance)
}

// ExcMake runs a new automation of code until it waits; it returns the
// automation, the run and the exception id.
func (e *Env) ExcMake(t *testing.T, code string) (store.Automation, store.Run, string) {
	t.Helper()
	a := e.ExcAutomation(t, code)
	r := e.ExcRun(t, a)
	if r.ExceptionID == "" {
		t.Fatalf("run %s waits on no exception", r.ID)
	}
	return a, r, r.ExceptionID
}

// ExcOutputs are the outputs of a completed run.
func ExcOutputs(t *testing.T, r store.Run) map[string]*platformv1.Value {
	t.Helper()
	p, err := server.RunToProto(r)
	if err != nil {
		t.Fatal(err)
	}
	return p.GetState().GetCompleted().GetOutputs()
}

// ExcNum is a platform Number as a float.
func ExcNum(v *platformv1.Value) float64 {
	n := v.GetNumber()
	return float64(n.GetLo()) / math.Pow10(int(n.GetFlags()>>16&0xff))
}

// WaitRunState reads a run from the store until it is in state want,
// failing when it ends in another state or after PollWait.
func (e *Env) WaitRunState(t *testing.T, automation, id string, want store.RunState) store.Run {
	t.Helper()
	return e.PollRun(t, automation, id, "want "+string(want),
		func(r store.Run) bool { return r.State == want },
		func(r store.Run) bool { return r.State.Terminal() })
}
