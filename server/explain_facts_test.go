package server_test

import (
	"context"
	"strings"
	"testing"

	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/internal/agent"
	"github.com/proserun/prose/internal/engine"
	"github.com/proserun/prose/store"
)

// TestExplainGivesTheRunsFacts: explain_exception (the model-backed
// agent's tool) and the built-in agent's explanation give the facts the
// run held at the exception, names and values, within
// agent.MaxExplainFactsBytes (a fact too large is left out and counted).
func TestExplainGivesTheRunsFacts(t *testing.T) {
	f := newFakeModel(t)
	e := modelEnv(t, f, nil)
	ctx := context.Background()
	big := strings.Repeat("x", agent.MaxExplainFactsBytes)
	code := "the subtotal is 100\nthe customer is \"Acme\"\nthe notes is \"" + big + "\"\nget the invoice total\nthe output total is the invoice total * 2\n"
	a, err := e.Store.CreateAutomation(ctx, store.Automation{OrganizationID: e.Init.OrganizationID, WorkspaceID: e.Init.WorkspaceID, ID: "facts",
		DisplayName: "Facts", Code: code, AuthorID: e.Init.UserID})
	if err != nil {
		t.Fatal(err)
	}
	r, _, err := e.App.Engine.Invoke(ctx, engine.InvokeRequest{OrganizationID: e.Init.OrganizationID, WorkspaceID: e.Init.WorkspaceID, AutomationID: a.ID, Stage: store.StageDraft})
	if err != nil {
		t.Fatal(err)
	}
	w := e.WaitRunState(t, a.ID, r.ID, store.RunAwaitingGuidance)
	fx := eventFixture{automation: a.ID, run: r.ID, exception: w.ExceptionID, thread: store.Thread{
		OrganizationID: e.Init.OrganizationID, WorkspaceID: e.Init.WorkspaceID, AutomationID: a.ID, RunID: r.ID, AgentID: "prose"}}
	// The notes are too large (and so is whatever else holds their text).
	const facts = `"facts":[{"name":"the subtotal","value":100},{"name":"the customer","value":"Acme"}],"facts_omitted":`

	// The model-backed agent's tool.
	f.script(stream(toolPiece(0, "call_1", "explain_exception", "{}"), finish("tool_calls")), stream(text("It needs the invoice total."), finish("stop")))
	e.postToModel(t, overGRPC, fx, "why?")
	e.events().Runner().Wait()
	evs := e.thread(t, modelThread(fx))
	if got := kinds(evs); got != "user_message,tool_call_request,tool_call_result,agent_message,completion_response" {
		t.Fatalf("thread: %s", got)
	}
	if res := evs[2].GetToolCallResult().GetResult(); !strings.Contains(res, facts) || !strings.Contains(res, `"fact":"the invoice total"`) {
		t.Errorf("explain_exception: %s", res)
	}
	// The facts are in the model's system prompt too.
	if rs := f.reqs(); len(rs) != 2 || !strings.Contains(rs[0].Raw, `the subtotal`) {
		t.Errorf("requests: %d", len(rs))
	}

	// The built-in agent.
	e.mustCall(t, overGRPC, eventSvc+"CreateEvent", &platformv1.CreateEventRequest{
		OrganizationId: e.Init.OrganizationID, WorkspaceId: e.Init.WorkspaceID, AutomationId: a.ID, RunId: r.ID, AgentId: "prose",
		Event: &platformv1.Event{Payload: &platformv1.Event_UserMessage{UserMessage: &platformv1.UserMessage{Content: "why did it stop?"}}}})
	e.events().Runner().Wait()
	evs = e.thread(t, fx.thread)
	if len(evs) < 2 {
		t.Fatalf("thread: %s", kinds(evs))
	}
	want := `The run's facts then: the subtotal = 100; the customer = "Acme" (and `
	if got := evs[1].GetAgentMessage().GetContent(); !strings.Contains(got, want) {
		t.Errorf("built-in explanation: %q, want it to contain %q", got, want)
	}
}
