package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/proserun/prose/store"
)

const workspaceBookCols = "organization_id, workspace_id, name, version, book, request_id, create_time, update_time"

func scanWorkspaceBook(s interface{ Scan(...any) error }) (store.WorkspaceBook, error) {
	var b store.WorkspaceBook
	err := s.Scan(&b.OrganizationID, &b.WorkspaceID, &b.Name, &b.Version, &b.Book, &b.RequestID, ts{&b.CreateTime}, ts{&b.UpdateTime})
	return b, err
}

func workspaceBookWhat(org, ws, name, version string) string {
	return fmt.Sprintf("book %q version %q in workspace %q of organization %q", name, version, ws, org)
}

// workspaceBookByRequest returns the book created in the workspace with
// requestID, or sql.ErrNoRows.
func (c conn) workspaceBookByRequest(ctx context.Context, org, ws, requestID string) (store.WorkspaceBook, error) {
	return scanWorkspaceBook(c.queryRow(ctx, `SELECT `+workspaceBookCols+` FROM workspace_books
		WHERE organization_id = ? AND workspace_id = ? AND request_id = ?`, org, ws, requestID))
}

// CreateWorkspaceBook implements store.WorkspaceBooks.
func (db *DB) CreateWorkspaceBook(ctx context.Context, b store.WorkspaceBook) (store.WorkspaceBook, error) {
	what := workspaceBookWhat(b.OrganizationID, b.WorkspaceID, b.Name, b.Version)
	if b.Book == nil {
		b.Book = []byte{}
	}
	now := db.now()
	b.CreateTime, b.UpdateTime = now, now
	var out store.WorkspaceBook
	err := db.tx(ctx, func(c conn) error {
		if b.RequestID != "" {
			prev, err := c.workspaceBookByRequest(ctx, b.OrganizationID, b.WorkspaceID, b.RequestID)
			if err == nil {
				out = prev
				return nil
			}
			if !errors.Is(err, sql.ErrNoRows) {
				return db.mapErr(err, "create "+what)
			}
		}
		if err := c.workspaceExists(ctx, b.OrganizationID, b.WorkspaceID); err != nil {
			return err
		}
		_, err := c.exec(ctx, `INSERT INTO workspace_books (`+workspaceBookCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
			b.OrganizationID, b.WorkspaceID, b.Name, b.Version, b.Book, b.RequestID, b.CreateTime, b.UpdateTime)
		if err != nil {
			return db.mapErr(err, "create "+what)
		}
		if err := c.writeCatalog(ctx, db.d, b); err != nil {
			return db.mapErr(err, "index "+what)
		}
		out = b
		out.Catalog = nil
		return nil
	})
	if errors.Is(err, store.ErrAlreadyExists) && b.RequestID != "" {
		// A concurrent create with the same request id won the race.
		if prev, perr := db.writer().workspaceBookByRequest(ctx, b.OrganizationID, b.WorkspaceID, b.RequestID); perr == nil {
			return prev, nil
		}
	}
	if err != nil {
		return store.WorkspaceBook{}, err
	}
	return out, nil
}

// GetWorkspaceBook implements store.WorkspaceBooks.
func (db *DB) GetWorkspaceBook(ctx context.Context, org, ws, name, version string) (store.WorkspaceBook, error) {
	b, err := scanWorkspaceBook(db.reader().queryRow(ctx, `SELECT `+workspaceBookCols+` FROM workspace_books
		WHERE organization_id = ? AND workspace_id = ? AND name = ? AND version = ?`, org, ws, name, version))
	if err != nil {
		return store.WorkspaceBook{}, db.mapErr(err, workspaceBookWhat(org, ws, name, version))
	}
	return b, nil
}

// ListWorkspaceBooks implements store.WorkspaceBooks.
func (db *DB) ListWorkspaceBooks(ctx context.Context, org, ws string) ([]store.WorkspaceBook, error) {
	return db.queryWorkspaceBooks(ctx, fmt.Sprintf("books of workspace %q in organization %q", ws, org),
		`SELECT `+workspaceBookCols+` FROM workspace_books
		WHERE organization_id = ? AND workspace_id = ? ORDER BY name, version`, org, ws)
}

// queryWorkspaceBooks returns the books q selects (workspaceBookCols).
func (db *DB) queryWorkspaceBooks(ctx context.Context, what, q string, args ...any) ([]store.WorkspaceBook, error) {
	rows, err := db.reader().query(ctx, q, args...)
	if err != nil {
		return nil, db.mapErr(err, what)
	}
	defer rows.Close()
	out := []store.WorkspaceBook{}
	for rows.Next() {
		b, err := scanWorkspaceBook(rows)
		if err != nil {
			return nil, db.mapErr(err, what)
		}
		out = append(out, b)
	}
	if err := rows.Err(); err != nil {
		return nil, db.mapErr(err, what)
	}
	return out, nil
}

// UpdateWorkspaceBook implements store.WorkspaceBooks.
func (db *DB) UpdateWorkspaceBook(ctx context.Context, b store.WorkspaceBook) (store.WorkspaceBook, error) {
	what := workspaceBookWhat(b.OrganizationID, b.WorkspaceID, b.Name, b.Version)
	if b.Book == nil {
		b.Book = []byte{}
	}
	var out store.WorkspaceBook
	err := db.tx(ctx, func(c conn) error {
		res, err := c.exec(ctx, `UPDATE workspace_books SET book = ?, update_time = ?
			WHERE organization_id = ? AND workspace_id = ? AND name = ? AND version = ?`,
			b.Book, db.now(), b.OrganizationID, b.WorkspaceID, b.Name, b.Version)
		if err != nil {
			return db.mapErr(err, "update "+what)
		}
		if rowsAffected(res) == 0 {
			return fmt.Errorf("%s: %w", what, store.ErrNotFound)
		}
		if err := c.writeCatalog(ctx, db.d, b); err != nil {
			return db.mapErr(err, "index "+what)
		}
		out, err = scanWorkspaceBook(c.queryRow(ctx, `SELECT `+workspaceBookCols+` FROM workspace_books
			WHERE organization_id = ? AND workspace_id = ? AND name = ? AND version = ?`, b.OrganizationID, b.WorkspaceID, b.Name, b.Version))
		return db.mapErr(err, what)
	})
	if err != nil {
		return store.WorkspaceBook{}, err
	}
	return out, nil
}

// DeleteWorkspaceBook implements store.WorkspaceBooks.
func (db *DB) DeleteWorkspaceBook(ctx context.Context, org, ws, name, version string) error {
	what := workspaceBookWhat(org, ws, name, version)
	res, err := db.writer().exec(ctx, `DELETE FROM workspace_books
		WHERE organization_id = ? AND workspace_id = ? AND name = ? AND version = ?`, org, ws, name, version)
	if err != nil {
		return db.mapErr(err, "delete "+what)
	}
	if rowsAffected(res) == 0 {
		return fmt.Errorf("%s: %w", what, store.ErrNotFound)
	}
	return nil
}
