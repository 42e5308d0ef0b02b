package sqlstore

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/pressly/goose/v3"

	"github.com/proserun/prose/store"
)

// TitleKeyMigration is migration 00013 of both backends, a goose Go
// migration: it recomputes every workspace's title_key with
// store.TitleSortKey (Unicode case folding without accents), which SQL
// cannot compute the same way on both backends. 00010 had filled the column
// with lower(title), which folds ASCII letters only. Down puts that back.
func TitleKeyMigration(d store.Dialect) *goose.Migration {
	up := func(ctx context.Context, tx *sql.Tx) error { return rekeyTitles(ctx, tx, d) }
	down := func(ctx context.Context, tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `UPDATE workspaces SET title_key = lower(title)`)
		return err
	}
	return goose.NewGoMigration(13, &goose.GoFunc{RunTx: up}, &goose.GoFunc{RunTx: down})
}

// rekeyTitles sets title_key to store.TitleSortKey(title) wherever it
// differs, reading the workspaces in one pass and updating the few whose key
// changes.
func rekeyTitles(ctx context.Context, tx *sql.Tx, d store.Dialect) error {
	type change struct{ org, id, key string }
	changes, err := func() ([]change, error) {
		rows, err := tx.QueryContext(ctx, `SELECT organization_id, id, title, title_key FROM workspaces`)
		if err != nil {
			return nil, fmt.Errorf("read workspace titles: %w", err)
		}
		defer func() { _ = rows.Close() }()
		var out []change
		for rows.Next() {
			var org, id, title, key string
			if err := rows.Scan(&org, &id, &title, &key); err != nil {
				return nil, err
			}
			if k := store.TitleSortKey(title); k != key {
				out = append(out, change{org, id, k})
			}
		}
		return out, rows.Err()
	}()
	if err != nil {
		return err
	}
	q := `UPDATE workspaces SET title_key = ? WHERE organization_id = ? AND id = ?`
	if d == store.Postgres {
		q = `UPDATE workspaces SET title_key = $1 WHERE organization_id = $2 AND id = $3`
	}
	stmt, err := tx.PrepareContext(ctx, q)
	if err != nil {
		return err
	}
	defer func() { _ = stmt.Close() }()
	for _, c := range changes {
		if _, err := stmt.ExecContext(ctx, c.key, c.org, c.id); err != nil {
			return fmt.Errorf("set the title key of workspace %q: %w", c.id, err)
		}
	}
	return nil
}
