package console

import (
	"net/http"
	"net/url"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/internal/names"
	"github.com/proserun/prose/store"
)

type settingsData struct {
	pageData
	Keys      []*platformv1.ApiKey
	KeysError string
	NewKey    string
	Members   []memberView
	Me        string
	// Roles are the workspace roles a member can be given; Others the
	// organization's users who are not members of the workspace.
	Roles  []*platformv1.Role
	Others []*platformv1.WorkspaceUser
	// Owners names the owners of the keys (users/{id} → name or email).
	Owners map[string]string
	// RoleList says what each workspace role allows; RoleTitles names
	// them by id (roles.go).
	RoleList   []roleView
	RoleTitles map[string]string
}

// memberView is a member with the workspace roles they hold.
type memberView struct {
	*platformv1.WorkspaceUser
	// Has holds the ids of their workspace-scope roles; OrgRoles names
	// the roles given in the organization (they apply here too).
	Has      map[string]bool
	OrgRoles []string
}

var keyLevels = map[string]platformv1.ApiKeyPermissionLevel{
	"all":       platformv1.ApiKeyPermissionLevel_API_KEY_PERMISSION_LEVEL_ALL,
	"read_only": platformv1.ApiKeyPermissionLevel_API_KEY_PERMISSION_LEVEL_READ_ONLY,
}

var keyExpirations = map[string]platformv1.ApiKeyExpiration{
	"7d": platformv1.ApiKeyExpiration_API_KEY_EXPIRATION_7_DAYS, "30d": platformv1.ApiKeyExpiration_API_KEY_EXPIRATION_30_DAYS,
	"60d": platformv1.ApiKeyExpiration_API_KEY_EXPIRATION_60_DAYS, "90d": platformv1.ApiKeyExpiration_API_KEY_EXPIRATION_90_DAYS,
	"180d": platformv1.ApiKeyExpiration_API_KEY_EXPIRATION_180_DAYS, "1y": platformv1.ApiKeyExpiration_API_KEY_EXPIRATION_1_YEAR,
}

// settings shows the organization's API keys and the workspace's members.
func (c *Console) settings(w http.ResponseWriter, r *http.Request, s *sess) {
	c.showSettings(w, r, s, http.StatusOK, "", "")
}

func (c *Console) showSettings(w http.ResponseWriter, r *http.Request, s *sess, code int, errMsg, newKey string) {
	base, err := c.basics(r, s, "Settings")
	if err != nil {
		c.grpcFail(w, r, s, err)
		return
	}
	base.Error = errMsg
	d := &settingsData{pageData: base, NewKey: newKey, Me: names.User(s.UserID)}
	keys, err := c.apiKeys.ListApiKeys(s.ctx, &platformv1.ListApiKeysRequest{OrganizationId: s.OrganizationID, PageSize: 100})
	switch status.Code(err) {
	case codes.OK:
		d.Keys = keys.GetApiKeys()
		d.Owners = c.orgPeopleNames(s, base.WS)
	case codes.PermissionDenied:
		d.KeysError = "You cannot manage the organization's API keys."
	default:
		c.grpcFail(w, r, s, err)
		return
	}
	m, err := c.workspaces.ListWorkspaceUsers(s.ctx, &platformv1.ListWorkspaceUsersRequest{OrganizationId: s.OrganizationID, WorkspaceId: base.WS, PageSize: maxMembersShown})
	if err != nil {
		c.grpcFail(w, r, s, err)
		return
	}
	d.RoleList, d.RoleTitles = c.workspaceRoles(s, base.WS)
	in := map[string]bool{}
	for _, u := range m.GetUsers() {
		v := memberView{WorkspaceUser: u, Has: map[string]bool{}}
		for _, role := range u.GetRoles() {
			if role.GetRoleScope() == platformv1.RoleScope_ROLE_SCOPE_ORGANIZATION {
				v.OrgRoles = append(v.OrgRoles, names.ID(role.GetName()))
			} else {
				v.Has[names.ID(role.GetName())] = true
			}
		}
		in[u.GetUser().GetName()] = true
		d.Members = append(d.Members, v)
	}
	if d.Can(store.PermMembersManage) {
		roles, err := c.workspaces.ListWorkspaceRoles(s.ctx, &platformv1.ListWorkspaceRolesRequest{OrganizationId: s.OrganizationID, WorkspaceId: base.WS, PageSize: 100})
		if err != nil {
			c.grpcFail(w, r, s, err)
			return
		}
		d.Roles = roles.GetRoles()
		if users, err := c.orgs.ListOrganizationUsers(s.ctx, &platformv1.ListOrganizationUsersRequest{OrganizationId: s.OrganizationID, PageSize: maxMembersShown}); err == nil {
			for _, u := range users.GetUsers() {
				if !in[u.GetUser().GetName()] {
					d.Others = append(d.Others, u)
				}
			}
		}
	}
	c.render(w, r, code, "settings", d)
}

// maxMembersShown bounds the members (and organization users) settings
// lists.
const maxMembersShown = 200

// memberAction gives a member of the workspace their roles (roles: the
// ticked role ids; none is refused), adds a user of the organization with
// roles, or removes a member.
func (c *Console) memberAction(w http.ResponseWriter, r *http.Request, s *sess) {
	ws := r.PathValue("ws")
	user := names.ID(r.PostFormValue("user"))
	if user == "" {
		c.showSettings(w, r, s, http.StatusBadRequest, "Choose a member.", "")
		return
	}
	roles := r.PostForm["role"]
	var err error
	switch r.PathValue("action") {
	case "roles", "add":
		if len(roles) == 0 {
			c.showSettings(w, r, s, http.StatusBadRequest, "Tick at least one role (to take every role away, remove the member).", "")
			return
		}
		if r.PathValue("action") == "roles" {
			_, err = c.workspaces.UpdateWorkspaceUser(s.ctx, &platformv1.UpdateWorkspaceUserRequest{OrganizationId: s.OrganizationID, WorkspaceId: ws, UserId: user, Roles: roles})
		} else {
			_, err = c.workspaces.CreateWorkspaceUser(s.ctx, &platformv1.CreateWorkspaceUserRequest{OrganizationId: s.OrganizationID, WorkspaceId: ws, UserId: user, Roles: roles})
		}
	case "remove":
		_, err = c.workspaces.DeleteWorkspaceUser(s.ctx, &platformv1.DeleteWorkspaceUserRequest{OrganizationId: s.OrganizationID, WorkspaceId: ws, UserId: user})
	default:
		c.fail(w, r, s, http.StatusNotFound, "No such action.")
		return
	}
	if err != nil {
		if msg, ok := mendable(err, codes.InvalidArgument, codes.NotFound, codes.FailedPrecondition, codes.AlreadyExists); ok {
			code := http.StatusBadRequest
			if status.Code(err) != codes.InvalidArgument {
				code = http.StatusConflict
			}
			c.showSettings(w, r, s, code, msg, "")
			return
		}
		c.grpcFail(w, r, s, err)
		return
	}
	http.Redirect(w, r, "/w/"+url.PathEscape(ws)+"/settings#members", http.StatusSeeOther)
}

// keyAction creates or revokes an API key.
func (c *Console) keyAction(w http.ResponseWriter, r *http.Request, s *sess) {
	ws := r.PathValue("ws")
	switch r.PathValue("action") {
	case "create":
		level, ok := keyLevels[r.PostFormValue("level")]
		exp, ok2 := keyExpirations[r.PostFormValue("expires")]
		if !ok || !ok2 {
			c.showSettings(w, r, s, http.StatusBadRequest, "Choose a permission level and an expiry.", "")
			return
		}
		res, err := c.apiKeys.CreateApiKey(s.ctx, &platformv1.CreateApiKeyRequest{OrganizationId: s.OrganizationID, ApiKey: &platformv1.ApiKey{
			DisplayName: r.PostFormValue("display_name"), PermissionLevel: level, Expiration: exp,
		}})
		if err != nil {
			if msg, ok := mendable(err, codes.InvalidArgument, codes.ResourceExhausted); ok {
				c.showSettings(w, r, s, http.StatusBadRequest, msg, "")
				return
			}
			c.grpcFail(w, r, s, err)
			return
		}
		// The value is shown once, on this answer (never stored by the console).
		c.showSettings(w, r, s, http.StatusOK, "", res.GetKey())
	case "revoke":
		id := names.ID(r.PostFormValue("key"))
		if _, err := c.apiKeys.DeleteApiKey(s.ctx, &platformv1.DeleteApiKeyRequest{OrganizationId: s.OrganizationID, ApiKeyId: id}); err != nil {
			c.grpcFail(w, r, s, err)
			return
		}
		http.Redirect(w, r, "/w/"+url.PathEscape(ws)+"/settings", http.StatusSeeOther)
	default:
		c.fail(w, r, s, http.StatusNotFound, "No such action.")
	}
}
