package console_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/proserun/prose/internal/testtime"
	"github.com/proserun/prose/server/app"
	"github.com/proserun/prose/server/testenv"
	"github.com/proserun/prose/store"
)

// TestConsoleLiveAcrossReplicas: two replicas on one PostgreSQL database.
// A page served by replica A (its engine stopped: it changes nothing)
// hears of a run invoked, waiting and resolved on replica B as soon as a
// page of B would (B's notice over LISTEN/NOTIFY; no periodic refresh),
// and an idle page is not woken while nothing changes.
func TestConsoleLiveAcrossReplicas(t *testing.T) {
	newReplica := testenv.PGReplica(t)
	ea, _ := testenv.StartApp(t, newReplica(), app.InitResult{}, "")
	a := &testEnv{ea}
	a.Email = "owner-" + store.NewID() + "@example.test"
	var err error
	a.Init, err = app.Bootstrap(context.Background(), a.Store, app.InitOptions{Organization: "Console replicas org", Email: a.Email, Workspace: "Ops"})
	if err != nil {
		t.Fatal(err)
	}
	a.App.StopEngine()
	eb, _ := testenv.StartApp(t, newReplica(), a.Init, a.Email)
	b := &testEnv{eb}
	auto := b.MkAutomation(t, "Needs a value", testenv.ExcMissingCode, false)

	c := testenv.BrowserClient(t)
	a.ConsoleSignIn(t, c, a.Init.APIKey)
	ws := "/w/" + a.Init.WorkspaceID
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	code, _, inbox := sseStream(t, ctx, c, a.Srv.URL+ws+"/live?topic=exceptions")
	if code != http.StatusOK {
		t.Fatalf("live stream on A: %d", code)
	}
	testtime.Until(t, testtime.Wait, func() (bool, string) {
		return a.App.Hub.Streams() >= 1, "the live stream on A is not subscribed"
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
	m := b.API(t, "POST", b.AutomationsPath()+"/"+auto.ID+":invoke", `{"stage":"AUTOMATION_STAGE_DRAFT"}`, 200)
	awaitEvent(t, inbox, "change", "A's inbox after an invoke on B")
	t.Logf("a change on B reached a page on A in %v", time.Since(start))
	id := fmt.Sprint(m["run_id"])
	w := b.WaitRun(t, auto.ID, id, "awaiting_guidance")
	drain(inbox, 200*time.Millisecond)

	// Resolved on B: A's page hears of it.
	x := fmt.Sprint(testenv.Field(w, "state.awaiting_guidance.exception"))
	start = time.Now()
	b.API(t, "POST", b.WsPath()+"/exceptions/"+x+":resolve", `{"provide_values":{"values":{"the invoice total":{"number":{"lo":5}}}}}`, 200)
	awaitEvent(t, inbox, "change", "A's inbox after a resolution on B")
	t.Logf("a resolution on B reached a page on A in %v", time.Since(start))
	b.WaitRun(t, auto.ID, id, "completed")
}
