package sqlstore

import (
	"context"
	"fmt"
	"strconv"

	"github.com/proserun/prose/store"
)

const autoSelect = `SELECT a.organization_id, a.workspace_id, a.id, a.display_name, a.description, a.code, a.details, a.version,
	a.published_code, a.published_details, a.published_version, a.draft_share_id, a.published_share_id,
	a.author_id, a.update_user_id, a.publish_user_id, a.create_time, a.update_time, a.publish_time, a.delete_time
	FROM automations a`

func scanAutomation(s interface{ Scan(...any) error }) (store.Automation, error) {
	var a store.Automation
	err := s.Scan(&a.OrganizationID, &a.WorkspaceID, &a.ID, &a.DisplayName, &a.Description, &a.Code, &a.Details, &a.Version,
		&a.PublishedCode, &a.PublishedDetails, &a.PublishedVersion, &a.DraftShareID, &a.PublishedShareID,
		&a.AuthorID, &a.UpdateUserID, &a.PublishUserID, ts{&a.CreateTime}, ts{&a.UpdateTime}, ts{&a.PublishTime}, ts{&a.DeleteTime})
	return a, err
}

func (c conn) getAutomation(ctx context.Context, org, ws, id string) (store.Automation, error) {
	a, err := scanAutomation(c.queryRow(ctx, autoSelect+` WHERE a.organization_id = ? AND a.workspace_id = ? AND a.id = ?`, org, ws, id))
	return a, c.db.mapErr(err, fmt.Sprintf("automation %q in workspace %q", id, ws))
}

// CreateAutomation implements store.Automations.
func (db *DB) CreateAutomation(ctx context.Context, a store.Automation) (store.Automation, error) {
	if a.ID == "" {
		a.ID = store.NewID()
	}
	if a.DraftShareID == "" {
		a.DraftShareID = store.NewID()
	}
	if a.PublishedShareID == "" {
		a.PublishedShareID = store.NewID()
	}
	now := db.now()
	var out store.Automation
	err := db.tx(ctx, func(c conn) error {
		if err := c.workspaceExists(ctx, a.OrganizationID, a.WorkspaceID); err != nil {
			return err
		}
		if _, err := c.exec(ctx, `INSERT INTO automations (organization_id, workspace_id, id, display_name, description, code, details,
			version, draft_share_id, published_share_id, author_id, update_user_id, create_time, update_time)
			VALUES (?, ?, ?, ?, ?, ?, ?, 1, ?, ?, ?, ?, ?, ?)`,
			a.OrganizationID, a.WorkspaceID, a.ID, a.DisplayName, a.Description, a.Code, a.Details,
			a.DraftShareID, a.PublishedShareID, a.AuthorID, a.AuthorID, now, now); err != nil {
			return db.mapErr(err, fmt.Sprintf("create automation %q", a.ID))
		}
		var err error
		if out, err = c.getAutomation(ctx, a.OrganizationID, a.WorkspaceID, a.ID); err != nil {
			return err
		}
		return c.addRevision(ctx, out, store.StageDraft, a.AuthorID, now)
	})
	return out, err
}

// GetAutomation implements store.Automations.
func (db *DB) GetAutomation(ctx context.Context, org, ws, id string) (store.Automation, error) {
	return db.reader().getAutomation(ctx, org, ws, id)
}

// GetAutomationByShareID implements store.Automations.
func (db *DB) GetAutomationByShareID(ctx context.Context, shareID string) (store.Automation, store.Stage, error) {
	a, err := scanAutomation(db.reader().queryRow(ctx, autoSelect+` WHERE (a.draft_share_id = ? OR a.published_share_id = ?) AND a.delete_time IS NULL`, shareID, shareID))
	if err != nil {
		return a, "", db.mapErr(err, fmt.Sprintf("share id %q", shareID))
	}
	if a.PublishedShareID == shareID {
		return a, store.StagePublished, nil
	}
	return a, store.StageDraft, nil
}

var automationSort = map[string]sortCol{
	"display_name": {Field: "display_name", Col: "a.display_name", Kind: keyText},
	"create_time":  {Field: "create_time", Col: "a.create_time", Kind: keyTime},
	"update_time":  {Field: "update_time", Col: "a.update_time", Kind: keyTime},
}

// ListAutomations implements store.Automations.
func (db *DB) ListAutomations(ctx context.Context, req store.ListAutomationsRequest) (store.Page[store.Automation], error) {
	var zero store.Page[store.Automation]
	ks, err := newKeyset(req.OrderBy, store.AutomationOrdering.Default, automationSort, "a.id")
	if err != nil {
		return zero, err
	}
	lq, err := newList(db.d, ks, automationFields, req.Filter, req.PageToken, req.PageSize, autoSelect,
		"automations", req.OrganizationID, req.WorkspaceID, "deleted="+strconv.FormatBool(req.ShowDeleted))
	if err != nil {
		return zero, err
	}
	lq.cond("a.organization_id = " + lq.a.Add(req.OrganizationID))
	lq.cond("a.workspace_id = " + lq.a.Add(req.WorkspaceID))
	if !req.ShowDeleted {
		lq.cond("a.delete_time IS NULL")
	}
	return scanPage(ctx, db, lq, "list automations", scanAutomation, func(a store.Automation) []string {
		out := make([]string, len(ks.cols))
		for i, c := range ks.cols {
			switch c.Field {
			case "display_name":
				out[i] = a.DisplayName
			case "create_time":
				out[i] = timeKey(a.CreateTime)
			case "update_time":
				out[i] = timeKey(a.UpdateTime)
			case "id":
				out[i] = a.ID
			}
		}
		return out
	})
}

// UpdateAutomation implements store.Automations.
func (db *DB) UpdateAutomation(ctx context.Context, a store.Automation, mask []string) (store.Automation, error) {
	if len(mask) == 0 {
		mask = []string{"display_name", "description", "code", "details"}
	}
	now := db.now()
	set := "update_time = ?, version = version + 1, update_user_id = ?"
	args := []any{now, a.UpdateUserID}
	for _, p := range mask {
		switch p {
		case "display_name":
			set += ", display_name = ?"
			args = append(args, a.DisplayName)
		case "description":
			set += ", description = ?"
			args = append(args, a.Description)
		case "code":
			set += ", code = ?"
			args = append(args, a.Code)
		case "details":
			set += ", details = ?"
			args = append(args, a.Details)
		default:
			return store.Automation{}, fmt.Errorf("%w: update_mask: unknown or read-only field %q", store.ErrInvalidArgument, p)
		}
	}
	args = append(args, a.OrganizationID, a.WorkspaceID, a.ID)
	var out store.Automation
	err := db.tx(ctx, func(c conn) error {
		res, err := c.exec(ctx, `UPDATE automations SET `+set+` WHERE organization_id = ? AND workspace_id = ? AND id = ? AND delete_time IS NULL`, args...)
		if err != nil {
			return db.mapErr(err, "update automation")
		}
		if rowsAffected(res) == 0 {
			return fmt.Errorf("automation %q in workspace %q: %w", a.ID, a.WorkspaceID, store.ErrNotFound)
		}
		if out, err = c.getAutomation(ctx, a.OrganizationID, a.WorkspaceID, a.ID); err != nil {
			return err
		}
		return c.addRevision(ctx, out, store.StageDraft, a.UpdateUserID, now)
	})
	return out, err
}

// PublishAutomation implements store.Automations.
func (db *DB) PublishAutomation(ctx context.Context, org, ws, id, userID string) (store.Automation, error) {
	now := db.now()
	var out store.Automation
	err := db.tx(ctx, func(c conn) error {
		res, err := c.exec(ctx, `UPDATE automations SET version = version + 1, published_version = version + 1,
			published_code = code, published_details = details, publish_user_id = ?, publish_time = ?, update_time = ?
			WHERE organization_id = ? AND workspace_id = ? AND id = ? AND delete_time IS NULL`, userID, now, now, org, ws, id)
		if err != nil {
			return db.mapErr(err, "publish automation")
		}
		if rowsAffected(res) == 0 {
			return fmt.Errorf("automation %q in workspace %q: %w", id, ws, store.ErrNotFound)
		}
		if out, err = c.getAutomation(ctx, org, ws, id); err != nil {
			return err
		}
		return c.addRevision(ctx, out, store.StagePublished, userID, now)
	})
	return out, err
}

// DeleteAutomation implements store.Automations.
func (db *DB) DeleteAutomation(ctx context.Context, org, ws, id string) (store.Automation, error) {
	now := db.now()
	var out store.Automation
	err := db.tx(ctx, func(c conn) error {
		res, err := c.exec(ctx, `UPDATE automations SET delete_time = ?, update_time = ?
			WHERE organization_id = ? AND workspace_id = ? AND id = ? AND delete_time IS NULL`, now, now, org, ws, id)
		if err != nil {
			return db.mapErr(err, "delete automation")
		}
		if rowsAffected(res) == 0 {
			return fmt.Errorf("automation %q in workspace %q: %w", id, ws, store.ErrNotFound)
		}
		out, err = c.getAutomation(ctx, org, ws, id)
		return err
	})
	return out, err
}
