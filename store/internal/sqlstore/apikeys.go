package sqlstore

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/proserun/prose/store"
)

const keyCols = `id, organization_id, user_id, name, prefix, secret_hash, all_workspaces, workspace_ids, permission_level,
	permissions, create_time, update_time, expire_time, last_used_time`

func scanKey(s interface{ Scan(...any) error }) (store.APIKey, error) {
	var k store.APIKey
	var level string
	err := s.Scan(&k.ID, &k.OrganizationID, &k.UserID, &k.Name, &k.Prefix, &k.SecretHash, &k.AllWorkspaces,
		jsonCol{&k.WorkspaceIDs}, &level, jsonCol{&k.Permissions}, ts{&k.CreateTime}, ts{&k.UpdateTime},
		ts{&k.ExpireTime}, ts{&k.LastUsedTime})
	k.PermissionLevel = store.PermissionLevel(level)
	if k.WorkspaceIDs == nil {
		k.WorkspaceIDs = []string{}
	}
	if k.Permissions == nil {
		k.Permissions = map[string]bool{}
	}
	return k, err
}

func normalizeKey(k *store.APIKey) error {
	if !k.PermissionLevel.Valid() {
		return fmt.Errorf("%w: permission level %q is not all, read_only or restricted", store.ErrInvalidArgument, k.PermissionLevel)
	}
	if k.WorkspaceIDs == nil || k.AllWorkspaces {
		k.WorkspaceIDs = []string{}
	}
	k.WorkspaceIDs = slices.Compact(slices.Sorted(slices.Values(k.WorkspaceIDs)))
	if k.Permissions == nil {
		k.Permissions = map[string]bool{}
	}
	return nil
}

// CreateAPIKey implements store.APIKeys.
func (db *DB) CreateAPIKey(ctx context.Context, k store.APIKey, limit int) (store.APIKey, error) {
	if err := normalizeKey(&k); err != nil {
		return store.APIKey{}, err
	}
	if k.Prefix == "" {
		return store.APIKey{}, fmt.Errorf("%w: API key prefix is empty", store.ErrInvalidArgument)
	}
	if k.ID == "" {
		k.ID = store.NewID()
	}
	now := db.now()
	k.CreateTime, k.UpdateTime, k.LastUsedTime = now, now, time.Time{}
	k.ExpireTime = store.Time(k.ExpireTime)
	err := db.tx(ctx, func(c conn) error {
		if err := c.orgExists(ctx, k.OrganizationID); err != nil {
			return err
		}
		member, err := c.exists(ctx, `SELECT 1 FROM organization_members WHERE organization_id = ? AND user_id = ?`, k.OrganizationID, k.UserID)
		if err != nil {
			return db.mapErr(err, "organization membership")
		}
		if !member {
			return fmt.Errorf("user %q is not a member of organization %q: %w", k.UserID, k.OrganizationID, store.ErrFailedPrecondition)
		}
		if limit > 0 {
			n, err := c.countKeys(ctx, k.OrganizationID, now)
			if err != nil {
				return err
			}
			if n >= limit {
				return fmt.Errorf("organization %q has %d API keys, the limit is %d: %w", k.OrganizationID, n, limit, store.ErrResourceExhausted)
			}
		}
		_, err = c.exec(ctx, `INSERT INTO api_keys (`+keyCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			k.ID, k.OrganizationID, k.UserID, k.Name, k.Prefix, k.SecretHash, k.AllWorkspaces, jsonArg(k.WorkspaceIDs),
			string(k.PermissionLevel), jsonArg(k.Permissions), now, now, nullTime(k.ExpireTime), nil)
		return db.mapErr(err, fmt.Sprintf("create API key %q", k.ID))
	})
	if err != nil {
		return store.APIKey{}, err
	}
	return k, nil
}

func (c conn) countKeys(ctx context.Context, org string, now time.Time) (int, error) {
	var n int
	err := c.queryRow(ctx, `SELECT count(*) FROM api_keys WHERE organization_id = ? AND (expire_time IS NULL OR expire_time > ?)`, org, now).Scan(&n)
	return n, c.db.mapErr(err, "count API keys")
}

// GetAPIKey implements store.APIKeys.
func (db *DB) GetAPIKey(ctx context.Context, org, id string) (store.APIKey, error) {
	k, err := scanKey(db.reader().queryRow(ctx, `SELECT `+keyCols+` FROM api_keys WHERE organization_id = ? AND id = ?`, org, id))
	return k, db.mapErr(err, fmt.Sprintf("API key %q in organization %q", id, org))
}

// GetAPIKeyByPrefix implements store.APIKeys.
func (db *DB) GetAPIKeyByPrefix(ctx context.Context, prefix string) (store.APIKey, error) {
	k, err := scanKey(db.reader().queryRow(ctx, `SELECT `+keyCols+` FROM api_keys WHERE prefix = ?`, prefix))
	return k, db.mapErr(err, "API key with that prefix")
}

// UpdateAPIKey implements store.APIKeys.
func (db *DB) UpdateAPIKey(ctx context.Context, k store.APIKey, mask []string) (store.APIKey, error) {
	defer db.authChanged(ctx)
	if len(mask) == 0 {
		mask = []string{"name", "scope", "permissions"}
	}
	set := "update_time = ?"
	args := []any{db.now()}
	for _, p := range mask {
		switch p {
		case "name":
			set += ", name = ?"
			args = append(args, k.Name)
		case "scope":
			if k.WorkspaceIDs == nil || k.AllWorkspaces {
				k.WorkspaceIDs = []string{}
			}
			set += ", all_workspaces = ?, workspace_ids = ?"
			args = append(args, k.AllWorkspaces, jsonArg(slices.Compact(slices.Sorted(slices.Values(k.WorkspaceIDs)))))
		case "permissions":
			if !k.PermissionLevel.Valid() {
				return store.APIKey{}, fmt.Errorf("%w: permission level %q is not all, read_only or restricted", store.ErrInvalidArgument, k.PermissionLevel)
			}
			if k.Permissions == nil {
				k.Permissions = map[string]bool{}
			}
			set += ", permission_level = ?, permissions = ?"
			args = append(args, string(k.PermissionLevel), jsonArg(k.Permissions))
		default:
			return store.APIKey{}, fmt.Errorf("%w: update_mask: unknown or read-only field %q", store.ErrInvalidArgument, p)
		}
	}
	args = append(args, k.OrganizationID, k.ID)
	out, err := scanKey(db.writer().queryRow(ctx, `UPDATE api_keys SET `+set+` WHERE organization_id = ? AND id = ? RETURNING `+keyCols, args...))
	return out, db.mapErr(err, fmt.Sprintf("API key %q in organization %q", k.ID, k.OrganizationID))
}

// TouchAPIKey implements store.APIKeys.
func (db *DB) TouchAPIKey(ctx context.Context, id string, at time.Time) error {
	res, err := db.writer().exec(ctx, `UPDATE api_keys SET last_used_time = ? WHERE id = ?`, store.Time(at), id)
	if err != nil {
		return db.mapErr(err, "touch API key")
	}
	if rowsAffected(res) == 0 {
		return fmt.Errorf("API key %q: %w", id, store.ErrNotFound)
	}
	return nil
}

// DeleteAPIKey implements store.APIKeys.
func (db *DB) DeleteAPIKey(ctx context.Context, org, id string) error {
	defer db.authChanged(ctx)
	res, err := db.writer().exec(ctx, `DELETE FROM api_keys WHERE organization_id = ? AND id = ?`, org, id)
	if err != nil {
		return db.mapErr(err, "delete API key")
	}
	if rowsAffected(res) == 0 {
		return fmt.Errorf("API key %q in organization %q: %w", id, org, store.ErrNotFound)
	}
	return nil
}

var keySort = map[string]sortCol{"create_time": {Field: "create_time", Col: "create_time", Kind: keyTime}}

// ListAPIKeys implements store.APIKeys.
func (db *DB) ListAPIKeys(ctx context.Context, org, user string, pageSize int, pageToken string) (store.Page[store.APIKey], error) {
	var zero store.Page[store.APIKey]
	ks, _ := newKeyset(nil, store.OrderBy{{Field: "create_time", Desc: true}}, keySort, "id")
	lq, err := newList(db.d, ks, nil, nil, pageToken, pageSize, `SELECT `+keyCols+` FROM api_keys`, "api_keys", org, user)
	if err != nil {
		return zero, err
	}
	lq.cond("organization_id = " + lq.a.Add(org))
	if user != "" {
		lq.cond("user_id = " + lq.a.Add(user))
	}
	return scanPage(ctx, db, lq, "list API keys", scanKey, func(k store.APIKey) []string { return []string{timeKey(k.CreateTime), k.ID} })
}

// CountAPIKeys implements store.APIKeys.
func (db *DB) CountAPIKeys(ctx context.Context, org string) (int, error) {
	return db.reader().countKeys(ctx, org, db.now())
}

// ---------------------------------------------------------------------------
// Idempotency

// LookupRequest implements store.Idempotency.
func (db *DB) LookupRequest(ctx context.Context, org, method, requestID string) (string, error) {
	var name string
	err := db.reader().queryRow(ctx, `SELECT resource_name FROM idempotency_keys WHERE organization_id = ? AND method = ? AND request_id = ?`,
		org, method, requestID).Scan(&name)
	return name, db.mapErr(err, fmt.Sprintf("request %q of %s", requestID, method))
}

// RecordRequest implements store.Idempotency.
func (db *DB) RecordRequest(ctx context.Context, org, method, requestID, resourceName string) (string, error) {
	var name string
	err := db.tx(ctx, func(c conn) error {
		if _, err := c.exec(ctx, `INSERT INTO idempotency_keys (organization_id, method, request_id, resource_name, create_time)
			VALUES (?, ?, ?, ?, ?) ON CONFLICT (organization_id, method, request_id) DO NOTHING`,
			org, method, requestID, resourceName, db.now()); err != nil {
			return db.mapErr(err, "record request")
		}
		return db.mapErr(c.queryRow(ctx, `SELECT resource_name FROM idempotency_keys WHERE organization_id = ? AND method = ? AND request_id = ?`,
			org, method, requestID).Scan(&name), "recorded request")
	})
	return name, err
}

// PurgeRequests implements store.Idempotency.
func (db *DB) PurgeRequests(ctx context.Context, before time.Time) (int, error) {
	res, err := db.writer().exec(ctx, `DELETE FROM idempotency_keys WHERE create_time < ?`, store.Time(before))
	if err != nil {
		return 0, db.mapErr(err, "purge requests")
	}
	return int(rowsAffected(res)), nil
}
