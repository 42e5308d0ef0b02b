package sqlfilter

// anyWsBinding is a workspace role of the member in any workspace of the
// organization (alias m: organization_members).
const anyWsBinding = `EXISTS (SELECT 1 FROM workspace_role_bindings rb WHERE rb.organization_id = m.organization_id
		AND rb.user_id = m.user_id%s)`

// OrganizationUsers is the filter of ListOrganizationUsers (aliases m:
// organization_members, u: users): role (role name, case-insensitive exact;
// an organization role, or a workspace role in any workspace), role_scope
// (organization | workspace), search (":" partial match on display name or
// e-mail).
var OrganizationUsers = usersResource("organization users", anyWsBinding)
