package sqlstore

import (
	"fmt"

	"github.com/proserun/prose/store"
)

// The rules of a worker's outcome meeting a pause, decided here once and
// applied inside the statement or transaction that finishes the run (so a
// pause and a finish racing on one run are serialised by the database, and
// whichever commits first decides):
//
//   - a pause that commits first leaves the run stopping; the finish then
//     ends it stopped, keeping the reason: completed → stopped after its
//     last step (the outputs and the step past the last are kept, and
//     continuing completes it without running anything again);
//     awaiting_guidance → stopped (the exception is still created, and
//     continuing makes it wait for guidance); stopped → stopped;
//   - a finish that commits first leaves the run terminal (or waiting), and
//     the pause (whose check, engine.Pause's, sees the row after the
//     finish) then answers FAILED_PRECONDITION saying it came too late;
//   - failed stays failed: a run fails only of its own error, never because
//     it was paused (the engine never turns a pause into a failure).

// finishState is the state a leased run in state cur enters when its worker
// finishes it with outcome.
func finishState(cur, outcome store.RunState) store.RunState {
	if cur == store.RunStopping && (outcome == store.RunCompleted || outcome == store.RunAwaitingGuidance) {
		return store.RunStopped
	}
	return outcome
}

// completedStateSQL is finishState for a completed outcome in an UPDATE of
// runs whose condition is the lease check (the column state is the run's
// state before the update), and completedStepSQL the step it keeps: the
// outcome's (past the last) when it stops there.
const (
	completedStateSQL = `CASE state WHEN 'stopping' THEN 'stopped' ELSE 'completed' END`
	completedStepSQL  = `CASE state WHEN 'stopping' THEN ? ELSE step END`
)

// changeAllowed refuses a client's change of run r (store.Runs.ChangeRun)
// that would break it, whatever the engine's check decided: a terminal run
// stays as it is, only an executing run (whose worker ends it) can be
// stopping, and a run awaits guidance on an exception.
func changeAllowed(r store.Run, ch store.RunChange) error {
	switch {
	case r.State.Terminal():
		return fmt.Errorf("run %q is %s, which is final: %w", r.ID, r.State, store.ErrFailedPrecondition)
	case ch.State == store.RunStopping && r.State != store.RunExecuting:
		return fmt.Errorf("run %q is %s: only an executing run can be stopping: %w", r.ID, r.State, store.ErrFailedPrecondition)
	case ch.State == store.RunAwaitingGuidance && ch.ExceptionID == "":
		return fmt.Errorf("change run %q: awaiting_guidance names no exception: %w", r.ID, store.ErrInvalidArgument)
	}
	switch ch.State {
	case store.RunStopping, store.RunStopped, store.RunPending, store.RunAwaitingGuidance:
		return nil
	}
	return fmt.Errorf("change run %q: a client's change cannot make it %q: %w", r.ID, ch.State, store.ErrInvalidArgument)
}
