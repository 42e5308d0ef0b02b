package store

import (
	"context"
	"time"
)

// File is a file of an organization, for runs to use. Its bytes are stored
// apart (GetFileContent). A file made before its bytes arrive (a pre-signed
// upload: legacy /v1/upload, /v2/files) has Uploaded false and SizeBytes 0
// until PutFileContent.
type File struct {
	OrganizationID string
	ID             string
	// WorkspaceID is the workspace (legacy agent id) the file was made for;
	// empty for files of the organization as a whole.
	WorkspaceID string
	Filename    string
	MimeType    string
	SizeBytes   int64
	Uploaded    bool
	CreateTime  time.Time
	UpdateTime  time.Time
}

// Files stores files. Content lives in the database (a BLOB / BYTEA column),
// which suits files of tens of MiB: the server bounds their size before
// calling the store.
type Files interface {
	// CreateFile inserts f (ID generated when empty) with content as its
	// bytes, or with no bytes yet when uploaded is false (SizeBytes 0).
	// ErrNotFound if the organization (or the workspace, when set) does not
	// exist; ErrAlreadyExists if the id is taken in the organization.
	CreateFile(ctx context.Context, f File, content []byte, uploaded bool) (File, error)
	// PutFileContent sets the bytes and MIME type (kept when mimeType is
	// empty) of a file made without bytes (CreateFile with uploaded false)
	// and marks it uploaded. It succeeds once per file, atomically across
	// processes sharing the database: ErrAlreadyExists once the file has its
	// bytes (a pre-signed upload URL is single-use). ErrNotFound if absent.
	PutFileContent(ctx context.Context, organizationID, id, mimeType string, content []byte) (File, error)
	// GetFile returns the metadata. ErrNotFound if absent.
	GetFile(ctx context.Context, organizationID, id string) (File, error)
	// GetFileContent returns the metadata and the bytes. ErrNotFound if
	// absent; ErrFailedPrecondition if its bytes were never uploaded.
	GetFileContent(ctx context.Context, organizationID, id string) (File, []byte, error)
	// DeleteFile deletes the file and its bytes. ErrNotFound if absent.
	DeleteFile(ctx context.Context, organizationID, id string) error

	// ServerSecret returns the secret named name, creating it from
	// generate() on first use. Concurrent first calls (several replicas)
	// all get the value stored first.
	ServerSecret(ctx context.Context, name string, generate func() []byte) ([]byte, error)
}
