package main

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/proserun/prose/internal/testtime"
	"github.com/proserun/prose/store"
)

// TestConsoleLiveAcrossReplicas: two replicas on one PostgreSQL database.
// A page served by replica A (its engine stopped: it changes nothing)
// hears of a run invoked, waiting and resolved on replica B as soon as a
// page of B would (B's notice over LISTEN/NOTIFY; no periodic refresh),
// and an idle page is not woken while nothing changes.
func TestConsoleLiveAcrossReplicas(t *testing.T) {
	newReplica := pgReplica(t)
	a, _ := startApp(t, newReplica(), initResult{}, "")
	a.email = "owner-" + store.NewID() + "@example.test"
	var err error
	a.init, err = bootstrap(context.Background(), a.st, initOptions{organization: "Console replicas org", email: a.email, workspace: "Ops"})
	if err != nil {
		t.Fatal(err)
	}
	a.app.stopEngine()
	b, _ := startApp(t, newReplica(), a.init, a.email)
	auto := b.mkAutomation(t, "Needs a value", excMissingCode, false)

	c := browserClient(t)
	a.consoleSignIn(t, c, a.init.APIKey)
	ws := "/w/" + a.init.workspaceID
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	code, _, inbox := sseStream(t, ctx, c, a.srv.URL+ws+"/live?topic=exceptions")
	if code != http.StatusOK {
		t.Fatalf("live stream on A: %d", code)
	}
	testtime.Until(t, testtime.Wait, func() (bool, string) {
		return a.app.hub.Streams() >= 1, "the live stream on A is not subscribed"
	})
	drain(inbox, 300*time.Millisecond)
	// Nothing changes: nothing is sent (the 2 s refresh is gone).
	select {
	case ev := <-inbox:
		t.Fatalf("an idle page on A was woken (%q) with no change", ev)
	case <-time.After(2500 * time.Millisecond):
	}

	// Invoked on B: A's page hears of it at once, and of the run waiting.
	start := time.Now()
	m := b.api(t, "POST", b.automationsPath()+"/"+auto.id+":invoke", `{"stage":"AUTOMATION_STAGE_DRAFT"}`, 200)
	awaitEvent(t, inbox, "change", "A's inbox after an invoke on B")
	t.Logf("a change on B reached a page on A in %v", time.Since(start))
	id := fmt.Sprint(m["run_id"])
	w := b.waitRun(t, auto.id, id, "awaiting_guidance")
	drain(inbox, 200*time.Millisecond)

	// Resolved on B: A's page hears of it.
	x := fmt.Sprint(field(w, "state.awaiting_guidance.exception"))
	start = time.Now()
	b.api(t, "POST", b.wsPath()+"/exceptions/"+x+":resolve", `{"provide_values":{"values":{"the invoice total":{"number":{"lo":5}}}}}`, 200)
	awaitEvent(t, inbox, "change", "A's inbox after a resolution on B")
	t.Logf("a resolution on B reached a page on A in %v", time.Since(start))
	b.waitRun(t, auto.id, id, "completed")
}
