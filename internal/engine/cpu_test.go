package engine_test

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"testing"
	"time"

	"github.com/proserun/prose/internal/engine"
	"github.com/proserun/prose/internal/lang"
	"github.com/proserun/prose/internal/testtime"
	"github.com/proserun/prose/store"
)

// otherOrganization makes a second organization with a workspace and an
// automation of code in it.
func otherOrganization(t *testing.T, st store.Store, code string) store.Automation {
	t.Helper()
	ctx := context.Background()
	org, err := st.CreateOrganization(ctx, store.Organization{DisplayName: "Busy"})
	if err != nil {
		t.Fatal(err)
	}
	ws, err := st.CreateWorkspace(ctx, store.Workspace{OrganizationID: org.ID, Title: "flood"})
	if err != nil {
		t.Fatal(err)
	}
	a, err := st.CreateAutomation(ctx, store.Automation{OrganizationID: org.ID, WorkspaceID: ws.ID, DisplayName: "b", Code: code})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func invokeOf(t *testing.T, eng *engine.Engine, a store.Automation, requestID string) store.Run {
	t.Helper()
	r, _, err := eng.Invoke(context.Background(), engine.InvokeRequest{OrganizationID: a.OrganizationID, WorkspaceID: a.WorkspaceID,
		AutomationID: a.ID, Stage: store.StageDraft, RequestID: requestID})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// waitTurns waits until the turns held by organization are want, and
// checks at every look that no more than the engine's processors are held.
func waitTurns(t *testing.T, eng *engine.Engine, want map[string]int, why string) {
	t.Helper()
	deadline := testtime.Deadline(testtime.Wait)
	for {
		got := eng.TurnsByOrganization()
		n := 0
		for _, k := range got {
			n += k
		}
		if n > eng.Processors() {
			t.Fatalf("%d turns held (%v), more than the %d processors", n, got, eng.Processors())
		}
		if maps.Equal(got, want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("turns held %v, want %v: %s", got, want, why)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestLongRunsTakeProcessorTurns: one organization's long runs interpret
// on at most the engine's processors (two here), and leave one to another
// organization while it has work: an API call being served (Work), a
// long run of its own; they take it back when that work is done. A pause
// reaches a run waiting for a turn. Without the turns (Processors -1) no
// turn is ever held and the first wait fails.
func TestLongRunsTakeProcessorTurns(t *testing.T) {
	e := newEnv(t, engine.Options{Workers: 5, Processors: 2, TimeSlice: -1, Limits: lang.Limits{MaxSteps: -1, MaxDuration: -1}})
	if got := e.eng.Processors(); got != 2 {
		t.Fatalf("Processors %d, want 2", got)
	}
	e.start(t)
	b := otherOrganization(t, e.st, endless())
	var bruns []store.Run
	for i := range 3 {
		bruns = append(bruns, invokeOf(t, e.eng, b, fmt.Sprint("b", i)))
	}
	borg := b.OrganizationID
	waitTurns(t, e.eng, map[string]int{borg: 2}, "B's three long runs hold both turns")

	done := e.eng.Work(e.org)
	waitTurns(t, e.eng, map[string]int{borg: 1}, "while A's call is served, B's runs leave it a processor")
	done()
	waitTurns(t, e.eng, map[string]int{borg: 2}, "A's call is done: B takes both turns again")

	a := e.automation(t, endless())
	ar := invokeOf(t, e.eng, a, "a")
	waitTurns(t, e.eng, map[string]int{borg: 1, e.org: 1}, "A's long run and B's share the turns")

	// B's runs stop when paused, the one waiting for a turn included; A's
	// then takes both turns.
	for _, r := range bruns {
		if _, err := e.eng.Pause(context.Background(), r.OrganizationID, r.WorkspaceID, r.AutomationID, r.ID, "enough", "test"); err != nil {
			t.Fatal(err)
		}
	}
	for _, r := range bruns {
		waitRun(t, e.st, r, store.RunStopped)
	}
	waitTurns(t, e.eng, map[string]int{e.org: 1}, "A's one long run holds one turn")
	if _, err := e.eng.Pause(context.Background(), e.org, e.ws, a.ID, ar.ID, "enough", "test"); err != nil {
		t.Fatal(err)
	}
	waitRun(t, e.st, ar, store.RunStopped)
	waitTurns(t, e.eng, map[string]int{}, "no run executes")
}

// TestAnotherOrganizationsQueueKeepsNoRunFromExecutionAtCreation: runs of
// organization B wait in the queue (made by another replica, claims held),
// yet organization A's quick runs are still executed at their creation;
// B's are created pending behind B's queue, and after the first one comes
// back pending the engine stops executing B's at creation, not A's.
func TestAnotherOrganizationsQueueKeepsNoRunFromExecutionAtCreation(t *testing.T) {
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			ctx := context.Background()
			raw := openBackend(t, backend)
			h := newHookStore(raw)
			e := newEnvOn(t, h, engine.Options{InlineWindow: time.Minute})
			e.start(t)
			quick := e.automation(t, "the output x is 1\n")
			b := otherOrganization(t, raw, "the output x is 2\n")
			unhold := sync.OnceFunc(h.holdClaims())
			defer unhold()
			// Another replica (an engine not running) queues a run of B.
			other := engine.New(raw, engine.Options{})
			p := invokeOf(t, other, b, "")
			stored := func(id string) store.Run {
				t.Helper()
				r, err := raw.GetRunByID(ctx, id)
				if err != nil {
					t.Fatal(err)
				}
				return r
			}
			for i, want := range []struct {
				a        store.Automation
				asked    store.RunState
				stored   store.RunState
				whyAsked string
			}{
				{quick, store.RunCompleted, store.RunCompleted, "A has no run waiting"},
				{b, store.RunCompleted, store.RunPending, "the engine does not know of B's queue yet"},
				{b, store.RunPending, store.RunPending, "the engine knows B's runs wait"},
				{quick, store.RunCompleted, store.RunCompleted, "B's queue is not A's"},
			} {
				id := fmt.Sprint("r", i)
				r := invokeOf(t, e.eng, want.a, id)
				if s, _ := h.askedState(id); s != want.asked && (want.asked != store.RunPending || s != "") {
					t.Fatalf("run %d asked to be created %q, want %s: %s", i, s, want.asked, want.whyAsked)
				}
				if got := stored(r.ID); got.State != want.stored {
					t.Fatalf("run %d stored %s, want %s", i, got.State, want.stored)
				}
			}
			unhold()
			waitRun(t, raw, p, store.RunCompleted)
		})
	}
}
