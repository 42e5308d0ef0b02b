package sqlstore

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/proserun/prose/store"
)

const wsSelect = `SELECT w.organization_id, w.id, w.title, w.icon, w.icon_color, coalesce(w.creator_id, ''),
	coalesce(cu.display_name, ''), coalesce(cu.email, ''), w.create_time, w.update_time
	FROM workspaces w LEFT JOIN users cu ON cu.id = w.creator_id`

func scanWorkspace(s interface{ Scan(...any) error }) (store.Workspace, error) {
	var w store.Workspace
	err := s.Scan(&w.OrganizationID, &w.ID, &w.Title, &w.Icon, &w.IconColor, &w.CreatorID,
		&w.CreatorDisplayName, &w.CreatorEmail, ts{&w.CreateTime}, ts{&w.UpdateTime})
	return w, err
}

func (c conn) getWorkspace(ctx context.Context, org, id string) (store.Workspace, error) {
	w, err := scanWorkspace(c.queryRow(ctx, wsSelect+` WHERE w.organization_id = ? AND w.id = ?`, org, id))
	return w, c.db.mapErr(err, fmt.Sprintf("workspace %q in organization %q", id, org))
}

func (c conn) mustExist(ctx context.Context, what, q string, args ...any) error {
	ok, err := c.exists(ctx, q, args...)
	if err != nil {
		return c.db.mapErr(err, what)
	}
	if !ok {
		return fmt.Errorf("%s: %w", what, store.ErrNotFound)
	}
	return nil
}

func (c conn) orgExists(ctx context.Context, org string) error {
	return c.mustExist(ctx, fmt.Sprintf("organization %q", org), `SELECT 1 FROM organizations WHERE id = ?`, org)
}

func (c conn) workspaceExists(ctx context.Context, org, ws string) error {
	return c.mustExist(ctx, fmt.Sprintf("workspace %q in organization %q", ws, org),
		`SELECT 1 FROM workspaces WHERE organization_id = ? AND id = ?`, org, ws)
}

func (c conn) userExists(ctx context.Context, user string) error {
	return c.mustExist(ctx, fmt.Sprintf("user %q", user), `SELECT 1 FROM users WHERE id = ?`, user)
}

// CreateWorkspace implements store.Workspaces.
func (db *DB) CreateWorkspace(ctx context.Context, w store.Workspace) (store.Workspace, error) {
	if w.ID == "" {
		w.ID = store.NewID()
	}
	now := db.now()
	var out store.Workspace
	err := db.tx(ctx, func(c conn) error {
		if err := c.orgExists(ctx, w.OrganizationID); err != nil {
			return err
		}
		var creator any
		if w.CreatorID != "" {
			if err := c.userExists(ctx, w.CreatorID); err != nil {
				return fmt.Errorf("creator: %w", err)
			}
			creator = w.CreatorID
		}
		if _, err := c.exec(ctx, `INSERT INTO workspaces (organization_id, id, title, title_key, icon, icon_color, creator_id, create_time, update_time)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`, w.OrganizationID, w.ID, w.Title, store.TitleSortKey(w.Title), w.Icon, w.IconColor, creator, now, now); err != nil {
			return db.mapErr(err, fmt.Sprintf("create workspace %q in organization %q", w.ID, w.OrganizationID))
		}
		if _, err := c.exec(ctx, `INSERT INTO workspace_preferences (organization_id, workspace_id, update_time) VALUES (?, ?, ?)`,
			w.OrganizationID, w.ID, now); err != nil {
			return db.mapErr(err, "create workspace preferences")
		}
		var err error
		out, err = c.getWorkspace(ctx, w.OrganizationID, w.ID)
		return err
	})
	return out, err
}

// GetWorkspace implements store.Workspaces, through the workspace cache
// (see wsCache).
func (db *DB) GetWorkspace(ctx context.Context, org, id string) (store.Workspace, error) {
	k := wsKey{org, id}
	gen := db.authGen.Load()
	if w, ok := db.wsCache.get(k, gen); ok {
		return w, nil
	}
	at := time.Now()
	w, err := db.reader().getWorkspace(ctx, org, id)
	if err != nil {
		return w, err
	}
	db.wsCache.put(k, w, gen, at)
	return w, nil
}

// UpdateWorkspace implements store.Workspaces.
func (db *DB) UpdateWorkspace(ctx context.Context, w store.Workspace, mask []string) (store.Workspace, error) {
	defer db.authChanged(ctx) // the cached workspace (see wsCache)
	if len(mask) == 0 {
		mask = []string{"title", "icon", "icon_color"}
	}
	set := "update_time = ?"
	args := []any{db.now()}
	for _, p := range mask {
		switch p {
		case "title":
			set += ", title = ?, title_key = ?"
			args = append(args, w.Title, store.TitleSortKey(w.Title))
		case "icon", "workspace_icon":
			set += ", icon = ?"
			args = append(args, w.Icon)
		case "icon_color", "workspace_icon_color":
			set += ", icon_color = ?"
			args = append(args, w.IconColor)
		default:
			return store.Workspace{}, fmt.Errorf("%w: update_mask: unknown or read-only field %q", store.ErrInvalidArgument, p)
		}
	}
	args = append(args, w.OrganizationID, w.ID)
	var out store.Workspace
	err := db.tx(ctx, func(c conn) error {
		res, err := c.exec(ctx, `UPDATE workspaces SET `+set+` WHERE organization_id = ? AND id = ?`, args...)
		if err != nil {
			return db.mapErr(err, "update workspace")
		}
		if rowsAffected(res) == 0 {
			return fmt.Errorf("workspace %q in organization %q: %w", w.ID, w.OrganizationID, store.ErrNotFound)
		}
		out, err = c.getWorkspace(ctx, w.OrganizationID, w.ID)
		return err
	})
	return out, err
}

// DeleteWorkspace implements store.Workspaces.
func (db *DB) DeleteWorkspace(ctx context.Context, org, id string) error {
	defer db.authChanged(ctx)
	return db.tx(ctx, func(c conn) error {
		if _, err := c.exec(ctx, `DELETE FROM invitations WHERE organization_id = ? AND workspace_id = ?`, org, id); err != nil {
			return db.mapErr(err, "delete workspace invitations")
		}
		res, err := c.exec(ctx, `DELETE FROM workspaces WHERE organization_id = ? AND id = ?`, org, id)
		if err != nil {
			return db.mapErr(err, "delete workspace")
		}
		if rowsAffected(res) == 0 {
			return fmt.Errorf("workspace %q in organization %q: %w", id, org, store.ErrNotFound)
		}
		return c.dropRunAggregates(ctx, "organization_id = ? AND workspace_id = ?", org, id)
	})
}

var workspaceSort = map[string]sortCol{
	// Titles sort as a person reads them: ASCII letters without case, then
	// by id (title_key is store.TitleSortKey(title), indexed).
	"title":       {Field: "title", Col: "w.title_key", Kind: keyText},
	"create_time": {Field: "create_time", Col: "w.create_time", Kind: keyTime},
	"update_time": {Field: "update_time", Col: "w.update_time", Kind: keyTime},
}

func workspaceKeys(ks keyset) func(store.Workspace) []string {
	return func(w store.Workspace) []string {
		out := make([]string, len(ks.cols))
		for i, c := range ks.cols {
			switch c.Field {
			case "title":
				out[i] = store.TitleSortKey(w.Title)
			case "create_time":
				out[i] = timeKey(w.CreateTime)
			case "update_time":
				out[i] = timeKey(w.UpdateTime)
			case "id":
				out[i] = w.ID
			}
		}
		return out
	}
}

func (db *DB) workspaceList(req store.ListWorkspacesRequest) (*listQuery, keyset, error) {
	ks, err := newKeyset(req.OrderBy, store.WorkspaceOrdering.Default, workspaceSort, "w.id")
	if err != nil {
		return nil, ks, err
	}
	lq, err := newList(db.d, ks, workspaceFields, req.Filter, req.PageToken, req.PageSize, wsSelect,
		"workspaces", req.OrganizationID, "member="+req.MemberUserID)
	if err != nil {
		return nil, ks, err
	}
	lq.cond("w.organization_id = " + lq.a.Add(req.OrganizationID))
	if req.MemberUserID != "" {
		lq.cond(`EXISTS (SELECT 1 FROM workspace_members m WHERE m.organization_id = w.organization_id
			AND m.workspace_id = w.id AND m.user_id = ` + lq.a.Add(req.MemberUserID) + `)`)
	}
	return lq, ks, nil
}

// ListWorkspaces implements store.Workspaces.
func (db *DB) ListWorkspaces(ctx context.Context, req store.ListWorkspacesRequest) (store.Page[store.Workspace], error) {
	var zero store.Page[store.Workspace]
	lq, ks, err := db.workspaceList(req)
	if err != nil {
		return zero, err
	}
	return scanPage(ctx, db, lq, "list workspaces", scanWorkspace, workspaceKeys(ks))
}

// ListWorkspacesSQL returns the SQL and arguments ListWorkspaces runs for
// req, for EXPLAIN in tests and benchmarks.
func (db *DB) ListWorkspacesSQL(req store.ListWorkspacesRequest) (string, []any, error) {
	lq, _, err := db.workspaceList(req)
	if err != nil {
		return "", nil, err
	}
	q := lq.sql()
	return q, lq.a.Values, nil
}

// CountWorkspaceUsers implements store.Workspaces.
func (db *DB) CountWorkspaceUsers(ctx context.Context, org string, ids []string) (map[string]int, error) {
	out := map[string]int{}
	ids = slices.Compact(slices.Sorted(slices.Values(ids)))
	for chunk := range slices.Chunk(ids, 500) {
		args := append([]any{org}, anySlice(chunk)...)
		rows, err := db.reader().query(ctx, `SELECT w.id, count(m.user_id) FROM workspaces w
			LEFT JOIN workspace_members m ON m.organization_id = w.organization_id AND m.workspace_id = w.id
			WHERE w.organization_id = ? AND w.id IN (`+placeholders(len(chunk))+`) GROUP BY w.id`, args...)
		if err != nil {
			return nil, db.mapErr(err, "count workspace users")
		}
		err = func() error {
			defer rows.Close()
			for rows.Next() {
				var id string
				var n int
				if err := rows.Scan(&id, &n); err != nil {
					return err
				}
				out[id] = n
			}
			return rows.Err()
		}()
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}
