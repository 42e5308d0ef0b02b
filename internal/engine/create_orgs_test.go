package engine_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/proserun/prose/internal/engine"
	"github.com/proserun/prose/internal/testtime"
	"github.com/proserun/prose/store"
)

// heldCreates is a store whose creates of runs of one organization wait
// for release, and which records how many of them were in progress at
// once.
type heldCreates struct {
	store.Store
	org     string
	entered chan struct{} // receives each create of org's runs as it starts
	release chan struct{}
	stop    chan struct{} // closed when the test ends: nothing waits any more

	mu           sync.Mutex
	now, maxSeen int
}

func (h *heldCreates) hold(in []store.Run) func() {
	for _, r := range in {
		if r.OrganizationID != h.org {
			continue
		}
		h.mu.Lock()
		h.now++
		h.maxSeen = max(h.maxSeen, h.now)
		h.mu.Unlock()
		select {
		case h.entered <- struct{}{}:
			select {
			case <-h.release:
			case <-h.stop:
			}
		case <-h.stop:
		}
		return func() { h.mu.Lock(); h.now--; h.mu.Unlock() }
	}
	return func() {}
}

func (h *heldCreates) CreateRun(ctx context.Context, r store.Run) (store.Run, bool, error) {
	defer h.hold([]store.Run{r})()
	return h.Store.CreateRun(ctx, r)
}

func (h *heldCreates) CreateRuns(ctx context.Context, in []store.Run) ([]store.Run, []bool, []error, error) {
	defer h.hold(in)()
	return h.Store.CreateRuns(ctx, in)
}

// TestCreatesOfOneOrganizationDoNotWaitForAnothers: on PostgreSQL, a run
// of organization A is written while a batch of B's runs is being written
// (its commit held here), not after it; B's runs are written one batch at
// a time.
func TestCreatesOfOneOrganizationDoNotWaitForAnothers(t *testing.T) {
	raw := openBackend(t, "postgres")
	b := otherOrganization(t, raw, "the output x is 2\n")
	h := &heldCreates{Store: raw, org: b.OrganizationID, entered: make(chan struct{}), release: make(chan struct{}), stop: make(chan struct{})}
	e := newEnvOn(t, h, engine.Options{})
	a := e.automation(t, "the output x is 1\n")
	var wg sync.WaitGroup
	defer wg.Wait()
	defer close(h.stop)
	invokeB := func() {
		wg.Go(func() {
			if _, _, err := e.eng.Invoke(context.Background(), engine.InvokeRequest{OrganizationID: b.OrganizationID, WorkspaceID: b.WorkspaceID,
				AutomationID: b.ID, Stage: store.StageDraft}); err != nil {
				t.Error(err)
			}
		})
	}
	limit := time.After(testtime.Limit(testtime.Wait))
	invokeB()
	select {
	case <-h.entered: // B's first batch is being written
	case <-limit:
		t.Fatal("B's run was not written")
	}
	invokeB()
	created := make(chan store.Run, 1)
	wg.Go(func() {
		r, _, err := e.eng.Invoke(context.Background(), engine.InvokeRequest{OrganizationID: e.org, WorkspaceID: e.ws, AutomationID: a.ID, Stage: store.StageDraft})
		if err != nil {
			t.Error(err)
		}
		created <- r
	})
	select {
	case r := <-created:
		if r.ID == "" {
			t.Fatal("A's run not created")
		}
	case <-limit:
		t.Fatal("A's run waited for B's batch to be written")
	}
	// B's second run, queued behind its first, is written after it.
	h.release <- struct{}{}
	select {
	case <-h.entered:
	case <-limit:
		t.Fatal("B's second run was not written")
	}
	h.release <- struct{}{}
	wg.Wait()
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.maxSeen != 1 {
		t.Fatalf("%d of B's creates were written at once, want 1", h.maxSeen)
	}
}
