package server_test

import (
	"fmt"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/store"
)

// wantResult fails t unless r has code want and reason (when not "").
func wantResult(t *testing.T, what string, r xresult, want codes.Code, reason string) {
	t.Helper()
	if r.code != want || (reason != "" && r.reason != reason) {
		t.Errorf("%s: got %v %s (%s), want %v %s", what, r.code, r.reason, r.raw, want, reason)
	}
}

// The four operations of the reference added last: GetOrganizationPreferences,
// GetInvitation, GetUserBasicInfo (this test) and GetAutomationVisualization
// (TestAutomationVisualization), over HTTP and gRPC, each answer fitting the
// reference's schema.
func TestOrganizationReadsOfTheReference(t *testing.T) {
	e := newTestEnv(t)
	org, ws := e.Init.OrganizationID, e.Init.WorkspaceID
	viewer := e.NewViewer(t)
	stranger, err := e.Store.CreateUser(t.Context(), store.User{DisplayName: "Not A Member", Email: "out-" + store.NewID() + "@example.test"})
	if err != nil {
		t.Fatal(err)
	}
	forEachTransport(t, func(t *testing.T, tr apiTransport) {
		prefs := e.mustCall(t, tr, "/prose.platform.v1.OrganizationService/GetOrganizationPreferences",
			&platformv1.GetOrganizationPreferencesRequest{OrganizationId: org})
		checkSchema(t, "v1OrganizationPreferences", prefs)
		if prefs["name"] != "organizations/"+org+"/preferences" {
			t.Errorf("preferences name %v", prefs["name"])
		}

		email := tr.name + "-" + store.NewID() + "@example.test"
		created := e.mustCall(t, tr, "/prose.platform.v1.WorkspaceService/CreateWorkspaceInvite",
			&platformv1.CreateWorkspaceInviteRequest{OrganizationId: org, WorkspaceId: ws, Email: email, Roles: []string{"workspace_viewer"}})
		id := fmt.Sprint(created["invitation_id"])
		inv := e.mustCall(t, tr, "/prose.platform.v1.OrganizationService/GetInvitation",
			&platformv1.GetInvitationRequest{OrganizationId: org, InvitationId: id})
		checkSchema(t, "v1Invitation", inv)
		for k, want := range map[string]any{
			"name": "organizations/" + org + "/invitations/" + id, "organization_display_name": "Test org",
			"workspace_id": ws, "workspace_display_name": "Ops",
		} {
			if inv[k] != want {
				t.Errorf("invitation %s = %v, want %v", k, inv[k], want)
			}
		}
		if roles, _ := inv["roles"].([]any); len(roles) != 1 || roles[0] != "workspace_viewer" {
			t.Errorf("invitation roles %v", inv["roles"])
		}
		wantResult(t, "unknown invitation", e.callResult(t, tr, "/prose.platform.v1.OrganizationService/GetInvitation",
			&platformv1.GetInvitationRequest{OrganizationId: org, InvitationId: "nope" + store.NewID()}), codes.NotFound, "INVITATION_NOT_FOUND")

		for _, u := range []struct{ id, name, email string }{
			{e.Init.UserID, "", e.Email},
			{viewer.ID, "Zed Viewer", viewer.Email},
		} {
			m := e.mustCall(t, tr, "/prose.platform.v1.OrganizationService/GetUserBasicInfo",
				&platformv1.GetUserBasicInfoRequest{OrganizationId: org, UserId: u.id})
			checkSchema(t, "v1UserBasicInfo", m)
			if m["name"] != "organizations/"+org+"/users/"+u.id || m["email"] != u.email || (u.name != "" && m["display_name"] != u.name) {
				t.Errorf("user %s: %v", u.id, m)
			}
		}
		// A user of another organization (or of none) is not found here.
		for _, id := range []string{stranger.ID, "nobody" + store.NewID()} {
			wantResult(t, "user "+id, e.callResult(t, tr, "/prose.platform.v1.OrganizationService/GetUserBasicInfo",
				&platformv1.GetUserBasicInfoRequest{OrganizationId: org, UserId: id}), codes.NotFound, "USER_NOT_FOUND")
		}
	})
}

// flowCode decides, loops, asks and outputs: every kind of step.
const flowCode = `the total is 0
process each price in the prices as follows
  add the price to the total
if the total is more than 100 then
  ask "Approve the order?"
else
  say "small order"
the output total is the total
`

// TestAutomationVisualization: the visualization is the flow graph of the
// published version (not the draft), computed from its program, and follows
// each publish; before the first publish it is FAILED_PRECONDITION.
func TestAutomationVisualization(t *testing.T) {
	e := newTestEnv(t)
	org, ws := e.Init.OrganizationID, e.Init.WorkspaceID
	const rpc = "/prose.platform.v1.AutomationService/GetAutomationVisualization"
	forEachTransport(t, func(t *testing.T, tr apiTransport) {
		a := e.MkAutomation(t, "flow-"+tr.name, flowCode, false)
		req := &platformv1.GetAutomationVisualizationRequest{OrganizationId: org, WorkspaceId: ws, AutomationId: a.ID}
		wantResult(t, "never published", e.callResult(t, tr, rpc, req), codes.FailedPrecondition, "AUTOMATION_NOT_PUBLISHED")
		wantResult(t, "unknown automation", e.callResult(t, tr, rpc,
			&platformv1.GetAutomationVisualizationRequest{OrganizationId: org, WorkspaceId: ws, AutomationId: "nope" + store.NewID()}),
			codes.NotFound, "AUTOMATION_NOT_FOUND")

		pub := e.API(t, "POST", e.AutomationsPath()+"/"+a.ID+":publish", `{}`, 200)
		v := e.mustCall(t, tr, rpc, req)
		checkSchema(t, "v1AutomationVisualization", v)
		if v["name"] != "organizations/"+org+"/workspaces/"+ws+"/automations/"+a.ID+"/visualization" ||
			v["state"] != "VISUALIZATION_STATE_COMPLETED" || v["automation_version"] != pub["latest_published_version"] {
			t.Errorf("visualization %v (published %v)", v, pub["latest_published_version"])
		}
		got := flowSummary(v)
		want := `START Start
PROCESS the total is 0
DECISION process each price in the prices as follows
PROCESS add the price to the total
DECISION the total is more than 100
INPUT ask "Approve the order?"
OUTPUT say "small order"
OUTPUT the output total is the total
END End
Start -> the total is 0
the total is 0 -> process each price in the prices as follows
process each price in the prices as follows -> add the price to the total [Each]
add the price to the total -> process each price in the prices as follows
process each price in the prices as follows -> the total is more than 100 [Done]
the total is more than 100 -> ask "Approve the order?" [Yes]
the total is more than 100 -> say "small order" [No]
ask "Approve the order?" -> the output total is the total
say "small order" -> the output total is the total
the output total is the total -> End
`
		if got != want {
			t.Errorf("graph:\n%s\nwant:\n%s", got, want)
		}

		// A new draft changes nothing until it is published.
		e.API(t, "PATCH", e.AutomationsPath()+"/"+a.ID, `{"english_code":"the output is 1\n"}`, 200)
		if again := flowSummary(e.mustCall(t, tr, rpc, req)); again != want {
			t.Errorf("after a draft update the graph changed:\n%s", again)
		}
		pub = e.API(t, "POST", e.AutomationsPath()+"/"+a.ID+":publish", `{}`, 200)
		v = e.mustCall(t, tr, rpc, req)
		if got := flowSummary(v); got != "START Start\nOUTPUT the output is 1\nEND End\nStart -> the output is 1\nthe output is 1 -> End\n" ||
			v["automation_version"] != pub["latest_published_version"] {
			t.Errorf("after the second publish: %v\n%s", v["automation_version"], got)
		}

		// Published code that no longer parses (written before a language
		// change; the store takes any text) is state FAILED, not an error.
		ctx := t.Context()
		bad, err := e.Store.CreateAutomation(ctx, store.Automation{OrganizationID: org, WorkspaceID: ws, ID: "old-" + tr.name,
			DisplayName: "Old", Code: "if then\n", AuthorID: e.Init.UserID})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.Store.PublishAutomation(ctx, org, ws, bad.ID, e.Init.UserID); err != nil {
			t.Fatal(err)
		}
		v = e.mustCall(t, tr, rpc, &platformv1.GetAutomationVisualizationRequest{OrganizationId: org, WorkspaceId: ws, AutomationId: bad.ID})
		checkSchema(t, "v1AutomationVisualization", v)
		if v["state"] != "VISUALIZATION_STATE_FAILED" || v["error_message"] == nil || v["graph"] != nil {
			t.Errorf("unparsable published code: %v", v)
		}
	})
}

// flowSummary writes a visualization's graph with labels for ids.
func flowSummary(v map[string]any) string {
	g, _ := v["graph"].(map[string]any)
	labels := map[string]string{}
	var b strings.Builder
	nodes, _ := g["nodes"].([]any)
	for _, n := range nodes {
		m, _ := n.(map[string]any)
		labels[fmt.Sprint(m["id"])] = fmt.Sprint(m["label"])
		fmt.Fprintf(&b, "%s %s\n", strings.TrimPrefix(fmt.Sprint(m["type"]), "FLOW_NODE_TYPE_"), m["label"])
	}
	edges, _ := g["edges"].([]any)
	for _, ed := range edges {
		m, _ := ed.(map[string]any)
		fmt.Fprintf(&b, "%s -> %s", labels[fmt.Sprint(m["source"])], labels[fmt.Sprint(m["target"])])
		if c, ok := m["condition"]; ok {
			fmt.Fprintf(&b, " [%s]", c)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// TestGetOrganizationNamesItsOwner: GetOrganization answers the reference's
// owner_email and owner_display_name: the member who has been an owner
// longest, over HTTP and gRPC; a later owner does not replace them.
func TestGetOrganizationNamesItsOwner(t *testing.T) {
	e := newTestEnv(t)
	later, err := e.Store.CreateUser(t.Context(), store.User{DisplayName: "Later Owner", Email: "later-" + store.NewID() + "@example.test"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Store.AddOrganizationMember(t.Context(), e.Init.OrganizationID, later.ID, []string{"owner"}); err != nil {
		t.Fatal(err)
	}
	forEachTransport(t, func(t *testing.T, tr apiTransport) {
		o := e.mustCall(t, tr, "/prose.platform.v1.OrganizationService/GetOrganization", &platformv1.GetOrganizationRequest{OrganizationId: e.Init.OrganizationID})
		checkSchema(t, "v1Organization", o)
		if o["owner_email"] != e.Email {
			t.Errorf("owner: %v, want %s", o, e.Email)
		}
	})
}
