// Package statemachine declares the state machines of runs and of
// exceptions: every state, the states a record is created in, and every
// transition with the event that makes it. It is the one place a state
// change is allowed: the SQL store renders its guarded updates from these
// tables (the states an UPDATE may change, the state it enters), the
// engine decides clients' changes with them, and docs/state-machine.md is
// generated from them (Document).
//
// The package belongs to the store (which may not import the engine) and
// imports only package store, for the state types.
package statemachine

import (
	"slices"

	"github.com/proserun/prose/store"
)

// Event is what makes a transition: a worker's outcome, a client's
// change, an exception's transition, the recovery of a lost lease.
type Event string

// The events of the run and exception machines.
const (
	// Create: the record is inserted (an initial state, no transition).
	Create Event = "create"
	// Claim: a worker leases the run (ClaimRuns, ClaimRunsFair).
	Claim Event = "claim"
	// Complete: the worker's outcome is completed (FinishRun, FinishRuns).
	Complete Event = "complete"
	// Fail: the worker's outcome is failed (FinishRun, FinishRuns).
	Fail Event = "fail"
	// RaiseException: the worker's outcome is awaiting_guidance, which
	// creates an exception (FinishRun).
	RaiseException Event = "raise exception"
	// Stop: the worker's outcome is stopped (FinishRun).
	Stop Event = "stop"
	// Yield: the worker gives the run up for a turn (FinishRun, pending).
	Yield Event = "yield"
	// Wait: the run waits for its child runs (FinishRun, waiting).
	Wait Event = "wait"
	// WaitSettled: the run would wait for its child runs, but none is
	// unsettled (FinishRun, waiting).
	WaitSettled Event = "wait, children settled"
	// ChildFinished: the last unsettled child of a waiting run settled
	// (FinishRun of the child; ClaimRuns' sweep).
	ChildFinished Event = "child finished"
	// LeaseLost: the worker's lease expired (ClaimRuns' recovery).
	LeaseLost Event = "lease lost"
	// Poison: the lease was lost more than Options.MaxLostLeases times in
	// a row without progress (ClaimRuns' recovery).
	Poison Event = "poison"
	// Release: the worker gives back a run it claimed but never started
	// (ReleaseRuns).
	Release Event = "release"
	// Pause: a client pauses the run (ChangeRun).
	Pause Event = "pause"
	// Continue: a client continues the run (ChangeRun).
	Continue Event = "continue"
	// Resolve: the run's exception is resolved (ResolveException).
	Resolve Event = "resolve"
	// Archive: the run's exception is archived (ArchiveException).
	Archive Event = "archive"
	// Unarchive: the run's exception is unarchived (UnarchiveException).
	Unarchive Event = "unarchive"
)

// Transition is one allowed change of state: From → To on Event. Cause
// says when, in a line of the generated documentation.
type Transition[S ~string] struct {
	From, To S
	Event    Event
	Cause    string
}

// Initial is a state a record may be created in.
type Initial[S ~string] struct {
	State S
	Cause string
}

// Machine is one state machine: its states (in the order the
// documentation shows them), the states a record is created in and every
// transition.
type Machine[S ~string] struct {
	Name        string
	States      []S
	Initial     []Initial[S]
	Transitions []Transition[S]
}

// From is the states event ev moves a record from, in the table's order.
func (m Machine[S]) From(ev Event) []S {
	var out []S
	for _, t := range m.Transitions {
		if t.Event == ev && !slices.Contains(out, t.From) {
			out = append(out, t.From)
		}
	}
	return out
}

// Next is the state event ev moves a record in state from to; false when
// the table has no such transition.
func (m Machine[S]) Next(ev Event, from S) (S, bool) {
	for _, t := range m.Transitions {
		if t.Event == ev && t.From == from {
			return t.To, true
		}
	}
	var zero S
	return zero, false
}

// Allows reports whether event ev moves a record from state from to
// state to.
func (m Machine[S]) Allows(ev Event, from, to S) bool {
	for _, t := range m.Transitions {
		if t.Event == ev && t.From == from && t.To == to {
			return true
		}
	}
	return false
}

// Events is the events that move a record from state from to state to.
func (m Machine[S]) Events(from, to S) []Event {
	var out []Event
	for _, t := range m.Transitions {
		if t.From == from && t.To == to {
			out = append(out, t.Event)
		}
	}
	return out
}

// Enters reports whether some transition on one of evs enters state to.
func (m Machine[S]) Enters(to S, evs ...Event) bool {
	for _, t := range m.Transitions {
		if t.To == to && slices.Contains(evs, t.Event) {
			return true
		}
	}
	return false
}

// Terminal reports whether no transition leaves state s.
func (m Machine[S]) Terminal(s S) bool {
	for _, t := range m.Transitions {
		if t.From == s {
			return false
		}
	}
	return true
}

// Creatable reports whether a record may be created in state s.
func (m Machine[S]) Creatable(s S) bool {
	for _, i := range m.Initial {
		if i.State == s {
			return true
		}
	}
	return false
}

// Runs is the state machine of runs. The code of the store and of the
// engine is built from it; store.Runs documents each method's part.
var Runs = Machine[store.RunState]{
	Name: "Run",
	States: []store.RunState{store.RunPending, store.RunExecuting, store.RunStopping, store.RunStopped,
		store.RunAwaitingGuidance, store.RunWaiting, store.RunCompleted, store.RunFailed},
	Initial: []Initial[store.RunState]{
		{store.RunPending, "created to be executed by a worker in its turn (the default)"},
		{store.RunExecuting, "created leased to its creator's engine, while no run of its organization waits in the queue"},
		{store.RunCompleted, "created already executed by its creator, while no run of its organization waits in the queue"},
		{store.RunFailed, "created already executed by its creator, while no run of its organization waits in the queue"},
	},
	Transitions: []Transition[store.RunState]{
		{store.RunPending, store.RunExecuting, Claim, "a worker leases it, oldest (or fairest) first"},

		{store.RunExecuting, store.RunCompleted, Complete, "its worker completes it"},
		{store.RunStopping, store.RunStopped, Complete, "it completes while being paused: stopped past its last step, outputs kept"},
		{store.RunExecuting, store.RunFailed, Fail, "it fails of its own error"},
		{store.RunStopping, store.RunFailed, Fail, "it fails of its own error while being paused (never because of the pause)"},
		{store.RunExecuting, store.RunAwaitingGuidance, RaiseException, "it raises an exception, created with the transition"},
		{store.RunStopping, store.RunStopped, RaiseException, "it raises an exception while being paused (the exception still created)"},
		{store.RunExecuting, store.RunStopped, Stop, "its worker stops it between statements"},
		{store.RunStopping, store.RunStopped, Stop, "its worker stops it for the pause"},
		{store.RunExecuting, store.RunPending, Yield, "its worker gives it up for a turn of other runs"},
		{store.RunStopping, store.RunStopped, Yield, "its worker gives it up while it is being paused"},
		{store.RunExecuting, store.RunWaiting, Wait, "it waits for its child runs, holding no lease"},
		{store.RunStopping, store.RunStopped, Wait, "it would wait for its child runs while being paused"},
		{store.RunExecuting, store.RunPending, WaitSettled, "it would wait for its child runs, but all have settled"},
		{store.RunWaiting, store.RunPending, ChildFinished, "its last unsettled child run completed or failed"},
		{store.RunExecuting, store.RunPending, LeaseLost, "its worker lost its lease (crashed or hung)"},
		{store.RunStopping, store.RunStopped, LeaseLost, "its worker lost its lease while it was being paused"},
		{store.RunExecuting, store.RunFailed, Poison, "its worker lost its lease more than MaxLostLeases times in a row"},
		{store.RunExecuting, store.RunPending, Release, "its worker gives it back unstarted (shutting down)"},
		{store.RunStopping, store.RunStopped, Release, "its worker gives it back unstarted while it is being paused"},

		{store.RunExecuting, store.RunStopping, Pause, "a client pauses it: its worker stops it at its next statement"},
		{store.RunPending, store.RunStopped, Pause, "a client pauses it while no worker executes it"},
		{store.RunWaiting, store.RunStopped, Pause, "a client pauses it while it waits for its child runs"},
		{store.RunAwaitingGuidance, store.RunStopped, Pause, "a client pauses it while it awaits guidance"},
		{store.RunStopped, store.RunPending, Continue, "a client continues it"},
		{store.RunStopped, store.RunAwaitingGuidance, Continue, "a client continues it while one of its exceptions is pending"},

		{store.RunAwaitingGuidance, store.RunPending, Resolve, "its exception is resolved (a stopped run keeps the guidance)"},
		{store.RunAwaitingGuidance, store.RunStopped, Archive, "its exception is archived: the run is abandoned"},
		{store.RunStopped, store.RunAwaitingGuidance, Unarchive, "its exception is unarchived while it is still stopped on it"},
	},
}

// Exceptions is the state machine of exceptions.
var Exceptions = Machine[store.ExceptionState]{
	Name:   "Exception",
	States: []store.ExceptionState{store.ExceptionPending, store.ExceptionResolved, store.ExceptionArchived},
	Initial: []Initial[store.ExceptionState]{
		{store.ExceptionPending, "its run raises it (the run awaits guidance)"},
		{store.ExceptionResolved, "its run raises it and a guide entry resolves it at once"},
	},
	Transitions: []Transition[store.ExceptionState]{
		{store.ExceptionPending, store.ExceptionResolved, Resolve, "resolved with guidance: its run continues (exactly one of concurrent resolutions wins)"},
		{store.ExceptionPending, store.ExceptionArchived, Archive, "archived: its run is abandoned (stopped)"},
		{store.ExceptionArchived, store.ExceptionPending, Unarchive, "unarchived: its run, still stopped on it, awaits guidance again"},
	},
}

// ClientEvents are the events of a client's change of a run
// (store.Runs.ChangeRun).
var ClientEvents = []Event{Pause, Continue}
