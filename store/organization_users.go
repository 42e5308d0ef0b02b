package store

import "context"

// ListOrganizationUsersRequest lists the members of an organization.
//
// Filter columns: alias m (organization_members: m.organization_id,
// m.user_id, m.create_time, m.update_time) and u (users: u.display_name,
// u.email).
type ListOrganizationUsersRequest struct {
	OrganizationID string
	Filter         Filter
	OrderBy        OrderBy // nil: WorkspaceUserOrdering.Default
	PageSize       int
	PageToken      string
}

// OrganizationUsers lists the members of organizations.
type OrganizationUsers interface {
	// ListOrganizationUsers pages through an organization's members with
	// their roles: organization roles, and each workspace role they hold in
	// any workspace (scope workspace, listed once). Orderings as for
	// workspace users (WorkspaceUserOrdering). An unknown organization yields
	// an empty page; ErrInvalidArgument for a bad token.
	ListOrganizationUsers(ctx context.Context, req ListOrganizationUsersRequest) (Page[WorkspaceUser], error)
}
