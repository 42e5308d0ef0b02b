package store

// Permissions known to the service. Roles hold any strings; these are the
// ones the built-in roles grant.
const (
	PermOrganizationsGet    = "organizations.get"
	PermOrganizationsUpdate = "organizations.update"
	PermMembersManage       = "members.manage"
	PermRolesManage         = "roles.manage"
	PermAPIKeysManage       = "apikeys.manage"
	PermWorkspacesCreate    = "workspaces.create"
	PermWorkspacesGet       = "workspaces.get"
	PermWorkspacesList      = "workspaces.list"
	PermWorkspacesUpdate    = "workspaces.update"
	PermWorkspacesDelete    = "workspaces.delete"
	PermPreferencesUpdate   = "preferences.update"
	PermInvitationsManage   = "invitations.manage"
	PermAutomationsGet      = "automations.get"
	PermAutomationsWrite    = "automations.write"
	PermRunsGet             = "runs.get"
	PermRunsCreate          = "runs.create"
	PermRunsManage          = "runs.manage" // pause, continue
	PermRunsArchive         = "runs.archive"
	PermExceptionsGet       = "exceptions.get"
	PermExceptionsResolve   = "exceptions.resolve"
)

var (
	readPerms = []string{
		PermWorkspacesGet, PermWorkspacesList, PermAutomationsGet, PermRunsGet, PermExceptionsGet,
	}
	writePerms = append(append([]string{}, readPerms...),
		PermAutomationsWrite, PermRunsCreate, PermRunsManage, PermExceptionsResolve)
	wsAdminPerms = append(append([]string{}, writePerms...),
		PermWorkspacesUpdate, PermPreferencesUpdate, PermInvitationsManage, PermRunsArchive, PermMembersManage)
	orgAdminPerms = append(append([]string{}, wsAdminPerms...),
		PermOrganizationsGet, PermRolesManage, PermAPIKeysManage, PermWorkspacesCreate, PermWorkspacesDelete)
	ownerPerms = append(append([]string{}, orgAdminPerms...), PermOrganizationsUpdate)
)

// BuiltinRoles are seeded into every new organization (Builtin = true).
// Organization-scoped roles apply to every workspace of the organization.
var BuiltinRoles = []Role{
	{ID: "owner", Scope: ScopeOrganization, Title: "Owner", Description: "Full control of the organization.", Permissions: ownerPerms},
	{ID: "admin", Scope: ScopeOrganization, Title: "Administrator", Description: "Manages workspaces, members, roles and API keys.", Permissions: orgAdminPerms},
	{ID: "member", Scope: ScopeOrganization, Title: "Member", Description: "Belongs to the organization; sees what their workspace roles allow.", Permissions: []string{PermOrganizationsGet, PermAPIKeysManage}},
	{ID: "workspace_admin", Scope: ScopeWorkspace, Title: "Workspace administrator", Description: "Manages a workspace, its members and preferences.", Permissions: wsAdminPerms},
	{ID: "workspace_member", Scope: ScopeWorkspace, Title: "Workspace member", Description: "Builds automations, starts runs and resolves exceptions.", Permissions: writePerms},
	{ID: "workspace_viewer", Scope: ScopeWorkspace, Title: "Workspace viewer", Description: "Read-only access to a workspace.", Permissions: readPerms},
}
