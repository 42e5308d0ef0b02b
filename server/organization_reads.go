package server

import (
	"context"

	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/internal/names"
)

// GetOrganizationPreferences answers an organization's preferences. No
// operation of the reference writes them and the store keeps preferences per
// workspace, so they are the defaults every workspace starts from (the
// workspace_preferences columns' defaults): unspecified formats, no time
// zone, no support access.
func (s *OrganizationService) GetOrganizationPreferences(ctx context.Context, req *platformv1.GetOrganizationPreferencesRequest) (*platformv1.OrganizationPreferences, error) {
	org := req.GetOrganizationId()
	if _, err := s.st.GetOrganization(ctx, org); err != nil {
		return nil, orgStatus(err, org)
	}
	return &platformv1.OrganizationPreferences{
		Name:    names.Organization(org) + "/preferences",
		General: &platformv1.GeneralPreferences{},
	}, nil
}

// GetInvitation gets a pending invitation to the organization or one of its
// workspaces, with the display names an invitee's page shows.
func (s *OrganizationService) GetInvitation(ctx context.Context, req *platformv1.GetInvitationRequest) (*platformv1.Invitation, error) {
	org, id := req.GetOrganizationId(), req.GetInvitationId()
	o, err := s.st.GetOrganization(ctx, org)
	if err != nil {
		return nil, orgStatus(err, org)
	}
	name := names.Organization(org) + "/invitations/" + id
	inv, err := s.st.GetInvitation(ctx, org, id)
	if err != nil {
		return nil, storeStatus(err, ReasonInvitationNotFound, ReasonInvitationNotFound, name)
	}
	out := &platformv1.Invitation{
		Name: name, OrganizationDisplayName: o.DisplayName,
		WorkspaceId: inv.WorkspaceID, Roles: inv.RoleIDs,
	}
	if inv.WorkspaceID != "" {
		w, err := s.st.GetWorkspace(ctx, org, inv.WorkspaceID)
		if err != nil {
			return nil, storeStatus(err, ReasonWorkspaceNotFound, ReasonWorkspaceExists, names.Workspace(org, inv.WorkspaceID))
		}
		out.WorkspaceDisplayName = w.Title
	}
	return out, nil
}

// GetUserBasicInfo gets a member of the organization. A user of Prose who is
// not a member is NOT_FOUND like an unknown one: membership of another
// organization must not leak.
func (s *OrganizationService) GetUserBasicInfo(ctx context.Context, req *platformv1.GetUserBasicInfoRequest) (*platformv1.UserBasicInfo, error) {
	org, user := req.GetOrganizationId(), req.GetUserId()
	if _, err := s.st.GetOrganization(ctx, org); err != nil {
		return nil, orgStatus(err, org)
	}
	name := names.Organization(org) + "/users/" + user
	m, err := s.st.GetOrganizationMember(ctx, org, user)
	if err != nil {
		return nil, storeStatus(err, ReasonUserNotFound, ReasonUserNotFound, name)
	}
	return &platformv1.UserBasicInfo{Name: name, DisplayName: m.User.DisplayName, Email: m.User.Email}, nil
}
