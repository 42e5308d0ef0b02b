package server

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"google.golang.org/grpc/codes"

	"github.com/proserun/prose/books"
	bookv1 "github.com/proserun/prose/gen/prose/book/v1"
	errorsv1 "github.com/proserun/prose/gen/prose/errors/v1"
	"github.com/proserun/prose/server/transport"
	"github.com/proserun/prose/store"
	"github.com/proserun/prose/store/pagination"
)

// Reasons of the connection service's errors.
const (
	ReasonConnectionNotFound      = errorsv1.ErrorReason_ERROR_REASON_CONNECTION_NOT_FOUND
	ReasonConnectionAlreadyExists = errorsv1.ErrorReason_ERROR_REASON_CONNECTION_ALREADY_EXISTS
	ReasonInvalidConnection       = errorsv1.ErrorReason_ERROR_REASON_INVALID_CONNECTION
	ReasonConnectionLimit         = errorsv1.ErrorReason_ERROR_REASON_CONNECTION_LIMIT_REACHED
	// ReasonWorkspaceLimit: a workspace has as many webhooks or trigger
	// instances as it may.
	ReasonWorkspaceLimit      = errorsv1.ErrorReason_ERROR_REASON_WORKSPACE_LIMIT_REACHED
	ReasonConnectionInUse     = errorsv1.ErrorReason_ERROR_REASON_CONNECTION_IN_USE
	ReasonConnectionSecretKey = errorsv1.ErrorReason_ERROR_REASON_CONNECTION_SECRET_KEY_MISSING
)

// ConnectionService serves prose.book.v1.ConnectionService over
// books.Connections. Credentials go in and never come out: every answer
// carries credential ids without values.
type ConnectionService struct {
	bookv1.UnimplementedConnectionServiceServer
	conns       *books.Connections
	automations store.Automations
}

// NewConnectionService returns the connection service; automations are
// read to refuse deleting a connection a published automation uses.
func NewConnectionService(conns *books.Connections, automations store.Automations) *ConnectionService {
	return &ConnectionService{conns: conns, automations: automations}
}

var _ bookv1.ConnectionServiceServer = (*ConnectionService)(nil)

func connectionResource(ws books.Workspace, id string) string {
	return ws.String() + "/connections/" + id
}

func connectionError(err error, ws books.Workspace, bookName, bookVersion, id string) error {
	switch {
	case errors.Is(err, books.ErrNotFound) && id == "":
		return bookError(err, bookName, bookVersion)
	case errors.Is(err, books.ErrNotFound):
		return transport.NotFound(ReasonConnectionNotFound, connectionResource(ws, id))
	case errors.Is(err, books.ErrAlreadyExists):
		return transport.NewError(codes.AlreadyExists, ReasonConnectionAlreadyExists, err.Error()).Err()
	case errors.Is(err, books.ErrInvalidArgument):
		return transport.InvalidArgument(ReasonInvalidConnection, err.Error())
	case errors.Is(err, books.ErrSecretKey):
		return transport.FailedPrecondition(ReasonConnectionSecretKey, err.Error(), map[string]string{"connection_id": id})
	case errors.Is(err, books.ErrResourceExhausted):
		return transport.ResourceExhausted(ReasonConnectionLimit, fmt.Sprintf("a workspace has at most %d connections", store.MaxConnectionsPerWorkspace))
	}
	return err
}

// AddWorkspaceBookConnection adds a connection to a book of the workspace.
func (s *ConnectionService) AddWorkspaceBookConnection(ctx context.Context, req *bookv1.AddWorkspaceBookConnectionRequest) (*bookv1.BookConnectionResponse, error) {
	ws, err := workspaceOf(req)
	if err != nil {
		return nil, err
	}
	if err := requireFields(map[string]string{"book_name": req.GetBookName(), "book_version": req.GetBookVersion(), "connection_name": req.GetConnectionName()}); err != nil {
		return nil, err
	}
	d, err := s.conns.Add(ctx, ws, req.GetBookName(), req.GetBookVersion(), books.ConnectionInput{
		Name: req.GetConnectionName(), Auth: req.GetAuthentication(), Config: req.GetConfigMap(), Labels: req.GetLabels()})
	if err != nil {
		return nil, connectionError(err, ws, req.GetBookName(), req.GetBookVersion(), "")
	}
	return &bookv1.BookConnectionResponse{BookConnectionDescriptor: d}, nil
}

// UpdateWorkspaceBookConnection replaces a connection's parts.
func (s *ConnectionService) UpdateWorkspaceBookConnection(ctx context.Context, req *bookv1.UpdateWorkspaceBookConnectionRequest) (*bookv1.BookConnectionResponse, error) {
	ws, err := workspaceOf(req)
	if err != nil {
		return nil, err
	}
	if err := requireFields(map[string]string{"book_name": req.GetBookName(), "book_version": req.GetBookVersion(), "connection_id": req.GetConnectionId()}); err != nil {
		return nil, err
	}
	d, err := s.conns.Update(ctx, ws, req.GetBookName(), req.GetBookVersion(), req.GetConnectionId(), books.ConnectionInput{
		Name: req.GetConnectionName(), Auth: req.GetAuthentication(), Config: req.GetConfigMap(), Labels: req.GetLabels()})
	if err != nil {
		return nil, connectionError(err, ws, req.GetBookName(), req.GetBookVersion(), req.GetConnectionId())
	}
	return &bookv1.BookConnectionResponse{BookConnectionDescriptor: d}, nil
}

// GetWorkspaceBookConnection returns one connection.
func (s *ConnectionService) GetWorkspaceBookConnection(ctx context.Context, req *bookv1.GetWorkspaceBookConnectionRequest) (*bookv1.GetWorkspaceBookConnectionResponse, error) {
	ws, err := workspaceOf(req)
	if err != nil {
		return nil, err
	}
	if err := requireFields(map[string]string{"connection_id": req.GetConnectionId()}); err != nil {
		return nil, err
	}
	d, err := s.conns.Get(ctx, ws, req.GetConnectionId())
	if err != nil {
		return nil, connectionError(err, ws, "", "", req.GetConnectionId())
	}
	return &bookv1.GetWorkspaceBookConnectionResponse{BookConnection: d}, nil
}

// ListWorkspaceBookConnections lists the connections of one book version.
func (s *ConnectionService) ListWorkspaceBookConnections(ctx context.Context, req *bookv1.ListWorkspaceBookConnectionsRequest) (*bookv1.ListWorkspaceBookConnectionsResponse, error) {
	ws, err := workspaceOf(req)
	if err != nil {
		return nil, err
	}
	if err := requireFields(map[string]string{"book_name": req.GetBookName(), "book_version": req.GetBookVersion()}); err != nil {
		return nil, err
	}
	all, err := s.conns.List(ctx, ws)
	if err != nil {
		return nil, err
	}
	all = slices.DeleteFunc(all, func(d *bookv1.BookConnectionDescriptor) bool {
		return d.GetBookName() != req.GetBookName() || d.GetBookVersion() != req.GetBookVersion()
	})
	page, next, err := pageConnections(all, req.GetPageSize(), req.GetPageToken(), "ListWorkspaceBookConnections",
		ws.String(), req.GetBookName(), req.GetBookVersion())
	if err != nil {
		return nil, err
	}
	return &bookv1.ListWorkspaceBookConnectionsResponse{BookConnections: page, NextPageToken: next}, nil
}

// ListAllWorkspaceBookConnections lists every connection of the workspace.
func (s *ConnectionService) ListAllWorkspaceBookConnections(ctx context.Context, req *bookv1.ListAllWorkspaceBookConnectionsRequest) (*bookv1.ListAllWorkspaceBookConnectionsResponse, error) {
	ws, err := workspaceOf(req)
	if err != nil {
		return nil, err
	}
	f, err := books.ParseConnectionFilter(req.GetFilter())
	if err != nil {
		return nil, transport.InvalidArgument(ReasonInvalidFilter, err.Error(), transport.Violation("filter", err.Error()))
	}
	all, err := s.conns.List(ctx, ws)
	if err != nil {
		return nil, err
	}
	all = slices.DeleteFunc(all, func(d *bookv1.BookConnectionDescriptor) bool { return !f.Match(d) })
	page, next, err := pageConnections(all, req.GetPageSize(), req.GetPageToken(), "ListAllWorkspaceBookConnections",
		ws.String(), req.GetFilter())
	if err != nil {
		return nil, err
	}
	return &bookv1.ListAllWorkspaceBookConnectionsResponse{BookConnections: page, NextPageToken: next}, nil
}

// pageConnections cuts one page of connections ordered by id; the token
// carries the last id and is bound to the request.
func pageConnections(all []*bookv1.BookConnectionDescriptor, size int32, token string, binding ...string) ([]*bookv1.BookConnectionDescriptor, string, error) {
	n, err := pagination.PageSize(size)
	if err != nil {
		return nil, "", transport.InvalidArgument(ReasonInvalidPageSize, "page_size must not be negative", transport.Violation("page_size", "must not be negative"))
	}
	bind := pagination.Bind(binding...)
	keys, err := pagination.Decode(token, bind, 1)
	if err != nil {
		return nil, "", transport.InvalidArgument(ReasonInvalidPageToken, "page_token is not valid for this request",
			transport.Violation("page_token", "is malformed or was issued for other parameters"))
	}
	var page []*bookv1.BookConnectionDescriptor
	for _, d := range all {
		if keys != nil && d.GetConnectionId() <= keys[0] {
			continue
		}
		if len(page) == n {
			return page, pagination.Encode(bind, []string{page[len(page)-1].GetConnectionId()}), nil
		}
		page = append(page, d)
	}
	return page, "", nil
}

// DeleteWorkspaceConnection deletes a connection unless a published
// automation names it (`the connection is "NAME"`, see
// books.CodeConnections); drafts that name it are listed.
func (s *ConnectionService) DeleteWorkspaceConnection(ctx context.Context, req *bookv1.DeleteWorkspaceConnectionRequest) (*bookv1.DeleteWorkspaceConnectionResponse, error) {
	ws, err := workspaceOf(req)
	if err != nil {
		return nil, err
	}
	if err := requireFields(map[string]string{"connection_id": req.GetConnectionId()}); err != nil {
		return nil, err
	}
	d, err := s.conns.Get(ctx, ws, req.GetConnectionId())
	if err != nil {
		return nil, connectionError(err, ws, "", "", req.GetConnectionId())
	}
	uses := func(code string) bool {
		names := books.CodeConnections(code)
		return slices.Contains(names, d.GetConnectionName()) || slices.Contains(names, d.GetConnectionId())
	}
	var affected []*bookv1.AffectedAutomation
	var blocking []string
	token := ""
	for {
		page, err := s.automations.ListAutomations(ctx, store.ListAutomationsRequest{
			OrganizationID: ws.OrganizationID, WorkspaceID: ws.WorkspaceID, PageSize: 1000, PageToken: token})
		if err != nil {
			return nil, err
		}
		for _, a := range page.Items {
			if a.PublishedVersion > 0 && uses(a.PublishedCode) {
				blocking = append(blocking, a.ID)
			} else if uses(a.Code) {
				affected = append(affected, &bookv1.AffectedAutomation{AutomationId: a.ID, DisplayName: a.DisplayName})
			}
		}
		if token = page.NextPageToken; token == "" {
			break
		}
	}
	if len(blocking) > 0 {
		return nil, transport.FailedPrecondition(ReasonConnectionInUse,
			fmt.Sprintf("the connection %q is used by published automations: %s", d.GetConnectionName(), strings.Join(blocking, ", ")),
			map[string]string{"blocking_automations": strings.Join(blocking, ",")})
	}
	if err := s.conns.Delete(ctx, ws, req.GetConnectionId()); err != nil {
		return nil, connectionError(err, ws, "", "", req.GetConnectionId())
	}
	return &bookv1.DeleteWorkspaceConnectionResponse{AffectedAutomations: affected}, nil
}
