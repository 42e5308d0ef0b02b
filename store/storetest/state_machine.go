package storetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/proserun/prose/store"
	"github.com/proserun/prose/store/statemachine"
)

// testStateMachine: the store makes exactly the transitions of the table
// in store/statemachine. From a run (or exception) in every state, every
// change a caller can ask for is tried: the table's transitions succeed
// and enter the table's state; every other is refused with the error the
// method documents, and changes nothing.
func testStateMachine(t *testing.T, open Opener) {
	t.Run("StateMachine", func(t *testing.T) {
		m := &machineSuite{suite: setup(t, open), done: map[statemachine.Transition[store.RunState]]bool{},
			excDone: map[statemachine.Transition[store.ExceptionState]]bool{}}
		m.a = m.automation(t, "sm")
		t.Run("ChangeRun", m.changeRun)
		t.Run("FinishRun", m.finishRun)
		t.Run("ClaimAndRelease", m.claimAndRelease)
		t.Run("Exceptions", m.exceptions)
		// Every transition of the table was made above, except the
		// recovery of lost leases (it needs leases to expire: see
		// testRunLeases and testRunBudgets).
		elsewhere := []statemachine.Event{statemachine.LeaseLost, statemachine.Poison}
		for _, tr := range statemachine.Runs.Transitions {
			if !m.done[tr] && !contains(elsewhere, tr.Event) {
				t.Errorf("run transition %s → %s on %s was not made", tr.From, tr.To, tr.Event)
			}
		}
		for _, tr := range statemachine.Exceptions.Transitions {
			if !m.excDone[tr] {
				t.Errorf("exception transition %s → %s on %s was not made", tr.From, tr.To, tr.Event)
			}
		}
	})
}

type machineSuite struct {
	*suite
	a       store.Automation
	done    map[statemachine.Transition[store.RunState]]bool
	excDone map[statemachine.Transition[store.ExceptionState]]bool
}

const smOwner = "sm-worker"

func contains[T comparable](xs []T, x T) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// made records that ev moved a run from → to, and fails unless the table
// has that transition.
func (m *machineSuite) made(t *testing.T, ev statemachine.Event, from, to store.RunState) {
	t.Helper()
	tr := statemachine.Transition[store.RunState]{From: from, To: to, Event: ev}
	for _, x := range statemachine.Runs.Transitions {
		if x.From == from && x.To == to && x.Event == ev {
			tr.Cause = x.Cause
			m.done[tr] = true
			return
		}
	}
	t.Errorf("%s moved a run %s → %s: not a transition of the table", ev, from, to)
}

// runIn makes a new run in state s, through the store's methods, with the
// queue left empty (no other run pending), and returns it with the id of
// its pending exception (awaiting_guidance) and of its child (waiting).
func (m *machineSuite) runIn(t *testing.T, s store.RunState) (r store.Run, exc, child string) {
	t.Helper()
	far := m.clock.Peek().Add(time.Hour)
	r = m.run(t, m.a, "")
	claim := func() {
		t.Helper()
		got := of(m.st.ClaimRuns(m.ctx, smOwner, 1, far)).must(t)
		if len(got) != 1 || got[0].ID != r.ID || got[0].State != store.RunExecuting {
			t.Fatalf("claim: %+v, want run %s executing", got, r.ID)
		}
		m.made(t, statemachine.Claim, store.RunPending, store.RunExecuting)
		r = got[0]
	}
	switch s {
	case store.RunPending:
	case store.RunExecuting:
		claim()
	case store.RunStopping:
		claim()
		r = of(m.st.ChangeRun(m.ctx, "acme", "ops", m.a.ID, r.ID, to(store.RunStopping))).must(t)
	case store.RunStopped:
		r = of(m.st.ChangeRun(m.ctx, "acme", "ops", m.a.ID, r.ID, to(store.RunStopped))).must(t)
	case store.RunAwaitingGuidance:
		claim()
		r = of(m.st.FinishRun(m.ctx, smOwner, r.ID, store.RunOutcome{State: store.RunAwaitingGuidance,
			Exception: &store.Exception{Message: "missing x"}, Checkpoint: []byte("cp")})).must(t)
		exc = r.ExceptionID
	case store.RunWaiting:
		claim()
		c, _, err := m.st.CreateRun(m.ctx, store.Run{OrganizationID: "acme", WorkspaceID: "ops", AutomationID: m.a.ID,
			Stage: store.StageDraft, StageVersion: m.a.Version, Steps: []byte("child"), ParentRun: r.ID})
		noErr(t, err)
		// The child is stopped: unsettled, and out of the queue.
		of(m.st.ChangeRun(m.ctx, "acme", "ops", m.a.ID, c.ID, to(store.RunStopped))).must(t)
		child = c.ID
		r = of(m.st.FinishRun(m.ctx, smOwner, r.ID, store.RunOutcome{State: store.RunWaiting, Checkpoint: []byte("cp")})).must(t)
		m.made(t, statemachine.Wait, store.RunExecuting, r.State)
	case store.RunCompleted:
		claim()
		r = of(m.st.FinishRun(m.ctx, smOwner, r.ID, store.RunOutcome{State: store.RunCompleted, Outputs: []byte("o"), Step: 1})).must(t)
	case store.RunFailed:
		claim()
		r = of(m.st.FinishRun(m.ctx, smOwner, r.ID, store.RunOutcome{State: store.RunFailed, ErrorID: "e", Description: "boom"})).must(t)
	default:
		t.Fatalf("no way to make a run %s", s)
	}
	if r.State != s {
		t.Fatalf("made a run %s, want %s", r.State, s)
	}
	return r, exc, child
}

// park takes run id out of the queue and out of its lease, so that the
// next runIn claims its own run: pending → stopped, executing or stopping
// → failed.
func (m *machineSuite) park(t *testing.T, id string) {
	t.Helper()
	r := of(m.st.GetRunByID(m.ctx, id)).must(t)
	switch r.State {
	case store.RunPending:
		of(m.st.ChangeRun(m.ctx, "acme", "ops", m.a.ID, id, to(store.RunStopped))).must(t)
	case store.RunExecuting, store.RunStopping:
		of(m.st.FinishRun(m.ctx, r.LeaseOwner, id, store.RunOutcome{State: store.RunFailed, ErrorID: "parked"})).must(t)
	}
}

// unchanged fails unless run r is still as it was.
func (m *machineSuite) unchanged(t *testing.T, r store.Run, what string) {
	t.Helper()
	got := of(m.st.GetRunByID(m.ctx, r.ID)).must(t)
	if got.State != r.State || !got.UpdateTime.Equal(r.UpdateTime) {
		t.Errorf("%s: the refused change changed the run: %s (updated %v), was %s (%v)", what, got.State, got.UpdateTime, r.State, r.UpdateTime)
	}
}

// changeRun: a client's change (ChangeRun) from every state to every
// state. Allowed: the table's pause and continue transitions. Refused:
// any change of a terminal run and a change the table does not have from
// the run's state (ErrFailedPrecondition); a change to a state no pause
// or continue enters (ErrInvalidArgument).
func (m *machineSuite) changeRun(t *testing.T) {
	for _, from := range statemachine.Runs.States {
		for _, target := range statemachine.Runs.States {
			name := fmt.Sprintf("%s→%s", from, target)
			r, exc, _ := m.runIn(t, from)
			if exc == "" {
				exc = "exception-of-" + r.ID
			}
			ch := store.RunChange{State: target, Reason: "why", Actor: suiteActor}
			if target == store.RunAwaitingGuidance {
				ch.ExceptionID = exc
			}
			got, err := m.st.ChangeRun(m.ctx, "acme", "ops", m.a.ID, r.ID, func(store.Run, string) (store.RunChange, error) { return ch, nil })
			var ev statemachine.Event
			for _, e := range statemachine.ClientEvents {
				if statemachine.Runs.Allows(e, from, target) {
					ev = e
				}
			}
			switch {
			case ev != "":
				if err != nil || got.State != target {
					t.Errorf("%s: %s is a %s of the table: %v, the run is %s", name, name, ev, err, got.State)
				} else if stored := of(m.st.GetRunByID(m.ctx, r.ID)).must(t); stored.State != target {
					t.Errorf("%s: the store holds %s", name, stored.State)
				} else {
					m.made(t, ev, from, target)
				}
			case statemachine.Runs.Terminal(from):
				wantErr(t, err, store.ErrFailedPrecondition, name+" (a terminal run)")
				m.unchanged(t, r, name)
			case !statemachine.Runs.Enters(target, statemachine.ClientEvents...):
				wantErr(t, err, store.ErrInvalidArgument, name+" (no client's change enters "+string(target)+")")
				m.unchanged(t, r, name)
			default:
				wantErr(t, err, store.ErrFailedPrecondition, name+" (not a transition of the table)")
				m.unchanged(t, r, name)
			}
			m.park(t, r.ID)
		}
	}
}

// outcomeEvent is the event of a worker's outcome from state from.
func outcomeEvent(outcome, from store.RunState) statemachine.Event {
	switch outcome {
	case store.RunCompleted:
		return statemachine.Complete
	case store.RunFailed:
		return statemachine.Fail
	case store.RunAwaitingGuidance:
		return statemachine.RaiseException
	case store.RunStopped:
		return statemachine.Stop
	case store.RunPending:
		return statemachine.Yield
	}
	// Waiting with no child: pending at once, unless being paused.
	if _, ok := statemachine.Runs.Next(statemachine.WaitSettled, from); ok {
		return statemachine.WaitSettled
	}
	return statemachine.Wait
}

// finishRun: every worker's outcome (FinishRun) from every state. Allowed
// from the states a worker holds a lease in, entering the table's state
// for the outcome's event; refused from every other state with
// ErrConflict (the run is not leased to the worker).
func (m *machineSuite) finishRun(t *testing.T) {
	outcomes := []store.RunOutcome{
		{State: store.RunCompleted, Outputs: []byte("o"), Step: 1},
		{State: store.RunFailed, ErrorID: "e", Description: "boom"},
		{State: store.RunAwaitingGuidance, Exception: &store.Exception{Message: "missing y"}, Checkpoint: []byte("cp")},
		{State: store.RunStopped, Checkpoint: []byte("cp")},
		{State: store.RunPending, Checkpoint: []byte("cp")},
		{State: store.RunWaiting, Checkpoint: []byte("cp")},
	}
	for _, from := range statemachine.Runs.States {
		for _, o := range outcomes {
			name := fmt.Sprintf("%s, outcome %s", from, o.State)
			r, _, _ := m.runIn(t, from)
			ev := outcomeEvent(o.State, from)
			want, allowed := statemachine.Runs.Next(ev, from)
			got, err := m.st.FinishRun(m.ctx, smOwner, r.ID, o)
			if allowed {
				if err != nil || got.State != want {
					t.Errorf("%s: want %s (%s), got %s, %v", name, want, ev, got.State, err)
				} else {
					m.made(t, ev, from, want)
				}
			} else {
				wantErr(t, err, store.ErrConflict, name+" (no worker holds the run)")
				m.unchanged(t, r, name)
			}
			m.park(t, r.ID)
		}
	}
	// A waiting run whose last child settles is pending again.
	r, _, child := m.runIn(t, store.RunWaiting)
	of(m.st.ChangeRun(m.ctx, "acme", "ops", m.a.ID, child, to(store.RunPending))).must(t)
	c := of(m.st.ClaimRuns(m.ctx, smOwner, 1, m.clock.Peek().Add(time.Hour))).must(t)
	if len(c) != 1 || c[0].ID != child {
		t.Fatalf("claim the child: %+v", c)
	}
	of(m.st.FinishRun(m.ctx, smOwner, child, store.RunOutcome{State: store.RunCompleted})).must(t)
	if got := of(m.st.GetRunByID(m.ctx, r.ID)).must(t); got.State != store.RunPending {
		t.Errorf("a waiting run whose child completed is %s", got.State)
	} else {
		m.made(t, statemachine.ChildFinished, store.RunWaiting, store.RunPending)
	}
	m.park(t, r.ID)
}

// claimAndRelease: a claim takes only a run the table claims from (the
// others are not claimed), and a worker's release moves only the runs it
// holds (the others are left as they are).
func (m *machineSuite) claimAndRelease(t *testing.T) {
	far := m.clock.Peek().Add(time.Hour)
	for _, from := range statemachine.Runs.States {
		r, _, _ := m.runIn(t, from)
		want, allowed := statemachine.Runs.Next(statemachine.Claim, from)
		got := of(m.st.ClaimRuns(m.ctx, "claimer", 1, far)).must(t)
		switch {
		case allowed && (len(got) != 1 || got[0].ID != r.ID || got[0].State != want):
			t.Errorf("claim from %s: %+v, want the run %s", from, got, want)
		case allowed:
			m.made(t, statemachine.Claim, from, want)
		case len(got) != 0:
			t.Errorf("claim from %s: claimed %+v", from, got)
		default:
			m.unchanged(t, r, "claim from "+string(from))
		}
		m.park(t, r.ID)

		r, _, _ = m.runIn(t, from)
		want, allowed = statemachine.Runs.Next(statemachine.Release, from)
		n := of(m.st.ReleaseRuns(m.ctx, smOwner, []string{r.ID})).must(t)
		after := of(m.st.GetRunByID(m.ctx, r.ID)).must(t)
		switch {
		case allowed && (n != 1 || after.State != want || after.LeaseOwner != ""):
			t.Errorf("release from %s: %d released, the run is %s (lease %q), want %s", from, n, after.State, after.LeaseOwner, want)
		case allowed:
			m.made(t, statemachine.Release, from, want)
		case n != 0:
			t.Errorf("release from %s: released %d", from, n)
		default:
			m.unchanged(t, r, "release from "+string(from))
		}
		m.park(t, r.ID)
	}
}

// exceptions: every exception transition from every exception state.
// Allowed: the table's, which also move the run the table's way; refused
// with ErrFailedPrecondition, changing nothing.
func (m *machineSuite) exceptions(t *testing.T) {
	resolve := func(store.Exception) (store.Resolution, error) {
		return store.Resolution{Resolver: suiteActor, Data: []byte("g")}, nil
	}
	type op struct {
		ev statemachine.Event
		do func(id string) (store.Exception, error)
	}
	ops := []op{
		{statemachine.Resolve, func(id string) (store.Exception, error) {
			return m.st.ResolveException(m.ctx, "acme", "ops", id, resolve)
		}},
		{statemachine.Archive, func(id string) (store.Exception, error) { return m.st.ArchiveException(m.ctx, "acme", "ops", id, nil) }},
		{statemachine.Unarchive, func(id string) (store.Exception, error) {
			return m.st.UnarchiveException(m.ctx, "acme", "ops", id, nil)
		}},
	}
	// excIn makes an exception in state s; its run is as the transitions
	// leave it.
	excIn := func(s store.ExceptionState) (store.Run, string) {
		t.Helper()
		r, id, _ := m.runIn(t, store.RunAwaitingGuidance)
		for _, o := range ops {
			if s == store.ExceptionPending {
				break
			}
			if statemachine.Exceptions.Allows(o.ev, store.ExceptionPending, s) {
				of(o.do(id)).must(t)
			}
		}
		if x := of(m.st.GetException(m.ctx, "acme", "ops", id)).must(t); x.State != s {
			t.Fatalf("made an exception %s, want %s", x.State, s)
		}
		return of(m.st.GetRunByID(m.ctx, r.ID)).must(t), id
	}
	for _, from := range statemachine.Exceptions.States {
		for _, o := range ops {
			name := fmt.Sprintf("%s from %s", o.ev, from)
			r, id := excIn(from)
			want, allowed := statemachine.Exceptions.Next(o.ev, from)
			got, err := o.do(id)
			after := of(m.st.GetRunByID(m.ctx, r.ID)).must(t)
			switch {
			case allowed && (err != nil || got.State != want):
				t.Errorf("%s: want %s, got %s, %v", name, want, got.State, err)
			case allowed:
				m.excDone[statemachine.Transition[store.ExceptionState]{From: from, To: want, Event: o.ev, Cause: cause(from, want, o.ev)}] = true
				// The run moves with its exception, as the table says.
				if runTo, ok := statemachine.Runs.Next(o.ev, r.State); ok {
					if after.State != runTo {
						t.Errorf("%s: the run went %s → %s, want %s", name, r.State, after.State, runTo)
					} else {
						m.made(t, o.ev, r.State, runTo)
					}
				}
			default:
				wantErr(t, err, store.ErrFailedPrecondition, name)
				if x := of(m.st.GetException(m.ctx, "acme", "ops", id)).must(t); x.State != from {
					t.Errorf("%s: refused, the exception is %s", name, x.State)
				}
				m.unchanged(t, r, name)
			}
			m.park(t, r.ID)
		}
	}
}

// cause is the table's cause of an exception transition.
func cause(from, to store.ExceptionState, ev statemachine.Event) string {
	for _, tr := range statemachine.Exceptions.Transitions {
		if tr.From == from && tr.To == to && tr.Event == ev {
			return tr.Cause
		}
	}
	return ""
}
