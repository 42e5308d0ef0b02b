package server_test

import (
	"fmt"
	"testing"

	"google.golang.org/grpc/metadata"

	legacyv1 "github.com/proserun/prose/gen/prose/legacy/v1"
	legacyv2 "github.com/proserun/prose/gen/prose/legacy/v2"
	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/server/testenv"
)

// outputsRuleCode sets outputs at the top level and inside blocks: only the
// top-level ones are outputs, with the values they have at the end.
const outputsRuleCode = `the output status is "new"
if true then
  the output status is "checked"
  the output note is "inside"
process each item in the items as follows
  the output last is the item
`

// TestRunOutputsTopLevelOnly: the platform run's outputs (HTTP and gRPC),
// v1's answer and v2's outputs hold the facts named "the output …" that a
// top-level statement defines, never one set only inside a block.
func TestRunOutputsTopLevelOnly(t *testing.T) {
	e := newTestEnv(t)
	a := e.MkAutomation(t, "Outputs", outputsRuleCode, true)
	ws := e.Init.WorkspaceID
	m := e.Legacy(t, "POST", "/v1/invoke/"+a.PublishedShare, `{"items":[1,2]}`, 201)
	id := fmt.Sprint(m["worker_id"])

	r := e.WaitRun(t, a.ID, id, "completed")
	outs, _ := testenv.Field(r, "state.completed.outputs").(map[string]any)
	if len(outs) != 1 || testenv.Field(outs, "output status.text") != "checked" {
		t.Errorf("GetRun outputs %v, want only output status = checked", outs)
	}
	g, err := e.DoGRPC(t, runSvc+"GetRun", &platformv1.GetRunRequest{OrganizationId: e.Init.OrganizationID, WorkspaceId: ws, AutomationId: a.ID, RunId: id},
		metadata.Pairs("authorization", "Bearer "+e.Init.APIKey))
	if err != nil {
		t.Fatal(err)
	}
	if outs, _ := testenv.Field(g, "state.completed.outputs").(map[string]any); len(outs) != 1 || testenv.Field(outs, "output status.text") != "checked" {
		t.Errorf("gRPC GetRun outputs %v", outs)
	}

	md := metadata.Pairs("x-api-key", e.Init.APIKey)
	v1 := e.Legacy(t, "GET", "/v1/run/"+id, "", 200)
	if ans, _ := v1["answer"].(map[string]any); len(ans) != 1 || ans["output status"] != "checked" {
		t.Errorf("v1 answer %v, want {output status: checked}", v1["answer"])
	}
	g, err = e.DoGRPC(t, v1Svc+"GetRunStatus", &legacyv1.GetRunStatusRequest{WorkerId: id}, md)
	if ans, _ := g["answer"].(map[string]any); err != nil || len(ans) != 1 || ans["output status"] != "checked" {
		t.Errorf("gRPC v1 answer %v %v", err, g["answer"])
	}

	v2 := e.Legacy(t, "GET", "/v2/runs/"+id, "", 200)
	if o, _ := v2["outputs"].([]any); len(o) != 1 || testenv.Field(v2, "outputs.0.name") != "output status" || testenv.Field(v2, "outputs.0.value") != "checked" {
		t.Errorf("v2 outputs %v", v2["outputs"])
	}
	g, err = e.DoGRPC(t, v2Svc+"GetRun", &legacyv2.GetRunRequest{Id: id}, md)
	if o, _ := g["outputs"].([]any); err != nil || len(o) != 1 || testenv.Field(g, "outputs.0.value") != "checked" {
		t.Errorf("gRPC v2 outputs %v %v", err, g["outputs"])
	}
}
