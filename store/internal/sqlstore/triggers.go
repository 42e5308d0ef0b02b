package sqlstore

import (
	"context"
	"fmt"
	"strings"

	"github.com/proserun/prose/store"
)

const triggerInstanceCols = `t.organization_id, t.workspace_id, t.id, t.name, t.book_name, t.book_version, t.connection_id, t.trigger_id,
	t.configuration, t.secret, t.automation_ids, t.create_time, t.update_time`

func (db *DB) scanTriggerInstance(s interface{ Scan(...any) error }) (store.TriggerInstance, error) {
	var t store.TriggerInstance
	err := s.Scan(&t.OrganizationID, &t.WorkspaceID, &t.ID, &t.Name, &t.BookName, &t.BookVersion, &t.ConnectionID, &t.TriggerID,
		&t.Configuration, &t.Secret, jsonCol{&t.AutomationIDs}, ts{&t.CreateTime}, ts{&t.UpdateTime})
	if err == nil {
		t.Secret, err = db.openSecret("trigger_instances", t.OrganizationID, t.WorkspaceID, t.ID, t.Secret)
	}
	if t.AutomationIDs == nil {
		t.AutomationIDs = []string{}
	}
	return t, err
}

func triggerInstanceWhat(org, ws, id string) string {
	return fmt.Sprintf("trigger instance %q in workspace %q of organization %q", id, ws, org)
}

// CreateTriggerInstance implements store.Triggers.
func (db *DB) CreateTriggerInstance(ctx context.Context, t store.TriggerInstance) (store.TriggerInstance, error) {
	if t.ID == "" {
		t.ID = store.NewID()
	}
	if t.Configuration == nil {
		t.Configuration = []byte{}
	}
	if t.AutomationIDs == nil {
		t.AutomationIDs = []string{}
	}
	now := db.now()
	what := triggerInstanceWhat(t.OrganizationID, t.WorkspaceID, t.ID)
	sealed, err := db.sealSecret("trigger_instances", t.OrganizationID, t.WorkspaceID, t.ID, t.Secret)
	if err != nil {
		return store.TriggerInstance{}, err
	}
	err = db.tx(ctx, func(c conn) error {
		if err := c.workspaceExists(ctx, t.OrganizationID, t.WorkspaceID); err != nil {
			return err
		}
		var n int
		if err := c.queryRow(ctx, `SELECT COUNT(*) FROM trigger_instances WHERE organization_id = ? AND workspace_id = ?`,
			t.OrganizationID, t.WorkspaceID).Scan(&n); err != nil {
			return db.mapErr(err, "count trigger instances")
		}
		if n >= store.MaxTriggerInstancesPerWorkspace {
			return fmt.Errorf("workspace %q has %d trigger instances, the limit is %d: %w", t.WorkspaceID, n,
				store.MaxTriggerInstancesPerWorkspace, store.ErrResourceExhausted)
		}
		_, err := c.exec(ctx, `INSERT INTO trigger_instances (organization_id, workspace_id, id, name, book_name, book_version, connection_id,
			trigger_id, configuration, secret, automation_ids, create_time, update_time) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			t.OrganizationID, t.WorkspaceID, t.ID, t.Name, t.BookName, t.BookVersion, t.ConnectionID, t.TriggerID, t.Configuration,
			sealed, jsonArg(t.AutomationIDs), now, now)
		return db.mapErr(err, "create "+what)
	})
	if err != nil {
		return store.TriggerInstance{}, err
	}
	t.CreateTime, t.UpdateTime = now, now
	return t, nil
}

// GetTriggerInstance implements store.Triggers.
func (db *DB) GetTriggerInstance(ctx context.Context, org, ws, id string) (store.TriggerInstance, error) {
	t, err := db.scanTriggerInstance(db.reader().queryRow(ctx, `SELECT `+triggerInstanceCols+` FROM trigger_instances t
		WHERE t.organization_id = ? AND t.workspace_id = ? AND t.id = ?`, org, ws, id))
	return t, db.mapErr(err, triggerInstanceWhat(org, ws, id))
}

// SetTriggerInstanceAutomations implements store.Triggers.
func (db *DB) SetTriggerInstanceAutomations(ctx context.Context, org, ws, id string, automationIDs []string) (store.TriggerInstance, error) {
	if automationIDs == nil {
		automationIDs = []string{}
	}
	t, err := db.scanTriggerInstance(db.writer().queryRow(ctx, `UPDATE trigger_instances SET automation_ids = ?, update_time = ?
		WHERE organization_id = ? AND workspace_id = ? AND id = ? RETURNING `+strings.ReplaceAll(triggerInstanceCols, "t.", ""),
		jsonArg(automationIDs), db.now(), org, ws, id))
	return t, db.mapErr(err, "update "+triggerInstanceWhat(org, ws, id))
}

// DeleteTriggerInstance implements store.Triggers.
func (db *DB) DeleteTriggerInstance(ctx context.Context, org, ws, connection, id string) error {
	res, err := db.writer().exec(ctx, `DELETE FROM trigger_instances WHERE organization_id = ? AND workspace_id = ? AND connection_id = ? AND id = ?`,
		org, ws, connection, id)
	if err != nil {
		return db.mapErr(err, "delete "+triggerInstanceWhat(org, ws, id))
	}
	if rowsAffected(res) == 0 {
		return fmt.Errorf("%s of connection %q: %w", triggerInstanceWhat(org, ws, id), connection, store.ErrNotFound)
	}
	return nil
}

var triggerInstanceFields = fields{
	"book_name":     {col: "t.book_name"},
	"connection_id": {col: "t.connection_id"},
	"trigger_id":    {col: "t.trigger_id"},
}

// ListTriggerInstances implements store.Triggers.
func (db *DB) ListTriggerInstances(ctx context.Context, org, ws string, f store.Filter) ([]store.TriggerInstance, error) {
	a := NewArgs(db.d)
	q := `SELECT ` + triggerInstanceCols + ` FROM trigger_instances t WHERE t.organization_id = ` + a.Add(org) + ` AND t.workspace_id = ` + a.Add(ws)
	if f != nil {
		cond, err := triggerInstanceFields.where(a, f)
		if err != nil {
			return nil, err
		}
		q += " AND " + cond
	}
	rows, err := db.reader().queryArgs(ctx, q+" ORDER BY t.id", a)
	what := fmt.Sprintf("trigger instances of workspace %q in organization %q", ws, org)
	if err != nil {
		return nil, db.mapErr(err, what)
	}
	defer rows.Close()
	out := []store.TriggerInstance{}
	for rows.Next() {
		t, err := db.scanTriggerInstance(rows)
		if err != nil {
			return nil, db.mapErr(err, what)
		}
		out = append(out, t)
	}
	return out, db.mapErr(rows.Err(), what)
}

// ListTriggerInstancesOfBooks implements store.Triggers.
func (db *DB) ListTriggerInstancesOfBooks(ctx context.Context, books []string) ([]store.TriggerInstance, error) {
	out := []store.TriggerInstance{}
	if len(books) == 0 {
		return out, nil
	}
	rows, err := db.reader().query(ctx, `SELECT `+triggerInstanceCols+` FROM trigger_instances t WHERE t.book_name IN (`+placeholders(len(books))+`)
		ORDER BY t.organization_id, t.workspace_id, t.id`, anySlice(books)...)
	if err != nil {
		return nil, db.mapErr(err, "trigger instances of books")
	}
	defer rows.Close()
	for rows.Next() {
		t, err := db.scanTriggerInstance(rows)
		if err != nil {
			return nil, db.mapErr(err, "trigger instances of books")
		}
		out = append(out, t)
	}
	return out, db.mapErr(rows.Err(), "trigger instances of books")
}

const automationTriggerCols = `at.organization_id, at.workspace_id, at.automation_id, at.trigger_id, at.input_mapping, at.phase_type,
	at.phase_sub_type, at.is_active, at.create_time, at.update_time`

func scanAutomationTrigger(s interface{ Scan(...any) error }) (store.AutomationTrigger, error) {
	var t store.AutomationTrigger
	err := s.Scan(&t.OrganizationID, &t.WorkspaceID, &t.AutomationID, &t.TriggerID, jsonCol{&t.InputMapping}, &t.PhaseType,
		&t.PhaseSubType, &t.IsActive, ts{&t.CreateTime}, ts{&t.UpdateTime})
	if t.InputMapping == nil {
		t.InputMapping = map[string]string{}
	}
	return t, err
}

func automationTriggerWhat(org, ws, automation, trigger string) string {
	return fmt.Sprintf("trigger %q of automation %q in workspace %q of organization %q", trigger, automation, ws, org)
}

// PutAutomationTrigger implements store.Triggers.
func (db *DB) PutAutomationTrigger(ctx context.Context, t store.AutomationTrigger) (store.AutomationTrigger, error) {
	if t.InputMapping == nil {
		t.InputMapping = map[string]string{}
	}
	now := db.now()
	what := automationTriggerWhat(t.OrganizationID, t.WorkspaceID, t.AutomationID, t.TriggerID)
	var out store.AutomationTrigger
	err := db.tx(ctx, func(c conn) error {
		if err := c.mustExist(ctx, fmt.Sprintf("automation %q in workspace %q of organization %q", t.AutomationID, t.WorkspaceID, t.OrganizationID),
			`SELECT 1 FROM automations WHERE organization_id = ? AND workspace_id = ? AND id = ?`,
			t.OrganizationID, t.WorkspaceID, t.AutomationID); err != nil {
			return err
		}
		var err error
		out, err = scanAutomationTrigger(c.queryRow(ctx, `INSERT INTO automation_triggers (organization_id, workspace_id, automation_id,
			trigger_id, input_mapping, phase_type, phase_sub_type, is_active, create_time, update_time) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (organization_id, workspace_id, automation_id, trigger_id) DO UPDATE SET input_mapping = excluded.input_mapping,
			phase_type = excluded.phase_type, phase_sub_type = excluded.phase_sub_type, is_active = excluded.is_active,
			update_time = excluded.update_time RETURNING `+strings.ReplaceAll(automationTriggerCols, "at.", ""),
			t.OrganizationID, t.WorkspaceID, t.AutomationID, t.TriggerID, jsonArg(t.InputMapping), t.PhaseType, t.PhaseSubType,
			t.IsActive, now, now))
		return db.mapErr(err, "put "+what)
	})
	return out, err
}

// GetAutomationTrigger implements store.Triggers.
func (db *DB) GetAutomationTrigger(ctx context.Context, org, ws, automation, trigger string) (store.AutomationTrigger, error) {
	t, err := scanAutomationTrigger(db.reader().queryRow(ctx, `SELECT `+automationTriggerCols+` FROM automation_triggers at
		WHERE at.organization_id = ? AND at.workspace_id = ? AND at.automation_id = ? AND at.trigger_id = ?`, org, ws, automation, trigger))
	return t, db.mapErr(err, automationTriggerWhat(org, ws, automation, trigger))
}

var automationTriggerFields = fields{
	"trigger_id": {col: "at.trigger_id"},
	"is_active": {col: "at.is_active", render: func(a *Args, op store.Op, v any) (string, error) {
		s := "at.is_active = " + a.Add(fmt.Sprint(v) == "true")
		return negate(op, s), nil
	}},
}

// ListAutomationTriggers implements store.Triggers.
func (db *DB) ListAutomationTriggers(ctx context.Context, req store.ListAutomationTriggersRequest) (store.Page[store.AutomationTrigger], error) {
	ks, err := newKeyset(nil, nil, nil, "at.trigger_id")
	if err != nil {
		return store.Page[store.AutomationTrigger]{}, err
	}
	lq, err := newList(db.d, ks, automationTriggerFields, req.Filter, req.PageToken, req.PageSize,
		`SELECT `+automationTriggerCols+` FROM automation_triggers at`, "automation_triggers", req.OrganizationID, req.WorkspaceID, req.AutomationID)
	if err != nil {
		return store.Page[store.AutomationTrigger]{}, err
	}
	lq.cond("at.organization_id = " + lq.a.Add(req.OrganizationID))
	lq.cond("at.workspace_id = " + lq.a.Add(req.WorkspaceID))
	lq.cond("at.automation_id = " + lq.a.Add(req.AutomationID))
	return scanPage(ctx, db, lq, "list automation triggers", scanAutomationTrigger, func(t store.AutomationTrigger) []string {
		return []string{t.TriggerID}
	})
}
