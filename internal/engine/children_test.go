package engine_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/internal/codec"
	"github.com/proserun/prose/internal/codec/protovalue"
	"github.com/proserun/prose/internal/engine"
	"github.com/proserun/prose/internal/lang"
	"github.com/proserun/prose/internal/testtime"
	"github.com/proserun/prose/store"
	"github.com/proserun/prose/store/postgres"
	"github.com/proserun/prose/store/sqlite"
)

// openBackend opens a fresh store of the named backend ("sqlite", or
// "postgres", skipped without PROSE_TEST_POSTGRES_URL) with the options.
func openBackend(t *testing.T, backend string, opts ...store.Option) store.Store {
	t.Helper()
	var st store.Store
	var err error
	if backend == "postgres" {
		st, err = postgres.Open(t.Context(), tempPostgres(t), opts...)
	} else {
		st, err = sqlite.Open(t.Context(), t.TempDir(), opts...)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

const taxProgram = `to compute the tax of an amount
  the result is the amount * 0.2
start a run where
  the procedure is "compute the tax of the amount"
  the amount is 200
start a run where
  the procedure is "compute the tax of the amount"
  the amount is 100
wait for the runs
the output first is the first run's result
the output second is the second run's result
the output status is the first run's status
`

// children lists the runs of the automation whose parent is parent.
func children(t *testing.T, st store.Store, org, ws, automation, parent string) []store.Run {
	t.Helper()
	page, err := st.ListRuns(context.Background(), store.ListRunsRequest{OrganizationID: org, WorkspaceID: ws, AutomationID: automation, PageSize: 100})
	if err != nil {
		t.Fatal(err)
	}
	var out []store.Run
	for _, r := range page.Items {
		if r.ParentRun == parent {
			out = append(out, r)
		}
	}
	return out
}

func outputText(t *testing.T, r store.Run, name string) string {
	t.Helper()
	out, err := codec.DecodeOutputs(r)
	if err != nil {
		t.Fatal(err)
	}
	v, err := protoPlain(out[name])
	if err != nil {
		t.Fatalf("output %q: %v", name, err)
	}
	return v
}

// `start a run` on the engine makes child runs: runs of their own in the
// store, with a parent link, executed by the workers; the parent waits for
// them without a worker (one worker runs the parent and both children).
func TestChildRuns(t *testing.T) {
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			e := newEnvOn(t, openBackend(t, backend), engine.Options{Workers: 1})
			e.start(t)
			a := e.automation(t, taxProgram)
			r, _, err := e.eng.Invoke(context.Background(), engine.InvokeRequest{OrganizationID: e.org, WorkspaceID: e.ws, AutomationID: a.ID, Stage: store.StageDraft})
			if err != nil {
				t.Fatal(err)
			}
			done := e.waitFor(t, a, r.ID, store.RunCompleted)
			if got := outputText(t, done, "output first"); got != "40.0" {
				t.Errorf("output first = %s, want 40.0", got)
			}
			if got := outputText(t, done, "output second"); got != "20.0" {
				t.Errorf("output second = %s, want 20.0", got)
			}
			if got := outputText(t, done, "output status"); got != `"completed"` {
				t.Errorf("output status = %s", got)
			}
			kids := children(t, e.st, e.org, e.ws, a.ID, r.ID)
			if len(kids) != 2 {
				t.Fatalf("%d child runs, want 2", len(kids))
			}
			for _, k := range kids {
				if k.State != store.RunCompleted {
					t.Errorf("child %s is %s", k.ID, k.State)
				}
				if k.ParentRun != done.ID {
					t.Errorf("child's parent run = %q, want %q", k.ParentRun, done.ID)
				}
				d, err := codec.DecodeRun(k)
				if err != nil {
					t.Fatal(err)
				}
				code := d.Steps[0].Code
				want := "to compute the tax of an amount\n  the result is the amount * 0.2\ncompute the tax of the amount with\n  the amount\nthe output is the above\n"
				if code != want {
					t.Errorf("child code:\n%s\nwant:\n%s", code, want)
				}
				if _, ok := d.Outputs["output"]; !ok {
					t.Errorf("child outputs %v have no output", d.Outputs)
				}
			}
			if done.ParentRun != "" {
				t.Errorf("the parent has a parent run %q", done.ParentRun)
			}
		})
	}
}

// A child that waits for guidance keeps its parent waiting (shown as
// executing, holding no worker); the parent, and the engine, survive a
// restart in the middle; when the child is resolved the parent completes.
func TestChildRunsWaitAcrossRestart(t *testing.T) {
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			ctx := context.Background()
			st := openBackend(t, backend)
			e := newEnvOn(t, st, engine.Options{Workers: 1})
			runCtx, stop := context.WithCancel(ctx)
			stopped := make(chan struct{})
			go func() { _ = e.eng.Run(runCtx, 5*time.Second); close(stopped) }()
			a := e.automation(t, `to check an amount
  if the amount is greater than 150 then
    get the approval
    the result is the approval
  else
    the result is the amount
start a run where
  the procedure is "check the amount"
  the amount is 200
start a run with
  the procedure is "check the amount"
  the amount is 100
wait for the runs
the output first is the first run's result
the output second is the second run's result
`)
			r, _, err := e.eng.Invoke(ctx, engine.InvokeRequest{OrganizationID: e.org, WorkspaceID: e.ws, AutomationID: a.ID, Stage: store.StageDraft})
			if err != nil {
				t.Fatal(err)
			}
			waiting := e.waitFor(t, a, r.ID, store.RunWaiting)
			if waiting.LeaseOwner != "" {
				t.Fatalf("a waiting parent holds a lease of %q", waiting.LeaseOwner)
			}
			var asking store.Run
			for _, k := range children(t, st, e.org, e.ws, a.ID, r.ID) {
				// the child of 200 asks; the other completes
				deadline := testtime.Deadline(testtime.Wait)
				for k.State != store.RunAwaitingGuidance && k.State != store.RunCompleted && time.Now().Before(deadline) {
					time.Sleep(time.Millisecond) // poll for the child, not a timed assertion
					if k, err = st.GetRunByID(ctx, k.ID); err != nil {
						t.Fatal(err)
					}
				}
				if k.State == store.RunAwaitingGuidance {
					asking = k
				}
			}
			if asking.ID == "" {
				t.Fatal("no child waits for guidance")
			}
			// A pause of the waiting parent stops it; continuing it waits again.
			if p, err := e.eng.Pause(ctx, e.org, e.ws, a.ID, r.ID, "check", "users/u"); err != nil || p.State != store.RunStopped {
				t.Fatalf("pause a waiting run: %v %s", err, p.State)
			}
			if _, err := e.eng.Continue(ctx, e.org, e.ws, a.ID, r.ID, "users/u"); err != nil {
				t.Fatal(err)
			}
			e.waitFor(t, a, r.ID, store.RunWaiting)

			// Restart: a new engine over the same store.
			stop()
			<-stopped
			e2 := &env{st: st, eng: engine.New(st, engine.Options{Workers: 1}), org: e.org, ws: e.ws}
			e2.start(t)
			yes := engine.Guidance{Kind: engine.GuidanceProvideValues, Values: map[string]lang.Value{"the approval": lang.Text("approved")}}
			if _, err := e2.eng.Resolve(ctx, e.org, e.ws, asking.ExceptionID, "users/u", yes); err != nil {
				t.Fatal(err)
			}
			done := e2.waitFor(t, a, r.ID, store.RunCompleted)
			if got := outputText(t, done, "output first"); got != `"approved"` {
				t.Errorf("output first = %s", got)
			}
			if got := outputText(t, done, "output second"); got != "100" {
				t.Errorf("output second = %s, want 100", got)
			}
			if n := len(children(t, st, e.org, e.ws, a.ID, r.ID)); n != 2 {
				t.Errorf("%d child runs, want 2", n)
			}
		})
	}
}

// gateBooks answers `look up the price of an item` when open; until then a
// call waits for the gate or for its context.
type gateBooks struct {
	calls atomic.Int32
	gate  chan struct{}
}

func (b *gateBooks) Lookup(context.Context, string) ([]lang.BookProcedure, error) {
	return []lang.BookProcedure{{Book: "test@1", Name: "price", Signature: "look up the price of an item (the price)"}}, nil
}

func (b *gateBooks) Call(ctx context.Context, _ lang.BookProcedure, in map[string]lang.Value) (map[string]lang.Value, error) {
	b.calls.Add(1)
	select {
	case <-b.gate:
		return map[string]lang.Value{"price": in["item"]}, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// A crash in the middle: the engine stops (its runs left leased, as a
// killed process leaves them) while the parent waits and a child is in a
// book call. Another engine recovers the child when its lease expires,
// runs it to completion, and the parent, woken, completes with both
// results; no child is started twice.
func TestChildRunsSurviveCrash(t *testing.T) {
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			ctx := context.Background()
			var skew atomic.Int64 // the store's clock, ahead of the engines' after the crash
			st := openBackend(t, backend, store.WithClock(func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }))
			bk := &gateBooks{gate: make(chan struct{})}
			books := func(string, string) lang.Books { return bk }
			e := newEnvOn(t, st, engine.Options{Workers: 2, LeaseDuration: time.Minute, Books: books})
			runCtx, crash := context.WithCancel(ctx)
			stopped := make(chan struct{})
			go func() { _ = e.eng.Run(runCtx, time.Second); close(stopped) }()
			a := e.automation(t, `to price an item
  look up the price of the item
  the result is the above
start a run where
  the procedure is "price the item"
  the item is "pen"
start a run where
  the procedure is "price the item"
  the item is "ink"
wait for the runs
the output first is the first run's result
the output second is the second run's result
`)
			r, _, err := e.eng.Invoke(ctx, engine.InvokeRequest{OrganizationID: e.org, WorkspaceID: e.ws, AutomationID: a.ID, Stage: store.StageDraft})
			if err != nil {
				t.Fatal(err)
			}
			e.waitFor(t, a, r.ID, store.RunWaiting)
			deadline := testtime.Deadline(testtime.Wait)
			for bk.calls.Load() == 0 {
				if time.Now().After(deadline) {
					t.Fatal("no child called the book")
				}
				time.Sleep(time.Millisecond) // poll for the call, not a timed assertion
			}
			crash()
			<-stopped
			// The leases expire (the store's clock jumps past them).
			skew.Store(int64(2 * time.Minute))
			close(bk.gate)
			e2 := &env{st: st, eng: engine.New(st, engine.Options{Workers: 2, Books: books}), org: e.org, ws: e.ws}
			e2.start(t)
			done := e2.waitFor(t, a, r.ID, store.RunCompleted)
			if a, b := outputText(t, done, "output first"), outputText(t, done, "output second"); a != `"pen"` || b != `"ink"` {
				t.Errorf("outputs %s, %s; want \"pen\", \"ink\"", a, b)
			}
			if n := len(children(t, st, e.org, e.ws, a.ID, r.ID)); n != 2 {
				t.Errorf("%d child runs, want 2", n)
			}
		})
	}
}

// protoPlain is the plain JSON of a platform value.
func protoPlain(p *platformv1.Value) (string, error) {
	v, err := protovalue.FromProto(p)
	if err != nil {
		return "", err
	}
	b, err := lang.AppendPlain(nil, v)
	return string(b), err
}

// hangingCheckpoints is a store whose SaveProgress hangs (until its context
// ends) once armed: a worker dies between making a child run and saving
// the checkpoint that journals it.
type hangingCheckpoints struct {
	store.Store
	armed atomic.Bool
	hung  chan struct{}
}

func (h *hangingCheckpoints) SaveProgress(ctx context.Context, owner, runID string, p store.Progress) error {
	if h.armed.CompareAndSwap(true, false) {
		close(h.hung)
		<-ctx.Done()
		return ctx.Err()
	}
	return h.Store.SaveProgress(ctx, owner, runID, p)
}

// A parent that dies after starting a child but before its checkpoint
// starts that child again when recovered: it gets the same child back (the
// child's request id is the parent's journal position), not a second one.
func TestChildRunStartedOnceAcrossCrash(t *testing.T) {
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			ctx := context.Background()
			var skew atomic.Int64
			base := openBackend(t, backend, store.WithClock(func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }))
			st := &hangingCheckpoints{Store: base, hung: make(chan struct{})}
			st.armed.Store(true)
			e := newEnvOn(t, st, engine.Options{Workers: 1, LeaseDuration: time.Minute})
			a := e.automation(t, taxProgram)
			runCtx, crash := context.WithCancel(ctx)
			stopped := make(chan struct{})
			go func() { _ = e.eng.Run(runCtx, time.Second); close(stopped) }()
			r, _, err := e.eng.Invoke(ctx, engine.InvokeRequest{OrganizationID: e.org, WorkspaceID: e.ws, AutomationID: a.ID, Stage: store.StageDraft})
			if err != nil {
				t.Fatal(err)
			}
			select {
			case <-st.hung: // the first child exists; its checkpoint hangs
			case <-time.After(testtime.Limit(testtime.Wait)):
				t.Fatal("no checkpoint was saved")
			}
			if n := len(children(t, base, e.org, e.ws, a.ID, r.ID)); n != 1 {
				t.Fatalf("%d children at the crash, want 1", n)
			}
			crash()
			<-stopped
			skew.Store(int64(2 * time.Minute)) // the lease expires
			e2 := &env{st: base, eng: engine.New(base, engine.Options{Workers: 1}), org: e.org, ws: e.ws}
			e2.start(t)
			done := e2.waitFor(t, a, r.ID, store.RunCompleted)
			if got := outputText(t, done, "output first"); got != "40.0" {
				t.Errorf("output first = %s", got)
			}
			if n := len(children(t, base, e.org, e.ws, a.ID, r.ID)); n != 2 {
				t.Errorf("%d child runs, want 2 (the first one started once)", n)
			}
		})
	}
}

// exceptionOf is the description of the exception a run waits on.
func exceptionOf(t *testing.T, st store.Store, org, ws, run string) string {
	t.Helper()
	xs, _, err := st.ListExceptions(context.Background(), store.ListExceptionsRequest{OrganizationID: org, WorkspaceID: ws, PageSize: 100})
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range xs.Items {
		if x.RunID == run {
			return x.Message + " " + x.Description
		}
	}
	t.Fatalf("run %s has no exception", run)
	return ""
}

// A run starts at most MaxChildRuns runs: the next `start a run` raises an
// exception at the statement (no run is made for it); and child runs nest
// at most MaxRunDepth deep: a child at that depth that starts a run raises
// one (its parent waits for it, as for any child waiting for guidance).
// Without them an automation could start runs without end, each starting
// more.
func TestChildRunsAreBounded(t *testing.T) {
	e := newEnvOn(t, openBackend(t, "sqlite"), engine.Options{Workers: 2, Limits: lang.Limits{MaxChildRuns: 2, MaxRunDepth: 1}})
	e.start(t)

	many := e.automation(t, `to compute the tax of an amount
  the result is the amount * 0.2
the rounds are 1, 2, 3
process each round in the rounds as follows
  start a run where
    the procedure is "compute the tax of the amount"
    the amount is the round
wait for the runs
the output n is 1
`)
	r, _, err := e.eng.Invoke(context.Background(), engine.InvokeRequest{OrganizationID: e.org, WorkspaceID: e.ws, AutomationID: many.ID, Stage: store.StageDraft})
	if err != nil {
		t.Fatal(err)
	}
	e.waitFor(t, many, r.ID, store.RunAwaitingGuidance)
	if got := exceptionOf(t, e.st, e.org, e.ws, r.ID); !strings.Contains(got, "this run has started 2 runs, the run's limit") {
		t.Fatalf("the third start: %q", got)
	}
	if kids := children(t, e.st, e.org, e.ws, many.ID, r.ID); len(kids) != 2 {
		t.Fatalf("%d child runs, want 2", len(kids))
	}

	deep := e.automation(t, `to compute the tax of an amount
  the result is the amount * 0.2
to start a tax of an amount
  start a run where
    the procedure is "compute the tax of the amount"
    the amount is the amount
  the result is 1
start a run where
  the procedure is "start a tax of the amount"
  the amount is 200
wait for the runs
the output status is the first run's status
`)
	r, _, err = e.eng.Invoke(context.Background(), engine.InvokeRequest{OrganizationID: e.org, WorkspaceID: e.ws, AutomationID: deep.ID, Stage: store.StageDraft})
	if err != nil {
		t.Fatal(err)
	}
	var kids []store.Run
	deadline := testtime.Deadline(testtime.Wait)
	for {
		kids = children(t, e.st, e.org, e.ws, deep.ID, r.ID)
		if len(kids) == 1 && kids[0].State == store.RunAwaitingGuidance {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the child run: %+v", kids)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if got := exceptionOf(t, e.st, e.org, e.ws, kids[0].ID); !strings.Contains(got, "runs nest at most 1 deep") {
		t.Fatalf("a child starting a run at the depth limit: %q", got)
	}
	if grand := children(t, e.st, e.org, e.ws, deep.ID, kids[0].ID); len(grand) != 0 {
		t.Fatalf("%d grandchildren, want 0", len(grand))
	}
}
