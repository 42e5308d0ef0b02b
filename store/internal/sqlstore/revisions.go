package sqlstore

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/proserun/prose/store"
)

const revisionSelect = `SELECT v.organization_id, v.workspace_id, v.automation_id, v.version, v.stage, v.display_name, v.description,
	v.code, v.details, v.user_id, v.create_time, v.tests, v.publish_check FROM automation_revisions v`

func scanRevision(s interface{ Scan(...any) error }) (store.AutomationRevision, error) {
	var v store.AutomationRevision
	var stage string
	var tests []byte
	err := s.Scan(&v.OrganizationID, &v.WorkspaceID, &v.AutomationID, &v.Version, &stage, &v.DisplayName, &v.Description,
		&v.Code, &v.Details, &v.UserID, ts{&v.CreateTime}, &tests, &v.PublishCheck)
	v.Stage = store.Stage(stage)
	if err == nil {
		v.Tests, err = decodeTests(tests, v)
	}
	return v, err
}

// addRevision writes the revision of a's stage as it is after a change, in
// the change's transaction, with the automation's tests as they stand.
func (c conn) addRevision(ctx context.Context, a store.Automation, stage store.Stage, userID string, now time.Time) error {
	return c.addRevisionWith(ctx, a, stage, userID, now, nil)
}

// addRevisionWith is addRevision keeping what a publish checked.
func (c conn) addRevisionWith(ctx context.Context, a store.Automation, stage store.Stage, userID string, now time.Time, check []byte) error {
	code, details, version := a.Code, a.Details, a.Version
	if stage == store.StagePublished {
		code, details, version = a.PublishedCode, a.PublishedDetails, a.PublishedVersion
	}
	tests, err := c.testsSnapshot(ctx, a.OrganizationID, a.WorkspaceID, a.ID)
	if err != nil {
		return err
	}
	_, err = c.exec(ctx, `INSERT INTO automation_revisions (organization_id, workspace_id, automation_id, version, stage, display_name,
		description, code, details, user_id, create_time, tests, publish_check) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		a.OrganizationID, a.WorkspaceID, a.ID, version, string(stage), a.DisplayName, a.Description, code, details, userID, now, tests, check)
	return c.db.mapErr(err, fmt.Sprintf("revision %d of automation %q", version, a.ID))
}

// revisionKeys is the keyset of ListAutomationRevisions: version, newest
// first (versions are unique in an automation).
var revisionKeys = keyset{cols: []sortCol{{Field: "version", Col: "v.version", Kind: keyInt}}, desc: []bool{true}}

// ListAutomationRevisions implements store.AutomationRevisions.
func (db *DB) ListAutomationRevisions(ctx context.Context, req store.ListAutomationRevisionsRequest) (store.Page[store.AutomationRevision], error) {
	var zero store.Page[store.AutomationRevision]
	if _, err := db.reader().getAutomation(ctx, req.OrganizationID, req.WorkspaceID, req.AutomationID); err != nil {
		return zero, err
	}
	lq, err := newList(db.d, revisionKeys, revisionFields, req.Filter, req.PageToken, req.PageSize, revisionSelect,
		"automation revisions", req.OrganizationID, req.WorkspaceID, req.AutomationID)
	if err != nil {
		return zero, err
	}
	lq.cond("v.organization_id = " + lq.a.Add(req.OrganizationID))
	lq.cond("v.workspace_id = " + lq.a.Add(req.WorkspaceID))
	lq.cond("v.automation_id = " + lq.a.Add(req.AutomationID))
	return scanPage(ctx, db, lq, "list automation revisions", scanRevision, func(v store.AutomationRevision) []string {
		return []string{strconv.FormatInt(v.Version, 10)}
	})
}

// GetAutomationRevision implements store.AutomationRevisions.
func (db *DB) GetAutomationRevision(ctx context.Context, org, ws, automationID string, version int64) (store.AutomationRevision, error) {
	q, args := revisionSelect+` WHERE v.organization_id = ? AND v.workspace_id = ? AND v.automation_id = ? AND v.version = ?`,
		[]any{org, ws, automationID, version}
	if version == 0 {
		q, args = revisionSelect+` WHERE v.organization_id = ? AND v.workspace_id = ? AND v.automation_id = ? ORDER BY v.version DESC LIMIT 1`,
			[]any{org, ws, automationID}
	}
	v, err := scanRevision(db.reader().queryRow(ctx, q, args...))
	return v, db.mapErr(err, fmt.Sprintf("revision %d of automation %q in workspace %q", version, automationID, ws))
}
