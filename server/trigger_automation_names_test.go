package server_test

import (
	"fmt"
	"testing"

	"google.golang.org/grpc/codes"

	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/server/testenv"
)

// TestTriggerAutomationIDsNameThisWorkspace: a trigger instance's
// automation_ids may be ids or full names of this workspace's automations;
// the full name of another workspace's or organization's automation is
// INVALID_ARGUMENT naming the entry (it was re-read as a local id), over
// HTTP and gRPC.
func TestTriggerAutomationIDsNameThisWorkspace(t *testing.T) {
	e := newTestEnv(t)
	org, ws := e.Init.OrganizationID, e.Init.WorkspaceID
	a := e.MkAutomation(t, "on-order", "the output is 1\n", true)
	other := e.NewWorkspace(t, "Other")
	orders, _ := e.TriggersPath(t, e.WsPath(), "webhook", "orders")
	inst := e.API(t, "POST", orders, `{"name":"Orders"}`, 200)
	id := fmt.Sprint(testenv.Field(inst, "trigger_instance.id"))
	const rpc = "/prose.platform.v1.TriggerService/SetAutomationsForTriggerInstance"
	forEachTransport(t, func(t *testing.T, tr apiTransport) {
		set := func(ids ...string) xresult {
			return e.callResult(t, tr, rpc, &platformv1.SetAutomationsForTriggerInstanceRequest{
				OrganizationId: org, WorkspaceId: ws, TriggerInstanceId: id, AutomationIds: ids})
		}
		for _, good := range []string{a.ID, "organizations/" + org + "/workspaces/" + ws + "/automations/" + a.ID} {
			wantResult(t, good, set(good), codes.OK, "")
		}
		for _, bad := range []string{
			"organizations/" + org + "/workspaces/" + other + "/automations/" + a.ID,
			"organizations/another-org/workspaces/" + ws + "/automations/" + a.ID,
			"workspaces/" + ws + "/automations/" + a.ID,
		} {
			r := set(a.ID, bad)
			wantResult(t, bad, r, codes.InvalidArgument, "INVALID_FIELD")
			if r.violation != "automation_ids[1]" {
				t.Errorf("%s: violation %q", bad, r.violation)
			}
		}
	})
}
