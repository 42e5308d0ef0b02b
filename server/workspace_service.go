package server

import (
	"context"
	"errors"
	"fmt"
	"go.einride.tech/aip/fieldmask"
	"net/mail"
	"slices"
	"strings"

	"google.golang.org/protobuf/types/known/emptypb"

	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/internal/names"
	"github.com/proserun/prose/server/transport"
	"github.com/proserun/prose/store"
	"github.com/proserun/prose/store/sqlfilter"
)

// WorkspaceService implements prose.platform.v1.WorkspaceService over the
// store.
type WorkspaceService struct {
	platformv1.UnimplementedWorkspaceServiceServer
	st store.Store
}

// NewWorkspaceService returns the workspace service.
func NewWorkspaceService(st store.Store) *WorkspaceService { return &WorkspaceService{st: st} }

// The creator of a workspace gets this workspace role.
const idCreatorWorkspaceRole = "workspace_admin"

// maxCountWorkspaces bounds CountWorkspaceUsers.workspace_ids.
const idMaxCountWorkspaces = 1000

func workspaceProto(w store.Workspace) *platformv1.Workspace {
	return &platformv1.Workspace{
		Name:               names.Workspace(w.OrganizationID, w.ID),
		Title:              w.Title,
		WorkspaceIcon:      w.Icon,
		WorkspaceIconColor: w.IconColor,
		CreateTime:         timestampOrNil(w.CreateTime),
		UpdateTime:         timestampOrNil(w.UpdateTime),
		CreatorDisplayName: w.CreatorDisplayName,
		CreatorEmail:       w.CreatorEmail,
	}
}

func (s *WorkspaceService) workspaceErr(err error, org, ws string) error {
	return storeStatus(err, ReasonWorkspaceNotFound, ReasonWorkspaceExists, names.Workspace(org, ws))
}

// ListWorkspaces lists an organization's workspaces (those in the key's
// scope). Filter: title (=, !=, :). Order: title, create_time, update_time.
func (s *WorkspaceService) ListWorkspaces(ctx context.Context, req *platformv1.ListWorkspacesRequest) (*platformv1.ListWorkspacesResponse, error) {
	lp, err := parseList(req, sqlfilter.Workspaces, store.WorkspaceOrdering)
	if err != nil {
		return nil, err
	}
	page, err := s.listWorkspaces(ctx, req.GetOrganizationId(), "", lp)
	if err != nil {
		return nil, err
	}
	return &platformv1.ListWorkspacesResponse{NextPageToken: page.NextPageToken, Workspaces: mapAll(page.Items, workspaceProto)}, nil
}

// listWorkspaces lists one page of an organization's workspaces inside the
// caller's key scope; member "" lists them all, a user id those the user
// belongs to.
func (s *WorkspaceService) listWorkspaces(ctx context.Context, org, member string, lp listParams) (store.Page[store.Workspace], error) {
	page, err := s.st.ListWorkspaces(ctx, store.ListWorkspacesRequest{
		OrganizationID: org, MemberUserID: member, Filter: scopedToCaller(ctx, lp.Filter), OrderBy: lp.OrderBy,
		PageSize: lp.Size, PageToken: lp.Token,
	})
	if err != nil {
		return store.Page[store.Workspace]{}, orgStatus(err, org)
	}
	return page, nil
}

// GetWorkspace gets a workspace.
func (s *WorkspaceService) GetWorkspace(ctx context.Context, req *platformv1.GetWorkspaceRequest) (*platformv1.Workspace, error) {
	org, ws := req.GetOrganizationId(), req.GetWorkspaceId()
	w, err := s.st.GetWorkspace(ctx, org, ws)
	if err != nil {
		return nil, s.workspaceErr(err, org, ws)
	}
	return workspaceProto(w), nil
}

// ListCurrentUserWorkspaces lists the workspaces the caller is a member of.
func (s *WorkspaceService) ListCurrentUserWorkspaces(ctx context.Context, req *platformv1.ListCurrentUserWorkspacesRequest) (*platformv1.ListCurrentUserWorkspacesResponse, error) {
	p, err := callerPrincipal(ctx)
	if err != nil {
		return nil, err
	}
	lp, err := parseFiltered(req, sqlfilter.Workspaces)
	if err != nil {
		return nil, err
	}
	page, err := s.listWorkspaces(ctx, req.GetOrganizationId(), p.UserID, lp)
	if err != nil {
		return nil, err
	}
	return &platformv1.ListCurrentUserWorkspacesResponse{NextPageToken: page.NextPageToken, UserWorkspaces: mapAll(page.Items, workspaceProto)}, nil
}

// CreateWorkspace creates a workspace; the caller becomes its workspace
// administrator. Idempotent with request_id.
func (s *WorkspaceService) CreateWorkspace(ctx context.Context, req *platformv1.CreateWorkspaceRequest) (*platformv1.Workspace, error) {
	org := req.GetOrganizationId()
	id := req.GetWorkspaceId()
	if id != "" && !resourceIDRE.MatchString(id) {
		return nil, transport.InvalidArgument(ReasonInvalidField, "workspace_id must be 1-63 lowercase letters, digits or hyphens, starting with a letter",
			transport.Violation("workspace_id", "not a valid resource id"))
	}
	if strings.TrimSpace(req.GetWorkspace().GetTitle()) == "" {
		return nil, transport.InvalidArgument(ReasonInvalidField, "workspace.title must not be blank", transport.Violation("workspace.title", "blank"))
	}
	var creator string
	if p, ok := transport.PrincipalFrom(ctx); ok {
		creator = p.UserID
	}
	create := func() (*platformv1.Workspace, string, error) {
		w, err := s.st.CreateWorkspace(ctx, store.Workspace{
			OrganizationID: org, ID: id, Title: req.GetWorkspace().GetTitle(),
			Icon: req.GetWorkspace().GetWorkspaceIcon(), IconColor: req.GetWorkspace().GetWorkspaceIconColor(),
			CreatorID: creator,
		})
		if err != nil {
			return nil, "", storeStatus(err, ReasonOrganizationNotFound, ReasonWorkspaceExists, names.Workspace(org, id))
		}
		if creator != "" {
			// A creator who is not an organization member (impossible through
			// a key) simply does not become a workspace member.
			if _, err := s.st.AddWorkspaceMember(ctx, org, w.ID, creator, []string{idCreatorWorkspaceRole}); err != nil &&
				!isOneOf(err, store.ErrFailedPrecondition, store.ErrAlreadyExists, store.ErrNotFound) {
				return nil, "", err
			}
		}
		return workspaceProto(w), w.ID, nil
	}
	get := func(wsID string) (*platformv1.Workspace, error) {
		w, err := s.st.GetWorkspace(ctx, org, wsID)
		if err != nil {
			return nil, s.workspaceErr(err, org, wsID)
		}
		return workspaceProto(w), nil
	}
	undo := func(w *platformv1.Workspace) error { return s.st.DeleteWorkspace(ctx, org, idOf(w.GetName())) }
	return idempotent(ctx, s.st, org, "CreateWorkspace", req.GetRequestId(), create, get, undo)
}

var idWorkspaceMask = map[string]string{
	"title": "title", "workspace_icon": "icon", "workspace_icon_color": "icon_color",
}

// UpdateWorkspace writes title, workspace_icon and workspace_icon_color (or
// those named in update_mask).
func (s *WorkspaceService) UpdateWorkspace(ctx context.Context, req *platformv1.UpdateWorkspaceRequest) (*platformv1.Workspace, error) {
	org, ws := req.GetOrganizationId(), req.GetWorkspaceId()
	if err := checkUpdateMask(req.GetUpdateMask(), &platformv1.Workspace{}); err != nil {
		return nil, err
	}
	var mask []string
	for _, p := range req.GetUpdateMask().GetPaths() {
		if p == fieldmask.WildcardPath {
			mask = nil // every writable field
			break
		}
		m, ok := idWorkspaceMask[p]
		if !ok {
			return nil, transport.InvalidArgument(ReasonInvalidField, fmt.Sprintf("update_mask: %q cannot be updated (title, workspace_icon, workspace_icon_color)", p),
				transport.Violation("update_mask", "unknown path "+p))
		}
		mask = append(mask, m)
	}
	in := req.GetWorkspace()
	if (len(mask) == 0 || slices.Contains(mask, "title")) && strings.TrimSpace(in.GetTitle()) == "" {
		return nil, transport.InvalidArgument(ReasonInvalidField, "workspace.title must not be blank", transport.Violation("workspace.title", "blank"))
	}
	w, err := s.st.UpdateWorkspace(ctx, store.Workspace{
		OrganizationID: org, ID: ws, Title: in.GetTitle(), Icon: in.GetWorkspaceIcon(), IconColor: in.GetWorkspaceIconColor(),
	}, mask)
	if err != nil {
		return nil, s.workspaceErr(err, org, ws)
	}
	return workspaceProto(w), nil
}

// DeleteWorkspace deletes a workspace with everything in it.
func (s *WorkspaceService) DeleteWorkspace(ctx context.Context, req *platformv1.DeleteWorkspaceRequest) (*emptypb.Empty, error) {
	org, ws := req.GetOrganizationId(), req.GetWorkspaceId()
	if err := s.st.DeleteWorkspace(ctx, org, ws); err != nil {
		return nil, s.workspaceErr(err, org, ws)
	}
	return &emptypb.Empty{}, nil
}

func preferencesProto(p store.WorkspacePreferences) *platformv1.WorkspacePreferences {
	return &platformv1.WorkspacePreferences{
		Name:              names.Workspace(p.OrganizationID, p.WorkspaceID) + "/preferences",
		SupportTeamAccess: p.SupportTeamAccess,
		General: &platformv1.GeneralPreferences{
			TimeZone:          p.TimeZone,
			TimeFormat:        platformv1.TimeFormat(platformv1.TimeFormat_value[p.TimeFormat]),
			DateFormat:        platformv1.DateFormat(platformv1.DateFormat_value[p.DateFormat]),
			DecimalSymbol:     platformv1.DecimalSymbol(platformv1.DecimalSymbol_value[p.DecimalSymbol]),
			DecimalPlaces:     p.DecimalPlaces,
			MeasurementSystem: platformv1.MeasurementSystem(platformv1.MeasurementSystem_value[p.MeasurementSystem]),
		},
	}
}

// GetWorkspacePreferences gets a workspace's preferences.
func (s *WorkspaceService) GetWorkspacePreferences(ctx context.Context, req *platformv1.GetWorkspacePreferencesRequest) (*platformv1.WorkspacePreferences, error) {
	org, ws := req.GetOrganizationId(), req.GetWorkspaceId()
	p, err := s.st.GetWorkspacePreferences(ctx, org, ws)
	if err != nil {
		return nil, s.workspaceErr(err, org, ws)
	}
	return preferencesProto(p), nil
}

var idPreferencesMask = map[string]bool{
	"support_team_access": true, "general": true,
	"general.time_zone": true, "general.time_format": true, "general.date_format": true,
	"general.decimal_symbol": true, "general.decimal_places": true, "general.measurement_system": true,
}

// UpdateWorkspacePreferences writes the preferences named in update_mask
// (all when empty).
func (s *WorkspaceService) UpdateWorkspacePreferences(ctx context.Context, req *platformv1.UpdateWorkspacePreferencesRequest) (*platformv1.WorkspacePreferences, error) {
	org, ws := req.GetOrganizationId(), req.GetWorkspaceId()
	mask := req.GetUpdateMask().GetPaths()
	for _, p := range mask {
		if !idPreferencesMask[p] {
			return nil, transport.InvalidArgument(ReasonInvalidField, fmt.Sprintf("update_mask: %q is not a preference", p),
				transport.Violation("update_mask", "unknown path "+p))
		}
	}
	in := req.GetPreferences()
	g := in.GetGeneral()
	if g.GetDecimalPlaces() < 0 || g.GetDecimalPlaces() > 28 {
		return nil, transport.InvalidArgument(ReasonInvalidField, "general.decimal_places must be between 0 and 28",
			transport.Violation("preferences.general.decimal_places", "out of range"))
	}
	p, err := s.st.UpdateWorkspacePreferences(ctx, store.WorkspacePreferences{
		OrganizationID: org, WorkspaceID: ws,
		SupportTeamAccess: in.GetSupportTeamAccess(),
		TimeZone:          g.GetTimeZone(),
		TimeFormat:        g.GetTimeFormat().String(),
		DateFormat:        g.GetDateFormat().String(),
		DecimalSymbol:     g.GetDecimalSymbol().String(),
		DecimalPlaces:     g.GetDecimalPlaces(),
		MeasurementSystem: g.GetMeasurementSystem().String(),
	}, mask)
	if err != nil {
		return nil, s.workspaceErr(err, org, ws)
	}
	return preferencesProto(p), nil
}

// requireWorkspace answers NOT_FOUND for a workspace that does not exist
// (the store's lists answer an empty page).
func (s *WorkspaceService) requireWorkspace(ctx context.Context, org, ws string) error {
	if _, err := s.st.GetWorkspace(ctx, org, ws); err != nil {
		return s.workspaceErr(err, org, ws)
	}
	return nil
}

// ListWorkspaceInvites lists a workspace's pending invitations, newest first.
func (s *WorkspaceService) ListWorkspaceInvites(ctx context.Context, req *platformv1.ListWorkspaceInvitesRequest) (*platformv1.ListWorkspaceInvitesResponse, error) {
	org, ws := req.GetOrganizationId(), req.GetWorkspaceId()
	lp, err := parsePage(req)
	if err != nil {
		return nil, err
	}
	if err := s.requireWorkspace(ctx, org, ws); err != nil {
		return nil, err
	}
	page, err := s.st.ListInvitations(ctx, org, ws, lp.Size, lp.Token)
	if err != nil {
		return nil, s.workspaceErr(err, org, ws)
	}
	out := &platformv1.ListWorkspaceInvitesResponse{NextPageToken: page.NextPageToken}
	out.Invitations = mapAll(page.Items, invitationProto)
	return out, nil
}

// checkWorkspaceRoles checks every role exists and is workspace-scoped.
func (s *WorkspaceService) checkWorkspaceRoles(ctx context.Context, org string, roles []string, field string) ([]string, error) {
	out := make([]string, 0, len(roles))
	for i, r := range roles {
		id := idOf(r)
		role, err := s.st.GetRole(ctx, org, id)
		if err != nil {
			return nil, storeStatus(err, ReasonRoleNotFound, ReasonRoleNotFound, "roles/"+id)
		}
		if role.Scope != store.ScopeWorkspace {
			return nil, transport.InvalidArgument(ReasonInvalidField, fmt.Sprintf("role %q is not a workspace role", id),
				transport.Violation(fmt.Sprintf("%s[%d]", field, i), "not a workspace role"))
		}
		out = append(out, id)
	}
	return out, nil
}

// CreateWorkspaceInvite invites an e-mail address to a workspace (roles
// default to workspace_member). Idempotent with request_id.
func (s *WorkspaceService) CreateWorkspaceInvite(ctx context.Context, req *platformv1.CreateWorkspaceInviteRequest) (*platformv1.UserInvitation, error) {
	org, ws := req.GetOrganizationId(), req.GetWorkspaceId()
	addr, err := mail.ParseAddress(req.GetEmail())
	if err != nil || addr.Name != "" {
		return nil, transport.InvalidArgument(ReasonInvalidField, "email is not an e-mail address", transport.Violation("email", "not an e-mail address"))
	}
	roles := req.GetRoles()
	if len(roles) == 0 {
		roles = []string{"workspace_member"}
	}
	roles, err = s.checkWorkspaceRoles(ctx, org, roles, "roles")
	if err != nil {
		return nil, err
	}
	var inviter string
	if p, ok := transport.PrincipalFrom(ctx); ok {
		inviter = p.UserID
	}
	create := func() (*platformv1.UserInvitation, string, error) {
		inv, err := s.st.CreateInvitation(ctx, store.Invitation{
			OrganizationID: org, WorkspaceID: ws, Email: addr.Address, RoleIDs: roles, InviterID: inviter,
		})
		if err != nil {
			return nil, "", storeStatus(err, ReasonWorkspaceNotFound, ReasonInvitationExists, names.Workspace(org, ws)+"/invites/"+addr.Address)
		}
		return invitationProto(inv), inv.ID, nil
	}
	get := func(id string) (*platformv1.UserInvitation, error) {
		inv, err := s.st.GetInvitation(ctx, org, id)
		if err != nil {
			return nil, storeStatus(err, ReasonInvitationNotFound, ReasonInvitationExists, names.Workspace(org, ws)+"/invites/"+id)
		}
		return invitationProto(inv), nil
	}
	undo := func(inv *platformv1.UserInvitation) error {
		return s.st.DeleteInvitation(ctx, org, inv.GetInvitationId())
	}
	return idempotent(ctx, s.st, org, "CreateWorkspaceInvite/"+ws, req.GetRequestId(), create, get, undo)
}

// DeleteWorkspaceInvite withdraws an invitation of the workspace.
func (s *WorkspaceService) DeleteWorkspaceInvite(ctx context.Context, req *platformv1.DeleteWorkspaceInviteRequest) (*emptypb.Empty, error) {
	org, ws, id := req.GetOrganizationId(), req.GetWorkspaceId(), req.GetInvitationId()
	name := names.Workspace(org, ws) + "/invites/" + id
	inv, err := s.st.GetInvitation(ctx, org, id)
	if err != nil {
		return nil, storeStatus(err, ReasonInvitationNotFound, ReasonInvitationExists, name)
	}
	if inv.WorkspaceID != ws {
		return nil, transport.NotFound(ReasonInvitationNotFound, name)
	}
	if err := s.st.DeleteInvitation(ctx, org, id); err != nil {
		return nil, storeStatus(err, ReasonInvitationNotFound, ReasonInvitationExists, name)
	}
	return &emptypb.Empty{}, nil
}

// ListWorkspaceRoles lists the roles that can be given in a workspace.
func (s *WorkspaceService) ListWorkspaceRoles(ctx context.Context, req *platformv1.ListWorkspaceRolesRequest) (*platformv1.ListWorkspaceRolesResponse, error) {
	org, ws := req.GetOrganizationId(), req.GetWorkspaceId()
	lp, err := parsePage(req)
	if err != nil {
		return nil, err
	}
	if err := s.requireWorkspace(ctx, org, ws); err != nil {
		return nil, err
	}
	page, err := s.st.ListRoles(ctx, org, store.ScopeWorkspace, lp.Size, lp.Token)
	if err != nil {
		return nil, s.workspaceErr(err, org, ws)
	}
	out := &platformv1.ListWorkspaceRolesResponse{NextPageToken: page.NextPageToken}
	out.Roles = mapAll(page.Items, roleProto)
	return out, nil
}

// ListWorkspaceUsers lists a workspace's members. Filter: role, role_scope,
// search. Order: display_name, email, created_time, updated_time.
func (s *WorkspaceService) ListWorkspaceUsers(ctx context.Context, req *platformv1.ListWorkspaceUsersRequest) (*platformv1.ListWorkspaceUsersResponse, error) {
	org, ws := req.GetOrganizationId(), req.GetWorkspaceId()
	lp, err := parseList(req, sqlfilter.WorkspaceUsers, store.WorkspaceUserOrdering)
	if err != nil {
		return nil, err
	}
	if err := s.requireWorkspace(ctx, org, ws); err != nil {
		return nil, err
	}
	page, err := s.st.ListWorkspaceUsers(ctx, store.ListWorkspaceUsersRequest{
		OrganizationID: org, WorkspaceID: ws, Filter: lp.Filter, OrderBy: lp.OrderBy, PageSize: lp.Size, PageToken: lp.Token,
	})
	if err != nil {
		return nil, s.workspaceErr(err, org, ws)
	}
	out := &platformv1.ListWorkspaceUsersResponse{NextPageToken: page.NextPageToken}
	out.Users = mapAll(page.Items, workspaceUserProto)
	return out, nil
}

func (s *WorkspaceService) memberErr(err error, org, ws, user string) error {
	return storeStatus(err, ReasonMemberNotFound, ReasonMemberExists, names.WorkspaceUser(org, ws, user))
}

// CreateWorkspaceUser adds an organization member to a workspace with
// workspace roles.
func (s *WorkspaceService) CreateWorkspaceUser(ctx context.Context, req *platformv1.CreateWorkspaceUserRequest) (*platformv1.WorkspaceUser, error) {
	org, ws, user := req.GetOrganizationId(), req.GetWorkspaceId(), idOf(req.GetUserId())
	roles, err := s.checkWorkspaceRoles(ctx, org, req.GetRoles(), "roles")
	if err != nil {
		return nil, err
	}
	if err := s.requireWorkspace(ctx, org, ws); err != nil {
		return nil, err
	}
	if _, err := s.st.GetUser(ctx, user); err != nil {
		return nil, storeStatus(err, ReasonUserNotFound, ReasonUserNotFound, names.User(user))
	}
	m, err := s.st.AddWorkspaceMember(ctx, org, ws, user, roles)
	if err != nil {
		return nil, s.memberErr(err, org, ws, user)
	}
	return workspaceUserProto(m), nil
}

// UpdateWorkspaceUser replaces a member's workspace roles.
func (s *WorkspaceService) UpdateWorkspaceUser(ctx context.Context, req *platformv1.UpdateWorkspaceUserRequest) (*platformv1.WorkspaceUser, error) {
	org, ws, user := req.GetOrganizationId(), req.GetWorkspaceId(), idOf(req.GetUserId())
	roles, err := s.checkWorkspaceRoles(ctx, org, req.GetRoles(), "roles")
	if err != nil {
		return nil, err
	}
	m, err := s.st.SetWorkspaceRoles(ctx, org, ws, user, roles)
	if err != nil {
		return nil, s.memberErr(err, org, ws, user)
	}
	return workspaceUserProto(m), nil
}

// DeleteWorkspaceUser removes a member from a workspace.
func (s *WorkspaceService) DeleteWorkspaceUser(ctx context.Context, req *platformv1.DeleteWorkspaceUserRequest) (*emptypb.Empty, error) {
	org, ws, user := req.GetOrganizationId(), req.GetWorkspaceId(), idOf(req.GetUserId())
	if err := s.st.RemoveWorkspaceMember(ctx, org, ws, user); err != nil {
		return nil, s.memberErr(err, org, ws, user)
	}
	return &emptypb.Empty{}, nil
}

// CountWorkspaceUsers counts the members of several workspaces; workspaces
// that do not exist are absent from the map.
func (s *WorkspaceService) CountWorkspaceUsers(ctx context.Context, req *platformv1.CountWorkspaceUsersRequest) (*platformv1.CountWorkspaceUsersResponse, error) {
	org := req.GetOrganizationId()
	ids := req.GetWorkspaceIds()
	if len(ids) > idMaxCountWorkspaces {
		return nil, transport.InvalidArgument(ReasonInvalidField, fmt.Sprintf("at most %d workspace_ids", idMaxCountWorkspaces),
			transport.Violation("workspace_ids", "too many"))
	}
	clean := make([]string, len(ids))
	for i, id := range ids {
		clean[i] = idOf(id)
	}
	counts, err := s.st.CountWorkspaceUsers(ctx, org, slices.Compact(slices.Sorted(slices.Values(clean))))
	if err != nil {
		return nil, orgStatus(err, org)
	}
	out := &platformv1.CountWorkspaceUsersResponse{WorkspaceUserCounts: make(map[string]int32, len(counts))}
	for id, n := range counts {
		out.WorkspaceUserCounts[id] = int32(n)
	}
	return out, nil
}

func isOneOf(err error, targets ...error) bool {
	for _, t := range targets {
		if errors.Is(err, t) {
			return true
		}
	}
	return false
}
