package engine_test

import (
	"context"
	"strings"
	"testing"

	"github.com/proserun/prose/internal/engine"
	"github.com/proserun/prose/store"
	"github.com/proserun/prose/store/postgres"
	"github.com/proserun/prose/store/sqlite"
	"github.com/proserun/prose/store/storetest"
)

// TestPoisonRun: a run whose worker died while executing it four times in
// a row (here: workers that claimed it and vanished, their leases expiring)
// is failed with an internal error by the next claim instead of being
// executed again; the engine does not run it.
func TestPoisonRun(t *testing.T) {
	test := func(t *testing.T, open func(opts ...store.Option) store.Store) {
		clock := &storetest.Clock{}
		st := open(store.WithClock(clock.Now))
		e := newEnvOn(t, st, engine.Options{})
		a := e.automation(t, "the output x is 1\n")
		r, _, err := e.eng.Invoke(context.Background(), engine.InvokeRequest{OrganizationID: e.org, WorkspaceID: e.ws, AutomationID: a.ID, Stage: store.StageDraft})
		if err != nil {
			t.Fatal(err)
		}
		for i := range 4 {
			// A worker claims it with a lease that expires at once, and dies.
			got, err := st.ClaimRuns(context.Background(), "dead-worker", 1, clock.Peek())
			if err != nil || len(got) != 1 || got[0].ID != r.ID {
				t.Fatalf("claim %d: %v %v", i+1, got, err)
			}
		}
		e.start(t)
		failed := e.waitFor(t, a, r.ID, store.RunFailed)
		if !strings.HasPrefix(failed.Description, "Internal error:") || !strings.Contains(failed.Description, "4 times in a row") {
			t.Fatalf("poison run: %q", failed.Description)
		}
		if failed.State != store.RunFailed {
			t.Fatalf("run state %v, want failed", failed.State)
		}
	}
	t.Run("sqlite", func(t *testing.T) {
		test(t, func(opts ...store.Option) store.Store {
			st, err := sqlite.Open(context.Background(), t.TempDir(), opts...)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			return st
		})
	})
	t.Run("postgres", func(t *testing.T) {
		url := tempPostgres(t)
		test(t, func(opts ...store.Option) store.Store {
			st, err := postgres.Open(context.Background(), url, opts...)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			return st
		})
	})
}
