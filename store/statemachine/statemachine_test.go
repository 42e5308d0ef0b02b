package statemachine_test

import (
	"flag"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/proserun/prose/store"
	"github.com/proserun/prose/store/statemachine"
)

var update = flag.Bool("update", false, "rewrite docs/state-machine.md from the table")

// The checked-in docs/state-machine.md is what the table generates, so
// that the documentation cannot drift from the transitions the store
// allows.
func TestDocument(t *testing.T) {
	path := filepath.Join("..", "..", filepath.FromSlash(statemachine.DocumentPath))
	want := statemachine.Document()
	if *update {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Errorf("%s differs from what store/statemachine generates: run go test ./store/statemachine -update", statemachine.DocumentPath)
	}
}

// store.RunState.Terminal (what the rest of the code asks) is the table's:
// the states no transition leaves.
func TestTerminalIsTheTables(t *testing.T) {
	for _, s := range statemachine.Runs.States {
		if got, want := s.Terminal(), statemachine.Runs.Terminal(s); got != want {
			t.Errorf("%s: store says terminal=%v, the table %v", s, got, want)
		}
	}
	if !statemachine.Exceptions.Terminal(store.ExceptionResolved) || statemachine.Exceptions.Terminal(store.ExceptionArchived) {
		t.Error("RESOLVED is final and ARCHIVED is not")
	}
}

func TestRunMachineIsWellFormed(t *testing.T) {
	checkMachine(t, statemachine.Runs)
	// One event from one state has one outcome, except where the engine
	// decides between them: a continue awaits guidance when an exception
	// of the run is pending.
	checkDeterministic(t, statemachine.Runs, map[statemachine.Event]store.RunState{statemachine.Continue: store.RunStopped})
}

func TestExceptionMachineIsWellFormed(t *testing.T) {
	checkMachine(t, statemachine.Exceptions)
	checkDeterministic(t, statemachine.Exceptions, nil)
}

// checkMachine: every state used is declared, none twice, each reachable
// from a state a record is created in, and no transition is listed twice.
func checkMachine[S ~string](t *testing.T, m statemachine.Machine[S]) {
	t.Helper()
	for i, s := range m.States {
		if slices.Contains(m.States[:i], s) {
			t.Errorf("%s: state %s declared twice", m.Name, s)
		}
	}
	reached := map[S]bool{}
	for _, i := range m.Initial {
		if !slices.Contains(m.States, i.State) {
			t.Errorf("%s: initial state %s is not declared", m.Name, i.State)
		}
		reached[i.State] = true
	}
	for i, tr := range m.Transitions {
		if !slices.Contains(m.States, tr.From) || !slices.Contains(m.States, tr.To) {
			t.Errorf("%s: %s → %s uses an undeclared state", m.Name, tr.From, tr.To)
		}
		if tr.From == tr.To || tr.Event == "" || tr.Cause == "" {
			t.Errorf("%s: %+v: a transition changes the state, on an event, for a cause", m.Name, tr)
		}
		for _, o := range m.Transitions[:i] {
			if o.From == tr.From && o.To == tr.To && o.Event == tr.Event {
				t.Errorf("%s: %s → %s on %s listed twice", m.Name, tr.From, tr.To, tr.Event)
			}
		}
	}
	for changed := true; changed; {
		changed = false
		for _, tr := range m.Transitions {
			if reached[tr.From] && !reached[tr.To] {
				reached[tr.To], changed = true, true
			}
		}
	}
	for _, s := range m.States {
		if !reached[s] {
			t.Errorf("%s: state %s cannot be reached", m.Name, s)
		}
	}
}

func checkDeterministic[S ~string](t *testing.T, m statemachine.Machine[S], chosen map[statemachine.Event]S) {
	t.Helper()
	for i, tr := range m.Transitions {
		for _, o := range m.Transitions[:i] {
			if o.Event == tr.Event && o.From == tr.From {
				if c, ok := chosen[tr.Event]; !ok || c != tr.From {
					t.Errorf("%s: %s from %s leads to %s and to %s", m.Name, tr.Event, tr.From, o.To, tr.To)
				}
			}
		}
	}
}
