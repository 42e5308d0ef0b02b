package books_test

import (
	"context"
	"errors"

	"github.com/proserun/prose/internal/books"
	"github.com/proserun/prose/store"
)

// sqlConnections is a books.ConnectionStore over a real store, for the
// tests of this package (the binary's adapter is cmd/prose's dbConnections;
// package books itself imports no store).
type sqlConnections struct{ st store.BookConnections }

var _ books.ConnectionStore = sqlConnections{}

// kindError is a store error that also is the books sentinel of the same
// meaning.
type kindError struct{ err, kind error }

func (e *kindError) Error() string        { return e.err.Error() }
func (e *kindError) Unwrap() error        { return e.err }
func (e *kindError) Is(target error) bool { return target == e.kind }

func connErr(err error) error {
	for from, to := range map[error]error{
		store.ErrNotFound: books.ErrNotFound, store.ErrAlreadyExists: books.ErrAlreadyExists,
		store.ErrInvalidArgument: books.ErrInvalidArgument, store.ErrResourceExhausted: books.ErrResourceExhausted,
	} {
		if errors.Is(err, from) {
			return &kindError{err, to}
		}
	}
	return err
}

func toRecord(c store.BookConnection) books.ConnectionRecord {
	return books.ConnectionRecord{Workspace: books.Workspace{OrganizationID: c.OrganizationID, WorkspaceID: c.WorkspaceID},
		ID: c.ID, BookName: c.BookName, BookVersion: c.BookVersion, Name: c.Name,
		Descriptor: c.Descriptor, Secret: c.Secret, CreateTime: c.CreateTime, UpdateTime: c.UpdateTime}
}

func toRow(r books.ConnectionRecord) store.BookConnection {
	return store.BookConnection{OrganizationID: r.Workspace.OrganizationID, WorkspaceID: r.Workspace.WorkspaceID,
		ID: r.ID, BookName: r.BookName, BookVersion: r.BookVersion, Name: r.Name,
		Descriptor: r.Descriptor, Secret: r.Secret, CreateTime: r.CreateTime, UpdateTime: r.UpdateTime}
}

func (s sqlConnections) NewConnectionID() string { return store.NewID() }

func (s sqlConnections) CreateConnection(ctx context.Context, r books.ConnectionRecord) (books.ConnectionRecord, error) {
	c, err := s.st.CreateBookConnection(ctx, toRow(r))
	return toRecord(c), connErr(err)
}

func (s sqlConnections) GetConnection(ctx context.Context, ws books.Workspace, id string) (books.ConnectionRecord, error) {
	c, err := s.st.GetBookConnection(ctx, ws.OrganizationID, ws.WorkspaceID, id)
	return toRecord(c), connErr(err)
}

func (s sqlConnections) ListConnections(ctx context.Context, ws books.Workspace) ([]books.ConnectionRecord, error) {
	rows, err := s.st.ListBookConnections(ctx, ws.OrganizationID, ws.WorkspaceID)
	out := make([]books.ConnectionRecord, len(rows))
	for i, c := range rows {
		out[i] = toRecord(c)
	}
	return out, connErr(err)
}

func (s sqlConnections) UpdateConnection(ctx context.Context, r books.ConnectionRecord) (books.ConnectionRecord, error) {
	c, err := s.st.UpdateBookConnection(ctx, toRow(r))
	return toRecord(c), connErr(err)
}

func (s sqlConnections) DeleteConnection(ctx context.Context, ws books.Workspace, id string) error {
	return connErr(s.st.DeleteBookConnection(ctx, ws.OrganizationID, ws.WorkspaceID, id))
}

func (s sqlConnections) RefreshConnection(ctx context.Context, ws books.Workspace, id string,
	refresh func(context.Context, books.ConnectionRecord) (*books.ConnectionRecord, error)) (books.ConnectionRecord, error) {
	c, err := s.st.RefreshBookConnection(ctx, ws.OrganizationID, ws.WorkspaceID, id,
		func(ctx context.Context, c store.BookConnection) (*store.BookConnection, error) {
			next, err := refresh(ctx, toRecord(c))
			if err != nil || next == nil {
				return nil, err
			}
			row := toRow(*next)
			return &row, nil
		})
	return toRecord(c), connErr(err)
}

func (s sqlConnections) RekeyConnections(ctx context.Context, reseal func(books.ConnectionRecord) ([]byte, bool, error)) (int, error) {
	n, err := s.st.RekeyBookConnections(ctx, func(c store.BookConnection) ([]byte, bool, error) { return reseal(toRecord(c)) })
	return n, connErr(err)
}
