package store

import (
	"context"
	"strings"
	"time"
)

// HumanGuidance reports whether guidance given by resolver counts as human
// guidance for the insights (straight-through processing): a person
// (users/…) or an agent (agents/…) does; a guide entry applied
// automatically (guideEntries/…) does not. ResolveException counts a
// run's human guidance with it (the runs.guided column).
func HumanGuidance(resolver string) bool { return !strings.HasPrefix(resolver, "guideEntries/") }

// RunCounts are the maintained counts of a set of runs: those created in a
// time range, with their state now.
type RunCounts struct {
	Runs      int64 // created
	Completed int64 // completed now
	// GuidedCompleted: completed after at least one human guidance (see
	// HumanGuidance); Completed − GuidedCompleted went straight through.
	GuidedCompleted int64
	Failed          int64 // failed now
	Awaiting        int64 // awaiting guidance now
}

// Add adds o to c.
func (c *RunCounts) Add(o RunCounts) {
	c.Runs += o.Runs
	c.Completed += o.Completed
	c.GuidedCompleted += o.GuidedCompleted
	c.Failed += o.Failed
	c.Awaiting += o.Awaiting
}

// TimeRange is a half-open range of instants [Start, End). A zero Start is
// the beginning of time, a zero End its end.
type TimeRange struct {
	Start, End time.Time
}

// AggregateHour is the resolution of the run aggregates: counts are kept
// per hour of creation (and per UTC day), so a range's edges are taken to
// the hour: an hour counts in a range when it starts inside it.
const AggregateHour = time.Hour

// MaxAggregatePeriods bounds the periods of one SumRunAggregates request.
const MaxAggregatePeriods = 1000

// RunAggregatesRequest asks for the run counts of some workspaces of an
// organization, in each of Periods.
type RunAggregatesRequest struct {
	OrganizationID string
	// WorkspaceIDs are the workspaces counted (at least one).
	WorkspaceIDs []string
	// AutomationIDs, when not empty, restricts the counts to these
	// automation ids (in any of the workspaces).
	AutomationIDs []string
	// Periods: at most MaxAggregatePeriods.
	Periods []TimeRange
	// ByAutomation: one result per automation (else per workspace).
	ByAutomation bool
}

// RunAggregate is the counts of one workspace (and automation, with
// ByAutomation) in one period (an index into Periods). Only non-empty
// counts are returned.
type RunAggregate struct {
	WorkspaceID  string
	AutomationID string
	Period       int
	Counts       RunCounts
	// SavedUSD and SavedSecs are the value of the completed runs by their
	// automations' estimates (every completed run valued by its
	// automation's estimate now, those completed before it was set too):
	// an exact decimal number of USD and seconds. Only a workspace's counts
	// (neither ByAutomation nor AutomationIDs) carry them; else "" and 0.
	SavedUSD  string
	SavedSecs int64
}

// AutomationEstimate is the value of one run of an automation: the cost
// and the time a run that completes saves. CostUSD is an exact decimal
// number in text (the server checks it).
type AutomationEstimate struct {
	OrganizationID string
	WorkspaceID    string
	AutomationID   string
	CostUSD        string
	TimeSavedSecs  int32
	UpdateTime     time.Time
}

// RunAggregates answers the insights from counts kept in the transactions
// that create runs, change their state and delete them (never by scanning
// runs), and stores the value estimates of automations.
type RunAggregates interface {
	// SumRunAggregates returns the counts of the runs created in each
	// period (their edges taken to the hour: see AggregateHour).
	// ErrInvalidArgument for no workspace, more than MaxAggregatePeriods
	// periods or a period that ends before it starts.
	SumRunAggregates(ctx context.Context, req RunAggregatesRequest) ([]RunAggregate, error)
	// SetAutomationEstimates creates or replaces the estimates of
	// automations of one workspace, in one transaction, and returns every
	// estimate of the workspace ordered by automation id. A changed
	// estimate re-values its automation's completed runs in the kept value
	// (RunAggregate.SavedUSD) in the same transaction: one pass over the
	// workspace's rollup rows per changed estimate. ErrNotFound if an
	// automation does not exist in the workspace.
	SetAutomationEstimates(ctx context.Context, organizationID, workspaceID string, es []AutomationEstimate) ([]AutomationEstimate, error)
	// ListAutomationEstimates returns the estimates of the given workspaces
	// of an organization, ordered by workspace and automation id.
	ListAutomationEstimates(ctx context.Context, organizationID string, workspaceIDs []string) ([]AutomationEstimate, error)
}
