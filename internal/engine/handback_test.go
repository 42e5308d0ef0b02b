package engine_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/proserun/prose/internal/engine"
	"github.com/proserun/prose/internal/lang"
	"github.com/proserun/prose/internal/testtime"
	"github.com/proserun/prose/store"
)

// heldBooks holds each call until release is closed, then answers 42.
type heldBooks struct {
	started chan struct{}
	release chan struct{}
	calls   atomic.Int32
}

func (b *heldBooks) Lookup(context.Context, string) ([]lang.BookProcedure, error) {
	return []lang.BookProcedure{{Book: "test@1", Name: "price", Signature: "look up the price of an item (the price)"}}, nil
}

func (b *heldBooks) Call(ctx context.Context, _ lang.BookProcedure, _ map[string]lang.Value) (map[string]lang.Value, error) {
	b.calls.Add(1)
	b.started <- struct{}{}
	select {
	case <-b.release:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return map[string]lang.Value{"price": lang.Num(lang.NumberFromInt(42))}, nil
}

// When Run's context ends, a run in flight finishes its book call, then
// goes back to the queue with its state and no lease (not left to its
// lease's expiry); another engine continues it without calling the book
// again.
func TestShutdownHandsRunsBack(t *testing.T) {
	ctx := context.Background()
	bk := &heldBooks{started: make(chan struct{}, 4), release: make(chan struct{})}
	e := newEnv(t, engine.Options{Workers: 1, LeaseDuration: time.Hour, InlineWindow: -1,
		Books: func(string, string) lang.Books { return bk }})
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { _ = e.eng.Run(runCtx, 30*time.Second); close(done) }()

	a := e.automation(t, "look up the price of the item\nthe output price is the above\n")
	r, _, err := e.eng.Invoke(ctx, engine.InvokeRequest{OrganizationID: e.org, WorkspaceID: e.ws, AutomationID: a.ID, Stage: store.StageDraft})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-bk.started:
	case <-time.After(testtime.Limit(testtime.Wait)):
		t.Fatal("the book was not called")
	}
	stop() // the shutdown starts while the book call is in flight
	// The book answers once the engine drains (a fixed 50 ms could end
	// before a loaded machine's engine saw the stop: the run then went on).
	testtime.Until(t, testtime.Wait, func() (bool, string) { return e.eng.Draining(), "the engine does not drain after its context ended" })
	close(bk.release)
	select {
	case <-done:
	case <-time.After(testtime.Limit(testtime.Wait)):
		t.Fatal("Run did not return after the run was handed back")
	}
	got, err := e.st.GetRun(ctx, e.org, e.ws, a.ID, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.State != store.RunPending || got.LeaseOwner != "" {
		t.Fatalf("after the shutdown the run is %s leased to %q, want pending and unleased", got.State, got.LeaseOwner)
	}
	// Another engine (another replica) takes it at once and completes it
	// from the journal: the book is not called again.
	other := engine.New(e.st, engine.Options{Workers: 1, Books: func(string, string) lang.Books { return bk }})
	octx, ostop := context.WithCancel(ctx)
	odone := make(chan struct{})
	go func() { _ = other.Run(octx, time.Second); close(odone) }()
	t.Cleanup(func() { ostop(); <-odone })
	e.eng = other
	fin := e.waitFor(t, a, r.ID, store.RunCompleted)
	if n := bk.calls.Load(); n != 1 {
		t.Errorf("the book was called %d times, want 1 (the journal answers the second execution)", n)
	}
	if len(fin.Outputs) == 0 {
		t.Error("the completed run has no outputs")
	}
}
