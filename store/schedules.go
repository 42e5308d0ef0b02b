package store

import (
	"context"
	"time"
)

// Schedule is the schedule of an automation (at most one per automation).
// The store keeps its configuration as opaque bytes (the server marshals a
// prose.platform.v1.ScheduleConfig); NextTime is the next occurrence the
// scheduler has not handled yet (zero: none is left).
type Schedule struct {
	OrganizationID string
	WorkspaceID    string
	AutomationID   string
	Config         []byte
	Enabled        bool
	NextTime       time.Time
	// Generation counts the writes of the API (create, update, enable,
	// disable); AdvanceSchedule is refused once it moved on.
	Generation int64
	CreateTime time.Time
	UpdateTime time.Time
}

// Schedules stores the schedules of automations and lets the scheduler of
// any replica find and advance the ones that are due.
type Schedules interface {
	// CreateSchedule inserts s (Generation 1). ErrNotFound if the automation
	// does not exist; ErrAlreadyExists if it has a schedule.
	CreateSchedule(ctx context.Context, s Schedule) (Schedule, error)
	// GetSchedule: ErrNotFound if absent.
	GetSchedule(ctx context.Context, organizationID, workspaceID, automationID string) (Schedule, error)
	// UpdateSchedule replaces Config, Enabled and NextTime, adds one to
	// Generation and sets the update time. ErrNotFound if absent.
	UpdateSchedule(ctx context.Context, s Schedule) (Schedule, error)
	// DeleteSchedule: ErrNotFound if absent.
	DeleteSchedule(ctx context.Context, organizationID, workspaceID, automationID string) error
	// ListDueSchedules returns at most limit enabled schedules whose
	// NextTime is not zero and not after now, earliest first.
	ListDueSchedules(ctx context.Context, now time.Time, limit int) ([]Schedule, error)
	// NextScheduleTime returns the earliest NextTime of the enabled
	// schedules (zero: none).
	NextScheduleTime(ctx context.Context) (time.Time, error)
	// AdvanceSchedule moves NextTime from `from` to `next` (zero: none left)
	// if the schedule is still at generation and at `from`; it reports
	// whether it did (false: another scheduler advanced it first, or the
	// API changed it). The update time is left alone.
	AdvanceSchedule(ctx context.Context, organizationID, workspaceID, automationID string, generation int64, from, next time.Time) (bool, error)
}
