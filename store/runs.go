package store

import (
	"context"
	"time"
)

// RunState is the lifecycle state of a run. The transitions are declared
// in store/statemachine (docs/state-machine.md); in short:
//
//	pending → executing → completed | failed | awaiting_guidance
//	executing → stopping → stopped          (pause with a reason; the worker's
//	                                          outcome, completed included, ends it stopped)
//	pending | awaiting_guidance → stopped   (pause while not executing)
//	stopped → pending | awaiting_guidance   (continue; awaiting when an exception is pending)
//	awaiting_guidance → pending             (its exception resolved)
//	executing → pending                     (its worker lost its lease, or gave the run up for a turn)
//	executing → failed                      (its worker lost its lease too many times in a row: a poison run)
//	executing → waiting                     (it waits for its child runs; holds no lease)
//	waiting → pending                       (its children settled: completed or failed)
//	waiting → stopped                       (pause)
//
// completed and failed are terminal.
type RunState string

// The run states.
const (
	RunPending          RunState = "pending"
	RunExecuting        RunState = "executing"
	RunStopping         RunState = "stopping"
	RunStopped          RunState = "stopped"
	RunAwaitingGuidance RunState = "awaiting_guidance"
	RunCompleted        RunState = "completed"
	RunFailed           RunState = "failed"
	// RunWaiting: the run waits for its child runs (`wait for the runs`)
	// without a worker; it goes back to pending when they have all settled.
	// The platform API shows it as executing.
	RunWaiting RunState = "waiting"
)

// Settled reports whether a child run in state s counts as done for the
// parent waiting on it: completed or failed.
func (s RunState) Settled() bool { return s.Terminal() }

// Terminal reports whether no transition leaves s.
func (s RunState) Terminal() bool { return s == RunCompleted || s == RunFailed }

// Location is a byte span in a step's code.
type Location struct {
	Start, End int64
}

// Run is one execution of an automation. Blob fields are encoded by the
// engine and opaque to the store.
type Run struct {
	OrganizationID string
	WorkspaceID    string
	AutomationID   string
	ID             string // unique across the store (it is also the legacy worker id)
	Name           string // the name given by a legacy v2 caller
	Stage          Stage
	StageVersion   int64
	// Steps holds the executable steps (code, phases, first inputs).
	Steps             []byte
	UserInputs        []byte
	InvocationDetails []byte
	FileIDs           []string
	PreviousRun       string // run id
	// ParentRun is the id of the run whose `start a run` created this one
	// (a child run), or "".
	ParentRun string
	// RequestID makes creation idempotent within the organization.
	RequestID string
	// CurrentStage (input to CreateRun only): create the run only if its
	// automation is not deleted and its Stage is still at StageVersion,
	// checked in the statement or transaction that inserts it; otherwise
	// ErrStageChanged and nothing is created. Callers that cache
	// automations set it, so a run never starts a stage's older code.
	CurrentStage bool

	// State is the run's state. As input to CreateRun(s) it is empty or
	// pending (the default), or the state of a run its creator already
	// executed or leased: completed (with Outputs and Step) or failed (with
	// ErrorID, Description and Location) for a run the engine executed
	// before creating it (it made no book call, so nothing it did is lost
	// if the creation is not committed), executing (with LeaseOwner and
	// LeaseExpireTime) for a run the creator's engine executes next. Such a
	// run is created so only while no run of its organization waits in the
	// queue (no pending run of the organization, earlier runs of the same
	// batch included; other organizations' queues do not hold it back);
	// otherwise it is created pending, what the creator wrote dropped, and
	// a worker executes it in its turn. Any other state is
	// ErrInvalidArgument.
	State     RunState
	StateTime time.Time // when State was entered
	// Reason is the pause reason (stopping, stopped).
	Reason string
	// ExceptionID, Description and Location describe what the run waits on
	// (awaiting_guidance) or why it failed (failed; ErrorID).
	ExceptionID string
	Description string
	Location    Location
	ErrorID     string
	// Outputs are the run's outputs (completed).
	Outputs []byte

	// Progress: the step being executed, its inputs, the interpreter state
	// of its last suspension (nil: start of the step), and the guidance to
	// apply when it resumes.
	Step       int
	StepInputs []byte
	Checkpoint []byte
	Resolution []byte

	LeaseOwner      string
	LeaseExpireTime time.Time
	CreateTime      time.Time
	UpdateTime      time.Time

	// HistoryEvents is how many entries of the run's history the engine
	// has recorded (RunEventEngine; the engine bounds them).
	HistoryEvents int
	// Number is the run's number in its automation (1, 2, 3, … in the
	// order of creation; what people call it: "Invoices #42"), given by
	// the store on create. Dense and unique in the automation, but for a
	// run whose create lost a race on its request id to a concurrent retry
	// (PostgreSQL): its number is not used again.
	Number int64
	// Events (input to CreateRun(s) only) are the engine's history entries
	// of a run created completed or failed (what it said); they are dropped
	// with the rest of its execution when it is created pending instead.
	Events []RunEvent
}

// JournalEntry records one observation of a run that must not be repeated
// on replay: a book call's result, a clock reading. Entries are keyed by step
// and sequence within the step.
type JournalEntry struct {
	Step int
	Seq  int
	Kind string
	Key  string // what was asked (e.g. the procedure and its inputs), to detect divergence
	Data []byte
}

// ListRunsRequest lists runs.
//
// Filter fields (store.Filter): state (a RunState; = !=; executing also
// selects waiting runs), create_time (a time; all six comparisons),
// parent_run (a run id; = !=), run_number (an int64; all six
// comparisons), and organization, workspace, automation (ids; what a
// parent_run resource name sets).
type ListRunsRequest struct {
	OrganizationID string
	WorkspaceID    string
	AutomationID   string // "" or "-": every automation of the workspace
	Filter         Filter
	OrderBy        OrderBy // nil: RunOrdering.Default
	PageSize       int
	PageToken      string
}

// RunOrdering is the order_by allow-list of ListRuns.
var RunOrdering = Ordering{
	Fields:  []string{"create_time", "update_time"},
	Default: OrderBy{{Field: "create_time", Desc: true}},
}

// RunOutcome is how a worker leaves a run it executed.
type RunOutcome struct {
	// State is completed, failed, awaiting_guidance, stopped, pending
	// (the worker gives the run up for a while, so that other runs get a
	// turn: Checkpoint is the state to continue from; a run being paused
	// is left stopped instead) or waiting (the run waits for its child
	// runs: it is left waiting, or pending at once when they have all
	// settled; Checkpoint is the state to continue from).
	State RunState
	// Completed. Step is then the number of steps (past the last one).
	Outputs []byte
	// Failed.
	ErrorID     string
	Description string
	Location    Location
	// Awaiting guidance: the exception to create (its ID generated when
	// empty) and the interpreter state to resume from. Stopped: the state to
	// continue from, when the run stopped between statements (nil keeps the
	// last checkpoint).
	Exception  *Exception
	Checkpoint []byte
	Step       int
	StepInputs []byte
	// Events are the engine's history entries since the run's last
	// progress, written with the outcome (also when a pause leaves the run
	// in another state than the outcome's).
	Events []RunEvent
}

// FairClaimer claims runs shared fairly between organizations, and
// between the workspaces of each (every backend: store.Store embeds it).
// ClaimRunsFair is ClaimRuns, except that among the oldest pending runs an
// organization holding fewer runs goes first, and within it a workspace
// holding fewer, so that neither one organization's long runs nor one
// workspace's can keep another's waiting. It costs more than ClaimRuns: the engine uses it while long runs
// give their workers up for turns.
type FairClaimer interface {
	ClaimRunsFair(ctx context.Context, owner string, max int, leaseUntil time.Time) ([]Run, error)
	// ClaimRunsSkipping is ClaimRuns (fair: ClaimRunsFair) that leaves the
	// pending runs of the organizations in skip in the queue: the engine
	// skips the organizations holding their share of its workers, so that
	// the workers it keeps for the others go to the others
	// (docs/fairness.md). The runs skipped do not count against the window
	// of a fair claim.
	ClaimRunsSkipping(ctx context.Context, owner string, max int, leaseUntil time.Time, fair bool, skip []string) ([]Run, error)
	// HasPendingRuns reports cheaply whether runs wait in the queue (of any
	// organization).
	HasPendingRuns(ctx context.Context) (bool, error)
}

// QueueStats tells how the run queue fares, for metrics (every backend:
// store.Store embeds it).
type QueueStats interface {
	// CountPendingRuns counts the runs waiting in the queue (one count over
	// the index runs_pending).
	CountPendingRuns(ctx context.Context) (int64, error)
	// CountPendingExceptions counts the exceptions in the PENDING state now,
	// by workspace, automation and group (one sum over the 30-day rows of
	// exception_counts, workspace by workspace: its cost grows with the
	// workspaces and their automations, not with the exceptions). Only
	// counts above zero are returned, in no particular order.
	CountPendingExceptions(ctx context.Context) ([]PendingExceptionCount, error)
	// OnLeasesRecovered makes ClaimRuns and ClaimRunsFair call fn with the
	// number of executing runs they gave back to the queue (or failed as
	// poison) because their worker's lease expired: runs taken over from a
	// worker presumed dead. fn must return at once.
	OnLeasesRecovered(fn func(n int64))
}

// PendingExceptionCount is how many exceptions of one automation and group
// are pending (QueueStats.CountPendingExceptions).
type PendingExceptionCount struct {
	OrganizationID, WorkspaceID, AutomationID, Group string
	N                                                int64
}

// Progress is where a leased run is; see Runs.SaveProgress.
type Progress struct {
	Step       int
	StepInputs []byte
	Checkpoint []byte
	Journal    []JournalEntry
	// Events are the engine's history entries since the last progress.
	Events []RunEvent
}

// Runs stores runs, their journals and their leases.
//
// Worker methods (ClaimRuns, RenewLeases, AppendJournal, SaveProgress,
// FinishRun) take the lease owner and fail with ErrConflict when the run is
// no longer leased to it: the worker must drop the run.
type Runs interface {
	// CreateRun inserts r as pending, or in the state r.State asks for (see
	// Run.State; the returned run says which), ID generated when empty. With a
	// RequestID already used in the organization it returns the first run
	// and created=false. ErrNotFound if the automation does not exist;
	// ErrStageChanged (see Run.CurrentStage).
	CreateRun(ctx context.Context, r Run) (run Run, created bool, err error)
	// GetRun: ErrNotFound if absent (or not in that automation).
	GetRun(ctx context.Context, organizationID, workspaceID, automationID, id string) (Run, error)
	// GetRunByID finds a run by id alone (legacy worker ids). ErrNotFound.
	GetRunByID(ctx context.Context, id string) (Run, error)
	// ListRuns pages through runs. ErrInvalidArgument for a bad token.
	ListRuns(ctx context.Context, req ListRunsRequest) (Page[Run], error)
	// ListJournal returns a run's journal ordered by step and sequence.
	ListJournal(ctx context.Context, runID string) ([]JournalEntry, error)
	// CopyJournal copies the entries of the given steps of run from to run
	// to (previous_run reuse). Entries already present are kept.
	CopyJournal(ctx context.Context, from, to string, steps []int) error

	// ClaimRuns leases up to max runs to owner until leaseUntil, oldest
	// first, moving them to executing. Before claiming it
	// recovers runs whose lease expired: executing ones go back to pending
	// (or fail with an internal error when their lease was lost more than
	// Options.MaxLostLeases times in a row without progress: SaveProgress
	// and FinishRun count as progress), stopping ones to stopped (the SQL
	// stores do so at most once a second of their clock, so a claim is
	// usually one statement).
	ClaimRuns(ctx context.Context, owner string, max int, leaseUntil time.Time) ([]Run, error)
	// RenewLeases extends the leases of runs still leased to owner and
	// returns the state of each (a run the owner lost is absent; a run being
	// paused is reported as stopping).
	RenewLeases(ctx context.Context, owner string, ids []string, leaseUntil time.Time) (map[string]RunState, error)
	// ReleaseRuns gives back, in one write, runs leased to owner that its
	// worker claimed but never started (an engine shutting down with runs
	// claimed beyond its free slots): executing ones go back to pending and
	// stopping ones (paused meanwhile) to stopped, with their state as the
	// claim found it, as the expiry of their lease would leave them but at
	// once and without counting a lost lease. Runs no longer leased to owner
	// are left as they are. It returns how many runs it released.
	ReleaseRuns(ctx context.Context, owner string, ids []string) (int, error)
	// AppendJournal appends entries to a run leased to owner.
	AppendJournal(ctx context.Context, owner, runID string, entries []JournalEntry) error
	// SaveProgress records, in one transaction, where a leased run is: its
	// step, that step's inputs, the interpreter state to resume from (nil:
	// the start of the step) and new journal entries. The resolution is
	// cleared: it has been applied.
	SaveProgress(ctx context.Context, owner, runID string, p Progress) error
	// FinishRun leaves a leased run in the outcome's state and releases it, in
	// one transaction (creating the exception for awaiting_guidance). If the
	// run was being stopped (a pause committed first), the pause wins and
	// keeps its reason: an awaiting_guidance outcome leaves it stopped (the
	// exception still created), a completed outcome leaves it stopped after
	// its last step (its Outputs kept and Step set to the outcome's, past the
	// last step, so that continuing it lets a worker complete it), a stopped
	// outcome stops it. A failed outcome fails it (a run fails only of its
	// own error). A run with a ParentRun that settles (completed or failed)
	// moves its parent from waiting to pending when it was the parent's
	// last unsettled child (ClaimRuns' recovery does the same for a parent
	// whose last child settled otherwise, at most a second later).
	FinishRun(ctx context.Context, owner, runID string, o RunOutcome) (Run, error)

	// ChangeRun makes a client's change of a run (a pause, a continue) in
	// one transaction. check decides it: it is called once, with the run as
	// read there (locked against concurrent changes and against its
	// worker's finish, so a pause and a finish are serialised: see
	// FinishRun) and the id of the run's newest PENDING exception ("" when
	// none), and returns the change or an error, returned as is, that
	// leaves everything unchanged. The engine decides (internal/engine,
	// transitions.go); the store refuses any change that is not a pause or
	// a continue of the table (store/statemachine): any change of a
	// completed or failed run, and a change the table does not have from
	// the run's state (stopping a run that is not executing, which no
	// worker would end) are ErrFailedPrecondition; a change to a state no
	// pause or continue enters (not stopping, stopped, pending or
	// awaiting_guidance), or to awaiting_guidance without its exception, is
	// ErrInvalidArgument.
	// The change's actor is written to the run's history (RunEventControl)
	// before the entry of the state it enters. ErrNotFound if absent (check
	// is not called). The run is read once: the one returned is the row
	// check saw, changed.
	ChangeRun(ctx context.Context, organizationID, workspaceID, automationID, id string, check RunCheck) (Run, error)
}

// RunChange is a client's change of a run, as a RunCheck decides it.
type RunChange struct {
	// State is the state the run enters: stopping or stopped (a pause),
	// pending or awaiting_guidance (a continue).
	State RunState
	// Reason is the pause's reason (stopping, stopped).
	Reason string
	// ExceptionID is the exception an awaiting_guidance run waits on.
	ExceptionID string
	// Actor is who asked for the change (users/{user},
	// organizations/{org}/apiKeys/{key}; "" when not known), kept in the
	// run's history.
	Actor string
}

// RunCheck decides, inside ChangeRun's transaction, whether and how a run
// changes (see Runs.ChangeRun): r as read there, locked, and the id of its
// newest pending exception ("" when none).
type RunCheck func(r Run, pendingException string) (RunChange, error)

// The node kinds of the history entries of a client's change of a run
// (RunEventControl).
const (
	PauseNodeKind    = "Pause"
	ContinueNodeKind = "Continue"
)

// RunEventKind is what wrote an entry of a run's history.
type RunEventKind string

// The kinds of history entries.
const (
	// RunEventState: the run entered State (written by the store with every
	// change of a run's state, and with the state a run is created in).
	// Reason is the pause reason (stopping, stopped) or a failure's
	// description; Ref the exception waited on (awaiting_guidance) or the
	// failure's id; Location where.
	RunEventState RunEventKind = "state"
	// RunEventException: an exception of the run was raised (State
	// PENDING, when the run began to wait on it), resolved (RESOLVED; Reason
	// the resolver, Data the guidance as encoded by the engine), archived
	// (ARCHIVED) or unarchived (PENDING again). Ref is the exception's id.
	// Written by the store's exception transitions.
	RunEventException RunEventKind = "exception"
	// RunEventEngine: something the run did (a `say`, a book call, a child
	// run started, …), recorded by the engine: NodeKind names it, Data
	// (opaque to the store) describes it.
	RunEventEngine RunEventKind = "engine"
	// RunEventControl: a client paused the run (NodeKind PauseNodeKind) or
	// continued it (ContinueNodeKind); Reason is who (RunChange.Actor).
	// Written by Runs.ChangeRun, before the entry of the state the change
	// leads to.
	RunEventControl RunEventKind = "control"
)

// ExceptionNodeKind is the node kind of the history entries about
// exceptions (RunEventException).
const ExceptionNodeKind = "Exception"

// RunEvent is one entry of a run's history (Runs.ListRunEvents). As input
// (Progress.Events, RunOutcome.Events, Run.Events) only the engine's
// entries are given: Kind is then RunEventEngine (or empty) and Time, when
// zero, is the time of the write.
type RunEvent struct {
	ID       int64 // orders a run's events; set by the store
	RunID    string
	Time     time.Time
	Kind     RunEventKind
	NodeKind string
	State    string
	Reason   string
	Ref      string
	Location Location
	Data     []byte
}

// WireBytes is the event's size in a page (store.Sized).
func (e RunEvent) WireBytes() int {
	return 64 + len(e.RunID) + len(e.NodeKind) + len(e.State) + len(e.Reason) + len(e.Ref) + len(e.Data)
}

// ListRunEventsRequest pages through a run's history, oldest first.
//
// Filter fields (store.Filter): node_kind (= !=; state entries have the
// node kind "", exception entries ExceptionNodeKind, a client's pause or
// continue PauseNodeKind or ContinueNodeKind).
type ListRunEventsRequest struct {
	RunID     string
	Filter    Filter
	PageSize  int
	PageToken string
}

// RunHistory reads a run's history. Its entries are written by the
// transitions of Runs and Exceptions (see RunEvent) in their own
// transactions.
type RunHistory interface {
	// ListRunEvents pages through the run's history, oldest first (a run
	// that does not exist has none: the caller checks the run).
	// ErrInvalidArgument (a FieldError) for a bad token or filter.
	ListRunEvents(ctx context.Context, req ListRunEventsRequest) (Page[RunEvent], error)
}
