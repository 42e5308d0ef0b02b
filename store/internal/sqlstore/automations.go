package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

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

// slugTries is how many times CreateAutomation picks a slug again after
// a concurrent create took the one it picked.
const slugTries = 8

// CreateAutomation implements store.Automations. Without an id, the id is
// the first free of the display name's slug, slug-2, slug-3, … in the
// workspace (deleted automations keep theirs); a create that lost the id
// it picked to a concurrent one picks again.
func (db *DB) CreateAutomation(ctx context.Context, a store.Automation) (store.Automation, error) {
	if a.DraftShareID == "" {
		a.DraftShareID = store.NewID()
	}
	if a.PublishedShareID == "" {
		a.PublishedShareID = store.NewID()
	}
	if a.ID != "" {
		return db.insertAutomation(ctx, a, "")
	}
	slug := store.Slug(a.DisplayName)
	for try := 0; ; try++ {
		out, err := db.insertAutomation(ctx, a, slug)
		if !errors.Is(err, store.ErrAlreadyExists) || try == slugTries {
			return out, err
		}
	}
}

// insertAutomation inserts a, its id the first free one of slug when slug
// is set.
func (db *DB) insertAutomation(ctx context.Context, a store.Automation, slug string) (store.Automation, error) {
	now := db.now()
	var out store.Automation
	err := db.tx(ctx, func(c conn) error {
		if err := c.workspaceExists(ctx, a.OrganizationID, a.WorkspaceID); err != nil {
			return err
		}
		if slug != "" {
			id, err := c.freeSlug(ctx, a.OrganizationID, a.WorkspaceID, slug)
			if err != nil {
				return err
			}
			a.ID = id
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

// freeSlug is the first of slug, slug-2, slug-3, … that no automation of
// the workspace has as its id, read with one look-up of the ids sharing
// the slug's prefix.
func (c conn) freeSlug(ctx context.Context, org, ws, slug string) (string, error) {
	prefix := store.SlugCandidate(slug, 1000)
	prefix = prefix[:strings.LastIndexByte(prefix, '-')]
	rows, err := c.query(ctx, `SELECT id FROM automations WHERE organization_id = ? AND workspace_id = ? AND id LIKE ?`, org, ws, prefix+"%")
	if err != nil {
		return "", c.db.mapErr(err, "choose an automation id")
	}
	defer func() { _ = rows.Close() }()
	taken := map[string]bool{}
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return "", c.db.mapErr(err, "choose an automation id")
		}
		taken[id] = true
	}
	if err := rows.Err(); err != nil {
		return "", c.db.mapErr(err, "choose an automation id")
	}
	for n := 1; ; n++ {
		if id := store.SlugCandidate(slug, n); !taken[id] {
			return id, nil
		}
	}
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
