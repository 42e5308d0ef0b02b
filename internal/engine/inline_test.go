package engine_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/internal/codec"
	"github.com/proserun/prose/internal/engine"
	"github.com/proserun/prose/internal/lang"
	"github.com/proserun/prose/store"
	"github.com/proserun/prose/store/postgres"
	"github.com/proserun/prose/store/sqlite"
)

// TestRunExecutedAtCreation: while the engine runs, a short run that calls
// no book is executed by Invoke and created completed, in one write (its
// update time is its create time); Invoke returns it as created (pending,
// no outputs), a retry returns the stored run, and its outputs are what a
// worker makes of it (an engine that never executes at creation). A run
// that calls a book or raises an exception is executed by a worker: the
// book is called once, the exception created once.
func TestRunExecutedAtCreation(t *testing.T) {
	test := func(t *testing.T, st store.Store) {
		ctx := context.Background()
		bk := &countingBooks{}
		// A window far above a short run's time: the test does not depend
		// on the machine's speed.
		e := newEnvOn(t, st, engine.Options{InlineWindow: time.Minute, Books: func(string, string) lang.Books { return bk }})
		e.start(t)
		invoke := func(a store.Automation, requestID string) store.Run {
			t.Helper()
			r, _, err := e.eng.Invoke(ctx, engine.InvokeRequest{OrganizationID: e.org, WorkspaceID: e.ws, AutomationID: a.ID, Stage: store.StageDraft,
				Inputs: map[string]*platformv1.Value{"name": text("Ana"), "item": text("tea")}, RequestID: requestID})
			if err != nil {
				t.Fatal(err)
			}
			return r
		}
		greet := e.automation(t, "the output greeting is \"Hello, \" + the name\n")
		// The first run waits for the engine to be running (either way).
		e.waitFor(t, greet, invoke(greet, "").ID, store.RunCompleted)

		r := invoke(greet, "req-1")
		if r.State != store.RunPending || r.Outputs != nil || r.Step != 0 {
			t.Fatalf("Invoke returned %+v, want the run as created (pending)", r)
		}
		done, err := st.GetRun(ctx, e.org, e.ws, greet.ID, r.ID)
		if err != nil {
			t.Fatal(err)
		}
		if done.State != store.RunCompleted || !done.UpdateTime.Equal(done.CreateTime) || done.LeaseOwner != "" {
			t.Fatalf("stored run %+v, want completed at its creation", done)
		}
		again, created, err := e.eng.Invoke(ctx, engine.InvokeRequest{OrganizationID: e.org, WorkspaceID: e.ws, AutomationID: greet.ID,
			Stage: store.StageDraft, Inputs: map[string]*platformv1.Value{"name": text("Ana")}, RequestID: "req-1"})
		if err != nil || created || again.ID != r.ID || again.State != store.RunCompleted {
			t.Fatalf("retry: %v %v %+v", err, created, again)
		}

		// The same run executed by a worker gives the same outputs.
		w := newEnvOn(t, st, engine.Options{InlineWindow: -1})
		w.start(t)
		wa, err := st.CreateAutomation(ctx, store.Automation{OrganizationID: w.org, WorkspaceID: w.ws, DisplayName: "a", Code: greet.Code})
		if err != nil {
			t.Fatal(err)
		}
		wr, _, err := w.eng.Invoke(ctx, engine.InvokeRequest{OrganizationID: w.org, WorkspaceID: w.ws, AutomationID: wa.ID, Stage: store.StageDraft,
			Inputs: map[string]*platformv1.Value{"name": text("Ana"), "item": text("tea")}})
		if err != nil {
			t.Fatal(err)
		}
		byWorker := w.waitFor(t, wa, wr.ID, store.RunCompleted)
		if string(byWorker.Outputs) != string(done.Outputs) || byWorker.Step != done.Step {
			t.Fatalf("outputs at creation %q (step %d), by a worker %q (step %d)", done.Outputs, done.Step, byWorker.Outputs, byWorker.Step)
		}
		out, err := codec.DecodeOutputs(done)
		if err != nil {
			t.Fatal(err)
		}
		if got := out["output greeting"].GetText(); got != "Hello, Ana" {
			t.Fatalf("output greeting = %q", got)
		}

		// A book call: a worker executes the run, the book is called once.
		price := e.automation(t, "look up the price of the item\nthe output price is the above\n")
		pr := invoke(price, "")
		e.waitFor(t, price, pr.ID, store.RunCompleted)
		if n := bk.calls.Load(); n != 1 {
			t.Fatalf("book calls: %d, want 1", n)
		}
		// An exception: the run waits for guidance with one exception.
		ask := e.automation(t, "the output x is the missing thing\n")
		ar := invoke(ask, "")
		waiting := e.waitFor(t, ask, ar.ID, store.RunAwaitingGuidance)
		xs, _, err := st.ListExceptions(ctx, store.ListExceptionsRequest{OrganizationID: e.org, WorkspaceID: e.ws, PageSize: 100})
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, x := range xs.Items {
			if x.RunID == waiting.ID {
				n++
			}
		}
		if n != 1 || waiting.ExceptionID == "" {
			t.Fatalf("exceptions of the waiting run: %d (%q), want 1", n, waiting.ExceptionID)
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

// TestNoExecutionAtCreationWithoutRun: an engine that is not running
// creates runs pending, as before.
func TestNoExecutionAtCreationWithoutRun(t *testing.T) {
	e := newEnv(t, engine.Options{InlineWindow: time.Minute})
	a := e.automation(t, "the output x is 1\n")
	r, _, err := e.eng.Invoke(context.Background(), engine.InvokeRequest{OrganizationID: e.org, WorkspaceID: e.ws, AutomationID: a.ID, Stage: store.StageDraft})
	if err != nil {
		t.Fatal(err)
	}
	got, err := e.st.GetRun(context.Background(), e.org, e.ws, a.ID, r.ID)
	if err != nil || got.State != store.RunPending {
		t.Fatalf("run %+v (%v), want pending", got, err)
	}
}

// gatedBooks offers one procedure whose calls wait for open to be closed.
type gatedBooks struct {
	open  chan struct{}
	calls atomic.Int64
}

func (b *gatedBooks) Lookup(context.Context, string) ([]lang.BookProcedure, error) {
	return []lang.BookProcedure{{Book: "test@1", Name: "price", Signature: "look up the price of an item (the price)"}}, nil
}

func (b *gatedBooks) Call(ctx context.Context, _ lang.BookProcedure, _ map[string]lang.Value) (map[string]lang.Value, error) {
	b.calls.Add(1)
	select {
	case <-b.open:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return map[string]lang.Value{"price": lang.Num(lang.MustNumber("9.99"))}, nil
}

// TestRunCreatedLeased: a run that calls a book is not executed at its
// creation; while a worker is free and no run waits, it is created
// executing, leased to the engine that created it, whose worker starts it
// without a claim. Invoke still returns it as created (pending), and the
// book is called once.
func TestRunCreatedLeased(t *testing.T) {
	ctx := context.Background()
	bk := &gatedBooks{open: make(chan struct{})}
	e := newEnv(t, engine.Options{InlineWindow: time.Minute, Books: func(string, string) lang.Books { return bk }})
	e.start(t)
	one := e.automation(t, "the output x is 1\n")
	first, _, err := e.eng.Invoke(ctx, engine.InvokeRequest{OrganizationID: e.org, WorkspaceID: e.ws, AutomationID: one.ID, Stage: store.StageDraft})
	if err != nil {
		t.Fatal(err)
	}
	e.waitFor(t, one, first.ID, store.RunCompleted) // the engine runs

	price := e.automation(t, "look up the price of the item\nthe output price is the above\n")
	r, created, err := e.eng.Invoke(ctx, engine.InvokeRequest{OrganizationID: e.org, WorkspaceID: e.ws, AutomationID: price.ID, Stage: store.StageDraft,
		Inputs: map[string]*platformv1.Value{"item": text("tea")}})
	if err != nil || !created {
		t.Fatal(err, created)
	}
	if r.State != store.RunPending || r.LeaseOwner != "" {
		t.Fatalf("Invoke returned %+v, want the run as created (pending)", r)
	}
	got, err := e.st.GetRun(ctx, e.org, e.ws, price.ID, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.State != store.RunExecuting || got.LeaseOwner != e.eng.Owner() || !got.StateTime.Equal(got.CreateTime) {
		t.Fatalf("stored run %+v, want executing, leased to %q since its creation", got, e.eng.Owner())
	}
	close(bk.open)
	e.waitFor(t, price, r.ID, store.RunCompleted)
	if n := bk.calls.Load(); n != 1 {
		t.Fatalf("book calls: %d, want 1", n)
	}
}
