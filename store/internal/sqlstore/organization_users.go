package sqlstore

import (
	"context"
	"slices"

	"github.com/proserun/prose/store"
)

const orgUserSelect = `SELECT ` + userCols + `, m.create_time, m.update_time FROM organization_members m JOIN users u ON u.id = m.user_id`

// ListOrganizationUsers implements store.OrganizationUsers.
func (db *DB) ListOrganizationUsers(ctx context.Context, req store.ListOrganizationUsersRequest) (store.Page[store.WorkspaceUser], error) {
	var zero store.Page[store.WorkspaceUser]
	ks, err := newKeyset(req.OrderBy, store.WorkspaceUserOrdering.Default, workspaceUserSort, "m.user_id")
	if err != nil {
		return zero, err
	}
	lq, err := newList(db.d, ks, req.Filter, req.PageToken, req.PageSize, orgUserSelect, "organization_users", req.OrganizationID)
	if err != nil {
		return zero, err
	}
	lq.cond("m.organization_id = " + lq.a.Add(req.OrganizationID))
	c := db.reader()
	rows, err := c.queryArgs(ctx, lq.sql(), lq.a)
	if err != nil {
		return zero, db.mapErr(err, "list organization users")
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
	})
	if err := c.fillOrganizationRoles(ctx, req.OrganizationID, p.Items); err != nil {
		return zero, err
	}
	return p, nil
}

// fillOrganizationRoles loads the organization roles of users and the
// workspace roles they hold anywhere in the organization.
func (c conn) fillOrganizationRoles(ctx context.Context, org string, users []store.WorkspaceUser) error {
	if len(users) == 0 {
		return nil
	}
	idx := map[string]int{}
	ids := make([]any, len(users))
	for i, u := range users {
		idx[u.User.ID] = i
		users[i].Roles = []store.RoleBinding{}
		ids[i] = u.User.ID
	}
	in := placeholders(len(users))
	args := append(append(append([]any{org}, ids...), org), ids...)
	rows, err := c.query(ctx, `SELECT DISTINCT user_id, role_id, 'organization' AS scope FROM organization_role_bindings WHERE organization_id = ? AND user_id IN (`+in+`)
		UNION
		SELECT DISTINCT user_id, role_id, 'workspace' AS scope FROM workspace_role_bindings WHERE organization_id = ? AND user_id IN (`+in+`)`, args...)
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
			if a.RoleID < b.RoleID {
				return -1
			}
			if a.RoleID > b.RoleID {
				return 1
			}
			return 0
		})
	}
	return nil
}
