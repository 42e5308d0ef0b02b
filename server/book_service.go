package server

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/emptypb"

	bookv1 "github.com/proserun/prose/gen/prose/book/v1"
	"github.com/proserun/prose/internal/books"
	"github.com/proserun/prose/server/transport"
	"github.com/proserun/prose/server/transport/requestid"
	"github.com/proserun/prose/store/pagination"
)

// BookService serves prose.book.v1.BookService over a books.Registry: the
// built-in books for everyone, and the books registered in each workspace.
// Whether the caller may see or change a workspace is the auth interceptor's
// concern, not this handler's.
type BookService struct {
	bookv1.UnimplementedBookServiceServer
	reg *books.Registry
	// Workspaces, when set, makes the workspace lists and searches of an
	// unknown workspace NOT_FOUND.
	Workspaces WorkspaceGetter
}

// NewBookService returns the book service over reg.
func NewBookService(reg *books.Registry) *BookService { return &BookService{reg: reg} }

var _ bookv1.BookServiceServer = (*BookService)(nil)

// ListBooks lists every version of every built-in book.
func (s *BookService) ListBooks(_ context.Context, req *bookv1.ListBooksRequest) (*bookv1.ListBooksResponse, error) {
	page, next, err := paginate(s.reg.Books(), req.GetPageSize(), req.GetPageToken(), req.GetFilter(), "ListBooks")
	if err != nil {
		return nil, err
	}
	return &bookv1.ListBooksResponse{Books: page, NextPageToken: next}, nil
}

// ListLatestBooks lists the latest version of every built-in book.
func (s *BookService) ListLatestBooks(_ context.Context, req *bookv1.ListLatestBooksRequest) (*bookv1.ListLatestBooksResponse, error) {
	page, next, err := paginate(books.Latest(s.reg.Books()), req.GetPageSize(), req.GetPageToken(), req.GetFilter(), "ListLatestBooks")
	if err != nil {
		return nil, err
	}
	return &bookv1.ListLatestBooksResponse{Books: page, NextPageToken: next}, nil
}

// book loads the version of a book a request names, as the workspace ws
// sees it (the zero Workspace: the built-in books only): the name and
// version are required, and an absent book is NOT_FOUND.
func (s *BookService) book(ctx context.Context, ws books.Workspace, req interface {
	GetName() string
	GetVersion() string
}) (*bookv1.Book, error) {
	if err := requireFields(map[string]string{"name": req.GetName(), "version": req.GetVersion()}); err != nil {
		return nil, err
	}
	b, err := s.reg.Book(ctx, ws, req.GetName(), req.GetVersion())
	if err != nil {
		return nil, bookError(err, req.GetName(), req.GetVersion())
	}
	return b, nil
}

// GetBook returns one version of a built-in book.
func (s *BookService) GetBook(ctx context.Context, req *bookv1.GetBookRequest) (*bookv1.GetBookResponse, error) {
	b, err := s.book(ctx, books.Workspace{}, req)
	if err != nil {
		return nil, err
	}
	return &bookv1.GetBookResponse{Book: b}, nil
}

// ListBookProcedures returns the procedures of one version of a built-in book.
func (s *BookService) ListBookProcedures(ctx context.Context, req *bookv1.ListBookProceduresRequest) (*bookv1.ListBookProceduresResponse, error) {
	b, err := s.book(ctx, books.Workspace{}, req)
	if err != nil {
		return nil, err
	}
	return &bookv1.ListBookProceduresResponse{Procedures: b.GetProcedures()}, nil
}

// ListBookVersions returns the versions of a built-in book, oldest first.
func (s *BookService) ListBookVersions(_ context.Context, req *bookv1.ListBookVersionsRequest) (*bookv1.ListBookVersionsResponse, error) {
	if err := requireFields(map[string]string{"name": req.GetName()}); err != nil {
		return nil, err
	}
	vs, err := s.reg.Versions(req.GetName())
	if err != nil {
		return nil, transport.NotFound(ReasonBookNotFound, "books/"+req.GetName())
	}
	return &bookv1.ListBookVersionsResponse{Versions: vs}, nil
}

// ListBookConcepts returns the concepts of one version of a built-in book.
func (s *BookService) ListBookConcepts(ctx context.Context, req *bookv1.ListBookConceptsRequest) (*bookv1.ListBookConceptsResponse, error) {
	b, err := s.book(ctx, books.Workspace{}, req)
	if err != nil {
		return nil, err
	}
	return &bookv1.ListBookConceptsResponse{Concepts: books.Concepts(b)}, nil
}

// ListWorkspaceBookConcepts returns the concepts of a book the workspace
// sees (built in or registered there).
func (s *BookService) ListWorkspaceBookConcepts(ctx context.Context, req *bookv1.ListWorkspaceBookConceptsRequest) (*bookv1.ListWorkspaceBookConceptsResponse, error) {
	ws, err := workspaceOf(req)
	if err != nil {
		return nil, err
	}
	b, err := s.book(ctx, ws, req)
	if err != nil {
		return nil, err
	}
	return &bookv1.ListWorkspaceBookConceptsResponse{Concepts: books.Concepts(b)}, nil
}

// ListTags returns the tags used across the built-in books.
func (s *BookService) ListTags(context.Context, *bookv1.ListTagsRequest) (*bookv1.ListTagsResponse, error) {
	return &bookv1.ListTagsResponse{Tags: s.reg.Tags()}, nil
}

// ListWorkspaceBooks lists the built-in books and the workspace's books.
func (s *BookService) ListWorkspaceBooks(ctx context.Context, req *bookv1.ListWorkspaceBooksRequest) (*bookv1.ListWorkspaceBooksResponse, error) {
	ws, err := workspaceOf(req)
	if err != nil {
		return nil, err
	}
	if err := knownWorkspace(ctx, s.Workspaces, ws); err != nil {
		return nil, err
	}
	all, err := s.reg.WorkspaceBooks(ctx, ws)
	if err != nil {
		return nil, err
	}
	page, next, err := paginate(all, req.GetPageSize(), req.GetPageToken(), req.GetFilter(), "ListWorkspaceBooks", ws.OrganizationID, ws.WorkspaceID)
	if err != nil {
		return nil, err
	}
	return &bookv1.ListWorkspaceBooksResponse{Books: page, NextPageToken: next}, nil
}

// ListWorkspaceBookProcedures returns the procedures of a book the workspace
// sees (built in or registered there).
func (s *BookService) ListWorkspaceBookProcedures(ctx context.Context, req *bookv1.ListWorkspaceBookProceduresRequest) (*bookv1.ListWorkspaceBookProceduresResponse, error) {
	ws, err := workspaceOf(req)
	if err != nil {
		return nil, err
	}
	b, err := s.book(ctx, ws, req)
	if err != nil {
		return nil, err
	}
	return &bookv1.ListWorkspaceBookProceduresResponse{Procedures: b.GetProcedures()}, nil
}

// CreateWorkspaceBook registers an external book in a workspace.
func (s *BookService) CreateWorkspaceBook(ctx context.Context, req *bookv1.CreateWorkspaceBookRequest) (*bookv1.Book, error) {
	ws, err := workspaceOf(req)
	if err != nil {
		return nil, err
	}
	b := req.GetBook()
	if err := requireFields(map[string]string{
		"book.name": b.GetName(), "book.version": b.GetVersion(), "book.endpoint": b.GetEndpoint(),
	}); err != nil {
		return nil, err
	}
	if id := req.GetRequestId(); id != "" && !requestid.Valid(id) {
		return nil, transport.InvalidArgument(transport.ReasonInvalidRequest, "request_id is not valid", transport.Violation("request_id", "must be a valid request id"))
	}
	created, err := s.reg.Register(ctx, ws, b, req.GetRequestId())
	if err != nil {
		return nil, bookError(err, b.GetName(), b.GetVersion())
	}
	return created, nil
}

// UpdateWorkspaceBook changes a book registered in a workspace. The
// update_mask lists top-level Book fields; without it, every field the
// request's book sets is taken. The name and version cannot change.
func (s *BookService) UpdateWorkspaceBook(ctx context.Context, req *bookv1.UpdateWorkspaceBookRequest) (*bookv1.Book, error) {
	ws, err := workspaceOf(req)
	if err != nil {
		return nil, err
	}
	if err := requireFields(map[string]string{"name": req.GetName(), "version": req.GetVersion()}); err != nil {
		return nil, err
	}
	if req.GetBook() == nil {
		return nil, transport.InvalidArgument(transport.ReasonRequiredFieldMissing, "book is required", transport.Violation("book", "is required"))
	}
	in := req.GetBook()
	if (in.GetName() != "" && in.GetName() != req.GetName()) || (in.GetVersion() != "" && in.GetVersion() != req.GetVersion()) {
		return nil, transport.InvalidArgument(ReasonInvalidBook, "the name and version of a book cannot change",
			transport.Violation("book.name", "must be empty or equal name"), transport.Violation("book.version", "must be empty or equal version"))
	}
	if s.reg.IsBuiltin(req.GetName(), req.GetVersion()) {
		return nil, transport.FailedPrecondition(ReasonBuiltinBookChanged, fmt.Sprintf("book %s version %s is built in and cannot be changed", req.GetName(), req.GetVersion()), nil)
	}
	cur, err := s.reg.Book(ctx, ws, req.GetName(), req.GetVersion())
	if err != nil {
		return nil, bookError(err, req.GetName(), req.GetVersion())
	}
	if err := applyMask(cur, in, req.GetUpdateMask().GetPaths()); err != nil {
		return nil, err
	}
	cur.Name, cur.Version = req.GetName(), req.GetVersion()
	if err := s.reg.Update(ctx, ws, cur); err != nil {
		return nil, bookError(err, req.GetName(), req.GetVersion())
	}
	return cur, nil
}

// DeleteWorkspaceBook removes a book registered in a workspace.
func (s *BookService) DeleteWorkspaceBook(ctx context.Context, req *bookv1.DeleteWorkspaceBookRequest) (*emptypb.Empty, error) {
	ws, err := workspaceOf(req)
	if err != nil {
		return nil, err
	}
	if err := requireFields(map[string]string{"name": req.GetName(), "version": req.GetVersion()}); err != nil {
		return nil, err
	}
	if s.reg.IsBuiltin(req.GetName(), req.GetVersion()) {
		return nil, transport.FailedPrecondition(ReasonBuiltinBookChanged, fmt.Sprintf("book %s version %s is built in and cannot be deleted", req.GetName(), req.GetVersion()), nil)
	}
	err = s.reg.Unregister(ctx, ws, req.GetName(), req.GetVersion())
	if errors.Is(err, books.ErrNotFound) && req.GetAllowMissing() {
		err = nil
	}
	if err != nil {
		return nil, bookError(err, req.GetName(), req.GetVersion())
	}
	return &emptypb.Empty{}, nil
}

type workspaceRequest interface {
	GetOrganizationId() string
	GetWorkspaceId() string
}

func workspaceOf(req workspaceRequest) (books.Workspace, error) {
	if err := requireFields(map[string]string{"organization_id": req.GetOrganizationId(), "workspace_id": req.GetWorkspaceId()}); err != nil {
		return books.Workspace{}, err
	}
	return books.Workspace{OrganizationID: req.GetOrganizationId(), WorkspaceID: req.GetWorkspaceId()}, nil
}

// requireFields reports every empty field (by proto path) as one
// INVALID_ARGUMENT with a violation each, in a stable order.
func requireFields(fields map[string]string) error {
	var missing []string
	for f, v := range fields {
		if v == "" {
			missing = append(missing, f)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	slices.Sort(missing)
	vs := make([]*transport.FieldViolation, len(missing))
	for i, f := range missing {
		vs[i] = transport.Violation(f, "is required")
	}
	return transport.InvalidArgument(transport.ReasonRequiredFieldMissing, strings.Join(missing, ", ")+" required", vs...)
}

// bookError maps registry errors to AIP-193 statuses.
func bookError(err error, name, version string) error {
	resource := "books/" + name + "/versions/" + version
	switch {
	case errors.Is(err, books.ErrNotFound):
		return transport.NotFound(ReasonBookNotFound, resource)
	case errors.Is(err, books.ErrAlreadyExists):
		return transport.AlreadyExists(ReasonBookAlreadyExists, resource)
	case errors.Is(err, books.ErrInvalidArgument):
		return transport.NewError(codes.InvalidArgument, ReasonInvalidBook, err.Error()).Meta("resource_name", resource).Err()
	}
	return err
}

// paginate filters books (already in Compare order) and cuts one page. The
// page token carries the name and version of the page's last book and is
// bound to the method, the parent and the filter.
func paginate(all []*bookv1.Book, size int32, token, filter string, binding ...string) ([]*bookv1.Book, string, error) {
	n, err := pagination.PageSize(size)
	if err != nil {
		return nil, "", transport.InvalidArgument(ReasonInvalidPageSize, "page_size must not be negative",
			transport.Violation("page_size", "must not be negative"))
	}
	f, err := books.ParseFilter(filter)
	if err != nil {
		return nil, "", transport.InvalidArgument(ReasonInvalidFilter, err.Error(), transport.Violation("filter", err.Error()))
	}
	bind := pagination.Bind(append(binding, filter)...)
	keys, err := pagination.Decode(token, bind, 2)
	if err != nil {
		return nil, "", transport.InvalidArgument(ReasonInvalidPageToken, "page_token is not valid for this request",
			transport.Violation("page_token", "is malformed or was issued for other parameters"))
	}
	var after *bookv1.Book
	if keys != nil {
		after = &bookv1.Book{Name: keys[0], Version: keys[1]}
	}
	var page []*bookv1.Book
	for _, b := range all {
		if after != nil && books.Compare(b, after) <= 0 {
			continue
		}
		if !f.Match(b) {
			continue
		}
		if len(page) == n {
			last := page[len(page)-1]
			return page, pagination.Encode(bind, []string{last.GetName(), last.GetVersion()}), nil
		}
		page = append(page, b)
	}
	return page, "", nil
}

// applyMask copies the fields named by paths (top-level Book fields) from src
// to dst; with no paths, every field src sets. "*" replaces every field.
func applyMask(dst, src *bookv1.Book, paths []string) error {
	md := dst.ProtoReflect().Descriptor()
	sr, dr := src.ProtoReflect(), dst.ProtoReflect()
	if len(paths) == 0 {
		sr.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
			dr.Set(fd, v)
			return true
		})
		return nil
	}
	for _, p := range paths {
		if p == "*" {
			proto.Reset(dst)
			proto.Merge(dst, src)
			return nil
		}
		fd := md.Fields().ByName(protoreflect.Name(p))
		if fd == nil || strings.Contains(p, ".") {
			return transport.InvalidArgument(ReasonInvalidUpdateMask, fmt.Sprintf("update_mask path %q is not a field of Book", p),
				transport.Violation("update_mask", fmt.Sprintf("%q is not a top-level field of Book", p)))
		}
		if p == "name" || p == "version" {
			continue // identity; checked by the caller
		}
		if sr.Has(fd) {
			dr.Set(fd, sr.Get(fd))
		} else {
			dr.Clear(fd)
		}
	}
	return nil
}
