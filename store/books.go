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
	RequestID string
	// Catalog lists the searchable items of the book. Create and update
	// replace the book's search index with it in the same transaction;
	// reads leave it empty.
	Catalog    []CatalogEntry
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
	// ReplaceBuiltinCatalog replaces the catalog entries of the built-in
	// books (those of the binary, not in the database) with books'.
	ReplaceBuiltinCatalog(ctx context.Context, books []BuiltinCatalog) error
	// SearchWorkspaceCatalog ranks the catalog entries of q.Kind of the books
	// registered in the workspace and of the built-in books (both IDs
	// empty: of the built-in books alone) against q.Text (free text: any of
	// its words matches; stems count) and returns at most q.Limit of them,
	// best first (of one book only when q.BookName is set). A match in an
	// entry's Name ranks above the same match in its Text. Words are runs of
	// letters and digits; a query without any returns none.
	SearchWorkspaceCatalog(ctx context.Context, organizationID, workspaceID string, q CatalogQuery) ([]CatalogMatch, error)
	// ListUnindexedWorkspaceBooks returns at most limit books registered in
	// any workspace that have no catalog entries (books registered before
	// the catalog existed), ordered by organization, workspace, name and
	// version, after the book of key after (the zero key: from the first).
	ListUnindexedWorkspaceBooks(ctx context.Context, after WorkspaceBookKey, limit int) ([]WorkspaceBook, error)
	// IndexWorkspaceBook writes b.Catalog as the catalog entries of the book
	// of b's key, if that book still has b.Book as its descriptor and has no
	// entries yet (so that a concurrent update's entries or another
	// replica's are kept); it reports whether it wrote them.
	IndexWorkspaceBook(ctx context.Context, b WorkspaceBook) (bool, error)
}

// WorkspaceBookKey identifies a book registered in a workspace.
type WorkspaceBookKey struct {
	OrganizationID, WorkspaceID, Name, Version string
}

// CatalogKind is the kind of a searchable catalog item.
type CatalogKind string

// The kinds of catalog items.
const (
	CatalogBook      CatalogKind = "book"
	CatalogProcedure CatalogKind = "procedure"
	CatalogConcept   CatalogKind = "concept"
)

// CatalogEntry is one searchable item of a workspace book.
type CatalogEntry struct {
	Kind CatalogKind
	// Item identifies the item in its book (a procedure id, a concept name;
	// empty for the book itself).
	Item string
	// Name is the item's name (weighted above Text in ranking).
	Name string
	// Text is the rest of its searchable words (descriptions, hints).
	Text string
}

// BuiltinCatalog is the catalog of one built-in book.
type BuiltinCatalog struct {
	Name, Version string
	Entries       []CatalogEntry
}

// CatalogQuery is a catalog search.
type CatalogQuery struct {
	Kind CatalogKind
	// Text is the free text searched for.
	Text string
	// Limit is the most matches returned.
	Limit int
	// BookName and BookVersion, when set, restrict the search to that book.
	BookName, BookVersion string
	// Transient are books of the workspace that only the calling process
	// knows (those of a `serve --books` file): they are searched and ranked
	// as if registered, and one of them hides a registered book of the same
	// name and version. Their entries are written in the search's
	// transaction, which is rolled back: nothing is stored.
	Transient []BuiltinCatalog
}

// CatalogMatch is one ranked search result.
type CatalogMatch struct {
	BookName    string
	BookVersion string
	Kind        CatalogKind
	Item        string
	// Score is the relevance (higher is better); scores compare only within
	// one answer.
	Score float64
}
