package sqlstore

import (
	"context"
	"fmt"

	"github.com/proserun/prose/store"
)

const roleCols = "organization_id, id, scope, title, description, permissions, builtin, create_time, update_time"

func scanRole(s interface{ Scan(...any) error }) (store.Role, error) {
	var r store.Role
	var scope string
	err := s.Scan(&r.OrganizationID, &r.ID, &scope, &r.Title, &r.Description, jsonCol{&r.Permissions}, &r.Builtin,
		ts{&r.CreateTime}, ts{&r.UpdateTime})
	r.Scope = store.RoleScope(scope)
	if r.Permissions == nil {
		r.Permissions = []string{}
	}
	return r, err
}

// CreateRole implements store.Roles.
func (db *DB) CreateRole(ctx context.Context, r store.Role) (store.Role, error) {
	if !r.Scope.Valid() {
		return store.Role{}, fmt.Errorf("%w: role scope %q is not organization or workspace", store.ErrInvalidArgument, r.Scope)
	}
	if r.ID == "" {
		r.ID = store.NewID()
	}
	if r.Permissions == nil {
		r.Permissions = []string{}
	}
	now := db.now()
	r.CreateTime, r.UpdateTime, r.Builtin = now, now, false
	err := db.tx(ctx, func(c conn) error {
		if err := c.orgExists(ctx, r.OrganizationID); err != nil {
			return err
		}
		_, err := c.exec(ctx, `INSERT INTO roles (`+roleCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			r.OrganizationID, r.ID, string(r.Scope), r.Title, r.Description, jsonArg(r.Permissions), false, now, now)
		return db.mapErr(err, fmt.Sprintf("create role %q", r.ID))
	})
	if err != nil {
		return store.Role{}, err
	}
	return r, nil
}

// GetRole implements store.Roles.
func (db *DB) GetRole(ctx context.Context, org, id string) (store.Role, error) {
	r, err := scanRole(db.reader().queryRow(ctx, `SELECT `+roleCols+` FROM roles WHERE organization_id = ? AND id = ?`, org, id))
	return r, db.mapErr(err, fmt.Sprintf("role %q in organization %q", id, org))
}

// UpdateRole implements store.Roles.
func (db *DB) UpdateRole(ctx context.Context, r store.Role) (store.Role, error) {
	defer db.authChanged(ctx)
	if r.Permissions == nil {
		r.Permissions = []string{}
	}
	var out store.Role
	err := db.tx(ctx, func(c conn) error {
		cur, err := scanRole(c.queryRow(ctx, `SELECT `+roleCols+` FROM roles WHERE organization_id = ? AND id = ?`, r.OrganizationID, r.ID))
		if err != nil {
			return db.mapErr(err, fmt.Sprintf("role %q in organization %q", r.ID, r.OrganizationID))
		}
		if cur.Builtin {
			return fmt.Errorf("role %q is built in and cannot be changed: %w", r.ID, store.ErrFailedPrecondition)
		}
		out, err = scanRole(c.queryRow(ctx, `UPDATE roles SET title = ?, description = ?, permissions = ?, update_time = ?
			WHERE organization_id = ? AND id = ? RETURNING `+roleCols,
			r.Title, r.Description, jsonArg(r.Permissions), db.now(), r.OrganizationID, r.ID))
		return db.mapErr(err, "update role")
	})
	return out, err
}

// DeleteRole implements store.Roles.
func (db *DB) DeleteRole(ctx context.Context, org, id string) error {
	defer db.authChanged(ctx)
	return db.tx(ctx, func(c conn) error {
		var builtin bool
		if err := c.queryRow(ctx, `SELECT builtin FROM roles WHERE organization_id = ? AND id = ?`, org, id).Scan(&builtin); err != nil {
			return db.mapErr(err, fmt.Sprintf("role %q in organization %q", id, org))
		}
		if builtin {
			return fmt.Errorf("role %q is built in and cannot be deleted: %w", id, store.ErrFailedPrecondition)
		}
		bound, err := c.exists(ctx, `SELECT 1 FROM organization_role_bindings WHERE organization_id = ? AND role_id = ?
			UNION ALL SELECT 1 FROM workspace_role_bindings WHERE organization_id = ? AND role_id = ?`, org, id, org, id)
		if err != nil {
			return db.mapErr(err, "role bindings")
		}
		if bound {
			return fmt.Errorf("role %q is still bound to members: %w", id, store.ErrFailedPrecondition)
		}
		_, err = c.exec(ctx, `DELETE FROM roles WHERE organization_id = ? AND id = ?`, org, id)
		return db.mapErr(err, "delete role")
	})
}

// ListRoles implements store.Roles.
func (db *DB) ListRoles(ctx context.Context, org string, scope store.RoleScope, pageSize int, pageToken string) (store.Page[store.Role], error) {
	var zero store.Page[store.Role]
	if scope != "" && !scope.Valid() {
		return zero, fmt.Errorf("%w: role scope %q is not organization or workspace", store.ErrInvalidArgument, scope)
	}
	ks, _ := newKeyset(nil, nil, nil, "id")
	lq, err := newList(db.d, ks, nil, nil, pageToken, pageSize, `SELECT `+roleCols+` FROM roles`, "roles", org, string(scope))
	if err != nil {
		return zero, err
	}
	lq.cond("organization_id = " + lq.a.Add(org))
	if scope != "" {
		lq.cond("scope = " + lq.a.Add(string(scope)))
	}
	return scanPage(ctx, db, lq, "list roles", scanRole, func(r store.Role) []string { return []string{r.ID} })
}
