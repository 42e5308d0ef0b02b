package server_test

import (
	"fmt"
	"net/url"
	"testing"

	"google.golang.org/grpc/metadata"

	legacyv1 "github.com/proserun/prose/gen/prose/legacy/v1"
	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/server/testenv"
	"github.com/proserun/prose/store"
)

// childRunsCode starts two runs of a procedure; the first asks a question,
// so the parent waits for it.
const childRunsCode = `to check an amount
  if the amount is greater than 150 then
    get the approval
    the result is the approval
  else
    the result is the amount
start a run where
  the procedure is "check the amount"
  the amount is 200
start a run where
  the procedure is "check the amount"
  the amount is 100
wait for the runs
the output first is the first run's result
the output second is the second run's result
the output child is the first run's run
`

// TestChildRunsThroughTheAPI: the runs a program starts are runs of the
// automation, read and listed over HTTP and gRPC with parent_run; the
// parent waiting for them shows as executing (v1 running); guiding the
// child that asks lets the parent complete with both results.
func TestChildRunsThroughTheAPI(t *testing.T) {
	e := newTestEnv(t)
	a := e.MkAutomation(t, "Children", childRunsCode, false)
	m := e.API(t, "POST", e.AutomationsPath()+"/"+a.ID+":invoke", `{"stage":"AUTOMATION_STAGE_DRAFT"}`, 200)
	parent := fmt.Sprint(m["run_id"])
	e.WaitRunState(t, a.ID, parent, store.RunWaiting)
	p := e.API(t, "GET", e.RunPath(a.ID, parent), "", 200)
	if s := testenv.RunState(p); s != "executing" {
		t.Errorf("waiting parent shows %q, want executing", s)
	}
	if _, ok := p["parent_run"]; ok {
		t.Errorf("a run started by a person has parent_run %v", p["parent_run"])
	}
	if v1 := e.Legacy(t, "GET", "/v1/run/"+parent, "", 200); v1["state"] != "running" {
		t.Errorf("v1 state of a waiting parent %v, want running", v1["state"])
	}

	// The children: listed with the automation's runs, with parent_run.
	parentName := "organizations/" + e.Init.OrganizationID + "/workspaces/" + e.Init.WorkspaceID + "/automations/" + a.ID + "/runs/" + parent
	list := e.API(t, "GET", e.AutomationsPath()+"/"+a.ID+"/runs?page_size=10", "", 200)
	runs, _ := list["runs"].([]any)
	var kids []map[string]any
	for _, r := range runs {
		r := r.(map[string]any)
		if r["parent_run"] == parentName {
			kids = append(kids, r)
		}
	}
	if len(runs) != 3 || len(kids) != 2 {
		t.Fatalf("%d runs, %d with parent_run %s: %v", len(runs), len(kids), parentName, runs)
	}
	var asking, exc string
	for _, k := range kids {
		id := store.LastSegment(fmt.Sprint(k["name"]))
		r := e.PollRun(t, a.ID, id, "settle or ask",
			func(r store.Run) bool { return r.State == store.RunCompleted || r.State == store.RunAwaitingGuidance },
			func(r store.Run) bool { return r.State == store.RunFailed })
		if r.State == store.RunAwaitingGuidance {
			asking, exc = id, r.ExceptionID
		}
	}
	if asking == "" {
		t.Fatal("no child waits for guidance")
	}
	g, err := e.DoGRPC(t, runSvc+"GetRun", &platformv1.GetRunRequest{OrganizationId: e.Init.OrganizationID, WorkspaceId: e.Init.WorkspaceID, AutomationId: a.ID, RunId: asking},
		metadata.Pairs("authorization", "Bearer "+e.Init.APIKey))
	if err != nil || g["parent_run"] != parentName {
		t.Fatalf("gRPC GetRun of a child: %v, parent_run %v", err, g["parent_run"])
	}
	// A filter on executing lists the waiting parent.
	f := e.API(t, "GET", e.AutomationsPath()+"/"+a.ID+"/runs?filter="+url.QueryEscape(`state = "EXECUTING"`), "", 200)
	if rs, _ := f["runs"].([]any); len(rs) != 1 || testenv.Field(rs[0], "name") != parentName {
		t.Errorf("state = EXECUTING lists %v, want the waiting parent", f["runs"])
	}

	// parent_run filters: by name, by id, and the runs no run started.
	for filter, want := range map[string]int{`parent_run = "` + parentName + `"`: 2, `parent_run = "` + parent + `"`: 2, `parent_run = ""`: 1} {
		f := e.API(t, "GET", e.AutomationsPath()+"/"+a.ID+"/runs?filter="+url.QueryEscape(filter), "", 200)
		if rs, _ := f["runs"].([]any); len(rs) != want {
			t.Errorf("%s lists %d runs, want %d", filter, len(rs), want)
		}
	}
	e.API(t, "GET", e.AutomationsPath()+"/"+a.ID+"/runs?filter="+url.QueryEscape(`parent_run = "runs/x/y"`), "", 400)

	// Guide the child: the parent completes with both results.
	excPath := "/api/v1/organizations/" + e.Init.OrganizationID + "/workspaces/" + e.Init.WorkspaceID + "/exceptions/"
	e.API(t, "POST", excPath+exc+":resolve", `{"provide_values":{"values":{"the approval":{"text":"yes"}}}}`, 200)
	done := e.WaitRun(t, a.ID, parent, "completed")
	if testenv.Field(done, "state.completed.outputs.output first.text") != "yes" || testenv.NumberOf(testenv.Field(done, "state.completed.outputs.output second.number")) != 100 {
		t.Errorf("parent outputs %v", testenv.Field(done, "state.completed.outputs"))
	}
	if got := testenv.Field(done, "state.completed.outputs.output child.text"); got != "organizations/"+e.Init.OrganizationID+"/workspaces/"+e.Init.WorkspaceID+"/automations/"+a.ID+"/runs/"+asking {
		t.Errorf("the first record's run %v, want the child's name", got)
	}
	// The parent's history names the runs it started, where it started them.
	forEachTransport(t, func(t *testing.T, tr apiTransport) {
		started := e.listAllRunEvents(t, tr, a.ID, parent, `node_kind = "StartRun"`, 0)
		if len(started) != 2 || fmt.Sprint(testenv.Field(started[0]["execution_journal"], "node_executed.outputs.run.text")) != testenv.Field(done, "state.completed.outputs.output child.text") {
			t.Errorf("the runs started in the parent's history: %v", started)
		}
	})
	md := metadata.Pairs("x-api-key", e.Init.APIKey)
	if g, err := e.DoGRPC(t, v1Svc+"GetRunStatus", &legacyv1.GetRunStatusRequest{WorkerId: parent}, md); err != nil || g["state"] != "done" {
		t.Errorf("gRPC v1 state %v %v", err, g["state"])
	}
}
