package server

import (
	"context"
	"errors"
	"strings"

	"go.einride.tech/aip/filtering"
	expr "google.golang.org/genproto/googleapis/api/expr/v1alpha1"

	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/internal/names"
	"github.com/proserun/prose/server/transport"
	"github.com/proserun/prose/store"
	"github.com/proserun/prose/store/aipfilter"
	"github.com/proserun/prose/store/sqlfilter"
)

// OrganizationService implements prose.platform.v1.OrganizationService.
type OrganizationService struct {
	platformv1.UnimplementedOrganizationServiceServer
	st store.Store
}

// NewOrganizationService returns the organization service.
func NewOrganizationService(st store.Store) *OrganizationService {
	return &OrganizationService{st: st}
}

func organizationProto(o store.Organization) *platformv1.Organization {
	return &platformv1.Organization{
		Name: names.Organization(o.ID), Title: o.DisplayName,
		CreateTime: timestampOrNil(o.CreateTime), UpdateTime: timestampOrNil(o.UpdateTime),
	}
}

// GetOrganization gets an organization.
func (s *OrganizationService) GetOrganization(ctx context.Context, req *platformv1.GetOrganizationRequest) (*platformv1.Organization, error) {
	o, err := s.st.GetOrganization(ctx, req.GetOrganizationId())
	if err != nil {
		return nil, orgStatus(err, req.GetOrganizationId())
	}
	out := organizationProto(o)
	// The owner is the member who has held the organization role owner
	// longest (the one who made it, unless it was handed on).
	owners, err := s.st.ListOrganizationUsers(ctx, store.ListOrganizationUsersRequest{OrganizationID: o.ID, PageSize: 1,
		Filter:  store.And{store.Cond{Field: "role", Op: store.OpEq, Value: "owner"}, store.Cond{Field: "role_scope", Op: store.OpEq, Value: "organization"}},
		OrderBy: store.OrderBy{{Field: "created_time"}}})
	if err != nil {
		return nil, err
	}
	if len(owners.Items) > 0 {
		out.OwnerDisplayName, out.OwnerEmail = owners.Items[0].User.DisplayName, owners.Items[0].User.Email
	}
	return out, nil
}

// ListCurrentUserOrganizations lists the organizations the caller can act
// in. An API key belongs to one organization, so the list holds at most
// that one (filtered by title like ListWorkspaces: =, !=, :).
func (s *OrganizationService) ListCurrentUserOrganizations(ctx context.Context, req *platformv1.ListCurrentUserOrganizationsRequest) (*platformv1.ListCurrentUserOrganizationsResponse, error) {
	p, err := callerPrincipal(ctx)
	if err != nil {
		return nil, err
	}
	if _, err := checkedPageSize(req.GetPageSize()); err != nil {
		return nil, err
	}
	if req.GetPageToken() != "" {
		return nil, transport.InvalidArgument(ReasonInvalidPageToken, "page_token was not issued by this list", transport.Violation("page_token", "unknown token"))
	}
	match, err := titleMatcher(req.GetFilter())
	if err != nil {
		return nil, err
	}
	o, err := s.st.GetOrganization(ctx, p.OrganizationID)
	if errors.Is(err, store.ErrNotFound) {
		return &platformv1.ListCurrentUserOrganizationsResponse{}, nil
	}
	if err != nil {
		return nil, err
	}
	out := &platformv1.ListCurrentUserOrganizationsResponse{}
	if match(o.DisplayName) {
		out.UserOrganizations = append(out.UserOrganizations, organizationProto(o))
	}
	return out, nil
}

// titleMatcher checks a title filter (the workspace declarations) and
// returns an in-memory evaluator of it.
func titleMatcher(filter string) (func(string) bool, error) {
	if _, err := sqlfilter.Workspaces.Parse(filter); err != nil { // type-checks and bounds it
		return nil, invalidFromStore(err)
	}
	if strings.TrimSpace(filter) == "" {
		return func(string) bool { return true }, nil
	}
	parsed, err := aipfilter.Parse(filter, sqlfilter.Workspaces.Declarations())
	if err != nil {
		return nil, invalidFromStore(err)
	}
	e := parsed.CheckedExpr.GetExpr()
	return func(title string) bool { return evalTitle(e, title, 0) }, nil
}

func evalTitle(e *expr.Expr, title string, depth int) bool {
	call := e.GetCallExpr()
	if call == nil || depth > 100 {
		return false
	}
	args := call.GetArgs()
	switch call.GetFunction() {
	case filtering.FunctionAnd:
		for _, a := range args {
			if !evalTitle(a, title, depth+1) {
				return false
			}
		}
		return true
	case filtering.FunctionOr:
		for _, a := range args {
			if evalTitle(a, title, depth+1) {
				return true
			}
		}
		return false
	case filtering.FunctionNot:
		return len(args) == 1 && !evalTitle(args[0], title, depth+1)
	}
	if len(args) != 2 {
		return false
	}
	v := args[1].GetConstExpr().GetStringValue()
	switch call.GetFunction() {
	case filtering.FunctionEquals:
		return title == v
	case filtering.FunctionNotEquals:
		return title != v
	case filtering.FunctionHas:
		return strings.Contains(strings.ToLower(title), strings.ToLower(v))
	}
	return false
}

// ListOrganizationUsers lists the members of the organization with their
// organization roles and the workspace roles they hold anywhere in it.
// Filter: role, role_scope, search. Order: display_name, email,
// created_time, updated_time (default created_time desc).
func (s *OrganizationService) ListOrganizationUsers(ctx context.Context, req *platformv1.ListOrganizationUsersRequest) (*platformv1.ListOrganizationUsersResponse, error) {
	org := req.GetOrganizationId()
	lp, err := parseList(req, sqlfilter.OrganizationUsers, store.WorkspaceUserOrdering)
	if err != nil {
		return nil, err
	}
	page, err := listInOrganization(ctx, s.st, org, func() (store.Page[store.WorkspaceUser], error) {
		return s.st.ListOrganizationUsers(ctx, store.ListOrganizationUsersRequest{
			OrganizationID: org, Filter: lp.Filter, OrderBy: lp.OrderBy, PageSize: lp.Size, PageToken: lp.Token,
		})
	})
	if err != nil {
		return nil, err
	}
	return &platformv1.ListOrganizationUsersResponse{NextPageToken: page.NextPageToken, Users: mapAll(page.Items, workspaceUserProto)}, nil
}

// ListOrganizationRoles lists every role of the organization.
func (s *OrganizationService) ListOrganizationRoles(ctx context.Context, req *platformv1.ListOrganizationRolesRequest) (*platformv1.ListOrganizationRolesResponse, error) {
	org := req.GetOrganizationId()
	lp, err := parsePage(req)
	if err != nil {
		return nil, err
	}
	page, err := listInOrganization(ctx, s.st, org, func() (store.Page[store.Role], error) {
		return s.st.ListRoles(ctx, org, "", lp.Size, lp.Token)
	})
	if err != nil {
		return nil, err
	}
	return &platformv1.ListOrganizationRolesResponse{NextPageToken: page.NextPageToken, Roles: mapAll(page.Items, roleProto)}, nil
}

// ListOrganizationInvites lists every pending invitation of the organization:
// to the organization itself and to each of its workspaces.
func (s *OrganizationService) ListOrganizationInvites(ctx context.Context, req *platformv1.ListOrganizationInvitesRequest) (*platformv1.ListOrganizationInvitesResponse, error) {
	org := req.GetOrganizationId()
	lp, err := parsePage(req)
	if err != nil {
		return nil, err
	}
	page, err := listInOrganization(ctx, s.st, org, func() (store.Page[store.Invitation], error) {
		return s.st.ListOrganizationInvitations(ctx, org, lp.Size, lp.Token)
	})
	if err != nil {
		return nil, err
	}
	return &platformv1.ListOrganizationInvitesResponse{NextPageToken: page.NextPageToken, Invitations: mapAll(page.Items, invitationProto)}, nil
}

// GetCurrentUserPermissions returns the caller's roles and effective
// permissions in the organization (and workspace), narrowed by the key's
// permission level.
func (s *OrganizationService) GetCurrentUserPermissions(ctx context.Context, req *platformv1.GetCurrentUserPermissionsRequest) (*platformv1.CurrentUserPermissions, error) {
	p, err := callerPrincipal(ctx)
	if err != nil {
		return nil, err
	}
	org, ws := req.GetOrganizationId(), req.GetWorkspaceId()
	out := &platformv1.CurrentUserPermissions{User: names.User(p.UserID), Organization: names.Organization(org)}
	m, err := s.st.GetOrganizationMember(ctx, org, p.UserID)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return nil, err
	}
	for _, r := range m.Roles {
		out.Roles = append(out.Roles, &platformv1.RoleBasicInfo{Name: r, RoleScope: platformv1.RoleScope_ROLE_SCOPE_ORGANIZATION})
	}
	if ws != "" {
		if _, err := s.st.GetWorkspace(ctx, org, ws); err != nil {
			return nil, storeStatus(err, ReasonWorkspaceNotFound, ReasonWorkspaceExists, names.Workspace(org, ws))
		}
		out.Workspace = names.Workspace(org, ws)
		wu, err := s.st.GetWorkspaceUser(ctx, org, ws, p.UserID)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return nil, err
		}
		for _, r := range wu.Roles {
			if r.Scope == store.ScopeWorkspace {
				out.Roles = append(out.Roles, &platformv1.RoleBasicInfo{Name: r.RoleID, RoleScope: platformv1.RoleScope_ROLE_SCOPE_WORKSPACE})
			}
		}
	}
	perms, err := p.EffectivePermissions(ctx, ws)
	if err != nil {
		return nil, err
	}
	out.Permissions = perms
	return out, nil
}
