package store

import (
	"context"
	"time"
)

// ExceptionState is the state of an exception. The transitions are
// declared in store/statemachine (docs/state-machine.md):
//
//	(created) → PENDING → RESOLVED (terminal; the run continues)
//	PENDING → ARCHIVED (the run is abandoned: stopped)
//	ARCHIVED → PENDING (the run waits for guidance again)
type ExceptionState string

// The exception states.
const (
	ExceptionPending  ExceptionState = "PENDING"
	ExceptionResolved ExceptionState = "RESOLVED"
	ExceptionArchived ExceptionState = "ARCHIVED"
)

// Exception is raised by the interpreter during a run.
type Exception struct {
	OrganizationID string
	WorkspaceID    string
	ID             string
	RunID          string
	// RunNumber is the number of its run (store.Run.Number), read with it
	// (0 on writes, which ignore it).
	RunNumber    int64
	AutomationID string
	Stage        Stage
	Step         int
	// Group is the group id ("missing_values", …); "" is ungrouped.
	Group       string
	Message     string
	Description string
	Location    Location
	// Details is the interpreter's description of what it asks for (the
	// fact, the question, …), opaque to the store.
	Details  []byte
	State    ExceptionState
	Assignee string
	Resolver string
	// ResolutionGuideEntry is the id of the guide entry (of the exception's
	// automation) that resolved it; "" when none did.
	ResolutionGuideEntry string
	Extra                map[string]string
	CreateTime           time.Time
	UpdateTime           time.Time
}

// ListExceptionsRequest lists the exceptions of a workspace, newest first.
//
// Filter fields (store.Filter): state (an ExceptionState; all six
// comparisons, in the enum's order PENDING < RESOLVED < ARCHIVED),
// automation, run, group ("" for ungrouped) and assignee (ids; = !=),
// create_time (a time; all six comparisons). The same fields filter the
// counts and ListExceptionIDs.
type ListExceptionsRequest struct {
	OrganizationID string
	WorkspaceID    string
	Filter         Filter
	// Skip skips that many matching exceptions before the first page. A
	// page token goes on where its page ended (Skip is not applied again)
	// and must come with the Skip of the call that made it (else
	// ErrInvalidArgument).
	Skip      int
	PageSize  int
	PageToken string
}

// CountRequest counts the exceptions of a workspace matching a filter,
// grouped by a key, in key order.
type CountRequest struct {
	OrganizationID string
	WorkspaceID    string
	Filter         Filter
	PageSize       int
	PageToken      string
}

// Count is the count of one key.
type Count struct {
	Key   string
	Count int
}

// CountPage is a page of counts with totals over all pages.
type CountPage struct {
	Counts        []Count
	NextPageToken string
	TotalKeys     int
	TotalCount    int
}

// Resolution is how a person or agent guided an exception.
type Resolution struct {
	// Resolver is users/{user} or agents/{agent}.
	Resolver string
	// Data is the guidance, encoded by the engine; it is handed to the run.
	Data []byte
}

// ResolveCheck decides, inside ResolveException's transaction, whether and
// how an exception is resolved (see Exceptions.ResolveException).
type ResolveCheck func(x Exception) (Resolution, error)

// ExceptionCheck decides, inside the transaction of an archive, unarchive
// or assign, whether the exception may change (see Exceptions): it is
// called once with the exception as read there, locked against concurrent
// transitions, in whatever state it is, and its error, returned as is,
// leaves everything unchanged. The engine (engine/transitions.go) owns the
// rules and gives the checks; nil accepts.
type ExceptionCheck func(x Exception) error

// Exceptions stores exceptions and moves their runs along with them.
type Exceptions interface {
	// GetException: ErrNotFound if absent.
	GetException(ctx context.Context, organizationID, workspaceID, id string) (Exception, error)
	// ListExceptions pages through exceptions, newest first, with the total
	// number matching the filter. ErrInvalidArgument for a bad token.
	ListExceptions(ctx context.Context, req ListExceptionsRequest) (Page[Exception], int, error)
	// CountExceptionsByGroup counts matching exceptions per group ("" for
	// ungrouped).
	CountExceptionsByGroup(ctx context.Context, req CountRequest) (CountPage, error)
	// CountExceptionsByAutomation counts matching exceptions per automation.
	CountExceptionsByAutomation(ctx context.Context, req CountRequest) (CountPage, error)
	// SetExceptionDescription sets the human-friendly description.
	SetExceptionDescription(ctx context.Context, organizationID, workspaceID, id, description string) error

	// ResolveException moves a PENDING exception to RESOLVED and its run from
	// awaiting_guidance to pending with the resolution to apply, in one
	// transaction. (A stopped run keeps the resolution and stays stopped.)
	// check decides: it is called once, inside the transaction, with the
	// exception as read there (locked against concurrent transitions, in
	// whatever state it is), and returns the resolution to write or an
	// error, returned as is, that leaves everything unchanged. Exactly one of
	// concurrent calls succeeds; the others get ErrFailedPrecondition (from
	// check, or from the store when check accepts an exception that is not
	// PENDING). ErrNotFound if absent (check is not called). The exception
	// is read once: the one returned is the row check saw, resolved.
	ResolveException(ctx context.Context, organizationID, workspaceID, id string, check ResolveCheck) (Exception, error)
	// ArchiveException moves a PENDING exception to ARCHIVED and its run to
	// stopped, if check accepts it. ErrFailedPrecondition from other states
	// (from check, or from the store when check accepts an exception that is
	// not PENDING); ErrNotFound if absent (check is not called). Like every
	// transition below, it reads the exception once, locked, and returns
	// that row changed.
	ArchiveException(ctx context.Context, organizationID, workspaceID, id string, check ExceptionCheck) (Exception, error)
	// UnarchiveException moves an ARCHIVED exception to PENDING and its
	// stopped run back to awaiting_guidance, if check accepts it.
	// ErrFailedPrecondition from other states, and when the run is no longer
	// stopped on this exception (it was continued since): nothing would
	// wait on the exception. ErrNotFound if absent.
	UnarchiveException(ctx context.Context, organizationID, workspaceID, id string, check ExceptionCheck) (Exception, error)
	// AssignException sets (or clears, with "") the assignee, if check
	// accepts it. ErrFailedPrecondition for a RESOLVED exception (from check
	// or the store); ErrNotFound if absent.
	AssignException(ctx context.Context, organizationID, workspaceID, id, assignee string, check ExceptionCheck) (Exception, error)
	// ListExceptionIDs returns the ids of every exception matching a filter
	// (for the batch methods), oldest first, at most max.
	ListExceptionIDs(ctx context.Context, organizationID, workspaceID string, filter Filter, max int) ([]string, error)
}
