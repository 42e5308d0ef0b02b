package console

import (
	"sort"

	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/internal/names"
)

// The roles of a workspace, said as what each lets a member do (the
// settings page's "Roles" table).

// permissionWords says a permission as a person would.
var permissionWords = map[string]string{
	"organizations.get": "see the organization", "organizations.update": "change the organization",
	"members.manage": "manage members", "roles.manage": "manage roles", "apikeys.manage": "manage API keys",
	"workspaces.create": "create workspaces", "workspaces.get": "see the workspace", "workspaces.list": "list workspaces",
	"workspaces.update": "change the workspace and its webhooks", "workspaces.delete": "delete workspaces",
	"preferences.update": "change preferences", "invitations.manage": "invite people",
	"automations.get": "see automations, connections and triggers", "automations.write": "write automations, connections, triggers and schedules, approve learnings",
	"runs.get": "see runs and insights", "runs.create": "start runs", "runs.manage": "pause and continue runs", "runs.archive": "archive runs",
	"exceptions.get": "see exceptions and learnings", "exceptions.resolve": "resolve exceptions and teach learnings",
}

type roleView struct {
	ID, Title, Description string
	Can                    []string
}

// workspaceRoles lists the workspace's roles with what each allows, and
// the titles by role id.
func (c *Console) workspaceRoles(s *sess, ws string) ([]roleView, map[string]string) {
	titles := map[string]string{}
	res, err := c.workspaces.ListWorkspaceRoles(s.ctx, &platformv1.ListWorkspaceRolesRequest{OrganizationId: s.OrganizationID, WorkspaceId: ws, PageSize: 100})
	if err != nil {
		return nil, titles
	}
	var out []roleView
	for _, r := range res.GetRoles() {
		v := roleView{ID: names.ID(r.GetName()), Title: r.GetTitle(), Description: r.GetDescription()}
		for _, p := range r.GetPermissions() {
			v.Can = append(v.Can, cmpOr(permissionWords[p], p))
		}
		sort.Strings(v.Can)
		titles[v.ID] = v.Title
		out = append(out, v)
	}
	return out, titles
}
