package sqlstore

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/proserun/prose/store"
	"github.com/proserun/prose/store/statemachine"
)

// This file is the only one whose SQL names a state of a run or of an
// exception (a test reads the others, transitions_test.go): every
// statement that changes a state takes the states it may change, and the
// state it writes, from the table in store/statemachine, rendered here. The
// other files concatenate what this one renders.
//
// States are rendered as SQL literals, not bound, where the statement must
// match a partial index of the migrations (runs_pending: state =
// 'pending'; runs_leased: state IN ('executing', 'stopping'); runs_waiting:
// state = 'waiting'): SQLite uses a partial index only for a query whose
// WHERE contains the index's condition as written, and PostgreSQL's generic
// plans do the same. A test checks these renderings against the indexes.
//
// The rules of a worker's outcome meeting a pause are the table's
// transitions from stopping, applied inside the statement or transaction
// that finishes the run (so a pause and a finish racing on one run are
// serialised by the database, and whichever commits first decides):
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

var runMachine, excMachine = statemachine.Runs, statemachine.Exceptions

// lit is state s as an SQL string literal.
func lit[S ~string](s S) string { return "'" + string(s) + "'" }

// stateIn is the condition that column col holds one of states.
func stateIn[S ~string](col string, states []S) string {
	if len(states) == 1 {
		return col + " = " + lit(states[0])
	}
	parts := make([]string, len(states))
	for i, s := range states {
		parts[i] = lit(s)
	}
	return col + " IN (" + strings.Join(parts, ", ") + ")"
}

// runFrom is the condition, on the state column col, that event ev applies
// to the run: its state is one the table moves on ev.
func runFrom(ev statemachine.Event, col string) string { return stateIn(col, runMachine.From(ev)) }

// runTo is the state a run enters on event ev, as an expression over its
// state column col: a literal when the event always leads to one state,
// else a CASE over the states it moves from (the statement's condition
// being runFrom, the CASE covers every row it changes).
func runTo(ev statemachine.Event, col string) string {
	from := runMachine.From(ev)
	next := func(s store.RunState) store.RunState { to, _ := runMachine.Next(ev, s); return to }
	to := next(from[0])
	same := true
	for _, s := range from[1:] {
		same = same && next(s) == to
	}
	if same {
		return lit(to)
	}
	var b strings.Builder
	b.WriteString("CASE " + col)
	for _, s := range from {
		b.WriteString(" WHEN " + lit(s) + " THEN " + lit(next(s)))
	}
	b.WriteString(" END")
	return b.String()
}

// runFromInto is the condition, on the state column col, that event ev
// moves the run to state to.
func runFromInto(ev statemachine.Event, to store.RunState, col string) string {
	var from []store.RunState
	for _, s := range runMachine.From(ev) {
		if next, _ := runMachine.Next(ev, s); next == to {
			from = append(from, s)
		}
	}
	return stateIn(col, from)
}

// queuedIn is the condition that the run in column col waits in the queue
// (a claim may take it).
func queuedIn(col string) string { return runFrom(statemachine.Claim, col) }

// The conditions and targets of the statements that change many runs at
// once, rendered from the table once.
var (
	// queuedRun: the run waits in the queue (a claim may take it; the
	// partial index runs_pending).
	queuedRun = queuedIn("state")
	// leasedState: a worker holds the run's lease (the states a lost lease
	// moves a run from; the partial index runs_leased).
	leasedState = runFrom(statemachine.LeaseLost, "state")
	claimTo     = runTo(statemachine.Claim, "state")

	// The recovery of runs whose lease expired: executing ones go back to
	// pending (or fail as poison), stopping ones to stopped.
	leaseLostFrom = leasedState
	leaseLostTo   = runTo(statemachine.LeaseLost, "state")
	poisonFrom    = runFrom(statemachine.Poison, "state")
	poisonTo      = runTo(statemachine.Poison, "state")
	releaseFrom   = runFrom(statemachine.Release, "state")
	releaseTo     = runTo(statemachine.Release, "state")

	// A waiting run whose children have all settled (the partial index
	// runs_waiting).
	childFinishedFrom = runFrom(statemachine.ChildFinished, "state")
	childFinishedTo   = runTo(statemachine.ChildFinished, "state")

	// A worker's completed or failed outcome, in one statement whose
	// condition is the lease check (the column state is the run's state
	// before the update). completeStepSQL is the step it keeps: the
	// outcome's (past the last) when a pause stops it there.
	completeFrom    = runFrom(statemachine.Complete, "state")
	completeTo      = runTo(statemachine.Complete, "state")
	completeStepSQL = `CASE WHEN ` + runFromInto(statemachine.Complete, store.RunStopped, "state") + ` THEN ? ELSE step END`
	failFrom        = runFrom(statemachine.Fail, "state")
	failTo          = runTo(statemachine.Fail, "state")

	// The run of an exception resolved, archived or unarchived.
	resolveFrom   = runFrom(statemachine.Resolve, "state")
	resolveTo     = runTo(statemachine.Resolve, "state")
	archiveFrom   = runFrom(statemachine.Archive, "state")
	archiveTo     = runTo(statemachine.Archive, "state")
	unarchiveFrom = runFrom(statemachine.Unarchive, "state")
	unarchiveTo   = runTo(statemachine.Unarchive, "state")
)

// recoverSQL renders the recovery of runs whose lease expired (the
// statement's condition being leaseLostFrom): the state each enters (to),
// and the condition that it fails as poison (an executing run that lost
// its lease more than maxLost times in a row).
func recoverSQL(maxLost int) (poison, to string) {
	poison = poisonFrom + ` AND lost_leases >= ` + strconv.Itoa(maxLost)
	return poison, `CASE WHEN ` + poison + ` THEN ` + poisonTo + ` ELSE ` + leaseLostTo + ` END`
}

// unsettled is the condition that the run in column col is not yet
// settled for a parent waiting on it (store.RunState.Settled: the
// terminal states).
func unsettled(col string) string {
	s := terminalRunStates()
	if len(s) == 1 {
		return col + " != " + lit(s[0])
	}
	return strings.Replace(stateIn(col, s), " IN (", " NOT IN (", 1)
}

func terminalRunStates() []store.RunState {
	var out []store.RunState
	for _, s := range runMachine.States {
		if runMachine.Terminal(s) {
			out = append(out, s)
		}
	}
	return out
}

// noUnsettledChildren is the condition, in a statement on runs, that the
// run has no child that is neither completed nor failed.
var noUnsettledChildren = `NOT EXISTS (SELECT 1 FROM runs ch WHERE ch.parent_run = runs.id AND ch.parent_run != '' AND ` + unsettled("ch.state") + `)`

// finishFromPG, finishToPG and finishStepPG are a batch of completed or
// failed outcomes on PostgreSQL (FinishRuns): the run r, the outcome v
// (v.state its state, v.step its step).
var (
	finishFromPG = stateIn("r.state", union(runMachine.From(statemachine.Complete), runMachine.From(statemachine.Fail)))
	finishToPG   = `CASE v.state WHEN ` + lit(store.RunCompleted) + ` THEN ` + runTo(statemachine.Complete, "r.state") +
		` WHEN ` + lit(store.RunFailed) + ` THEN ` + runTo(statemachine.Fail, "r.state") + ` END`
	finishStepPG = `CASE WHEN v.state = ` + lit(store.RunCompleted) + ` AND ` +
		runFromInto(statemachine.Complete, store.RunStopped, "r.state") + ` THEN v.step ELSE r.step END`
	// outcomeCompleted and outcomeFailed: the outcome v is completed, failed.
	outcomeCompleted = `v.state = ` + lit(store.RunCompleted)
	outcomeFailed    = `v.state = ` + lit(store.RunFailed)
)

func union[S comparable](a, b []S) []S {
	out := slices.Clone(a)
	for _, s := range b {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// moveRun changes run id from state from to state to on event ev, setting
// the other columns too (set: ", col = ?, …", with args), in one UPDATE
// whose condition is the state it moves from. It refuses a transition the
// table does not have (ErrFailedPrecondition) and returns how many rows it
// changed (0: the run was no longer in state from).
func (c conn) moveRun(ctx context.Context, id string, ev statemachine.Event, from, to store.RunState, set string, args ...any) (int64, error) {
	if !runMachine.Allows(ev, from, to) {
		return 0, fmt.Errorf("run %q is %s: %s cannot make it %s: %w", id, from, ev, to, store.ErrFailedPrecondition)
	}
	return c.moveRunTo(ctx, id, from, lit(to), set, args...)
}

// moveRunTo is moveRun to a state the statement decides (to, an SQL
// expression rendered here from the table).
func (c conn) moveRunTo(ctx context.Context, id string, from store.RunState, to, set string, args ...any) (int64, error) {
	all := append(append([]any{}, args...), id, string(from))
	res, err := c.exec(ctx, `UPDATE runs SET state = `+to+set+` WHERE id = ? AND state = ?`, all...)
	if err != nil {
		return 0, err
	}
	return rowsAffected(res), nil
}

// nextRun is the state event ev moves a run in state from to ("" when the
// table has no such transition: moveRun then refuses it).
func nextRun(ev statemachine.Event, from store.RunState) store.RunState {
	to, _ := runMachine.Next(ev, from)
	return to
}

// waitTo is the state a run in state from enters when it waits for its
// child runs: waiting, or pending at once when none is unsettled (the
// count and the update are one statement; a child settling concurrently
// wakes the parent after this transaction commits, see wakeParent), or
// what a pause makes of it. "" when from cannot wait.
func waitTo(from store.RunState) string {
	wait, settledNow := nextRun(statemachine.Wait, from), nextRun(statemachine.WaitSettled, from)
	switch {
	case wait == "":
		return ""
	case settledNow == "":
		return lit(wait)
	}
	return `CASE WHEN ` + noUnsettledChildren + ` THEN ` + lit(settledNow) + ` ELSE ` + lit(wait) + ` END`
}

// clientEvent is the event of a client's change of run r
// (store.Runs.ChangeRun), whatever the engine's check decided: a terminal
// run stays as it is (ErrFailedPrecondition); a change to a state no
// client's change enters, or to awaiting_guidance without its exception,
// is ErrInvalidArgument; a change the table does not have from the run's
// state (stopping a run no worker executes) is ErrFailedPrecondition.
func clientEvent(r store.Run, ch store.RunChange) (statemachine.Event, error) {
	switch {
	case runMachine.Terminal(r.State):
		return "", fmt.Errorf("run %q is %s, which is final: %w", r.ID, r.State, store.ErrFailedPrecondition)
	case !runMachine.Enters(ch.State, statemachine.ClientEvents...):
		return "", fmt.Errorf("change run %q: a client's change cannot make it %q: %w", r.ID, ch.State, store.ErrInvalidArgument)
	case ch.State == store.RunAwaitingGuidance && ch.ExceptionID == "":
		return "", fmt.Errorf("change run %q: awaiting_guidance names no exception: %w", r.ID, store.ErrInvalidArgument)
	}
	for _, ev := range statemachine.ClientEvents {
		if runMachine.Allows(ev, r.State, ch.State) {
			return ev, nil
		}
	}
	return "", fmt.Errorf("run %q is %s: a client's change cannot make it %s: %w", r.ID, r.State, ch.State, store.ErrFailedPrecondition)
}

// moveException moves exception id of the workspace from state from to
// state to on event ev, setting the other columns too (set, setArgs), in
// one UPDATE whose condition is the state it moves from: exactly one of
// concurrent transitions from the same state changes the row.
func (c conn) moveException(ctx context.Context, org, ws, id string, ev statemachine.Event, from, to store.ExceptionState, now time.Time,
	set string, setArgs ...any) error {
	if !excMachine.Allows(ev, from, to) {
		return fmt.Errorf("exception %q is %s: %s cannot make it %s: %w", id, from, ev, to, store.ErrFailedPrecondition)
	}
	args := append([]any{string(to), now}, setArgs...)
	args = append(args, org, ws, id, string(from))
	res, err := c.exec(ctx, `UPDATE exceptions SET state = ?, update_time = ?`+set+`
		WHERE organization_id = ? AND workspace_id = ? AND id = ? AND state = ?`, args...)
	if err != nil {
		return c.db.mapErr(err, "update exception")
	}
	if rowsAffected(res) == 0 {
		return fmt.Errorf("exception %q changed concurrently: %w", id, store.ErrFailedPrecondition)
	}
	return nil
}
