package engine_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/proserun/prose/internal/engine"
	"github.com/proserun/prose/internal/lang"
	"github.com/proserun/prose/internal/testtime"
	"github.com/proserun/prose/store"
	"github.com/proserun/prose/store/sqlite"
)

// blockingBooks holds each call until the call's context ends.
type blockingBooks struct {
	started chan struct{}
	ended   chan error // the cause the call's context ended with
}

func (b *blockingBooks) Lookup(context.Context, string) ([]lang.BookProcedure, error) {
	return []lang.BookProcedure{{Book: "test@1", Name: "price", Signature: "look up the price of an item (the price)"}}, nil
}

func (b *blockingBooks) Call(ctx context.Context, _ lang.BookProcedure, _ map[string]lang.Value) (map[string]lang.Value, error) {
	b.started <- struct{}{}
	<-ctx.Done()
	b.ended <- context.Cause(ctx)
	return nil, ctx.Err()
}

// A worker whose lease is lost while a book call is in flight stops the
// run's work and writes nothing more: the run stays with the worker that
// took it over. (Run with -race: the renew loop marks the flight lost while
// the worker runs.)
func TestLostLeaseWritesNothing(t *testing.T) {
	ctx := context.Background()
	// The store's clock runs an hour ahead of the engine's, so the engine's
	// leases have expired as soon as it takes them.
	st, err := sqlite.Open(ctx, t.TempDir(), store.WithClock(func() time.Time { return time.Now().Add(time.Hour) }))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	bk := &blockingBooks{started: make(chan struct{}, 1), ended: make(chan error, 1)}
	e := newEnvOn(t, st, engine.Options{
		Workers: 1, LeaseDuration: time.Minute,
		Books: func(string, string) lang.Books { return bk },
	})
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { _ = e.eng.Run(runCtx, 5*time.Second); close(done) }()
	stopped := false
	stopEngine := func() {
		if !stopped {
			stopped = true
			stop()
			<-done
		}
	}
	t.Cleanup(stopEngine)

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
	// Another worker takes the run over once its lease is recovered (at
	// most once a second of the store's clock); the engine has no free
	// slot to take it back.
	var thief []store.Run
	deadline := testtime.Deadline(testtime.Wait)
	for len(thief) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the expired lease was not recovered")
		}
		if thief, err = st.ClaimRuns(ctx, "thief", 1, time.Now().Add(2*time.Hour)); err != nil {
			t.Fatal(err)
		}
		if len(thief) == 0 {
			time.Sleep(20 * time.Millisecond) // poll for the recovery, not a timed assertion
		}
	}
	if thief[0].ID != r.ID {
		t.Fatalf("thief took %s, want %s", thief[0].ID, r.ID)
	}
	e.eng.CheckPauses(ctx) // the renewal finds the lease lost
	select {
	case cause := <-bk.ended:
		if cause == nil || errors.Is(cause, context.Canceled) && cause.Error() == context.Canceled.Error() {
			t.Fatalf("the call's context ended with %v, want the lost lease", cause)
		}
	case <-time.After(testtime.Limit(testtime.Wait)):
		t.Fatal("the book call was not cancelled")
	}
	stopEngine() // waits for the worker
	got, err := st.GetRunByID(ctx, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.State != store.RunExecuting || got.LeaseOwner != "thief" || got.ErrorID != "" {
		t.Fatalf("run after the lost lease: state %s, owner %q, error %q %q", got.State, got.LeaseOwner, got.ErrorID, got.Description)
	}
}
