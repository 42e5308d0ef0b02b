package app

import (
	"context"
	"errors"
	"fmt"

	bookv1 "github.com/proserun/prose/gen/prose/book/v1"
	"github.com/proserun/prose/internal/books"
	"github.com/proserun/prose/store"
	"google.golang.org/protobuf/proto"
)

// The adapters of this file put package books on the database: books
// declares the stores it uses (books.Store for workspace books,
// books.ConnectionStore for connections) and depends on no store; the
// database implements them here, where the binary puts its parts together.

// DBBooks is a books.Store in the database (store.WorkspaceBooks): the
// books registered in a workspace survive restarts and every replica
// sharing the database sees them. Each book is kept as its marshalled
// descriptor.
type DBBooks struct {
	st store.WorkspaceBooks
}

var _ books.Store = (*DBBooks)(nil)

// NewDBBooks returns a books.Store over st.
func NewDBBooks(st store.WorkspaceBooks) *DBBooks { return &DBBooks{st: st} }

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
		return &storeError{err, books.ErrNotFound}
	case errors.Is(err, store.ErrAlreadyExists):
		return &storeError{err, books.ErrAlreadyExists}
	case errors.Is(err, store.ErrInvalidArgument):
		return &storeError{err, books.ErrInvalidArgument}
	case errors.Is(err, store.ErrResourceExhausted):
		return &storeError{err, books.ErrResourceExhausted}
	}
	return err
}

func decodeBook(b store.WorkspaceBook) (*bookv1.Book, error) {
	out := &bookv1.Book{}
	if err := proto.Unmarshal(b.Book, out); err != nil {
		return nil, fmt.Errorf("book %s version %s in %s: stored descriptor: %w", b.Name, b.Version,
			books.Workspace{OrganizationID: b.OrganizationID, WorkspaceID: b.WorkspaceID}, err)
	}
	return out, nil
}

// EncodeBook is the row a book is stored as: its descriptor, marshalled
// deterministically, with its catalog entries.
func EncodeBook(ws books.Workspace, b *bookv1.Book, requestID string) (store.WorkspaceBook, error) {
	data, err := proto.MarshalOptions{Deterministic: true}.Marshal(b)
	if err != nil {
		return store.WorkspaceBook{}, fmt.Errorf("book %s version %s: %w", b.GetName(), b.GetVersion(), err)
	}
	catalog := toStoreEntries(books.CatalogEntries(b))
	return store.WorkspaceBook{OrganizationID: ws.OrganizationID, WorkspaceID: ws.WorkspaceID,
		Name: b.GetName(), Version: b.GetVersion(), Book: data, RequestID: requestID, Catalog: catalog}, nil
}

var (
	_ books.Searcher       = (*DBBooks)(nil)
	_ books.BuiltinIndexer = (*DBBooks)(nil)
)

func toStoreEntries(entries []books.CatalogEntry) []store.CatalogEntry {
	out := make([]store.CatalogEntry, len(entries))
	for i, e := range entries {
		out[i] = store.CatalogEntry{Kind: store.CatalogKind(e.Kind), Item: e.Item, Name: e.Name, Text: e.Text}
	}
	return out
}

// IndexBuiltins implements books.BuiltinIndexer.
func (s *DBBooks) IndexBuiltins(ctx context.Context, bs []books.BuiltinCatalog) error {
	out := make([]store.BuiltinCatalog, len(bs))
	for i, b := range bs {
		out[i] = store.BuiltinCatalog{Name: b.Name, Version: b.Version, Entries: toStoreEntries(b.Entries)}
	}
	return fromStore(s.st.ReplaceBuiltinCatalog(ctx, out))
}

// SearchCatalog implements books.Searcher: the ranking is the database's.
func (s *DBBooks) SearchCatalog(ctx context.Context, ws books.Workspace, q books.CatalogQuery) ([]books.CatalogHit, error) {
	cq := store.CatalogQuery{Kind: store.CatalogKind(q.Kind), Text: q.Text, Limit: q.Limit, BookName: q.BookName, BookVersion: q.BookVersion}
	for _, b := range q.Transient {
		cq.Transient = append(cq.Transient, store.BuiltinCatalog{Name: b.Name, Version: b.Version, Entries: toStoreEntries(b.Entries)})
	}
	ms, err := s.st.SearchWorkspaceCatalog(ctx, ws.OrganizationID, ws.WorkspaceID, cq)
	if err != nil {
		return nil, fromStore(err)
	}
	out := make([]books.CatalogHit, len(ms))
	for i, m := range ms {
		out[i] = books.CatalogHit{BookName: m.BookName, BookVersion: m.BookVersion, Kind: books.CatalogKind(m.Kind), Item: m.Item, Score: m.Score}
	}
	return out, nil
}

// ListWorkspaceBooks implements books.Store.
func (s *DBBooks) ListWorkspaceBooks(ctx context.Context, ws books.Workspace) ([]*bookv1.Book, error) {
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

// GetWorkspaceBook implements books.Store.
func (s *DBBooks) GetWorkspaceBook(ctx context.Context, ws books.Workspace, name, version string) (*bookv1.Book, error) {
	r, err := s.st.GetWorkspaceBook(ctx, ws.OrganizationID, ws.WorkspaceID, name, version)
	if err != nil {
		return nil, fromStore(err)
	}
	return decodeBook(r)
}

// CreateWorkspaceBook implements books.Store. The workspace must exist (ErrNotFound
// otherwise).
func (s *DBBooks) CreateWorkspaceBook(ctx context.Context, ws books.Workspace, b *bookv1.Book, requestID string) (*bookv1.Book, error) {
	row, err := EncodeBook(ws, b, requestID)
	if err != nil {
		return nil, err
	}
	got, err := s.st.CreateWorkspaceBook(ctx, row)
	if err != nil {
		return nil, fromStore(err)
	}
	return decodeBook(got)
}

// UpdateWorkspaceBook implements books.Store.
func (s *DBBooks) UpdateWorkspaceBook(ctx context.Context, ws books.Workspace, b *bookv1.Book) error {
	row, err := EncodeBook(ws, b, "")
	if err != nil {
		return err
	}
	_, err = s.st.UpdateWorkspaceBook(ctx, row)
	return fromStore(err)
}

// DeleteWorkspaceBook implements books.Store.
func (s *DBBooks) DeleteWorkspaceBook(ctx context.Context, ws books.Workspace, name, version string) error {
	return fromStore(s.st.DeleteWorkspaceBook(ctx, ws.OrganizationID, ws.WorkspaceID, name, version))
}

// DBConnections is a books.ConnectionStore in the database
// (store.BookConnections).
type DBConnections struct {
	st store.BookConnections
}

var _ books.ConnectionStore = (*DBConnections)(nil)

// NewDBConnections returns a books.ConnectionStore over st.
func NewDBConnections(st store.BookConnections) *DBConnections { return &DBConnections{st: st} }

func toConnectionRecord(c store.BookConnection) books.ConnectionRecord {
	return books.ConnectionRecord{Workspace: books.Workspace{OrganizationID: c.OrganizationID, WorkspaceID: c.WorkspaceID},
		ID: c.ID, BookName: c.BookName, BookVersion: c.BookVersion, Name: c.Name,
		Descriptor: c.Descriptor, Secret: c.Secret, CreateTime: c.CreateTime, UpdateTime: c.UpdateTime}
}

func fromConnectionRecord(r books.ConnectionRecord) store.BookConnection {
	return store.BookConnection{OrganizationID: r.Workspace.OrganizationID, WorkspaceID: r.Workspace.WorkspaceID,
		ID: r.ID, BookName: r.BookName, BookVersion: r.BookVersion, Name: r.Name,
		Descriptor: r.Descriptor, Secret: r.Secret, CreateTime: r.CreateTime, UpdateTime: r.UpdateTime}
}

// NewConnectionID makes a connection's id as the store makes its rows' ids.
func (s *DBConnections) NewConnectionID() string { return store.NewID() }

// CreateConnection implements books.ConnectionStore.
func (s *DBConnections) CreateConnection(ctx context.Context, r books.ConnectionRecord) (books.ConnectionRecord, error) {
	got, err := s.st.CreateBookConnection(ctx, fromConnectionRecord(r))
	if err != nil {
		return books.ConnectionRecord{}, fromStore(err)
	}
	return toConnectionRecord(got), nil
}

// GetConnection implements books.ConnectionStore.
func (s *DBConnections) GetConnection(ctx context.Context, ws books.Workspace, id string) (books.ConnectionRecord, error) {
	got, err := s.st.GetBookConnection(ctx, ws.OrganizationID, ws.WorkspaceID, id)
	if err != nil {
		return books.ConnectionRecord{}, fromStore(err)
	}
	return toConnectionRecord(got), nil
}

// ListConnections implements books.ConnectionStore.
func (s *DBConnections) ListConnections(ctx context.Context, ws books.Workspace) ([]books.ConnectionRecord, error) {
	rows, err := s.st.ListBookConnections(ctx, ws.OrganizationID, ws.WorkspaceID)
	if err != nil {
		return nil, fromStore(err)
	}
	out := make([]books.ConnectionRecord, len(rows))
	for i, r := range rows {
		out[i] = toConnectionRecord(r)
	}
	return out, nil
}

// UpdateConnection implements books.ConnectionStore.
func (s *DBConnections) UpdateConnection(ctx context.Context, r books.ConnectionRecord) (books.ConnectionRecord, error) {
	got, err := s.st.UpdateBookConnection(ctx, fromConnectionRecord(r))
	if err != nil {
		return books.ConnectionRecord{}, fromStore(err)
	}
	return toConnectionRecord(got), nil
}

// DeleteConnection implements books.ConnectionStore.
func (s *DBConnections) DeleteConnection(ctx context.Context, ws books.Workspace, id string) error {
	return fromStore(s.st.DeleteBookConnection(ctx, ws.OrganizationID, ws.WorkspaceID, id))
}

// RefreshConnection implements books.ConnectionStore. The errors of
// refresh come back as refresh gave them.
func (s *DBConnections) RefreshConnection(ctx context.Context, ws books.Workspace, id string,
	refresh func(ctx context.Context, r books.ConnectionRecord) (*books.ConnectionRecord, error)) (books.ConnectionRecord, error) {
	got, err := s.st.RefreshBookConnection(ctx, ws.OrganizationID, ws.WorkspaceID, id,
		func(ctx context.Context, c store.BookConnection) (*store.BookConnection, error) {
			next, err := refresh(ctx, toConnectionRecord(c))
			if err != nil || next == nil {
				return nil, err
			}
			row := fromConnectionRecord(*next)
			return &row, nil
		})
	if err != nil {
		return books.ConnectionRecord{}, fromStore(err)
	}
	return toConnectionRecord(got), nil
}

// RekeyConnections implements books.ConnectionStore. The errors of reseal
// come back as reseal gave them.
func (s *DBConnections) RekeyConnections(ctx context.Context, reseal func(r books.ConnectionRecord) ([]byte, bool, error)) (int, error) {
	n, err := s.st.RekeyBookConnections(ctx, func(c store.BookConnection) ([]byte, bool, error) {
		return reseal(toConnectionRecord(c))
	})
	return n, fromStore(err)
}

// backfillPage is how many unindexed books one step of BackfillCatalog
// reads.
const backfillPage = 100

// BackfillCatalog indexes the workspace books that have no catalog entries
// (registered before migration 00029, when the store could not decode their
// descriptors to index them), a page at a time, and returns how many it
// indexed. It is idempotent and safe beside other replicas doing the same or
// updating the books (store.IndexWorkspaceBook writes only while the book
// is unchanged and unindexed). A descriptor that does not decode is skipped
// and reported to skipped.
func (s *DBBooks) BackfillCatalog(ctx context.Context, skipped func(store.WorkspaceBook, error)) (int, error) {
	n := 0
	var after store.WorkspaceBookKey
	for {
		page, err := s.st.ListUnindexedWorkspaceBooks(ctx, after, backfillPage)
		if err != nil {
			return n, err
		}
		for _, row := range page {
			after = store.WorkspaceBookKey{OrganizationID: row.OrganizationID, WorkspaceID: row.WorkspaceID, Name: row.Name, Version: row.Version}
			b, err := decodeBook(row)
			if err != nil {
				skipped(row, err)
				continue
			}
			row.Catalog = toStoreEntries(books.CatalogEntries(b))
			wrote, err := s.st.IndexWorkspaceBook(ctx, row)
			if err != nil {
				return n, err
			}
			if wrote {
				n++
			}
		}
		if len(page) < backfillPage {
			return n, nil
		}
	}
}

// dbOnce is a books.OnceLedger in the store's idempotency records: the
// first process to record a key wins, whichever replica it is.
type dbOnce struct{ st store.Idempotency }

// UseOnce implements books.OnceLedger.
func (o dbOnce) UseOnce(ctx context.Context, org, kind, key string) (bool, error) {
	marker := store.NewID()
	got, err := o.st.RecordRequest(ctx, org, "once/"+kind, key, marker)
	if err != nil {
		return false, err
	}
	return got == marker, nil
}
