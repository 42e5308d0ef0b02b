package engine_test

import (
	"context"
	"testing"
	"time"

	"github.com/proserun/prose/internal/engine"
	"github.com/proserun/prose/internal/lang"
	"github.com/proserun/prose/internal/testtime"
	"github.com/proserun/prose/store"
	"github.com/proserun/prose/store/postgres"
	"github.com/proserun/prose/store/sqlite"
)

// TestBusyOrganizationLeavesWorkersToOthers: an organization whose runs
// would hold every worker (their book calls never return until the end,
// so no time slice can take a worker from them; time slices are off)
// holds only its share, and another organization's run is executed on a
// worker kept for it. Then the busy organization's waiting runs get their
// turn. Without the share (OrgWorkers -1) the other run waits for ever and
// the test fails at its deadline.
func TestBusyOrganizationLeavesWorkersToOthers(t *testing.T) {
	test := func(t *testing.T, st store.Store) {
		ctx := context.Background()
		bk := &heldBooks{started: make(chan struct{}, 16), release: make(chan struct{})}
		released := false
		defer func() {
			if !released {
				close(bk.release)
			}
		}()
		e := newEnvOn(t, st, engine.Options{Workers: 4, TimeSlice: -1, LeaseDuration: time.Hour,
			Books: func(string, string) lang.Books { return bk }})
		if got := e.eng.OrgWorkers(); got != 3 {
			t.Fatalf("OrgWorkers %d with 4 workers, want 3", got)
		}
		// Organization B, whose runs call the held book.
		borg, err := st.CreateOrganization(ctx, store.Organization{DisplayName: "Busy"})
		if err != nil {
			t.Fatal(err)
		}
		bws, err := st.CreateWorkspace(ctx, store.Workspace{OrganizationID: borg.ID, Title: "flood"})
		if err != nil {
			t.Fatal(err)
		}
		ba, err := st.CreateAutomation(ctx, store.Automation{OrganizationID: borg.ID, WorkspaceID: bws.ID, DisplayName: "b",
			Code: "look up the price of the item\nthe output price is the above\n"})
		if err != nil {
			t.Fatal(err)
		}
		e.start(t)
		var bruns []store.Run
		for range 6 {
			r, _, err := e.eng.Invoke(ctx, engine.InvokeRequest{OrganizationID: borg.ID, WorkspaceID: bws.ID, AutomationID: ba.ID, Stage: store.StageDraft})
			if err != nil {
				t.Fatal(err)
			}
			bruns = append(bruns, r)
		}
		// B's runs hold three workers, all their organization may hold.
		for i := range 3 {
			select {
			case <-bk.started:
			case <-time.After(testtime.Limit(testtime.Wait)):
				t.Fatalf("%d of B's runs started, want 3", i)
			}
		}
		// A's trivial run completes on the fourth worker.
		a := e.automation(t, "the output x is 1 + 1\n")
		r, _, err := e.eng.Invoke(ctx, engine.InvokeRequest{OrganizationID: e.org, WorkspaceID: e.ws, AutomationID: a.ID, Stage: store.StageDraft})
		if err != nil {
			t.Fatal(err)
		}
		e.waitFor(t, a, r.ID, store.RunCompleted)
		// B never held more than its share: three book calls, three slots.
		if n := bk.calls.Load(); n != 3 {
			t.Fatalf("%d of B's runs called the book while A's run executed, want 3 (its share)", n)
		}
		if got := e.eng.BusyByOrganization(); got[borg.ID] != 3 || got[e.org] != 0 {
			t.Fatalf("busy workers by organization %v, want B 3 and A none", got)
		}
		// B's other runs get their turn once its calls return.
		released = true
		close(bk.release)
		for _, br := range bruns {
			waitRun(t, st, br, store.RunCompleted)
		}
	}
	t.Run("sqlite", func(t *testing.T) {
		st, err := sqlite.Open(context.Background(), t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		test(t, st)
	})
	t.Run("postgres", func(t *testing.T) {
		st, err := postgres.Open(context.Background(), tempPostgres(t))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		test(t, st)
	})
}

// waitRun polls the store until run r is in state want.
func waitRun(t *testing.T, st store.Store, r store.Run, want store.RunState) {
	t.Helper()
	deadline := testtime.Deadline(testtime.Wait)
	for {
		got, err := st.GetRun(context.Background(), r.OrganizationID, r.WorkspaceID, r.AutomationID, r.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.State == want {
			return
		}
		if got.State.Terminal() || time.Now().After(deadline) {
			t.Fatalf("run %s is %s (%s), want %s", r.ID, got.State, got.Description, want)
		}
		time.Sleep(time.Millisecond)
	}
}
