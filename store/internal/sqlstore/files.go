package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/proserun/prose/store"
)

// Files keep their bytes in the row (content BLOB / BYTEA): the server
// bounds a file's size (32 MiB) before it reaches the store, and metadata
// reads never select the content column.

const fileCols = "organization_id, id, workspace_id, filename, mime_type, size_bytes, uploaded, create_time, update_time"

func scanFile(s interface{ Scan(...any) error }, extra ...any) (store.File, error) {
	var f store.File
	dest := append([]any{&f.OrganizationID, &f.ID, &f.WorkspaceID, &f.Filename, &f.MimeType, &f.SizeBytes, &f.Uploaded,
		ts{&f.CreateTime}, ts{&f.UpdateTime}}, extra...)
	err := s.Scan(dest...)
	return f, err
}

func fileWhat(org, id string) string { return fmt.Sprintf("file %q in organization %q", id, org) }

// CreateFile implements store.Files.
func (db *DB) CreateFile(ctx context.Context, f store.File, content []byte, uploaded bool) (store.File, error) {
	if f.ID == "" {
		f.ID = store.NewID()
	}
	now := db.now()
	f.CreateTime, f.UpdateTime, f.Uploaded = now, now, uploaded
	f.SizeBytes = 0
	var data any
	if uploaded {
		f.SizeBytes = int64(len(content))
		if content == nil {
			content = []byte{}
		}
		data = content
	}
	err := db.tx(ctx, func(c conn) error {
		if err := c.orgExists(ctx, f.OrganizationID); err != nil {
			return err
		}
		if f.WorkspaceID != "" {
			if err := c.workspaceExists(ctx, f.OrganizationID, f.WorkspaceID); err != nil {
				return err
			}
		}
		_, err := c.exec(ctx, `INSERT INTO files (organization_id, id, workspace_id, filename, mime_type, size_bytes, uploaded, content, create_time, update_time)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, f.OrganizationID, f.ID, f.WorkspaceID, f.Filename, f.MimeType, f.SizeBytes, f.Uploaded, data,
			f.CreateTime, f.UpdateTime)
		return db.mapErr(err, "create "+fileWhat(f.OrganizationID, f.ID))
	})
	if err != nil {
		return store.File{}, err
	}
	return f, nil
}

// PutFileContent implements store.Files.
func (db *DB) PutFileContent(ctx context.Context, org, id, mimeType string, content []byte) (store.File, error) {
	if content == nil {
		content = []byte{}
	}
	var f store.File
	err := db.tx(ctx, func(c conn) error {
		res, err := c.exec(ctx, `UPDATE files SET content = ?, size_bytes = ?, uploaded = ?,
			mime_type = CASE WHEN ? = '' THEN mime_type ELSE ? END, update_time = ?
			WHERE organization_id = ? AND id = ? AND uploaded = ?`,
			content, int64(len(content)), true, mimeType, mimeType, db.now(), org, id, false)
		if err != nil {
			return db.mapErr(err, "upload "+fileWhat(org, id))
		}
		if rowsAffected(res) == 0 {
			// Absent, or its bytes arrived already (the row is locked by
			// the UPDATE above, so of two uploads exactly one wins).
			if _, err := scanFile(c.queryRow(ctx, `SELECT `+fileCols+` FROM files WHERE organization_id = ? AND id = ?`, org, id)); err != nil {
				return db.mapErr(err, fileWhat(org, id))
			}
			return fmt.Errorf("%s: its content was uploaded already: %w", fileWhat(org, id), store.ErrAlreadyExists)
		}
		f, err = scanFile(c.queryRow(ctx, `SELECT `+fileCols+` FROM files WHERE organization_id = ? AND id = ?`, org, id))
		return db.mapErr(err, fileWhat(org, id))
	})
	if err != nil {
		return store.File{}, err
	}
	return f, nil
}

// GetFile implements store.Files.
func (db *DB) GetFile(ctx context.Context, org, id string) (store.File, error) {
	f, err := scanFile(db.reader().queryRow(ctx, `SELECT `+fileCols+` FROM files WHERE organization_id = ? AND id = ?`, org, id))
	if err != nil {
		return store.File{}, db.mapErr(err, fileWhat(org, id))
	}
	return f, nil
}

// GetFileContent implements store.Files.
func (db *DB) GetFileContent(ctx context.Context, org, id string) (store.File, []byte, error) {
	var content []byte
	f, err := scanFile(db.reader().queryRow(ctx, `SELECT `+fileCols+`, content FROM files WHERE organization_id = ? AND id = ?`, org, id), &content)
	if err != nil {
		return store.File{}, nil, db.mapErr(err, fileWhat(org, id))
	}
	if !f.Uploaded {
		return store.File{}, nil, fmt.Errorf("%s: its content was not uploaded yet: %w", fileWhat(org, id), store.ErrFailedPrecondition)
	}
	if content == nil {
		content = []byte{}
	}
	return f, content, nil
}

// DeleteFile implements store.Files.
func (db *DB) DeleteFile(ctx context.Context, org, id string) error {
	res, err := db.writer().exec(ctx, `DELETE FROM files WHERE organization_id = ? AND id = ?`, org, id)
	if err != nil {
		return db.mapErr(err, "delete "+fileWhat(org, id))
	}
	if rowsAffected(res) == 0 {
		return fmt.Errorf("%s: %w", fileWhat(org, id), store.ErrNotFound)
	}
	return nil
}

// ServerSecret implements store.Files.
func (db *DB) ServerSecret(ctx context.Context, name string, generate func() []byte) ([]byte, error) {
	var v []byte
	err := db.reader().queryRow(ctx, `SELECT value FROM server_secrets WHERE name = ?`, name).Scan(&v)
	if err == nil {
		return v, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return nil, db.mapErr(err, "server secret "+name)
	}
	if _, err := db.writer().exec(ctx, `INSERT INTO server_secrets (name, value, create_time) VALUES (?, ?, ?) ON CONFLICT (name) DO NOTHING`,
		name, generate(), db.now()); err != nil {
		return nil, db.mapErr(err, "create server secret "+name)
	}
	err = db.writer().queryRow(ctx, `SELECT value FROM server_secrets WHERE name = ?`, name).Scan(&v)
	return v, db.mapErr(err, "server secret "+name)
}
