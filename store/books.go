package store

import (
	"context"
	"time"
)

// WorkspaceBook is an external book registered in a workspace. The store
// keeps its descriptor as opaque bytes (the books package marshals a
// prose.book.v1.Book); Name and Version are its key in the workspace.
type WorkspaceBook struct {
	OrganizationID string
	WorkspaceID    string
	Name           string
	Version        string
	// Book is the marshalled descriptor.
	Book []byte
	// RequestID is the request id the book was created with (empty: none);
	// ignored on update.
	RequestID  string
	CreateTime time.Time
	UpdateTime time.Time
}

// WorkspaceBooks stores the books registered in workspaces. A workspace holds
// a few of them, so the list is not paged.
type WorkspaceBooks interface {
	// CreateWorkspaceBook inserts b. When b.RequestID is not empty and a book
	// was created in the workspace with that request id before (and not
	// deleted since), it returns that book and stores nothing. ErrNotFound if
	// the workspace does not exist; ErrAlreadyExists if the workspace has a
	// book of b's name and version.
	CreateWorkspaceBook(ctx context.Context, b WorkspaceBook) (WorkspaceBook, error)
	// GetWorkspaceBook: ErrNotFound if absent.
	GetWorkspaceBook(ctx context.Context, organizationID, workspaceID, name, version string) (WorkspaceBook, error)
	// ListWorkspaceBooks returns every book of the workspace, ordered by name
	// then version (bytewise); none for an unknown workspace.
	ListWorkspaceBooks(ctx context.Context, organizationID, workspaceID string) ([]WorkspaceBook, error)
	// UpdateWorkspaceBook replaces the descriptor of the book of b's name and
	// version and its update time. ErrNotFound if absent.
	UpdateWorkspaceBook(ctx context.Context, b WorkspaceBook) (WorkspaceBook, error)
	// DeleteWorkspaceBook: ErrNotFound if absent.
	DeleteWorkspaceBook(ctx context.Context, organizationID, workspaceID, name, version string) error
}
