package engine_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/proserun/prose/internal/engine"
	"github.com/proserun/prose/internal/lang"
	"github.com/proserun/prose/internal/testtime"
	"github.com/proserun/prose/store"
)

// TestExceptionTransitions: archive, unarchive and assign go through the
// engine, which checks the state inside the store's transaction and tells
// Options.Changed (what shows runs and exceptions) of every change it
// made, and of none it refused; unarchive makes the run wait again, and a
// resolution after it lets the run finish.
func TestExceptionTransitions(t *testing.T) {
	var mu sync.Mutex
	changed := 0
	e := newEnv(t, engine.Options{Changed: func(org, ws string) {
		mu.Lock()
		changed++
		mu.Unlock()
	}})
	e.start(t)
	ctx := context.Background()
	a := e.automation(t, "get the invoice total\nthe output total is the invoice total * 2\n")
	r, _, err := e.eng.Invoke(ctx, engine.InvokeRequest{OrganizationID: e.org, WorkspaceID: e.ws, AutomationID: a.ID, Stage: store.StageDraft})
	if err != nil {
		t.Fatal(err)
	}
	w := e.waitFor(t, a, r.ID, store.RunAwaitingGuidance)
	xid := w.ExceptionID
	// The worker that wrote a run's change announces it after the write:
	// wait until it has returned (Busy drops after that notice), so that
	// its notice is not counted against the step that follows.
	idle := func(what string) {
		t.Helper()
		for deadline := testtime.Deadline(testtime.Wait); e.eng.Busy() != 0; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("the worker that %s did not return", what)
			}
		}
	}
	idle("raised the exception")
	count := func() int { mu.Lock(); defer mu.Unlock(); return changed }
	step := func(what string, do func() (store.Exception, error), wantErr error, wantState store.ExceptionState, wantRun store.RunState) {
		t.Helper()
		before := count()
		x, err := do()
		switch {
		case wantErr != nil && !errors.Is(err, wantErr):
			t.Fatalf("%s: err %v, want %v", what, err, wantErr)
		case wantErr == nil && err != nil:
			t.Fatalf("%s: %v", what, err)
		case wantErr == nil && x.State != wantState:
			t.Fatalf("%s: exception is %s, want %s", what, x.State, wantState)
		}
		if got, want := count()-before, map[bool]int{true: 0, false: 1}[wantErr != nil]; got != want {
			t.Fatalf("%s: Changed called %d times, want %d", what, got, want)
		}
		if wantRun != "" {
			if got := e.waitFor(t, a, r.ID, wantRun); got.ExceptionID != xid {
				t.Fatalf("%s: run is on exception %q, want %q", what, got.ExceptionID, xid)
			}
		}
	}
	archive := func() (store.Exception, error) { return e.eng.Archive(ctx, e.org, e.ws, xid) }
	unarchive := func() (store.Exception, error) { return e.eng.Unarchive(ctx, e.org, e.ws, xid) }
	assign := func(who string) func() (store.Exception, error) {
		return func() (store.Exception, error) { return e.eng.Assign(ctx, e.org, e.ws, xid, who) }
	}
	step("unarchive a pending exception", unarchive, store.ErrFailedPrecondition, "", "")
	step("archive", archive, nil, store.ExceptionArchived, store.RunStopped)
	step("archive again", archive, store.ErrFailedPrecondition, "", "")
	step("assign an archived exception", assign("users/ana"), nil, store.ExceptionArchived, "")
	step("unarchive", unarchive, nil, store.ExceptionPending, store.RunAwaitingGuidance)
	step("unarchive again", unarchive, store.ErrFailedPrecondition, "", "")
	for name, do := range map[string]func() (store.Exception, error){
		"archive":   func() (store.Exception, error) { return e.eng.Archive(ctx, e.org, e.ws, "nope") },
		"unarchive": func() (store.Exception, error) { return e.eng.Unarchive(ctx, e.org, e.ws, "nope") },
		"assign":    func() (store.Exception, error) { return e.eng.Assign(ctx, e.org, e.ws, "nope", "") },
	} {
		step(name+" an absent exception", do, store.ErrNotFound, "", "")
	}
	good := engine.Guidance{Kind: engine.GuidanceProvideValues, Values: map[string]lang.Value{"the invoice total": lang.Num(lang.MustNumber("12.50"))}}
	step("resolve", func() (store.Exception, error) { return e.eng.Resolve(ctx, e.org, e.ws, xid, "users/u", good) }, nil, store.ExceptionResolved, "")
	e.waitFor(t, a, r.ID, store.RunCompleted)
	idle("completed the run")
	step("assign a resolved exception", assign("users/bo"), store.ErrFailedPrecondition, "", "")
	step("archive a resolved exception", archive, store.ErrFailedPrecondition, "", "")
}

// TestArchiveRacesResolve: an archive and a resolution of one pending
// exception race; exactly one wins, and the run ends the way the winner
// says (stopped, or completed with the guidance).
func TestArchiveRacesResolve(t *testing.T) {
	e := newEnv(t, engine.Options{})
	e.start(t)
	ctx := context.Background()
	a := e.automation(t, "get the invoice total\nthe output total is the invoice total * 2\n")
	good := engine.Guidance{Kind: engine.GuidanceProvideValues, Values: map[string]lang.Value{"the invoice total": lang.Num(lang.MustNumber("1"))}}
	for range 10 {
		r, _, err := e.eng.Invoke(ctx, engine.InvokeRequest{OrganizationID: e.org, WorkspaceID: e.ws, AutomationID: a.ID, Stage: store.StageDraft})
		if err != nil {
			t.Fatal(err)
		}
		w := e.waitFor(t, a, r.ID, store.RunAwaitingGuidance)
		var wg sync.WaitGroup
		var archErr, resErr error
		wg.Add(2)
		go func() { defer wg.Done(); _, archErr = e.eng.Archive(ctx, e.org, e.ws, w.ExceptionID) }()
		go func() { defer wg.Done(); _, resErr = e.eng.Resolve(ctx, e.org, e.ws, w.ExceptionID, "users/u", good) }()
		wg.Wait()
		switch {
		case archErr == nil && errors.Is(resErr, store.ErrFailedPrecondition):
			e.waitFor(t, a, r.ID, store.RunStopped)
		case resErr == nil && errors.Is(archErr, store.ErrFailedPrecondition):
			e.waitFor(t, a, r.ID, store.RunCompleted)
		default:
			t.Fatalf("archive: %v, resolve: %v; want exactly one to win", archErr, resErr)
		}
	}
}

// TestRunTransitions: pause and continue are decided by the engine, on the
// run the store's transaction locked: a run awaiting guidance pauses to
// stopped and continues to wait on its exception again; a stopped run
// cannot be paused, a waiting one not continued, a completed one not
// paused (the pause came too late). Each change names its actor in the
// run's history, before the state it led to.
func TestRunTransitions(t *testing.T) {
	e := newEnv(t, engine.Options{})
	e.start(t)
	ctx := context.Background()
	a := e.automation(t, "get the invoice total\nthe output total is the invoice total * 2\n")
	r, _, err := e.eng.Invoke(ctx, engine.InvokeRequest{OrganizationID: e.org, WorkspaceID: e.ws, AutomationID: a.ID, Stage: store.StageDraft})
	if err != nil {
		t.Fatal(err)
	}
	w := e.waitFor(t, a, r.ID, store.RunAwaitingGuidance)
	p, err := e.eng.Pause(ctx, e.org, e.ws, a.ID, r.ID, "a look first", "users/ana")
	if err != nil || p.State != store.RunStopped || p.Reason != "a look first" {
		t.Fatalf("pause: %v %+v", err, p)
	}
	if _, err := e.eng.Pause(ctx, e.org, e.ws, a.ID, r.ID, "again", "users/ana"); !errors.Is(err, store.ErrFailedPrecondition) {
		t.Fatalf("pause a stopped run: %v", err)
	}
	c, err := e.eng.Continue(ctx, e.org, e.ws, a.ID, r.ID, "organizations/o/apiKeys/k")
	if err != nil || c.State != store.RunAwaitingGuidance || c.ExceptionID != w.ExceptionID {
		t.Fatalf("continue: %v %+v", err, c)
	}
	if _, err := e.eng.Continue(ctx, e.org, e.ws, a.ID, r.ID, "users/ana"); !errors.Is(err, store.ErrFailedPrecondition) {
		t.Fatalf("continue a waiting run: %v", err)
	}
	good := engine.Guidance{Kind: engine.GuidanceProvideValues, Values: map[string]lang.Value{"the invoice total": lang.Num(lang.MustNumber("1"))}}
	if _, err := e.eng.Resolve(ctx, e.org, e.ws, w.ExceptionID, "users/u", good); err != nil {
		t.Fatal(err)
	}
	e.waitFor(t, a, r.ID, store.RunCompleted)
	if _, err := e.eng.Pause(ctx, e.org, e.ws, a.ID, r.ID, "late", "users/ana"); !errors.Is(err, store.ErrFailedPrecondition) || !strings.Contains(err.Error(), "too late") {
		t.Fatalf("pause a completed run: %v, want it to say it came too late", err)
	}
	if _, err := e.eng.Pause(ctx, e.org, e.ws, a.ID, "nope", "x", "users/ana"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("pause an absent run: %v", err)
	}
	page, err := e.st.ListRunEvents(ctx, store.ListRunEventsRequest{RunID: r.ID, PageSize: 100})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, ev := range page.Items {
		if ev.Kind == store.RunEventControl || (ev.Kind == store.RunEventState && (ev.State == string(store.RunStopped) || ev.State == string(store.RunAwaitingGuidance))) {
			got = append(got, ev.NodeKind+ev.State+" "+ev.Reason)
		}
	}
	want := []string{"awaiting_guidance ", "Pause users/ana", "stopped a look first", "Continue organizations/o/apiKeys/k", "awaiting_guidance "}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("history:\n %q\nwant\n %q", got, want)
	}
}
