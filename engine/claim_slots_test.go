package engine_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/proserun/prose/engine"
	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/lang"
	"github.com/proserun/prose/store"
	"github.com/proserun/prose/store/postgres"
	"github.com/proserun/prose/store/sqlite"
)

// claimHookStore calls hook (once) inside the engine's next claim that
// asks for runs, before the claim itself.
type claimHookStore struct {
	store.Store
	hook atomic.Pointer[func()]
}

func (s *claimHookStore) ClaimRuns(ctx context.Context, owner string, max int, leaseUntil time.Time) ([]store.Run, error) {
	if max > 0 {
		if h := s.hook.Swap(nil); h != nil {
			(*h)()
		}
	}
	return s.Store.ClaimRuns(ctx, owner, max, leaseUntil)
}

// TestClaimedRunNeverWaitsForASlot: a run leased to an engine is a run one
// of its workers executes. The claim loop and Invoke's runs created leased
// (reserveSlot) share the worker slots; here, with one worker, a run that
// calls a (held) book is invoked while the claim is under way, then a quick
// run. Whichever of them the claim takes, while the book call is held the
// only run executing is the one calling it: no run is claimed for a slot
// another run took, where it would wait, leased, for as long as that run
// executes (past its lease).
func TestClaimedRunNeverWaitsForASlot(t *testing.T) {
	test := func(t *testing.T, base store.Store) {
		ctx := context.Background()
		st := &claimHookStore{Store: base}
		bk := &gatedBooks{open: make(chan struct{})}
		e := newEnvOn(t, st, engine.Options{Workers: 1, InlineWindow: -1, TimeSlice: -1,
			Books: func(string, string) lang.Books { return bk }})
		e.start(t)
		quick := e.automation(t, "the output x is 1\n")
		first, _, err := e.eng.Invoke(ctx, engine.InvokeRequest{OrganizationID: e.org, WorkspaceID: e.ws, AutomationID: quick.ID, Stage: store.StageDraft})
		if err != nil {
			t.Fatal(err)
		}
		e.waitFor(t, quick, first.ID, store.RunCompleted) // the engine runs

		price := e.automation(t, "look up the price of the item\nthe output price is the above\n")
		var held, other store.Run
		hooked := make(chan error, 1)
		hook := func() {
			var err error
			held, _, err = e.eng.Invoke(ctx, engine.InvokeRequest{OrganizationID: e.org, WorkspaceID: e.ws, AutomationID: price.ID, Stage: store.StageDraft,
				Inputs: map[string]*platformv1.Value{"item": text("tea")}})
			if err == nil {
				other, _, err = e.eng.Invoke(ctx, engine.InvokeRequest{OrganizationID: e.org, WorkspaceID: e.ws, AutomationID: quick.ID, Stage: store.StageDraft})
			}
			hooked <- err
		}
		st.hook.Store(&hook)
		var hookErr error
		for waiting := true; waiting; {
			select {
			case hookErr = <-hooked:
				waiting = false
			case <-time.After(10 * time.Millisecond):
				e.eng.Wake() // a claim
			}
		}
		if hookErr != nil {
			t.Fatal(hookErr)
		}
		// Until the book call is held (whichever way the run got its worker).
		for deadline := time.Now().Add(30 * time.Second); bk.calls.Load() == 0; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("the book was not called")
			}
		}
		executing := func() []string {
			t.Helper()
			var ids []string
			for _, a := range []store.Automation{price, quick} {
				p, err := st.ListRuns(ctx, store.ListRunsRequest{OrganizationID: e.org, WorkspaceID: e.ws, AutomationID: a.ID,
					Filter: store.Cond{Field: "state", Op: store.OpEq, Value: string(store.RunExecuting)}})
				if err != nil {
					t.Fatal(err)
				}
				for _, r := range p.Items {
					ids = append(ids, r.ID)
				}
			}
			return ids
		}
		if ids := executing(); len(ids) != 1 || ids[0] != held.ID {
			t.Fatalf("runs executing while the one worker is held by %s: %v (the quick run %s leased without a worker?)", held.ID, ids, other.ID)
		}
		close(bk.open)
		e.waitFor(t, price, held.ID, store.RunCompleted)
		e.waitFor(t, quick, other.ID, store.RunCompleted)
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
