package store

import "context"

// ListOrganizationUsersRequest lists the members of an organization.
//
// Filter fields (store.Filter): role (a role id, case-insensitive: an
// organization role, or a workspace role in any workspace; = !=),
// role_scope ("organization" or "workspace": has a role of that scope;
// = !=), search (":" on display name or e-mail).
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
