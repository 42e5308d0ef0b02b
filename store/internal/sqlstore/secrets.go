package sqlstore

import (
	"context"
	"encoding/base64"
	"fmt"
	"strings"

	"github.com/proserun/prose/store"
)

// The secret columns (trigger_instances.secret, webhooks.secret) hold
// sealedPrefix and the base64 of what the store's Sealer sealed, bound to
// the row by its table and key. A value without the prefix was written
// before sealing existed (or without a sealer) and reads as it is, until
// ResealSecrets seals it.
const sealedPrefix = "sealed:"

// secretColumns are the tables whose secret column is sealed.
var secretColumns = []string{"trigger_instances", "webhooks"}

// sealerBox lets an interface value sit in an atomic.Pointer.
type sealerBox struct{ s store.Sealer }

// SetSealer implements store.SecretSealing.
func (db *DB) SetSealer(s store.Sealer) { db.sealer.Store(&sealerBox{s}) }

func (db *DB) sealerOf() store.Sealer {
	if b := db.sealer.Load(); b != nil {
		return b.s
	}
	return nil
}

func secretAAD(table, org, ws, id string) []byte {
	return []byte("prose-secret/v1\x00" + table + "\x00" + org + "\x00" + ws + "\x00" + id)
}

// sealSecret is plain as it is stored in table's row (org, ws, id).
func (db *DB) sealSecret(table, org, ws, id, plain string) (string, error) {
	s := db.sealerOf()
	if s == nil || plain == "" {
		return plain, nil
	}
	sealed, err := s.Seal([]byte(plain), secretAAD(table, org, ws, id))
	if err != nil {
		return "", err
	}
	return sealedPrefix + base64.RawStdEncoding.EncodeToString(sealed), nil
}

// openSecret is the plain secret of stored, read from table's row.
func (db *DB) openSecret(table, org, ws, id, stored string) (string, error) {
	rest, ok := strings.CutPrefix(stored, sealedPrefix)
	if !ok {
		return stored, nil
	}
	s := db.sealerOf()
	raw, err := base64.RawStdEncoding.DecodeString(rest)
	if s == nil || err != nil {
		return "", fmt.Errorf("the secret of %s %q: %w", table, id, store.ErrSecretKey)
	}
	plain, err := s.Open(raw, secretAAD(table, org, ws, id))
	if err != nil {
		return "", fmt.Errorf("the secret of %s %q: %w", table, id, store.ErrSecretKey)
	}
	return string(plain), nil
}

// sealedRow is a row whose secret ResealSecrets reads.
type sealedRow struct{ org, ws, id, secret string }

// staleSecrets reads the rows of table whose secret is plain or sealed
// with a key other than s's first.
func (db *DB) staleSecrets(ctx context.Context, s store.Sealer, table string) ([]sealedRow, error) {
	rows, err := db.writer().query(ctx, `SELECT organization_id, workspace_id, id, secret FROM `+table+` WHERE secret <> ''`)
	if err != nil {
		return nil, db.mapErr(err, "read the secrets of "+table)
	}
	defer rows.Close()
	var stale []sealedRow
	for rows.Next() {
		var r sealedRow
		if err := rows.Scan(&r.org, &r.ws, &r.id, &r.secret); err != nil {
			return nil, db.mapErr(err, "read the secrets of "+table)
		}
		rest, sealed := strings.CutPrefix(r.secret, sealedPrefix)
		if sealed {
			raw, err := base64.RawStdEncoding.DecodeString(rest)
			if err == nil && s.Current(raw) {
				continue
			}
		}
		stale = append(stale, r)
	}
	if err := rows.Err(); err != nil {
		return nil, db.mapErr(err, "read the secrets of "+table)
	}
	return stale, nil
}

// ResealSecrets implements store.SecretSealing.
func (db *DB) ResealSecrets(ctx context.Context) (int, error) {
	s := db.sealerOf()
	if s == nil {
		return 0, nil
	}
	n := 0
	for _, table := range secretColumns {
		stale, err := db.staleSecrets(ctx, s, table)
		if err != nil {
			return n, err
		}
		for _, r := range stale {
			plain, err := db.openSecret(table, r.org, r.ws, r.id, r.secret)
			if err != nil {
				return n, err
			}
			next, err := db.sealSecret(table, r.org, r.ws, r.id, plain)
			if err != nil {
				return n, err
			}
			// Only the value read is replaced: a secret changed meanwhile
			// is left to the next pass.
			res, err := db.writer().exec(ctx, `UPDATE `+table+` SET secret = ? WHERE organization_id = ? AND workspace_id = ? AND id = ? AND secret = ?`,
				next, r.org, r.ws, r.id, r.secret)
			if err != nil {
				return n, db.mapErr(err, "seal a secret of "+table)
			}
			if k, _ := res.RowsAffected(); k > 0 {
				n++
			}
		}
	}
	return n, nil
}
