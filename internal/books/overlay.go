package books

import (
	"context"
	"errors"
	"fmt"

	bookv1 "github.com/proserun/prose/gen/prose/book/v1"
)

// Overlay is a Store that serves the books of Top over those of Base. Top
// holds books known to this process only (those of a --books file, in a
// MemoryStore); Base the registered ones (a DBStore). A book of Top shadows a
// book of Base of the same name and version, is updated and deleted in Top,
// and its name and version cannot be created again; every other write goes
// to Base.
type Overlay struct {
	Top, Base Store
}

var _ Store = Overlay{}

// ListWorkspaceBooks implements Store.
func (o Overlay) ListWorkspaceBooks(ctx context.Context, ws Workspace) ([]*bookv1.Book, error) {
	top, err := o.Top.ListWorkspaceBooks(ctx, ws)
	if err != nil {
		return nil, err
	}
	base, err := o.Base.ListWorkspaceBooks(ctx, ws)
	if err != nil {
		return nil, err
	}
	seen := make(map[bookKey]bool, len(top))
	for _, b := range top {
		seen[bookKey{b.GetName(), b.GetVersion()}] = true
	}
	for _, b := range base {
		if !seen[bookKey{b.GetName(), b.GetVersion()}] {
			top = append(top, b)
		}
	}
	return top, nil
}

// inTop reports whether Top has the book.
func (o Overlay) inTop(ctx context.Context, ws Workspace, name, version string) (*bookv1.Book, bool, error) {
	b, err := o.Top.GetWorkspaceBook(ctx, ws, name, version)
	switch {
	case err == nil:
		return b, true, nil
	case errors.Is(err, ErrNotFound):
		return nil, false, nil
	}
	return nil, false, err
}

// GetWorkspaceBook implements Store.
func (o Overlay) GetWorkspaceBook(ctx context.Context, ws Workspace, name, version string) (*bookv1.Book, error) {
	b, ok, err := o.inTop(ctx, ws, name, version)
	if err != nil || ok {
		return b, err
	}
	return o.Base.GetWorkspaceBook(ctx, ws, name, version)
}

// CreateWorkspaceBook implements Store.
func (o Overlay) CreateWorkspaceBook(ctx context.Context, ws Workspace, b *bookv1.Book, requestID string) (*bookv1.Book, error) {
	_, ok, err := o.inTop(ctx, ws, b.GetName(), b.GetVersion())
	if err != nil {
		return nil, err
	}
	if ok {
		return nil, fmt.Errorf("book %s version %s in %s: %w", b.GetName(), b.GetVersion(), ws, ErrAlreadyExists)
	}
	return o.Base.CreateWorkspaceBook(ctx, ws, b, requestID)
}

// UpdateWorkspaceBook implements Store.
func (o Overlay) UpdateWorkspaceBook(ctx context.Context, ws Workspace, b *bookv1.Book) error {
	_, ok, err := o.inTop(ctx, ws, b.GetName(), b.GetVersion())
	if err != nil {
		return err
	}
	if ok {
		return o.Top.UpdateWorkspaceBook(ctx, ws, b)
	}
	return o.Base.UpdateWorkspaceBook(ctx, ws, b)
}

// DeleteWorkspaceBook implements Store.
func (o Overlay) DeleteWorkspaceBook(ctx context.Context, ws Workspace, name, version string) error {
	_, ok, err := o.inTop(ctx, ws, name, version)
	if err != nil {
		return err
	}
	if ok {
		return o.Top.DeleteWorkspaceBook(ctx, ws, name, version)
	}
	return o.Base.DeleteWorkspaceBook(ctx, ws, name, version)
}

// SearchCatalog implements Searcher over Base, with the books of Top in the
// workspace passed as q.Transient: Base ranks them with its own (a book of
// Top hides one of Base of the same name and version, as in reads). It
// returns ErrSearchUnavailable when Base cannot search.
func (o Overlay) SearchCatalog(ctx context.Context, ws Workspace, q CatalogQuery) ([]CatalogHit, error) {
	s, ok := o.Base.(Searcher)
	if !ok {
		return nil, ErrSearchUnavailable
	}
	if ws != (Workspace{}) {
		top, err := o.Top.ListWorkspaceBooks(ctx, ws)
		if err != nil {
			return nil, err
		}
		for _, b := range top {
			q.Transient = append(q.Transient, BuiltinCatalog{Name: b.GetName(), Version: b.GetVersion(), Entries: CatalogEntries(b)})
		}
	}
	return s.SearchCatalog(ctx, ws, q)
}

// IndexBuiltins implements BuiltinIndexer over Base.
func (o Overlay) IndexBuiltins(ctx context.Context, books []BuiltinCatalog) error {
	ix, ok := o.Base.(BuiltinIndexer)
	if !ok {
		return ErrSearchUnavailable
	}
	return ix.IndexBuiltins(ctx, books)
}
