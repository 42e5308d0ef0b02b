package sqlstore

import (
	"context"
	"fmt"

	"github.com/proserun/prose/store"
)

const invCols = "organization_id, id, workspace_id, email, role_ids, coalesce(inviter_id, ''), create_time, expire_time"

func scanInvitation(s interface{ Scan(...any) error }) (store.Invitation, error) {
	var i store.Invitation
	err := s.Scan(&i.OrganizationID, &i.ID, &i.WorkspaceID, &i.Email, jsonCol{&i.RoleIDs}, &i.InviterID, ts{&i.CreateTime}, ts{&i.ExpireTime})
	if i.RoleIDs == nil {
		i.RoleIDs = []string{}
	}
	return i, err
}

// CreateInvitation implements store.Invitations.
func (db *DB) CreateInvitation(ctx context.Context, inv store.Invitation) (store.Invitation, error) {
	if inv.ID == "" {
		inv.ID = store.NewID()
	}
	if inv.RoleIDs == nil {
		inv.RoleIDs = []string{}
	}
	inv.CreateTime = db.now()
	inv.ExpireTime = store.Time(inv.ExpireTime)
	err := db.tx(ctx, func(c conn) error {
		if err := c.orgExists(ctx, inv.OrganizationID); err != nil {
			return err
		}
		if inv.WorkspaceID != "" {
			if err := c.workspaceExists(ctx, inv.OrganizationID, inv.WorkspaceID); err != nil {
				return err
			}
		}
		var inviter any
		if inv.InviterID != "" {
			inviter = inv.InviterID
		}
		_, err := c.exec(ctx, `INSERT INTO invitations (organization_id, id, workspace_id, email, role_ids, inviter_id, create_time, expire_time)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, inv.OrganizationID, inv.ID, inv.WorkspaceID, inv.Email, jsonArg(inv.RoleIDs), inviter,
			inv.CreateTime, nullTime(inv.ExpireTime))
		return db.mapErr(err, fmt.Sprintf("create invitation for %q", inv.Email))
	})
	if err != nil {
		return store.Invitation{}, err
	}
	return inv, nil
}

// GetInvitation implements store.Invitations.
func (db *DB) GetInvitation(ctx context.Context, org, id string) (store.Invitation, error) {
	i, err := scanInvitation(db.reader().queryRow(ctx, `SELECT `+invCols+` FROM invitations WHERE organization_id = ? AND id = ?`, org, id))
	return i, db.mapErr(err, fmt.Sprintf("invitation %q in organization %q", id, org))
}

// DeleteInvitation implements store.Invitations.
func (db *DB) DeleteInvitation(ctx context.Context, org, id string) error {
	res, err := db.writer().exec(ctx, `DELETE FROM invitations WHERE organization_id = ? AND id = ?`, org, id)
	if err != nil {
		return db.mapErr(err, "delete invitation")
	}
	if rowsAffected(res) == 0 {
		return fmt.Errorf("invitation %q in organization %q: %w", id, org, store.ErrNotFound)
	}
	return nil
}

var invitationSort = map[string]sortCol{"create_time": {Field: "create_time", Col: "create_time", Kind: keyTime}}

// ListInvitations implements store.Invitations.
func (db *DB) ListInvitations(ctx context.Context, org, ws string, pageSize int, pageToken string) (store.Page[store.Invitation], error) {
	var zero store.Page[store.Invitation]
	ks, _ := newKeyset(nil, store.OrderBy{{Field: "create_time", Desc: true}}, invitationSort, "id")
	lq, err := newList(db.d, ks, nil, nil, pageToken, pageSize, `SELECT `+invCols+` FROM invitations`, "invitations", org, ws)
	if err != nil {
		return zero, err
	}
	lq.cond("organization_id = " + lq.a.Add(org))
	lq.cond("workspace_id = " + lq.a.Add(ws))
	return scanPage(ctx, db, lq, "list invitations", scanInvitation, func(i store.Invitation) []string { return []string{timeKey(i.CreateTime), i.ID} })
}

// ListOrganizationInvitations implements store.Invitations.
func (db *DB) ListOrganizationInvitations(ctx context.Context, org string, pageSize int, pageToken string) (store.Page[store.Invitation], error) {
	var zero store.Page[store.Invitation]
	ks, _ := newKeyset(nil, store.OrderBy{{Field: "create_time", Desc: true}}, invitationSort, "id")
	lq, err := newList(db.d, ks, nil, nil, pageToken, pageSize, `SELECT `+invCols+` FROM invitations`, "organization invitations", org)
	if err != nil {
		return zero, err
	}
	lq.cond("organization_id = " + lq.a.Add(org))
	return scanPage(ctx, db, lq, "list organization invitations", scanInvitation, func(i store.Invitation) []string { return []string{timeKey(i.CreateTime), i.ID} })
}

// ---------------------------------------------------------------------------
// Preferences

const prefCols = `organization_id, workspace_id, support_team_access, time_zone, time_format, date_format, decimal_symbol,
	decimal_places, measurement_system, update_time`

func scanPrefs(s interface{ Scan(...any) error }) (store.WorkspacePreferences, error) {
	var p store.WorkspacePreferences
	err := s.Scan(&p.OrganizationID, &p.WorkspaceID, &p.SupportTeamAccess, &p.TimeZone, &p.TimeFormat, &p.DateFormat,
		&p.DecimalSymbol, &p.DecimalPlaces, &p.MeasurementSystem, ts{&p.UpdateTime})
	return p, err
}

// GetWorkspacePreferences implements store.Preferences.
func (db *DB) GetWorkspacePreferences(ctx context.Context, org, ws string) (store.WorkspacePreferences, error) {
	p, err := scanPrefs(db.reader().queryRow(ctx, `SELECT `+prefCols+` FROM workspace_preferences WHERE organization_id = ? AND workspace_id = ?`, org, ws))
	return p, db.mapErr(err, fmt.Sprintf("preferences of workspace %q in organization %q", ws, org))
}

// UpdateWorkspacePreferences implements store.Preferences.
func (db *DB) UpdateWorkspacePreferences(ctx context.Context, p store.WorkspacePreferences, mask []string) (store.WorkspacePreferences, error) {
	all := []string{"support_team_access", "time_zone", "time_format", "date_format", "decimal_symbol", "decimal_places", "measurement_system"}
	if len(mask) == 0 {
		mask = all
	}
	set := "update_time = ?"
	args := []any{db.now()}
	seen := map[string]bool{}
	add := func(col string, v any) {
		if !seen[col] {
			seen[col] = true
			set += ", " + col + " = ?"
			args = append(args, v)
		}
	}
	for _, path := range mask {
		switch path {
		case "general", "general.*":
			add("time_zone", p.TimeZone)
			add("time_format", p.TimeFormat)
			add("date_format", p.DateFormat)
			add("decimal_symbol", p.DecimalSymbol)
			add("decimal_places", p.DecimalPlaces)
			add("measurement_system", p.MeasurementSystem)
		case "support_team_access":
			add("support_team_access", p.SupportTeamAccess)
		case "time_zone", "general.time_zone":
			add("time_zone", p.TimeZone)
		case "time_format", "general.time_format":
			add("time_format", p.TimeFormat)
		case "date_format", "general.date_format":
			add("date_format", p.DateFormat)
		case "decimal_symbol", "general.decimal_symbol":
			add("decimal_symbol", p.DecimalSymbol)
		case "decimal_places", "general.decimal_places":
			add("decimal_places", p.DecimalPlaces)
		case "measurement_system", "general.measurement_system":
			add("measurement_system", p.MeasurementSystem)
		default:
			return store.WorkspacePreferences{}, fmt.Errorf("%w: update_mask: unknown field %q", store.ErrInvalidArgument, path)
		}
	}
	args = append(args, p.OrganizationID, p.WorkspaceID)
	out, err := scanPrefs(db.writer().queryRow(ctx, `UPDATE workspace_preferences SET `+set+`
		WHERE organization_id = ? AND workspace_id = ? RETURNING `+prefCols, args...))
	return out, db.mapErr(err, fmt.Sprintf("preferences of workspace %q in organization %q", p.WorkspaceID, p.OrganizationID))
}
