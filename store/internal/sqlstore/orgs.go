package sqlstore

import (
	"context"
	"fmt"

	"github.com/proserun/prose/store"
)

const orgCols = "o.id, o.display_name, o.create_time, o.update_time"

func scanOrg(s interface{ Scan(...any) error }) (store.Organization, error) {
	var o store.Organization
	err := s.Scan(&o.ID, &o.DisplayName, ts{&o.CreateTime}, ts{&o.UpdateTime})
	return o, err
}

// CreateOrganization implements store.Organizations.
func (db *DB) CreateOrganization(ctx context.Context, o store.Organization) (store.Organization, error) {
	if o.ID == "" {
		o.ID = store.NewID()
	}
	now := db.now()
	o.CreateTime, o.UpdateTime = now, now
	err := db.tx(ctx, func(c conn) error {
		if _, err := c.exec(ctx, `INSERT INTO organizations (id, display_name, create_time, update_time) VALUES (?, ?, ?, ?)`,
			o.ID, o.DisplayName, now, now); err != nil {
			return db.mapErr(err, fmt.Sprintf("create organization %q", o.ID))
		}
		for _, r := range store.BuiltinRoles {
			if _, err := c.exec(ctx, `INSERT INTO roles (organization_id, id, scope, title, description, permissions, builtin, create_time, update_time)
				VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
				o.ID, r.ID, string(r.Scope), r.Title, r.Description, jsonArg(r.Permissions), true, now, now); err != nil {
				return db.mapErr(err, fmt.Sprintf("seed role %q", r.ID))
			}
		}
		return nil
	})
	if err != nil {
		return store.Organization{}, err
	}
	return o, nil
}

// GetOrganization implements store.Organizations.
func (db *DB) GetOrganization(ctx context.Context, id string) (store.Organization, error) {
	o, err := scanOrg(db.reader().queryRow(ctx, `SELECT `+orgCols+` FROM organizations o WHERE o.id = ?`, id))
	return o, db.mapErr(err, fmt.Sprintf("organization %q", id))
}

// UpdateOrganization implements store.Organizations.
func (db *DB) UpdateOrganization(ctx context.Context, o store.Organization) (store.Organization, error) {
	out, err := scanOrg(db.writer().queryRow(ctx, `UPDATE organizations SET display_name = ?, update_time = ? WHERE id = ?
		RETURNING id, display_name, create_time, update_time`, o.DisplayName, db.now(), o.ID))
	return out, db.mapErr(err, fmt.Sprintf("update organization %q", o.ID))
}

// DeleteOrganization implements store.Organizations.
func (db *DB) DeleteOrganization(ctx context.Context, id string) error {
	defer db.authChanged(ctx)
	return db.tx(ctx, func(c conn) error {
		res, err := c.exec(ctx, `DELETE FROM organizations WHERE id = ?`, id)
		if err != nil {
			return db.mapErr(err, fmt.Sprintf("delete organization %q", id))
		}
		if rowsAffected(res) == 0 {
			return fmt.Errorf("organization %q: %w", id, store.ErrNotFound)
		}
		return c.dropRunAggregates(ctx, "organization_id = ?", id)
	})
}

var orgSort = map[string]sortCol{}

// ListUserOrganizations implements store.Organizations.
func (db *DB) ListUserOrganizations(ctx context.Context, userID string, pageSize int, pageToken string) (store.Page[store.Organization], error) {
	ks, _ := newKeyset(nil, nil, orgSort, "o.id")
	lq, err := newList(db.d, ks, nil, nil, pageToken, pageSize,
		`SELECT `+orgCols+` FROM organizations o JOIN organization_members m ON m.organization_id = o.id`,
		"user_organizations", userID)
	if err != nil {
		return store.Page[store.Organization]{}, err
	}
	lq.cond("m.user_id = " + lq.a.Add(userID))
	return scanPage(ctx, db, lq, "list organizations", scanOrg, func(o store.Organization) []string { return []string{o.ID} })
}

var orgAgeSort = map[string]sortCol{"create_time": {Field: "create_time", Col: "o.create_time", Kind: keyTime}}

// ListOrganizations implements store.Organizations.
func (db *DB) ListOrganizations(ctx context.Context, pageSize int, pageToken string) (store.Page[store.Organization], error) {
	ks, _ := newKeyset(nil, store.OrderBy{{Field: "create_time"}}, orgAgeSort, "o.id")
	lq, err := newList(db.d, ks, nil, nil, pageToken, pageSize, `SELECT `+orgCols+` FROM organizations o`, "organizations")
	if err != nil {
		return store.Page[store.Organization]{}, err
	}
	return scanPage(ctx, db, lq, "list organizations", scanOrg, func(o store.Organization) []string { return []string{timeKey(o.CreateTime), o.ID} })
}

// ---------------------------------------------------------------------------
// Users

const userCols = "u.id, u.display_name, u.email, u.create_time, u.update_time"

func scanUser(s interface{ Scan(...any) error }) (store.User, error) {
	var u store.User
	err := s.Scan(&u.ID, &u.DisplayName, &u.Email, ts{&u.CreateTime}, ts{&u.UpdateTime})
	return u, err
}

// CreateUser implements store.Users.
func (db *DB) CreateUser(ctx context.Context, u store.User) (store.User, error) {
	if u.ID == "" {
		u.ID = store.NewID()
	}
	now := db.now()
	u.CreateTime, u.UpdateTime = now, now
	_, err := db.writer().exec(ctx, `INSERT INTO users (id, display_name, email, create_time, update_time) VALUES (?, ?, ?, ?, ?)`,
		u.ID, u.DisplayName, u.Email, now, now)
	if err != nil {
		return store.User{}, db.mapErr(err, fmt.Sprintf("create user %q (%s)", u.ID, u.Email))
	}
	return u, nil
}

// GetUser implements store.Users.
func (db *DB) GetUser(ctx context.Context, id string) (store.User, error) {
	u, err := scanUser(db.reader().queryRow(ctx, `SELECT `+userCols+` FROM users u WHERE u.id = ?`, id))
	return u, db.mapErr(err, fmt.Sprintf("user %q", id))
}

// GetUserByEmail implements store.Users.
func (db *DB) GetUserByEmail(ctx context.Context, email string) (store.User, error) {
	u, err := scanUser(db.reader().queryRow(ctx, `SELECT `+userCols+` FROM users u WHERE lower(u.email) = lower(?)`, email))
	return u, db.mapErr(err, fmt.Sprintf("user with email %q", email))
}

// UpdateUser implements store.Users.
func (db *DB) UpdateUser(ctx context.Context, u store.User) (store.User, error) {
	defer db.authChanged(ctx) // the creator's name and email of cached workspaces (see wsCache)
	out, err := scanUser(db.writer().queryRow(ctx, `UPDATE users SET display_name = ?, email = ?, update_time = ? WHERE id = ?
		RETURNING id, display_name, email, create_time, update_time`, u.DisplayName, u.Email, db.now(), u.ID))
	return out, db.mapErr(err, fmt.Sprintf("update user %q", u.ID))
}

// DeleteUser implements store.Users.
func (db *DB) DeleteUser(ctx context.Context, id string) error {
	defer db.authChanged(ctx)
	res, err := db.writer().exec(ctx, `DELETE FROM users WHERE id = ?`, id)
	if err != nil {
		return db.mapErr(err, fmt.Sprintf("delete user %q", id))
	}
	if rowsAffected(res) == 0 {
		return fmt.Errorf("user %q: %w", id, store.ErrNotFound)
	}
	return nil
}
