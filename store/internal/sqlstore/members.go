package sqlstore

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/proserun/prose/store"
)

// checkRoles verifies every role exists with the wanted scope.
func (c conn) checkRoles(ctx context.Context, org string, roleIDs []string, scope store.RoleScope) ([]string, error) {
	ids := slices.Compact(slices.Sorted(slices.Values(roleIDs)))
	for _, id := range ids {
		var got string
		err := c.queryRow(ctx, `SELECT scope FROM roles WHERE organization_id = ? AND id = ?`, org, id).Scan(&got)
		if err != nil {
			return nil, c.db.mapErr(err, fmt.Sprintf("role %q in organization %q", id, org))
		}
		if store.RoleScope(got) != scope {
			return nil, fmt.Errorf("role %q has scope %s, not %s: %w", id, got, scope, store.ErrFailedPrecondition)
		}
	}
	return ids, nil
}

func (c conn) orgMember(ctx context.Context, org, user string) (store.OrganizationMember, error) {
	m := store.OrganizationMember{OrganizationID: org}
	err := c.queryRow(ctx, `SELECT `+userCols+`, m.create_time, m.update_time FROM organization_members m JOIN users u ON u.id = m.user_id
		WHERE m.organization_id = ? AND m.user_id = ?`, org, user).Scan(
		&m.User.ID, &m.User.DisplayName, &m.User.Email, ts{&m.User.CreateTime}, ts{&m.User.UpdateTime}, ts{&m.CreateTime}, ts{&m.UpdateTime})
	if err != nil {
		return m, c.db.mapErr(err, fmt.Sprintf("member %q of organization %q", user, org))
	}
	rows, err := c.query(ctx, `SELECT role_id FROM organization_role_bindings WHERE organization_id = ? AND user_id = ? ORDER BY role_id`, org, user)
	if err != nil {
		return m, c.db.mapErr(err, "organization roles")
	}
	defer rows.Close()
	m.Roles = []string{}
	for rows.Next() {
		var r string
		if err := rows.Scan(&r); err != nil {
			return m, err
		}
		m.Roles = append(m.Roles, r)
	}
	return m, rows.Err()
}

func (c conn) bindOrgRoles(ctx context.Context, org, user string, ids []string) error {
	now := c.db.now()
	if _, err := c.exec(ctx, `DELETE FROM organization_role_bindings WHERE organization_id = ? AND user_id = ?`, org, user); err != nil {
		return c.db.mapErr(err, "unbind organization roles")
	}
	for _, id := range ids {
		if _, err := c.exec(ctx, `INSERT INTO organization_role_bindings (organization_id, user_id, role_id, create_time) VALUES (?, ?, ?, ?)`,
			org, user, id, now); err != nil {
			return c.db.mapErr(err, fmt.Sprintf("bind role %q", id))
		}
	}
	return nil
}

// AddOrganizationMember implements store.Members.
func (db *DB) AddOrganizationMember(ctx context.Context, org, user string, roleIDs []string) (store.OrganizationMember, error) {
	defer db.authChanged(ctx)
	var out store.OrganizationMember
	err := db.tx(ctx, func(c conn) error {
		if err := c.orgExists(ctx, org); err != nil {
			return err
		}
		if err := c.userExists(ctx, user); err != nil {
			return err
		}
		ids, err := c.checkRoles(ctx, org, roleIDs, store.ScopeOrganization)
		if err != nil {
			return err
		}
		now := db.now()
		if _, err := c.exec(ctx, `INSERT INTO organization_members (organization_id, user_id, create_time, update_time) VALUES (?, ?, ?, ?)`,
			org, user, now, now); err != nil {
			return db.mapErr(err, fmt.Sprintf("add member %q to organization %q", user, org))
		}
		if err := c.bindOrgRoles(ctx, org, user, ids); err != nil {
			return err
		}
		out, err = c.orgMember(ctx, org, user)
		return err
	})
	return out, err
}

// GetOrganizationMember implements store.Members.
func (db *DB) GetOrganizationMember(ctx context.Context, org, user string) (store.OrganizationMember, error) {
	return db.reader().orgMember(ctx, org, user)
}

// SetOrganizationRoles implements store.Members.
func (db *DB) SetOrganizationRoles(ctx context.Context, org, user string, roleIDs []string) (store.OrganizationMember, error) {
	defer db.authChanged(ctx)
	var out store.OrganizationMember
	err := db.tx(ctx, func(c conn) error {
		res, err := c.exec(ctx, `UPDATE organization_members SET update_time = ? WHERE organization_id = ? AND user_id = ?`, db.now(), org, user)
		if err != nil {
			return db.mapErr(err, "update member")
		}
		if rowsAffected(res) == 0 {
			return fmt.Errorf("member %q of organization %q: %w", user, org, store.ErrNotFound)
		}
		ids, err := c.checkRoles(ctx, org, roleIDs, store.ScopeOrganization)
		if err != nil {
			return err
		}
		if err := c.bindOrgRoles(ctx, org, user, ids); err != nil {
			return err
		}
		out, err = c.orgMember(ctx, org, user)
		return err
	})
	return out, err
}

// RemoveOrganizationMember implements store.Members.
func (db *DB) RemoveOrganizationMember(ctx context.Context, org, user string) error {
	defer db.authChanged(ctx)
	res, err := db.writer().exec(ctx, `DELETE FROM organization_members WHERE organization_id = ? AND user_id = ?`, org, user)
	if err != nil {
		return db.mapErr(err, "remove organization member")
	}
	if rowsAffected(res) == 0 {
		return fmt.Errorf("member %q of organization %q: %w", user, org, store.ErrNotFound)
	}
	return nil
}

// ---------------------------------------------------------------------------
// Workspace members

const wsUserSelect = `SELECT ` + userCols + `, m.create_time, m.update_time FROM workspace_members m JOIN users u ON u.id = m.user_id`

func scanWorkspaceUser(s interface{ Scan(...any) error }) (store.WorkspaceUser, error) {
	var w store.WorkspaceUser
	err := s.Scan(&w.User.ID, &w.User.DisplayName, &w.User.Email, ts{&w.User.CreateTime}, ts{&w.User.UpdateTime},
		ts{&w.CreateTime}, ts{&w.UpdateTime})
	return w, err
}

// fillRoles loads the role bindings of the users (organization roles first):
// their organization roles and their roles in workspace ws, or, with ws "",
// each workspace role they hold in any workspace of the organization.
func (c conn) fillRoles(ctx context.Context, org, ws string, users []store.WorkspaceUser) error {
	if len(users) == 0 {
		return nil
	}
	idx := map[string]int{}
	args := []any{org}
	for i, u := range users {
		idx[u.User.ID] = i
		users[i].Roles = []store.RoleBinding{}
		args = append(args, u.User.ID)
	}
	in := placeholders(len(users))
	ids := args[1:]
	wsCond := ""
	args = append(args, org)
	if ws != "" {
		wsCond = " AND workspace_id = ?"
		args = append(args, ws)
	}
	args = append(args, ids...)
	rows, err := c.query(ctx, `SELECT user_id, role_id, 'organization' AS scope FROM organization_role_bindings WHERE organization_id = ? AND user_id IN (`+in+`)
		UNION ALL
		SELECT DISTINCT user_id, role_id, 'workspace' AS scope FROM workspace_role_bindings WHERE organization_id = ?`+wsCond+` AND user_id IN (`+in+`)`, args...)
	if err != nil {
		return c.db.mapErr(err, "load roles")
	}
	defer rows.Close()
	for rows.Next() {
		var user, role, scope string
		if err := rows.Scan(&user, &role, &scope); err != nil {
			return err
		}
		if i, ok := idx[user]; ok {
			users[i].Roles = append(users[i].Roles, store.RoleBinding{RoleID: role, Scope: store.RoleScope(scope)})
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	for i := range users {
		slices.SortFunc(users[i].Roles, func(a, b store.RoleBinding) int {
			if a.Scope != b.Scope {
				if a.Scope == store.ScopeOrganization {
					return -1
				}
				return 1
			}
			return strings.Compare(a.RoleID, b.RoleID)
		})
	}
	return nil
}

func (c conn) workspaceUser(ctx context.Context, org, ws, user string) (store.WorkspaceUser, error) {
	w, err := scanWorkspaceUser(c.queryRow(ctx, wsUserSelect+` WHERE m.organization_id = ? AND m.workspace_id = ? AND m.user_id = ?`, org, ws, user))
	if err != nil {
		return w, c.db.mapErr(err, fmt.Sprintf("member %q of workspace %q", user, ws))
	}
	us := []store.WorkspaceUser{w}
	if err := c.fillRoles(ctx, org, ws, us); err != nil {
		return w, err
	}
	return us[0], nil
}

func (c conn) bindWorkspaceRoles(ctx context.Context, org, ws, user string, ids []string) error {
	now := c.db.now()
	if _, err := c.exec(ctx, `DELETE FROM workspace_role_bindings WHERE organization_id = ? AND workspace_id = ? AND user_id = ?`, org, ws, user); err != nil {
		return c.db.mapErr(err, "unbind workspace roles")
	}
	for _, id := range ids {
		if _, err := c.exec(ctx, `INSERT INTO workspace_role_bindings (organization_id, workspace_id, user_id, role_id, create_time) VALUES (?, ?, ?, ?, ?)`,
			org, ws, user, id, now); err != nil {
			return c.db.mapErr(err, fmt.Sprintf("bind role %q", id))
		}
	}
	return nil
}

// AddWorkspaceMember implements store.Members.
func (db *DB) AddWorkspaceMember(ctx context.Context, org, ws, user string, roleIDs []string) (store.WorkspaceUser, error) {
	defer db.authChanged(ctx)
	var out store.WorkspaceUser
	err := db.tx(ctx, func(c conn) error {
		if err := c.workspaceExists(ctx, org, ws); err != nil {
			return err
		}
		if err := c.userExists(ctx, user); err != nil {
			return err
		}
		member, err := c.exists(ctx, `SELECT 1 FROM organization_members WHERE organization_id = ? AND user_id = ?`, org, user)
		if err != nil {
			return db.mapErr(err, "organization membership")
		}
		if !member {
			return fmt.Errorf("user %q is not a member of organization %q: %w", user, org, store.ErrFailedPrecondition)
		}
		ids, err := c.checkRoles(ctx, org, roleIDs, store.ScopeWorkspace)
		if err != nil {
			return err
		}
		now := db.now()
		if _, err := c.exec(ctx, `INSERT INTO workspace_members (organization_id, workspace_id, user_id, create_time, update_time) VALUES (?, ?, ?, ?, ?)`,
			org, ws, user, now, now); err != nil {
			return db.mapErr(err, fmt.Sprintf("add member %q to workspace %q", user, ws))
		}
		if err := c.bindWorkspaceRoles(ctx, org, ws, user, ids); err != nil {
			return err
		}
		out, err = c.workspaceUser(ctx, org, ws, user)
		return err
	})
	return out, err
}

// GetWorkspaceUser implements store.Members.
func (db *DB) GetWorkspaceUser(ctx context.Context, org, ws, user string) (store.WorkspaceUser, error) {
	return db.reader().workspaceUser(ctx, org, ws, user)
}

// SetWorkspaceRoles implements store.Members.
func (db *DB) SetWorkspaceRoles(ctx context.Context, org, ws, user string, roleIDs []string) (store.WorkspaceUser, error) {
	defer db.authChanged(ctx)
	var out store.WorkspaceUser
	err := db.tx(ctx, func(c conn) error {
		res, err := c.exec(ctx, `UPDATE workspace_members SET update_time = ? WHERE organization_id = ? AND workspace_id = ? AND user_id = ?`,
			db.now(), org, ws, user)
		if err != nil {
			return db.mapErr(err, "update workspace member")
		}
		if rowsAffected(res) == 0 {
			return fmt.Errorf("member %q of workspace %q: %w", user, ws, store.ErrNotFound)
		}
		ids, err := c.checkRoles(ctx, org, roleIDs, store.ScopeWorkspace)
		if err != nil {
			return err
		}
		if err := c.bindWorkspaceRoles(ctx, org, ws, user, ids); err != nil {
			return err
		}
		out, err = c.workspaceUser(ctx, org, ws, user)
		return err
	})
	return out, err
}

// RemoveWorkspaceMember implements store.Members.
func (db *DB) RemoveWorkspaceMember(ctx context.Context, org, ws, user string) error {
	defer db.authChanged(ctx)
	res, err := db.writer().exec(ctx, `DELETE FROM workspace_members WHERE organization_id = ? AND workspace_id = ? AND user_id = ?`, org, ws, user)
	if err != nil {
		return db.mapErr(err, "remove workspace member")
	}
	if rowsAffected(res) == 0 {
		return fmt.Errorf("member %q of workspace %q: %w", user, ws, store.ErrNotFound)
	}
	return nil
}

var workspaceUserSort = map[string]sortCol{
	"display_name": {Field: "display_name", Col: "u.display_name", Kind: keyText},
	"email":        {Field: "email", Col: "u.email", Kind: keyText},
	"created_time": {Field: "created_time", Col: "m.create_time", Kind: keyTime},
	"updated_time": {Field: "updated_time", Col: "m.update_time", Kind: keyTime},
}

// ListWorkspaceUsers implements store.Members.
func (db *DB) ListWorkspaceUsers(ctx context.Context, req store.ListWorkspaceUsersRequest) (store.Page[store.WorkspaceUser], error) {
	return db.listMembers(ctx, req.OrganizationID, req.WorkspaceID, req.Filter, req.OrderBy, req.PageSize, req.PageToken)
}

// listMembers pages through the members of a workspace or, with ws "", of
// the organization (aliases m and u), with their roles (see fillRoles).
func (db *DB) listMembers(ctx context.Context, org, ws string, f store.Filter, ob store.OrderBy, size int, token string) (store.Page[store.WorkspaceUser], error) {
	var zero store.Page[store.WorkspaceUser]
	ks, err := newKeyset(ob, store.WorkspaceUserOrdering.Default, workspaceUserSort, "m.user_id")
	if err != nil {
		return zero, err
	}
	selects, fs, parts := wsUserSelect, workspaceUserFields, []string{"workspace_users", org, ws}
	if ws == "" {
		selects, fs, parts = orgUserSelect, organizationUserFields, []string{"organization_users", org}
	}
	lq, err := newList(db.d, ks, fs, f, token, size, selects, parts...)
	if err != nil {
		return zero, err
	}
	lq.cond("m.organization_id = " + lq.a.Add(org))
	if ws != "" {
		lq.cond("m.workspace_id = " + lq.a.Add(ws))
	}
	c := db.reader()
	rows, err := c.queryArgs(ctx, lq.sql(), lq.a)
	if err != nil {
		return zero, db.mapErr(err, "list members")
	}
	items, err := func() ([]store.WorkspaceUser, error) {
		defer rows.Close()
		var items []store.WorkspaceUser
		for rows.Next() {
			w, err := scanWorkspaceUser(rows)
			if err != nil {
				return nil, err
			}
			items = append(items, w)
		}
		return items, rows.Err()
	}()
	if err != nil {
		return zero, err
	}
	p := page(lq, items, func(w store.WorkspaceUser) []string {
		out := make([]string, len(ks.cols))
		for i, col := range ks.cols {
			switch col.Field {
			case "display_name":
				out[i] = w.User.DisplayName
			case "email":
				out[i] = w.User.Email
			case "created_time":
				out[i] = timeKey(w.CreateTime)
			case "updated_time":
				out[i] = timeKey(w.UpdateTime)
			case "id":
				out[i] = w.User.ID
			}
		}
		return out
	}, int(c.db.pageBytes.Load()))
	if err := c.fillRoles(ctx, org, ws, p.Items); err != nil {
		return zero, err
	}
	return p, nil
}

// EffectivePermissions implements store.Members.
func (db *DB) EffectivePermissions(ctx context.Context, org, ws, user string) ([]string, error) {
	rows, err := db.reader().query(ctx, `SELECT r.permissions FROM organization_role_bindings b
		JOIN roles r ON r.organization_id = b.organization_id AND r.id = b.role_id
		WHERE b.organization_id = ? AND b.user_id = ?
		UNION ALL
		SELECT r.permissions FROM workspace_role_bindings b
		JOIN roles r ON r.organization_id = b.organization_id AND r.id = b.role_id
		WHERE b.organization_id = ? AND b.workspace_id = ? AND b.user_id = ?`, org, user, org, ws, user)
	if err != nil {
		return nil, db.mapErr(err, "effective permissions")
	}
	defer rows.Close()
	set := map[string]bool{}
	for rows.Next() {
		var perms []string
		if err := rows.Scan(jsonCol{&perms}); err != nil {
			return nil, err
		}
		for _, p := range perms {
			set[p] = true
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	out := make([]string, 0, len(set))
	for p := range set {
		out = append(out, p)
	}
	slices.Sort(out)
	return out, nil
}
