package books

import (
	"context"
	"errors"
	"fmt"

	bookv1 "github.com/proserun/prose/gen/prose/book/v1"
	"github.com/proserun/prose/store"
	"google.golang.org/protobuf/proto"
)

// DBStore is a Store in the database (store.WorkspaceBooks): the books
// registered in a workspace survive restarts and every replica sharing the
// database sees them. Each book is kept as its marshalled descriptor.
type DBStore struct {
	st store.WorkspaceBooks
}

var _ Store = (*DBStore)(nil)

// NewDBStore returns a Store over st.
func NewDBStore(st store.WorkspaceBooks) *DBStore { return &DBStore{st: st} }

// storeError wraps a store error so that errors.Is also finds the registry's
// sentinel of the same meaning; its message is the store's.
type storeError struct {
	err, kind error
}

func (e *storeError) Error() string        { return e.err.Error() }
func (e *storeError) Unwrap() error        { return e.err }
func (e *storeError) Is(target error) bool { return target == e.kind }

func fromStore(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, store.ErrNotFound):
		return &storeError{err, ErrNotFound}
	case errors.Is(err, store.ErrAlreadyExists):
		return &storeError{err, ErrAlreadyExists}
	case errors.Is(err, store.ErrInvalidArgument):
		return &storeError{err, ErrInvalidArgument}
	}
	return err
}

func decodeBook(b store.WorkspaceBook) (*bookv1.Book, error) {
	out := &bookv1.Book{}
	if err := proto.Unmarshal(b.Book, out); err != nil {
		return nil, fmt.Errorf("book %s version %s in %s: stored descriptor: %w", b.Name, b.Version,
			Workspace{b.OrganizationID, b.WorkspaceID}, err)
	}
	return out, nil
}

func encodeBook(ws Workspace, b *bookv1.Book, requestID string) (store.WorkspaceBook, error) {
	data, err := proto.MarshalOptions{Deterministic: true}.Marshal(b)
	if err != nil {
		return store.WorkspaceBook{}, fmt.Errorf("book %s version %s: %w", b.GetName(), b.GetVersion(), err)
	}
	return store.WorkspaceBook{OrganizationID: ws.OrganizationID, WorkspaceID: ws.WorkspaceID,
		Name: b.GetName(), Version: b.GetVersion(), Book: data, RequestID: requestID}, nil
}

// ListWorkspaceBooks implements Store.
func (s *DBStore) ListWorkspaceBooks(ctx context.Context, ws Workspace) ([]*bookv1.Book, error) {
	rows, err := s.st.ListWorkspaceBooks(ctx, ws.OrganizationID, ws.WorkspaceID)
	if err != nil {
		return nil, fromStore(err)
	}
	out := make([]*bookv1.Book, 0, len(rows))
	for _, r := range rows {
		b, err := decodeBook(r)
		if err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return out, nil
}

// GetWorkspaceBook implements Store.
func (s *DBStore) GetWorkspaceBook(ctx context.Context, ws Workspace, name, version string) (*bookv1.Book, error) {
	r, err := s.st.GetWorkspaceBook(ctx, ws.OrganizationID, ws.WorkspaceID, name, version)
	if err != nil {
		return nil, fromStore(err)
	}
	return decodeBook(r)
}

// CreateWorkspaceBook implements Store. The workspace must exist (ErrNotFound
// otherwise).
func (s *DBStore) CreateWorkspaceBook(ctx context.Context, ws Workspace, b *bookv1.Book, requestID string) (*bookv1.Book, error) {
	row, err := encodeBook(ws, b, requestID)
	if err != nil {
		return nil, err
	}
	got, err := s.st.CreateWorkspaceBook(ctx, row)
	if err != nil {
		return nil, fromStore(err)
	}
	return decodeBook(got)
}

// UpdateWorkspaceBook implements Store.
func (s *DBStore) UpdateWorkspaceBook(ctx context.Context, ws Workspace, b *bookv1.Book) error {
	row, err := encodeBook(ws, b, "")
	if err != nil {
		return err
	}
	_, err = s.st.UpdateWorkspaceBook(ctx, row)
	return fromStore(err)
}

// DeleteWorkspaceBook implements Store.
func (s *DBStore) DeleteWorkspaceBook(ctx context.Context, ws Workspace, name, version string) error {
	return fromStore(s.st.DeleteWorkspaceBook(ctx, ws.OrganizationID, ws.WorkspaceID, name, version))
}

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
