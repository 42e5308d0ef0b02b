package sqlstore

import (
	"context"
	"fmt"
	"time"

	"github.com/proserun/prose/store"
)

const scheduleCols = `organization_id, workspace_id, automation_id, config, enabled, next_time, generation, create_time, update_time`

func scanSchedule(s interface{ Scan(...any) error }) (store.Schedule, error) {
	var out store.Schedule
	err := s.Scan(&out.OrganizationID, &out.WorkspaceID, &out.AutomationID, &out.Config, &out.Enabled, ts{&out.NextTime},
		&out.Generation, ts{&out.CreateTime}, ts{&out.UpdateTime})
	return out, err
}

func scheduleWhat(org, ws, automation string) string {
	return fmt.Sprintf("schedule of automation %q in workspace %q of organization %q", automation, ws, org)
}

// CreateSchedule implements store.Schedules.
func (db *DB) CreateSchedule(ctx context.Context, s store.Schedule) (store.Schedule, error) {
	what := scheduleWhat(s.OrganizationID, s.WorkspaceID, s.AutomationID)
	if s.Config == nil {
		s.Config = []byte{}
	}
	now := db.now()
	var out store.Schedule
	err := db.tx(ctx, func(c conn) error {
		if err := c.mustExist(ctx, fmt.Sprintf("automation %q in workspace %q of organization %q", s.AutomationID, s.WorkspaceID, s.OrganizationID),
			`SELECT 1 FROM automations WHERE organization_id = ? AND workspace_id = ? AND id = ?`,
			s.OrganizationID, s.WorkspaceID, s.AutomationID); err != nil {
			return err
		}
		var err error
		out, err = scanSchedule(c.queryRow(ctx, `INSERT INTO automation_schedules (`+scheduleCols+`)
			VALUES (?, ?, ?, ?, ?, ?, 1, ?, ?) RETURNING `+scheduleCols,
			s.OrganizationID, s.WorkspaceID, s.AutomationID, s.Config, s.Enabled, nullTime(s.NextTime), now, now))
		return db.mapErr(err, "create "+what)
	})
	return out, err
}

// GetSchedule implements store.Schedules.
func (db *DB) GetSchedule(ctx context.Context, org, ws, automation string) (store.Schedule, error) {
	out, err := scanSchedule(db.reader().queryRow(ctx, `SELECT `+scheduleCols+` FROM automation_schedules
		WHERE organization_id = ? AND workspace_id = ? AND automation_id = ?`, org, ws, automation))
	return out, db.mapErr(err, scheduleWhat(org, ws, automation))
}

// UpdateSchedule implements store.Schedules.
func (db *DB) UpdateSchedule(ctx context.Context, s store.Schedule) (store.Schedule, error) {
	if s.Config == nil {
		s.Config = []byte{}
	}
	out, err := scanSchedule(db.writer().queryRow(ctx, `UPDATE automation_schedules
		SET config = ?, enabled = ?, next_time = ?, generation = generation + 1, update_time = ?
		WHERE organization_id = ? AND workspace_id = ? AND automation_id = ? RETURNING `+scheduleCols,
		s.Config, s.Enabled, nullTime(s.NextTime), db.now(), s.OrganizationID, s.WorkspaceID, s.AutomationID))
	return out, db.mapErr(err, "update "+scheduleWhat(s.OrganizationID, s.WorkspaceID, s.AutomationID))
}

// DeleteSchedule implements store.Schedules.
func (db *DB) DeleteSchedule(ctx context.Context, org, ws, automation string) error {
	res, err := db.writer().exec(ctx, `DELETE FROM automation_schedules WHERE organization_id = ? AND workspace_id = ? AND automation_id = ?`,
		org, ws, automation)
	if err != nil {
		return db.mapErr(err, "delete "+scheduleWhat(org, ws, automation))
	}
	if rowsAffected(res) == 0 {
		return fmt.Errorf("%s: %w", scheduleWhat(org, ws, automation), store.ErrNotFound)
	}
	return nil
}

// ListDueSchedules implements store.Schedules.
func (db *DB) ListDueSchedules(ctx context.Context, now time.Time, limit int) ([]store.Schedule, error) {
	if limit <= 0 {
		limit = 100
	}
	rows, err := db.reader().query(ctx, `SELECT `+scheduleCols+` FROM automation_schedules
		WHERE enabled = ? AND next_time IS NOT NULL AND next_time <= ? ORDER BY next_time LIMIT ?`, true, now, limit)
	if err != nil {
		return nil, db.mapErr(err, "due schedules")
	}
	defer rows.Close()
	var out []store.Schedule
	for rows.Next() {
		s, err := scanSchedule(rows)
		if err != nil {
			return nil, db.mapErr(err, "due schedules")
		}
		out = append(out, s)
	}
	return out, db.mapErr(rows.Err(), "due schedules")
}

// NextScheduleTime implements store.Schedules.
func (db *DB) NextScheduleTime(ctx context.Context) (time.Time, error) {
	var t time.Time
	err := db.reader().queryRow(ctx, `SELECT MIN(next_time) FROM automation_schedules WHERE enabled = ? AND next_time IS NOT NULL`, true).Scan(ts{&t})
	return t, db.mapErr(err, "next schedule time")
}

// AdvanceSchedule implements store.Schedules.
func (db *DB) AdvanceSchedule(ctx context.Context, org, ws, automation string, generation int64, from, next time.Time) (bool, error) {
	res, err := db.writer().exec(ctx, `UPDATE automation_schedules SET next_time = ?
		WHERE organization_id = ? AND workspace_id = ? AND automation_id = ? AND generation = ? AND next_time = ?`,
		nullTime(next), org, ws, automation, generation, from)
	if err != nil {
		return false, db.mapErr(err, "advance "+scheduleWhat(org, ws, automation))
	}
	return rowsAffected(res) == 1, nil
}
