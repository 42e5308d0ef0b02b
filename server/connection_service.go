package server

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"google.golang.org/grpc/codes"

	bookv1 "github.com/proserun/prose/gen/prose/book/v1"
	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/internal/books"
	"github.com/proserun/prose/internal/names"
	"github.com/proserun/prose/server/transport"
	"github.com/proserun/prose/store"
	"github.com/proserun/prose/store/pagination"
)

// ConnectionService serves prose.book.v1.ConnectionService over
// books.Connections. Credentials go in and never come out: every answer
// carries credential ids without values.
type ConnectionService struct {
	bookv1.UnimplementedConnectionServiceServer
	conns       *books.Connections
	automations store.Automations
	// PublicURL is the server's public origin, for OAuth redirects.
	PublicURL string
	// Workspaces, when set, makes the lists of an unknown workspace NOT_FOUND.
	Workspaces WorkspaceGetter
	// Triggers, when set, keeps a connection with trigger instances from
	// being deleted.
	Triggers interface {
		ListTriggerInstances(ctx context.Context, organizationID, workspaceID string, f store.Filter) ([]store.TriggerInstance, error)
	}
}

// NewConnectionService returns the connection service; automations are
// read to refuse deleting a connection a published automation uses.
func NewConnectionService(conns *books.Connections, automations store.Automations) *ConnectionService {
	return &ConnectionService{conns: conns, automations: automations}
}

var _ bookv1.ConnectionServiceServer = (*ConnectionService)(nil)

// workspace reads the request's workspace: INVALID_ARGUMENT without one,
// NOT_FOUND when it does not exist (with Workspaces set).
func (s *ConnectionService) workspace(ctx context.Context, req workspaceRequest) (books.Workspace, error) {
	ws, err := workspaceOf(req)
	if err != nil {
		return ws, err
	}
	return ws, knownWorkspace(ctx, s.Workspaces, ws)
}

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
	ws, err := s.workspace(ctx, req)
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
	ws, err := s.workspace(ctx, req)
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
	ws, err := s.workspace(ctx, req)
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
	ws, err := s.workspace(ctx, req)
	if err != nil {
		return nil, err
	}
	if err := requireFields(map[string]string{"book_name": req.GetBookName(), "book_version": req.GetBookVersion()}); err != nil {
		return nil, err
	}
	if _, err := s.conns.BookVersion(ctx, ws, req.GetBookName(), req.GetBookVersion()); err != nil {
		return nil, connectionError(err, ws, req.GetBookName(), req.GetBookVersion(), "")
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
	ws, err := s.workspace(ctx, req)
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
// books.CodeConnections) or a trigger instance is made on it; drafts that
// name it are listed.
func (s *ConnectionService) DeleteWorkspaceConnection(ctx context.Context, req *bookv1.DeleteWorkspaceConnectionRequest) (*bookv1.DeleteWorkspaceConnectionResponse, error) {
	ws, err := s.workspace(ctx, req)
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
	if err := s.triggerInstancesOn(ctx, ws, d); err != nil {
		return nil, err
	}
	if err := s.conns.Delete(ctx, ws, req.GetConnectionId()); err != nil {
		return nil, connectionError(err, ws, "", "", req.GetConnectionId())
	}
	return &bookv1.DeleteWorkspaceConnectionResponse{AffectedAutomations: affected}, nil
}

// triggerInstancesOn refuses deleting connection d while trigger instances
// are made on it (FAILED_PRECONDITION CONNECTION_IN_USE naming them): they
// would name a connection that no longer exists. Delete them first.
func (s *ConnectionService) triggerInstancesOn(ctx context.Context, ws books.Workspace, d *bookv1.BookConnectionDescriptor) error {
	if s.Triggers == nil {
		return nil
	}
	list, err := s.Triggers.ListTriggerInstances(ctx, ws.OrganizationID, ws.WorkspaceID,
		store.Cond{Field: "connection_id", Op: store.OpEq, Value: d.GetConnectionId()})
	if err != nil || len(list) == 0 {
		return err
	}
	ids := make([]string, len(list))
	for i, t := range list {
		ids[i] = t.ID
	}
	return transport.FailedPrecondition(ReasonConnectionInUse,
		fmt.Sprintf("the connection %q has trigger instances: %s (delete them first)", d.GetConnectionName(), strings.Join(ids, ", ")),
		map[string]string{"trigger_instances": strings.Join(ids, ",")})
}

// MaxConnectionUsageIDs bounds the connection ids of one CountConnectionUsage.
const MaxConnectionUsageIDs = 100

// UpgradeWorkspaceBookConnection moves a connection to another version of
// its book.
func (s *ConnectionService) UpgradeWorkspaceBookConnection(ctx context.Context, req *bookv1.UpgradeWorkspaceBookConnectionRequest) (*bookv1.BookConnectionResponse, error) {
	ws, err := s.workspace(ctx, req)
	if err != nil {
		return nil, err
	}
	if err := requireFields(map[string]string{"book_name": req.GetBookName(), "book_version": req.GetBookVersion(),
		"connection_id": req.GetConnectionId(), "new_book_version": req.GetNewBookVersion()}); err != nil {
		return nil, err
	}
	cur, err := s.conns.Get(ctx, ws, req.GetConnectionId())
	if err == nil && (cur.GetBookName() != req.GetBookName() || cur.GetBookVersion() != req.GetBookVersion()) {
		err = books.ErrNotFound
	}
	if err != nil {
		return nil, connectionError(err, ws, "", "", req.GetConnectionId())
	}
	d, err := s.conns.Upgrade(ctx, ws, req.GetBookName(), req.GetBookVersion(), req.GetConnectionId(), req.GetNewBookVersion())
	if errors.Is(err, books.ErrNotFound) {
		// The connection was just read: what is missing is the new version.
		return nil, bookError(err, req.GetBookName(), req.GetNewBookVersion())
	}
	if err != nil {
		return nil, connectionError(err, ws, req.GetBookName(), req.GetBookVersion(), req.GetConnectionId())
	}
	return &bookv1.BookConnectionResponse{BookConnectionDescriptor: d}, nil
}

// ListWorkspaceBookConnectionProcedures lists the procedures of the
// connection's book version.
func (s *ConnectionService) ListWorkspaceBookConnectionProcedures(ctx context.Context, req *bookv1.ListWorkspaceBookConnectionProceduresRequest) (*bookv1.ListWorkspaceBookConnectionProceduresResponse, error) {
	ws, err := s.workspace(ctx, req)
	if err != nil {
		return nil, err
	}
	if err := requireFields(map[string]string{"connection_id": req.GetConnectionId()}); err != nil {
		return nil, err
	}
	b, err := s.conns.Book(ctx, ws, req.GetConnectionId())
	if err != nil {
		return nil, connectionError(err, ws, "", "", req.GetConnectionId())
	}
	return &bookv1.ListWorkspaceBookConnectionProceduresResponse{Procedures: b.GetProcedures()}, nil
}

// GetWorkspaceBookConnectionUserInfo tells who a connection acts as.
func (s *ConnectionService) GetWorkspaceBookConnectionUserInfo(ctx context.Context, req *bookv1.GetWorkspaceBookConnectionUserInfoRequest) (*bookv1.GetWorkspaceBookConnectionUserInfoResponse, error) {
	ws, err := s.workspace(ctx, req)
	if err != nil {
		return nil, err
	}
	if err := requireFields(map[string]string{"connection_id": req.GetConnectionId()}); err != nil {
		return nil, err
	}
	u, err := s.conns.UserInfo(ctx, ws, req.GetConnectionId())
	if err != nil {
		return nil, connectionError(err, ws, "", "", req.GetConnectionId())
	}
	return &bookv1.GetWorkspaceBookConnectionUserInfoResponse{UserInfo: &bookv1.ConnectionUserInfo{
		Email: u.Email, Username: u.Username, OtherAttributes: u.Other}}, nil
}

// CheckWorkspaceBookConnection checks a connection against its system
// (an extension; see books.Connections.Check).
func (s *ConnectionService) CheckWorkspaceBookConnection(ctx context.Context, req *bookv1.CheckWorkspaceBookConnectionRequest) (*bookv1.CheckWorkspaceBookConnectionResponse, error) {
	ws, err := s.workspace(ctx, req)
	if err != nil {
		return nil, err
	}
	if err := requireFields(map[string]string{"connection_id": req.GetConnectionId()}); err != nil {
		return nil, err
	}
	c, err := s.conns.Check(ctx, ws, req.GetConnectionId())
	if err != nil {
		return nil, connectionError(err, ws, "", "", req.GetConnectionId())
	}
	return &bookv1.CheckWorkspaceBookConnectionResponse{Checked: c.Checked, Reached: c.Reached, Problem: c.Problem, Details: c.Details}, nil
}

// usage is where one connection is named: by automation id, the stages.
type usage map[string][]platformv1.AutomationStage

// connectionUsage reads every automation of ws once and returns, for each
// connection of ds, the automations whose draft or published code names it
// (by name or id).
func (s *ConnectionService) connectionUsage(ctx context.Context, ws books.Workspace, ds []*bookv1.BookConnectionDescriptor) ([]usage, error) {
	out := make([]usage, len(ds))
	for i := range out {
		out[i] = usage{}
	}
	names := func(d *bookv1.BookConnectionDescriptor, code string) bool {
		n := books.CodeConnections(code)
		return slices.Contains(n, d.GetConnectionName()) || slices.Contains(n, d.GetConnectionId())
	}
	token := ""
	for {
		page, err := s.automations.ListAutomations(ctx, store.ListAutomationsRequest{
			OrganizationID: ws.OrganizationID, WorkspaceID: ws.WorkspaceID, PageSize: 1000, PageToken: token})
		if err != nil {
			return nil, err
		}
		for _, a := range page.Items {
			for i, d := range ds {
				if names(d, a.Code) {
					out[i][a.ID] = append(out[i][a.ID], platformv1.AutomationStage_AUTOMATION_STAGE_DRAFT)
				}
				if a.PublishedVersion > 0 && names(d, a.PublishedCode) {
					out[i][a.ID] = append(out[i][a.ID], platformv1.AutomationStage_AUTOMATION_STAGE_PUBLISHED)
				}
			}
		}
		if token = page.NextPageToken; token == "" {
			return out, nil
		}
	}
}

// CountConnectionUsage counts the automations that name each connection.
func (s *ConnectionService) CountConnectionUsage(ctx context.Context, req *bookv1.CountConnectionUsageRequest) (*bookv1.CountConnectionUsageResponse, error) {
	ws, err := s.workspace(ctx, req)
	if err != nil {
		return nil, err
	}
	ids := req.GetConnectionIds()
	if len(ids) == 0 {
		return nil, transport.InvalidArgument(transport.ReasonRequiredFieldMissing, "connection_ids is required", transport.Violation("connection_ids", "is required"))
	}
	if len(ids) > MaxConnectionUsageIDs {
		msg := fmt.Sprintf("at most %d connection ids per request, not %d", MaxConnectionUsageIDs, len(ids))
		return nil, transport.InvalidArgument(transport.ReasonInvalidRequest, msg, transport.Violation("connection_ids", msg))
	}
	ds := make([]*bookv1.BookConnectionDescriptor, len(ids))
	for i, id := range ids {
		if ds[i], err = s.conns.Get(ctx, ws, id); err != nil {
			return nil, connectionError(err, ws, "", "", id)
		}
	}
	us, err := s.connectionUsage(ctx, ws, ds)
	if err != nil {
		return nil, err
	}
	out := &bookv1.CountConnectionUsageResponse{}
	for i, id := range ids {
		out.ConnectionCounts = append(out.ConnectionCounts, &bookv1.ConnectionAutomationCount{ConnectionId: id, Count: int32(len(us[i]))}) //nolint:gosec // at most the automations of a workspace
	}
	return out, nil
}

// TraceConnectionUsage lists the automations that name a connection.
func (s *ConnectionService) TraceConnectionUsage(ctx context.Context, req *bookv1.TraceConnectionUsageRequest) (*bookv1.TraceConnectionUsageResponse, error) {
	ws, err := s.workspace(ctx, req)
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
	us, err := s.connectionUsage(ctx, ws, []*bookv1.BookConnectionDescriptor{d})
	if err != nil {
		return nil, err
	}
	out := &bookv1.TraceConnectionUsageResponse{}
	for _, id := range slices.Sorted(maps.Keys(us[0])) {
		out.Automations = append(out.Automations, &bookv1.AutomationConnectionUsage{AutomationId: id, Stages: us[0][id]})
	}
	return out, nil
}

// ExtractAutomationCodeConnections lists the connections an automation's
// draft code names, each with the book of the call that names it (the
// connection's book when the workspace has a connection of that name or id).
func (s *ConnectionService) ExtractAutomationCodeConnections(ctx context.Context, req *bookv1.ExtractAutomationCodeConnectionsRequest) (*bookv1.ExtractAutomationCodeConnectionsResponse, error) {
	ws, err := s.workspace(ctx, req)
	if err != nil {
		return nil, err
	}
	if err := requireFields(map[string]string{"automation_id": req.GetAutomationId()}); err != nil {
		return nil, err
	}
	published, err := extractStage(req.GetFilter())
	if err != nil {
		return nil, err
	}
	a, err := s.automations.GetAutomation(ctx, ws.OrganizationID, ws.WorkspaceID, req.GetAutomationId())
	if err == nil && !a.DeleteTime.IsZero() {
		err = store.ErrNotFound
	}
	if err != nil {
		return nil, automationErr(err, ws.OrganizationID, ws.WorkspaceID, req.GetAutomationId())
	}
	code := a.Code
	if published {
		if a.PublishedVersion == 0 {
			return nil, transport.FailedPrecondition(ReasonAutomationNotPublished, "the automation was never published",
				map[string]string{"resource_name": names.Automation(ws.OrganizationID, ws.WorkspaceID, a.ID)})
		}
		code = a.PublishedCode
	}
	all, err := s.conns.List(ctx, ws)
	if err != nil {
		return nil, err
	}
	out := &bookv1.ExtractAutomationCodeConnectionsResponse{}
	for _, u := range books.CodeConnectionUses(code) {
		ci := &bookv1.CredentialInfo{ConnectionAlias: u.Name, PhaseType: platformv1.PhaseType_PHASE_TYPE_MAIN}
		if i := slices.IndexFunc(all, func(d *bookv1.BookConnectionDescriptor) bool { return d.GetConnectionName() == u.Name }); i >= 0 {
			ci.Book, ci.BookVersion, ci.ConnectionId = all[i].GetBookName(), all[i].GetBookVersion(), all[i].GetConnectionId()
		} else if i := slices.IndexFunc(all, func(d *bookv1.BookConnectionDescriptor) bool { return d.GetConnectionId() == u.Name }); i >= 0 {
			ci.Book, ci.BookVersion, ci.ConnectionId = all[i].GetBookName(), all[i].GetBookVersion(), all[i].GetConnectionId()
		} else if name, version, ok := s.conns.CallBook(ctx, ws, u.Call); ok {
			ci.Book, ci.BookVersion = name, version
		}
		out.Connections = append(out.Connections, ci)
	}
	return out, nil
}

var stageFilter = regexp.MustCompile(`^\s*stage\s*=\s*"([A-Z_]+)"\s*$`)

// extractStage reads ExtractAutomationCodeConnections' filter: empty or
// `stage = "DRAFT"` reads the draft, `stage = "PUBLISHED"` the published
// stage (the AUTOMATION_STAGE_ names are accepted too).
func extractStage(filter string) (published bool, err error) {
	if strings.TrimSpace(filter) == "" {
		return false, nil
	}
	m := stageFilter.FindStringSubmatch(filter)
	if m != nil {
		switch strings.TrimPrefix(m[1], "AUTOMATION_STAGE_") {
		case "DRAFT":
			return false, nil
		case "PUBLISHED":
			return true, nil
		}
	}
	const msg = `the filter takes one field, stage: stage = "DRAFT" or stage = "PUBLISHED"`
	return false, transport.InvalidArgument(ReasonInvalidFilter, msg, transport.Violation("filter", msg))
}

// editDraftConnections applies edit to an automation's draft (its
// `connections` map, in a, and its code) and stores the result as one new
// draft version.
func (s *ConnectionService) editDraftConnections(ctx context.Context, ws books.Workspace, id string,
	edit func(a *platformv1.Automation, code string) (string, error)) (*bookv1.AutomationConnectionsResponse, error) {
	org, wsID := ws.OrganizationID, ws.WorkspaceID
	cur, err := s.automations.GetAutomation(ctx, org, wsID, id)
	if err == nil && !cur.DeleteTime.IsZero() {
		err = store.ErrNotFound
	}
	if err != nil {
		return nil, automationErr(err, org, wsID, id)
	}
	merged, err := automationProto(cur, store.StageDraft)
	if err != nil {
		return nil, err
	}
	if merged.Connections == nil {
		merged.Connections = map[string]*platformv1.BookConnection{}
	}
	code, err := edit(merged, cur.Code)
	if err != nil {
		return nil, err
	}
	upd := store.Automation{OrganizationID: org, WorkspaceID: wsID, ID: id, Code: code, UpdateUserID: callerID(ctx)}
	if upd.Details, err = detailsOf(merged); err != nil {
		return nil, err
	}
	a, err := s.automations.UpdateAutomation(ctx, upd, []string{"code", "details"})
	if err != nil {
		return nil, automationErr(err, org, wsID, id)
	}
	out, err := automationProto(a, store.StageDraft)
	if err != nil {
		return nil, err
	}
	return &bookv1.AutomationConnectionsResponse{Automation: out}, nil
}

func listViolation(field string, i int, msg string) error {
	f := fmt.Sprintf("%s[%d]", field, i)
	return transport.InvalidArgument(transport.ReasonInvalidRequest, f+": "+msg, transport.Violation(f, msg))
}

// AddAutomationConnections binds workspace connections to a draft under
// aliases.
func (s *ConnectionService) AddAutomationConnections(ctx context.Context, req *bookv1.AddAutomationConnectionsRequest) (*bookv1.AutomationConnectionsResponse, error) {
	ws, err := s.workspace(ctx, req)
	if err != nil {
		return nil, err
	}
	if err := requireFields(map[string]string{"automation_id": req.GetAutomationId()}); err != nil {
		return nil, err
	}
	if len(req.GetConnections()) == 0 {
		return nil, transport.InvalidArgument(transport.ReasonRequiredFieldMissing, "connections is required", transport.Violation("connections", "is required"))
	}
	ds := make([]*bookv1.BookConnectionDescriptor, len(req.GetConnections()))
	seen := map[string]bool{}
	for i, c := range req.GetConnections() {
		switch {
		case c.GetConnectionAlias() == "" || c.GetConnectionId() == "" || c.GetBook() == "" || c.GetBookVersion() == "":
			return nil, listViolation("connections", i, "book, book_version, connection_alias and connection_id are required")
		case seen[c.GetConnectionAlias()]:
			return nil, listViolation("connections", i, fmt.Sprintf("the alias %q appears twice", c.GetConnectionAlias()))
		}
		seen[c.GetConnectionAlias()] = true
		if ds[i], err = s.conns.Get(ctx, ws, c.GetConnectionId()); err != nil {
			return nil, connectionError(err, ws, "", "", c.GetConnectionId())
		}
		if ds[i].GetBookName() != c.GetBook() || ds[i].GetBookVersion() != c.GetBookVersion() {
			return nil, listViolation("connections", i, fmt.Sprintf("connection %s is of book %s version %s, not %s version %s",
				c.GetConnectionId(), ds[i].GetBookName(), ds[i].GetBookVersion(), c.GetBook(), c.GetBookVersion()))
		}
	}
	return s.editDraftConnections(ctx, ws, req.GetAutomationId(), func(a *platformv1.Automation, code string) (string, error) {
		for i, c := range req.GetConnections() {
			if _, ok := a.Connections[c.GetConnectionAlias()]; ok {
				return "", transport.NewError(codes.AlreadyExists, ReasonConnectionAlreadyExists,
					fmt.Sprintf("the automation has a connection aliased %q already", c.GetConnectionAlias())).Err()
			}
			a.Connections[c.GetConnectionAlias()] = &platformv1.BookConnection{ConnectionId: c.GetConnectionId(), Endpoint: ds[i].GetEndpoint()}
		}
		return code, nil
	})
}

// SwitchAutomationConnections replaces connections by others of the same
// book version.
func (s *ConnectionService) SwitchAutomationConnections(ctx context.Context, req *bookv1.SwitchAutomationConnectionsRequest) (*bookv1.AutomationConnectionsResponse, error) {
	return s.replaceConnections(ctx, req, req.GetAutomationId(), "switches", req.GetSwitches(), false)
}

// UpgradeAutomationConnections replaces connections by connections of
// another version of the same book.
func (s *ConnectionService) UpgradeAutomationConnections(ctx context.Context, req *bookv1.UpgradeAutomationConnectionsRequest) (*bookv1.AutomationConnectionsResponse, error) {
	return s.replaceConnections(ctx, req, req.GetAutomationId(), "upgrades", req.GetUpgrades(), true)
}

func (s *ConnectionService) replaceConnections(ctx context.Context, req workspaceRequest, automationID, field string,
	rs []*bookv1.ConnectionReplacement, upgrade bool) (*bookv1.AutomationConnectionsResponse, error) {
	ws, err := s.workspace(ctx, req)
	if err != nil {
		return nil, err
	}
	if err := requireFields(map[string]string{"automation_id": automationID}); err != nil {
		return nil, err
	}
	if len(rs) == 0 {
		return nil, transport.InvalidArgument(transport.ReasonRequiredFieldMissing, field+" is required", transport.Violation(field, "is required"))
	}
	// An unknown automation is NOT_FOUND before its replacements are
	// checked against each other.
	if a, err := s.automations.GetAutomation(ctx, ws.OrganizationID, ws.WorkspaceID, automationID); err != nil || !a.DeleteTime.IsZero() {
		if err == nil {
			err = store.ErrNotFound
		}
		return nil, automationErr(err, ws.OrganizationID, ws.WorkspaceID, automationID)
	}
	olds := make([]*bookv1.BookConnectionDescriptor, len(rs))
	news := make([]*bookv1.BookConnectionDescriptor, len(rs))
	seen := map[string]bool{}
	for i, r := range rs {
		switch {
		case r.GetOldConnectionId() == "" || r.GetNewConnectionId() == "" || r.GetConnectionAlias() == "":
			return nil, listViolation(field, i, "old_connection_id, new_connection_id and connection_alias are required")
		case seen[r.GetOldConnectionId()]:
			return nil, listViolation(field, i, fmt.Sprintf("old_connection_id %s appears twice", r.GetOldConnectionId()))
		}
		seen[r.GetOldConnectionId()] = true
		if olds[i], err = s.conns.Get(ctx, ws, r.GetOldConnectionId()); err != nil {
			return nil, connectionError(err, ws, "", "", r.GetOldConnectionId())
		}
		if news[i], err = s.conns.Get(ctx, ws, r.GetNewConnectionId()); err != nil {
			return nil, connectionError(err, ws, "", "", r.GetNewConnectionId())
		}
		o, n := olds[i], news[i]
		switch {
		case o.GetBookName() != n.GetBookName():
			return nil, listViolation(field, i, fmt.Sprintf("connection %s is of book %s, not %s", n.GetConnectionId(), n.GetBookName(), o.GetBookName()))
		case !upgrade && o.GetBookVersion() != n.GetBookVersion():
			return nil, listViolation(field, i, fmt.Sprintf("connection %s is of version %s, not %s (upgradeConnections moves to another version)",
				n.GetConnectionId(), n.GetBookVersion(), o.GetBookVersion()))
		case upgrade && o.GetBookVersion() == n.GetBookVersion():
			return nil, listViolation(field, i, fmt.Sprintf("connection %s is of the same version %s (switchConnections replaces within a version)",
				n.GetConnectionId(), n.GetBookVersion()))
		}
	}
	return s.editDraftConnections(ctx, ws, automationID, func(a *platformv1.Automation, code string) (string, error) {
		rename := map[string]string{}
		for i, r := range rs {
			if bc, ok := a.Connections[r.GetConnectionAlias()]; !ok || bc.GetConnectionId() != r.GetOldConnectionId() {
				return "", listViolation(field, i, fmt.Sprintf("the automation has no connection %s aliased %q", r.GetOldConnectionId(), r.GetConnectionAlias()))
			}
			a.Connections[r.GetConnectionAlias()] = &platformv1.BookConnection{ConnectionId: r.GetNewConnectionId(), Endpoint: news[i].GetEndpoint()}
			rename[olds[i].GetConnectionName()] = news[i].GetConnectionName()
			rename[olds[i].GetConnectionId()] = news[i].GetConnectionName()
		}
		return books.RewriteCodeConnections(code, rename), nil
	})
}

// RemoveAutomationConnections removes connections from a draft; the code's
// mentions of them become placeholders.
func (s *ConnectionService) RemoveAutomationConnections(ctx context.Context, req *bookv1.RemoveAutomationConnectionsRequest) (*bookv1.AutomationConnectionsResponse, error) {
	ws, err := s.workspace(ctx, req)
	if err != nil {
		return nil, err
	}
	if err := requireFields(map[string]string{"automation_id": req.GetAutomationId()}); err != nil {
		return nil, err
	}
	rs := req.GetRemovals()
	if len(rs) == 0 {
		return nil, transport.InvalidArgument(transport.ReasonRequiredFieldMissing, "removals is required", transport.Violation("removals", "is required"))
	}
	seen := map[string]bool{}
	for i, r := range rs {
		key := r.GetConnectionId() + "\x00" + r.GetConnectionAlias()
		switch {
		case r.GetConnectionId() == "" || r.GetConnectionAlias() == "":
			return nil, listViolation("removals", i, "connection_id and connection_alias are required")
		case seen[key]:
			return nil, listViolation("removals", i, "the connection appears twice")
		}
		seen[key] = true
	}
	return s.editDraftConnections(ctx, ws, req.GetAutomationId(), func(a *platformv1.Automation, code string) (string, error) {
		rename := map[string]string{}
		for i, r := range rs {
			if bc, ok := a.Connections[r.GetConnectionAlias()]; !ok || bc.GetConnectionId() != r.GetConnectionId() {
				return "", listViolation("removals", i, fmt.Sprintf("the automation has no connection %s aliased %q", r.GetConnectionId(), r.GetConnectionAlias()))
			}
			delete(a.Connections, r.GetConnectionAlias())
			// The connection may be gone from the workspace: its id is
			// still replaced.
			book := "unknown"
			if d, err := s.conns.Get(ctx, ws, r.GetConnectionId()); err == nil {
				book = d.GetBookName()
				rename[d.GetConnectionName()] = books.ConnectionPlaceholder(book)
			}
			rename[r.GetConnectionId()] = books.ConnectionPlaceholder(book)
		}
		return books.RewriteCodeConnections(code, rename), nil
	})
}

func discoveryError(err error, ws books.Workspace, id string) error {
	switch {
	case errors.Is(err, books.ErrNotDiscoverable), errors.Is(err, books.ErrDiscovery):
		return transport.FailedPrecondition(ReasonInvalidConnection, err.Error(), map[string]string{"connection_id": id})
	}
	return connectionError(err, ws, "", "", id)
}

// ListWorkspaceBookConnectionDiscoverables lists what a connection can
// reach (the databases book: its tables and views).
func (s *ConnectionService) ListWorkspaceBookConnectionDiscoverables(ctx context.Context, req *bookv1.ListWorkspaceBookConnectionDiscoverablesRequest) (*bookv1.ListWorkspaceBookConnectionDiscoverablesResponse, error) {
	ws, err := s.workspace(ctx, req)
	if err != nil {
		return nil, err
	}
	if err := requireFields(map[string]string{"connection_id": req.GetConnectionId()}); err != nil {
		return nil, err
	}
	ds, err := s.conns.Discoverables(ctx, ws, req.GetConnectionId(), req.GetSearch(), req.GetOffset(), req.GetLimit())
	if err != nil {
		return nil, discoveryError(err, ws, req.GetConnectionId())
	}
	out := &bookv1.ListWorkspaceBookConnectionDiscoverablesResponse{}
	for _, d := range ds {
		out.Discoverables = append(out.Discoverables, &bookv1.Discoverable{Name: d.Name, Description: d.Description})
	}
	return out, nil
}

// SetDiscovered records which discoverables a connection discovered.
func (s *ConnectionService) SetDiscovered(ctx context.Context, req *bookv1.SetDiscoveredRequest) (*bookv1.SetDiscoveredResponse, error) {
	ws, err := s.workspace(ctx, req)
	if err != nil {
		return nil, err
	}
	if err := requireFields(map[string]string{"connection_id": req.GetConnectionId()}); err != nil {
		return nil, err
	}
	if err := s.conns.SetDiscovered(ctx, ws, req.GetConnectionId(), req.GetWhat()); err != nil {
		return nil, discoveryError(err, ws, req.GetConnectionId())
	}
	return &bookv1.SetDiscoveredResponse{}, nil
}

// OAuthCallbackPath is where an OAuth provider sends a person back after
// authorizing a connection (served by cmd/prose).
const OAuthCallbackPath = "/oauth/callback"

// AuthorizeWorkspaceBookConnection answers the URL that starts a
// connection's OAuth authorization.
func (s *ConnectionService) AuthorizeWorkspaceBookConnection(ctx context.Context, req *bookv1.AuthorizeWorkspaceBookConnectionRequest) (*bookv1.BookConnectionResponse, error) {
	ws, err := s.workspace(ctx, req)
	if err != nil {
		return nil, err
	}
	if err := requireFields(map[string]string{"connection_id": req.GetConnectionId()}); err != nil {
		return nil, err
	}
	// An unknown connection is NOT_FOUND whatever the server's setup.
	if _, err := s.conns.Get(ctx, ws, req.GetConnectionId()); err != nil {
		return nil, connectionError(err, ws, "", "", req.GetConnectionId())
	}
	if s.PublicURL == "" {
		return nil, transport.FailedPrecondition(ReasonInvalidConnection,
			"OAuth needs the server's public address for the provider to send people back: start prose serve with --public-url", nil)
	}
	d, u, err := s.conns.Authorize(ctx, ws, req.GetConnectionId(), strings.TrimSuffix(s.PublicURL, "/")+OAuthCallbackPath)
	if errors.Is(err, books.ErrNotOAuth) {
		return nil, transport.FailedPrecondition(ReasonInvalidConnection, err.Error(), map[string]string{"connection_id": req.GetConnectionId()})
	}
	if err != nil {
		return nil, connectionError(err, ws, "", "", req.GetConnectionId())
	}
	return &bookv1.BookConnectionResponse{BookConnectionDescriptor: d, AuthorizeUrl: &bookv1.BookConnectionOAuthURLResponse{Url: u}}, nil
}
