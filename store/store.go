// Package store defines Prose's persistence: plain record types and one small
// interface per aggregate. Backends live in store/sqlite and store/postgres and
// pass the same conformance suite (store/storetest).
//
// Error contract: methods return errors wrapping one of the sentinels in
// errors.go (checked with errors.Is) or an internal error. Times are returned
// in UTC with microsecond precision. Ids left empty on create are generated
// with NewID.
//
// Lists: every List method takes a page size (already validated and coerced
// with pagination.PageSize; 0 means the default) and an opaque page token from
// the previous page. Tokens are keyset cursors bound to the request's other
// parameters; a token reused with other parameters fails with
// ErrInvalidArgument.
package store

import (
	"context"
	"time"
)

// Store is everything a backend provides.
type Store interface {
	Organizations
	Users
	Workspaces
	Members
	OrganizationUsers
	Roles
	Invitations
	Preferences
	APIKeys
	Idempotency
	Automations
	AutomationRevisions
	RunAggregates
	Runs
	RunHistory
	Exceptions
	Events
	Files
	WorkspaceBooks
	BookConnections
	SecretKeys
	SecretSealing
	ConsoleSessions
	Schedules
	Triggers
	Webhooks
	GuideEntries
	AutomationTests
	Replays

	RunBatches
	FairClaimer
	QueueStats
	Notifier
	AuthGenerations

	// Ping checks the database is reachable.
	Ping(ctx context.Context) error
	// Close releases the database handles.
	Close() error
}

// Page is one page of a list.
type Page[T any] struct {
	Items         []T
	NextPageToken string // empty on the last page
}

// ---------------------------------------------------------------------------
// Organizations

// Organization is a tenant.
type Organization struct {
	ID          string
	DisplayName string
	CreateTime  time.Time
	UpdateTime  time.Time
}

// Organizations stores organizations.
type Organizations interface {
	// CreateOrganization inserts o (ID generated when empty) and seeds the
	// built-in roles (BuiltinRoles) for it, in one transaction.
	// ErrAlreadyExists if the id is taken.
	CreateOrganization(ctx context.Context, o Organization) (Organization, error)
	// GetOrganization: ErrNotFound if absent.
	GetOrganization(ctx context.Context, id string) (Organization, error)
	// UpdateOrganization replaces the display name. ErrNotFound if absent.
	UpdateOrganization(ctx context.Context, o Organization) (Organization, error)
	// DeleteOrganization deletes it and everything in it. ErrNotFound if absent.
	DeleteOrganization(ctx context.Context, id string) error
	// ListUserOrganizations lists the organizations userID is a member of,
	// ordered by id. The token is bound to userID.
	ListUserOrganizations(ctx context.Context, userID string, pageSize int, pageToken string) (Page[Organization], error)
	// ListOrganizations lists every organization, oldest first (by create
	// time, then id), for operator commands (the first organization is the
	// one `prose init` made).
	ListOrganizations(ctx context.Context, pageSize int, pageToken string) (Page[Organization], error)
}

// ---------------------------------------------------------------------------
// Users

// User is a person. Emails are unique case-insensitively.
type User struct {
	ID          string
	DisplayName string
	Email       string
	CreateTime  time.Time
	UpdateTime  time.Time
}

// Users stores users.
type Users interface {
	// CreateUser: ErrAlreadyExists if the id or the email (any case) is taken.
	CreateUser(ctx context.Context, u User) (User, error)
	// GetUser: ErrNotFound if absent.
	GetUser(ctx context.Context, id string) (User, error)
	// GetUserByEmail matches case-insensitively. ErrNotFound if absent.
	GetUserByEmail(ctx context.Context, email string) (User, error)
	// UpdateUser replaces display name and email. ErrNotFound if absent,
	// ErrAlreadyExists if the new email is taken.
	UpdateUser(ctx context.Context, u User) (User, error)
	// DeleteUser deletes the user, their memberships and API keys; workspaces
	// they created lose their creator. ErrNotFound if absent.
	DeleteUser(ctx context.Context, id string) error
}

// ---------------------------------------------------------------------------
// Workspaces

// Workspace is a container for agents within an organization.
type Workspace struct {
	OrganizationID string
	ID             string
	Title          string
	Icon           string
	IconColor      string
	CreatorID      string // optional; empty when unknown or deleted
	// CreatorDisplayName and CreatorEmail are read from the creator's user
	// record; ignored on writes.
	CreatorDisplayName string
	CreatorEmail       string
	CreateTime         time.Time
	UpdateTime         time.Time
}

// ListWorkspacesRequest lists the workspaces of an organization.
//
// Filter fields (store.Filter): title (string; = != :) and id (the
// workspace id; = != and In: the workspaces an API key is scoped to).
type ListWorkspacesRequest struct {
	OrganizationID string
	// MemberUserID, when set, keeps only workspaces the user is a member of
	// (the /me/... list).
	MemberUserID string
	Filter       Filter  // nil: all
	OrderBy      OrderBy // nil: WorkspaceOrdering.Default
	PageSize     int
	PageToken    string
}

// Workspaces stores workspaces.
type Workspaces interface {
	// CreateWorkspace inserts w with default preferences. ErrNotFound if the
	// organization or the creator (when set) does not exist; ErrAlreadyExists
	// if the id is taken in the organization.
	CreateWorkspace(ctx context.Context, w Workspace) (Workspace, error)
	// GetWorkspace: ErrNotFound if absent. It may answer from memory: a
	// write through this store (or, on PostgreSQL, through a replica whose
	// notice has arrived: see AuthGenerations) is seen by the next call; a
	// write it cannot see (another process on the same SQLite file) within
	// 2 s.
	GetWorkspace(ctx context.Context, organizationID, id string) (Workspace, error)
	// UpdateWorkspace writes the fields named in mask ("title", "icon",
	// "icon_color"; empty mask: all three) and update_time. ErrNotFound if
	// absent; ErrInvalidArgument for an unknown mask path.
	UpdateWorkspace(ctx context.Context, w Workspace, mask []string) (Workspace, error)
	// DeleteWorkspace deletes the workspace and everything in it. ErrNotFound
	// if absent.
	DeleteWorkspace(ctx context.Context, organizationID, id string) error
	// ListWorkspaces pages through workspaces with keyset pagination.
	// ErrInvalidArgument for a bad token; an unknown organization yields an
	// empty page.
	ListWorkspaces(ctx context.Context, req ListWorkspacesRequest) (Page[Workspace], error)
	// CountWorkspaceUsers counts members per workspace id; ids of workspaces
	// that do not exist in the organization are absent from the map.
	CountWorkspaceUsers(ctx context.Context, organizationID string, workspaceIDs []string) (map[string]int, error)
}

// ---------------------------------------------------------------------------
// Roles and memberships

// RoleScope says where a role is bound.
type RoleScope string

// The scopes of a role.
const (
	ScopeOrganization RoleScope = "organization"
	ScopeWorkspace    RoleScope = "workspace"
)

// Valid reports whether s is one of the two scopes.
func (s RoleScope) Valid() bool { return s == ScopeOrganization || s == ScopeWorkspace }

// Role is a named set of permissions of an organization.
type Role struct {
	OrganizationID string
	ID             string // the role name, e.g. "owner"
	Scope          RoleScope
	Title          string
	Description    string
	Permissions    []string
	Builtin        bool // seeded; cannot be changed or deleted
	CreateTime     time.Time
	UpdateTime     time.Time
}

// RoleBinding is one role of a member.
type RoleBinding struct {
	RoleID string
	Scope  RoleScope
}

// WorkspaceUser is a member of a workspace with their roles: the
// workspace-scoped roles bound in that workspace and their
// organization-scoped roles.
type WorkspaceUser struct {
	User       User
	Roles      []RoleBinding // ordered by scope (organization first), then role id
	CreateTime time.Time     // when they joined the workspace
	UpdateTime time.Time     // last change of their workspace roles
}

// OrganizationMember is a member of an organization.
type OrganizationMember struct {
	OrganizationID string
	User           User
	Roles          []string // organization-scoped role ids, sorted
	CreateTime     time.Time
	UpdateTime     time.Time
}

// ListWorkspaceUsersRequest lists the members of a workspace.
//
// Filter fields (store.Filter): role (a role id, case-insensitive: an
// organization role or a workspace role in this workspace; = !=),
// role_scope ("organization" or "workspace"; = !=), search (":" on display
// name or e-mail).
type ListWorkspaceUsersRequest struct {
	OrganizationID string
	WorkspaceID    string
	Filter         Filter
	OrderBy        OrderBy // nil: WorkspaceUserOrdering.Default
	PageSize       int
	PageToken      string
}

// Members stores memberships of users in organizations and workspaces and
// their role bindings.
type Members interface {
	// AddOrganizationMember makes userID a member of the organization with the
	// given organization-scoped roles. ErrNotFound if the organization, user or
	// a role does not exist; ErrAlreadyExists if already a member;
	// ErrFailedPrecondition if a role is workspace-scoped.
	AddOrganizationMember(ctx context.Context, organizationID, userID string, roleIDs []string) (OrganizationMember, error)
	// GetOrganizationMember: ErrNotFound if not a member.
	GetOrganizationMember(ctx context.Context, organizationID, userID string) (OrganizationMember, error)
	// SetOrganizationRoles replaces the member's organization-scoped roles.
	// Errors as AddOrganizationMember; ErrNotFound if not a member.
	SetOrganizationRoles(ctx context.Context, organizationID, userID string, roleIDs []string) (OrganizationMember, error)
	// RemoveOrganizationMember removes the member, their workspace
	// memberships and their API keys in the organization. ErrNotFound if not a
	// member.
	RemoveOrganizationMember(ctx context.Context, organizationID, userID string) error

	// AddWorkspaceMember makes an organization member a workspace member with
	// workspace-scoped roles. ErrNotFound if the workspace, user or a role does
	// not exist; ErrFailedPrecondition if the user is not a member of the
	// organization or a role is organization-scoped; ErrAlreadyExists if
	// already a member.
	AddWorkspaceMember(ctx context.Context, organizationID, workspaceID, userID string, roleIDs []string) (WorkspaceUser, error)
	// GetWorkspaceUser: ErrNotFound if not a member of the workspace.
	GetWorkspaceUser(ctx context.Context, organizationID, workspaceID, userID string) (WorkspaceUser, error)
	// SetWorkspaceRoles replaces the member's workspace roles. Errors as
	// AddWorkspaceMember; ErrNotFound if not a member.
	SetWorkspaceRoles(ctx context.Context, organizationID, workspaceID, userID string, roleIDs []string) (WorkspaceUser, error)
	// RemoveWorkspaceMember: ErrNotFound if not a member.
	RemoveWorkspaceMember(ctx context.Context, organizationID, workspaceID, userID string) error
	// ListWorkspaceUsers pages through a workspace's members. An unknown
	// workspace yields an empty page.
	ListWorkspaceUsers(ctx context.Context, req ListWorkspaceUsersRequest) (Page[WorkspaceUser], error)
	// EffectivePermissions returns the sorted union of the permissions of the
	// user's organization roles and, when workspaceID is not empty, of their
	// roles in that workspace. A non-member has none (empty, no error).
	EffectivePermissions(ctx context.Context, organizationID, workspaceID, userID string) ([]string, error)
}

// Roles stores roles.
type Roles interface {
	// CreateRole: ErrNotFound if the organization does not exist;
	// ErrAlreadyExists if the id is taken; ErrInvalidArgument for a bad scope.
	CreateRole(ctx context.Context, r Role) (Role, error)
	// GetRole: ErrNotFound if absent.
	GetRole(ctx context.Context, organizationID, id string) (Role, error)
	// UpdateRole replaces title, description and permissions (not the scope).
	// ErrNotFound if absent; ErrFailedPrecondition for a built-in role.
	UpdateRole(ctx context.Context, r Role) (Role, error)
	// DeleteRole: ErrNotFound if absent; ErrFailedPrecondition for a built-in
	// role or a role still bound to a member.
	DeleteRole(ctx context.Context, organizationID, id string) error
	// ListRoles lists the roles of the organization ordered by id; scope ""
	// lists both scopes. The token is bound to organization and scope.
	ListRoles(ctx context.Context, organizationID string, scope RoleScope, pageSize int, pageToken string) (Page[Role], error)
}

// ---------------------------------------------------------------------------
// Invitations

// Invitation invites an e-mail address into an organization or, when
// WorkspaceID is set, into one of its workspaces.
type Invitation struct {
	OrganizationID string
	ID             string
	WorkspaceID    string // empty: organization invitation
	Email          string
	RoleIDs        []string
	InviterID      string // optional
	CreateTime     time.Time
	ExpireTime     time.Time // optional (zero: never)
}

// Invitations stores invitations.
type Invitations interface {
	// CreateInvitation: ErrNotFound if the organization or workspace does not
	// exist; ErrAlreadyExists if the id is taken or the same e-mail (any case)
	// is already invited to the same organization/workspace.
	CreateInvitation(ctx context.Context, inv Invitation) (Invitation, error)
	// GetInvitation: ErrNotFound if absent.
	GetInvitation(ctx context.Context, organizationID, id string) (Invitation, error)
	// DeleteInvitation: ErrNotFound if absent.
	DeleteInvitation(ctx context.Context, organizationID, id string) error
	// ListInvitations lists invitations to a workspace (or, with workspaceID
	// "", to the organization itself), newest first.
	ListInvitations(ctx context.Context, organizationID, workspaceID string, pageSize int, pageToken string) (Page[Invitation], error)
	// ListOrganizationInvitations lists every invitation of an organization,
	// to the organization itself and to each of its workspaces, newest first.
	ListOrganizationInvitations(ctx context.Context, organizationID string, pageSize int, pageToken string) (Page[Invitation], error)
}

// ---------------------------------------------------------------------------
// Workspace preferences

// WorkspacePreferences are the settings of a workspace. The enums are stored
// by their proto names (e.g. "TIME_FORMAT_UNSPECIFIED"); the store does not
// interpret them.
type WorkspacePreferences struct {
	OrganizationID    string
	WorkspaceID       string
	SupportTeamAccess bool
	TimeZone          string
	TimeFormat        string
	DateFormat        string
	DecimalSymbol     string
	DecimalPlaces     int32
	MeasurementSystem string
	UpdateTime        time.Time
}

// Preferences stores workspace preferences. Every workspace has them from
// creation (zero values).
type Preferences interface {
	// GetWorkspacePreferences: ErrNotFound if the workspace does not exist.
	GetWorkspacePreferences(ctx context.Context, organizationID, workspaceID string) (WorkspacePreferences, error)
	// UpdateWorkspacePreferences writes the fields named in mask
	// ("support_team_access", "general.time_zone", "general.time_format",
	// "general.date_format", "general.decimal_symbol",
	// "general.decimal_places", "general.measurement_system"; the "general."
	// prefix is optional; "general" alone means all six; empty mask: all).
	// ErrNotFound if the workspace does not exist; ErrInvalidArgument for an
	// unknown path.
	UpdateWorkspacePreferences(ctx context.Context, p WorkspacePreferences, mask []string) (WorkspacePreferences, error)
}

// ---------------------------------------------------------------------------
// API keys

// PermissionLevel of an API key.
type PermissionLevel string

// The permission levels of an API key.
const (
	PermissionAll        PermissionLevel = "all"
	PermissionReadOnly   PermissionLevel = "read_only"
	PermissionRestricted PermissionLevel = "restricted"
)

// Valid reports whether l is a known level.
func (l PermissionLevel) Valid() bool {
	return l == PermissionAll || l == PermissionReadOnly || l == PermissionRestricted
}

// APIKey is a personal access token of a user in one organization. Only the
// hash of the secret is stored.
type APIKey struct {
	ID             string
	OrganizationID string
	UserID         string
	Name           string
	Prefix         string // public, unique, used for lookup and display
	SecretHash     []byte
	// AllWorkspaces, or else the listed WorkspaceIDs.
	AllWorkspaces   bool
	WorkspaceIDs    []string
	PermissionLevel PermissionLevel
	// Permissions are the per-resource toggles of a restricted key
	// (e.g. "runs.archive": true).
	Permissions  map[string]bool
	CreateTime   time.Time
	UpdateTime   time.Time
	ExpireTime   time.Time // zero: never
	LastUsedTime time.Time // zero: never used
}

// Expired reports whether k is expired at now.
func (k APIKey) Expired(now time.Time) bool {
	return !k.ExpireTime.IsZero() && !now.Before(k.ExpireTime)
}

// APIKeys stores API keys.
type APIKeys interface {
	// CreateAPIKey inserts k. When limit > 0 and the organization already has
	// limit unexpired keys, it fails with ErrResourceExhausted (the check and
	// the insert are one transaction). ErrFailedPrecondition if the user is not
	// a member of the organization; ErrNotFound if the organization does not
	// exist; ErrAlreadyExists if the id or prefix is taken;
	// ErrInvalidArgument for an unknown permission level.
	CreateAPIKey(ctx context.Context, k APIKey, limit int) (APIKey, error)
	// GetAPIKey: ErrNotFound if absent (or in another organization).
	GetAPIKey(ctx context.Context, organizationID, id string) (APIKey, error)
	// GetAPIKeyByPrefix finds a key by its public prefix, for authentication;
	// expired keys are returned too (the caller checks Expired). ErrNotFound
	// if absent.
	GetAPIKeyByPrefix(ctx context.Context, prefix string) (APIKey, error)
	// UpdateAPIKey writes the fields named in mask ("name", "scope" (=
	// AllWorkspaces and WorkspaceIDs), "permissions" (= PermissionLevel and
	// Permissions); empty: all). ErrNotFound if absent.
	UpdateAPIKey(ctx context.Context, k APIKey, mask []string) (APIKey, error)
	// TouchAPIKey sets last_used_time. ErrNotFound if absent.
	TouchAPIKey(ctx context.Context, id string, at time.Time) error
	// DeleteAPIKey: ErrNotFound if absent.
	DeleteAPIKey(ctx context.Context, organizationID, id string) error
	// ListAPIKeys lists the organization's keys (of one user when userID is
	// set), newest first.
	ListAPIKeys(ctx context.Context, organizationID, userID string, pageSize int, pageToken string) (Page[APIKey], error)
	// CountAPIKeys counts the organization's unexpired keys.
	CountAPIKeys(ctx context.Context, organizationID string) (int, error)
}

// ---------------------------------------------------------------------------
// Idempotency

// Idempotency remembers which resource a creating request made, per
// (organization, method, request_id), so a retry returns the first result.
//
// Typical use in a handler:
//
//	if name, err := st.LookupRequest(ctx, org, method, reqID); err == nil {
//		return get(name) // retry: the first result
//	}
//	created := create(...)
//	name, err := st.RecordRequest(ctx, org, method, reqID, created.Name)
//	// name differs from created.Name if a concurrent retry recorded first.
type Idempotency interface {
	// LookupRequest returns the recorded resource name. ErrNotFound if none.
	LookupRequest(ctx context.Context, organizationID, method, requestID string) (string, error)
	// RecordRequest records resourceName unless the key is already recorded,
	// and returns the name recorded first (resourceName or the earlier one).
	RecordRequest(ctx context.Context, organizationID, method, requestID, resourceName string) (string, error)
	// PurgeRequests deletes records older than before; returns how many.
	PurgeRequests(ctx context.Context, before time.Time) (int, error)
}
