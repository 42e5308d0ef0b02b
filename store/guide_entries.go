package store

import (
	"context"
	"time"
)

// GuideEntryState is the state of a guide entry.
//
//	(created) → PENDING_APPROVAL → APPROVED | REJECTED
//	APPROVED ⇄ REJECTED
//	any → ARCHIVED (soft-deleted; undelete restores the state before)
type GuideEntryState string

// The guide entry states.
const (
	GuidePendingApproval GuideEntryState = "PENDING_APPROVAL"
	GuideApproved        GuideEntryState = "APPROVED"
	GuideRejected        GuideEntryState = "REJECTED"
	GuideArchived        GuideEntryState = "ARCHIVED"
)

// GuideEntry is what a person taught an automation about one kind of
// exception: the guidance the engine applies, by itself, to the exceptions
// that match it.
type GuideEntry struct {
	OrganizationID  string
	WorkspaceID     string
	AutomationID    string
	ID              string
	Title           string
	RootCause       string
	ResolutionSteps string
	ResolutionCode  string
	ResolutionNotes string
	State           GuideEntryState
	// DeletedState is the state before a soft delete (undelete restores it).
	DeletedState    GuideEntryState
	SourceException string // exception id
	SourceRun       string // run id
	VersionMajor    int
	VersionMinor    int

	// The match: the statement's text and its hash (GuideStatementHash),
	// the exception's group, and its fact or question.
	Statement     string
	StatementHash string
	Group         string
	Fact          string
	Question      string
	// Guidance is what the entry does, encoded by the engine.
	Guidance []byte

	CreateTime time.Time
	UpdateTime time.Time
	DeleteTime time.Time // zero: not deleted
}

// GuideMatch is what an exception offers to be matched against entries.
type GuideMatch struct {
	OrganizationID string
	WorkspaceID    string
	AutomationID   string
	StatementHash  string
}

// ListGuideEntriesRequest lists the entries of an automation ("" or "-":
// of every automation of the workspace), newest first.
//
// Filter fields (store.Filter): title, resolution_steps, resolution_code,
// resolution_notes (= != and : for a case-insensitive contains),
// automation, state (a GuideEntryState), source_exception (ids; = !=),
// create_time and update_time (times; all six comparisons).
type ListGuideEntriesRequest struct {
	OrganizationID string
	WorkspaceID    string
	AutomationID   string
	Filter         Filter
	ShowDeleted    bool
	PageSize       int
	PageToken      string
}

// GuideEntryChange changes an entry inside UpdateGuideEntry's transaction:
// it gets the entry as stored (locked) and changes it in place, or returns
// an error, returned as is, that leaves everything unchanged.
type GuideEntryChange func(e *GuideEntry) error

// GuidedException is an exception a guide entry resolved as it was raised.
type GuidedException struct {
	Exception Exception
	// Entry is the id of the guide entry that resolved it.
	Entry string
	// MaxPerRun bounds the exceptions guide entries may resolve in one run.
	MaxPerRun int
}

// GuideEntries stores guide entries.
type GuideEntries interface {
	// CreateGuideEntry inserts e (ID generated when empty; times set).
	// ErrNotFound if the workspace does not exist.
	CreateGuideEntry(ctx context.Context, e GuideEntry) (GuideEntry, error)
	// GetGuideEntry gets an entry of an automation, soft-deleted or not.
	// ErrNotFound if absent.
	GetGuideEntry(ctx context.Context, organizationID, workspaceID, automationID, id string) (GuideEntry, error)
	// ListGuideEntries pages through entries, newest first, with the number
	// matching across all pages. ErrInvalidArgument for a bad token.
	ListGuideEntries(ctx context.Context, req ListGuideEntriesRequest) (Page[GuideEntry], int, error)
	// UpdateGuideEntry changes an entry in one transaction (see
	// GuideEntryChange); UpdateTime is set. ErrNotFound if absent.
	UpdateGuideEntry(ctx context.Context, organizationID, workspaceID, automationID, id string, change GuideEntryChange) (GuideEntry, error)
	// PurgeGuideEntry removes an entry for good (an idempotent create that
	// lost its race). ErrNotFound if absent.
	PurgeGuideEntry(ctx context.Context, organizationID, workspaceID, automationID, id string) error
	// MatchGuideEntries returns the approved, not deleted entries of the
	// automation whose statement hash is m's, oldest first.
	MatchGuideEntries(ctx context.Context, m GuideMatch) ([]GuideEntry, error)
	// RecordGuidedException writes g.Exception RESOLVED by g.Entry (resolver
	// guideEntries/{entry}) in one transaction, unless guide entries have
	// already resolved g.MaxPerRun exceptions of its run: then
	// ErrResourceExhausted and nothing is written.
	RecordGuidedException(ctx context.Context, g GuidedException) (Exception, error)
	// RecordGuidedExceptions records several, in one transaction (one
	// commit), each as RecordGuidedException would in their order (the
	// bound of each counts those before it). errs[i] is the outcome of
	// gs[i] (ErrResourceExhausted: not written); err means nothing was
	// written.
	RecordGuidedExceptions(ctx context.Context, gs []GuidedException) (out []Exception, errs []error, err error)
}
