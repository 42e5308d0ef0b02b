package store

import (
	"context"
	"time"
)

// AutomationTest is one test of an automation's draft. Spec is the test
// as the server encodes it (the tests-file format of internal/safechange),
// opaque to the store. Every revision keeps the tests as they stood
// (AutomationRevision.Tests).
type AutomationTest struct {
	OrganizationID string
	WorkspaceID    string
	AutomationID   string
	ID             string
	// DisplayName is unique in the automation, without regard to case
	// and surrounding space.
	DisplayName string
	Spec        []byte
	// SourceGuideEntry is the guide entry the test was made from ("").
	SourceGuideEntry string
	CreateTime       time.Time
	UpdateTime       time.Time
}

// ListAutomationTestsRequest pages through an automation's tests, oldest
// first.
type ListAutomationTestsRequest struct {
	OrganizationID string
	WorkspaceID    string
	AutomationID   string
	PageSize       int
	PageToken      string
}

// AutomationTestChange changes a test inside UpdateAutomationTest's
// transaction: it gets the test as stored (locked) and changes DisplayName
// and Spec in place, or returns an error, returned as is, that leaves
// everything unchanged.
type AutomationTestChange func(t *AutomationTest) error

// AutomationTests stores the tests of automations. A test belongs to the
// draft: creating, changing or deleting one changes the draft, so each
// adds one to the automation's Version and writes a draft revision (with
// the tests as they now are), in the same transaction.
type AutomationTests interface {
	// CreateAutomationTest inserts t (ID generated when empty; times set),
	// by userID. ErrNotFound if the automation does not exist or is
	// deleted; ErrAlreadyExists if the id or the display name is taken in
	// the automation; ErrResourceExhausted when the automation has max
	// tests already.
	CreateAutomationTest(ctx context.Context, t AutomationTest, userID string, max int) (AutomationTest, error)
	// GetAutomationTest: ErrNotFound if absent.
	GetAutomationTest(ctx context.Context, organizationID, workspaceID, automationID, id string) (AutomationTest, error)
	// ListAutomationTests pages through tests, oldest first.
	// ErrInvalidArgument for a bad token.
	ListAutomationTests(ctx context.Context, req ListAutomationTestsRequest) (Page[AutomationTest], error)
	// AllAutomationTests returns every test of the automation, oldest
	// first.
	AllAutomationTests(ctx context.Context, organizationID, workspaceID, automationID string) ([]AutomationTest, error)
	// UpdateAutomationTest changes a test in one transaction (see
	// AutomationTestChange), by userID. ErrNotFound if absent (or the
	// automation deleted); ErrAlreadyExists if the new display name is
	// another test's.
	UpdateAutomationTest(ctx context.Context, organizationID, workspaceID, automationID, id, userID string, change AutomationTestChange) (AutomationTest, error)
	// DeleteAutomationTest removes a test, by userID. ErrNotFound if absent.
	DeleteAutomationTest(ctx context.Context, organizationID, workspaceID, automationID, id, userID string) error
	// PublishCheckedAutomation is PublishAutomation for a draft that is
	// still at draftVersion (the version its checks ran against): the
	// published revision keeps check (opaque: what the publish checked).
	// ErrStageChanged, and nothing published, when the draft moved on;
	// ErrNotFound as PublishAutomation.
	PublishCheckedAutomation(ctx context.Context, organizationID, workspaceID, id, userID string, draftVersion int64, check []byte) (Automation, error)
}

// ReplayState is where a replay is.
type ReplayState string

// The replay states.
const (
	ReplayRunning   ReplayState = "running"
	ReplaySucceeded ReplayState = "succeeded"
	ReplayFailed    ReplayState = "failed"
)

// Replay is an automation's last replay: a draft's code re-executed with
// what finished runs of the published version recorded. An automation
// keeps one; a new one replaces it and its results.
type Replay struct {
	OrganizationID string
	WorkspaceID    string
	AutomationID   string
	ID             string
	State          ReplayState
	// AutomationVersion is the version whose code is replayed;
	// PublishedVersion the one whose runs are.
	AutomationVersion int64
	PublishedVersion  int64
	Filter            string
	RunCount          int
	Replayed          int
	// The outcomes counted so far (see internal/safechange.Outcome).
	Unchanged, OutputsDiffer, NewException, UnansweredCall, Failed int
	ErrorMessage                                                   string
	CreateTime                                                     time.Time
	UpdateTime                                                     time.Time
	EndTime                                                        time.Time
}

// ReplayResult is how one run replayed. Data is the server's encoding of
// the details (differences, message, where), opaque to the store.
type ReplayResult struct {
	ReplayID      string
	Seq           int
	RunID         string
	Outcome       string
	RunCreateTime time.Time
	Data          []byte
}

// ListReplayResultsRequest pages through the results of an automation's
// last replay, in replay order.
//
// Filter fields (store.Filter): outcome (= !=).
type ListReplayResultsRequest struct {
	OrganizationID string
	WorkspaceID    string
	AutomationID   string
	Filter         Filter
	PageSize       int
	PageToken      string
}

// ResolvedException is an exception of a run resolved by guidance, with
// the guidance as the engine encoded it (a person's, or the guide entry's
// that resolved it).
type ResolvedException struct {
	Exception Exception
	Guidance  []byte
}

// RunRecord is what a run recorded that a replay gives back to it: its
// journal, and its exceptions resolved, in the order they were resolved.
type RunRecord struct {
	Journal  []JournalEntry
	Resolved []ResolvedException
}

// Replays stores the automations' replays and reads what runs recorded.
type Replays interface {
	// StartReplay makes r (running; ID generated when empty; times set)
	// the automation's replay, removing the one before and its results,
	// in one transaction. ErrFailedPrecondition when the automation's
	// replay is running and has written progress within stale; ErrNotFound
	// when the automation does not exist.
	StartReplay(ctx context.Context, r Replay, stale time.Duration) (Replay, error)
	// GetReplay: ErrNotFound when the automation has no replay.
	GetReplay(ctx context.Context, organizationID, workspaceID, automationID string) (Replay, error)
	// SaveReplay writes r's progress (its counts, run count, state, error
	// and end time) and appends results, in one transaction, if r is still the
	// automation's replay; ErrConflict when another replaced it.
	SaveReplay(ctx context.Context, r Replay, results []ReplayResult) (Replay, error)
	// ListReplayResults pages through the last replay's results.
	// ErrNotFound when there is no replay; ErrInvalidArgument for a bad
	// token or filter.
	ListReplayResults(ctx context.Context, req ListReplayResultsRequest) (Page[ReplayResult], error)
	// ListRunRecords returns what the runs (of the workspace) recorded, by
	// run id; a run with no entry has recorded nothing.
	ListRunRecords(ctx context.Context, organizationID, workspaceID string, runIDs []string) (map[string]RunRecord, error)
}
