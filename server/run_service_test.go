package server_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/server/testenv"
)

const (
	autoSvc = "/prose.platform.v1.AutomationService/"
	runSvc  = "/prose.platform.v1.RunService/"
)

// The program of most run tests: two outputs from two inputs.
const greetCode = "the output total is the amount * 2\nthe output greeting is \"Hello, \" + the customer name\n"

// The program that waits for guidance.
const guidedCode = "get the invoice total\nthe output total is the invoice total * 2\n"

// TestRunsThreeWays starts a run each of the three ways (:invoke,
// /v1/invoke/{share_id}, POST /v2/runs) and reads its outputs each of the
// three ways (GetRun, /v1/run/{worker_id}, /v2/runs/{id}).
func TestRunsThreeWays(t *testing.T) {
	e := newTestEnv(t)
	a := e.MkAutomation(t, "Greeter", greetCode, true)
	ws := e.Init.WorkspaceID

	ids := map[string]string{}
	m := e.API(t, "POST", e.AutomationsPath()+"/"+a.ID+":invoke",
		`{"stage":"AUTOMATION_STAGE_PUBLISHED","inputs":{"amount":{"number":{"lo":125,"flags":131072}},"customer_name":{"text":"Ana"}}}`, 200)
	ids["invoke"] = fmt.Sprint(m["run_id"])
	m = e.Legacy(t, "POST", "/v1/invoke/"+a.PublishedShare, `{"amount":1.25,"customer_name":"Ana"}`, 201)
	ids["v1"] = fmt.Sprint(m["worker_id"])
	m = e.Legacy(t, "POST", "/v2/runs", `{"name":"Greet Ana","process_id":"`+a.ID+`","agent_id":"`+ws+`","stage":"published","inputs":[{"name":"amount","value":1.25},{"name":"customer_name","value":"Ana"}]}`, 200)
	if m["status"] != "Created" || m["stage"] != "Published" || m["process_id"] != a.ID || m["agent_id"] != ws || m["name"] != "Greet Ana" {
		t.Fatalf("v2 run: %v", m)
	}
	ids["v2"] = fmt.Sprint(m["id"])

	for way, id := range ids {
		t.Run(way, func(t *testing.T) {
			if id == "" || id == "<nil>" {
				t.Fatal("no run id")
			}
			// GetRun (HTTP).
			r := e.WaitRun(t, a.ID, id, "completed")
			outs := testenv.Field(r, "state.completed.outputs").(map[string]any)
			if got := testenv.NumberOf(testenv.Field(outs, "output total.number")); got != 2.5 {
				t.Errorf("GetRun output total = %v (%v)", got, outs)
			}
			if got := testenv.Field(outs, "output greeting.text"); got != "Hello, Ana" {
				t.Errorf("GetRun output greeting = %v", got)
			}
			if r["stage"] != "AUTOMATION_STAGE_PUBLISHED" || r["stage_version"] != "2" {
				t.Errorf("stage %v version %v", r["stage"], r["stage_version"])
			}
			// GetRun (gRPC): the number is exact.
			g, err := e.DoGRPC(t, runSvc+"GetRun", &platformv1.GetRunRequest{OrganizationId: e.Init.OrganizationID, WorkspaceId: ws, AutomationId: a.ID, RunId: id},
				metadata.Pairs("authorization", "Bearer "+e.Init.APIKey))
			if err != nil {
				t.Fatal(err)
			}
			if n := testenv.Field(g, "state.completed.outputs.output total.number").(map[string]any); n["lo"] != 250.0 || n["flags"] != 131072.0 {
				t.Errorf("gRPC output total = %v, want lo 250 flags 2<<16 (2.50)", n)
			}
			// v1.
			v1 := e.Legacy(t, "GET", "/v1/run/"+id, "", 200)
			if v1["state"] != "done" || testenv.Field(v1, "answer.output total") != 2.5 || testenv.Field(v1, "answer.output greeting") != "Hello, Ana" {
				t.Errorf("v1 status: %v", v1)
			}
			// v2.
			v2 := e.Legacy(t, "GET", "/v2/runs/"+id, "", 200)
			if v2["status"] != "Completed" || v2["process_id"] != a.ID || v2["agent_id"] != ws {
				t.Errorf("v2 run: %v", v2)
			}
			outs2, _ := v2["outputs"].([]any)
			if len(outs2) != 2 || testenv.Field(v2, "outputs.0.name") != "output greeting" || testenv.Field(v2, "outputs.1.value") != 2.5 {
				t.Errorf("v2 outputs: %v", v2["outputs"])
			}
			if c, _ := v2["created_at"].(string); len(c) != len("2026-11-22T05:13:01.123456") || strings.ContainsAny(c[19:], "Z+") {
				t.Errorf("created_at %q is not ISO 8601 without offset", c)
			}
		})
	}
}

func TestAutomationEndpoints(t *testing.T) {
	e := newTestEnv(t)
	base := "/api/v1/organizations/{org}/workspaces/{ws}/automations"
	body := `{"display_name":"Invoices {t}","description":"d","english_code":` + testenv.JSONStr(greetCode) + `,"input_specs":[{"name":"amount","type":{"scalar_type":"VALUE_SCALAR_TYPE_NUMBER"}}],"marked_outputs":["output total"],"activation_state":"AUTOMATION_ACTIVATION_STATE_ACTIVE"}`
	badCode := `{"display_name":"Bad","english_code":` + testenv.JSONStr("the output total is (1 +\n") + `}`
	before := e.RunCount(t)
	calls := []apiCall{
		{name: "create", rpc: autoSvc + "CreateAutomation", method: "POST", path: base + "?automation_id=inv-{t}&request_id=r-{t}", body: body,
			req: `{"organization_id":"{org}","workspace_id":"{ws}","automation_id":"inv-{t}","request_id":"r-{t}","automation":` + body + `}`,
			check: all(wantField("name", "organizations/{org}/workspaces/{ws}/automations/inv-{t}"), wantField("version", "1"),
				wantField("english_code", greetCode), wantField("code", greetCode), wantField("input_specs.0.name", "amount"),
				wantField("marked_outputs.0", "output total"), wantField("activation_state", "AUTOMATION_ACTIVATION_STATE_ACTIVE"),
				wantField("author_id", "{user}"), wantField("stage", "AUTOMATION_STAGE_DRAFT"),
				func(t *testing.T, m map[string]any, _ func(string) string) {
					if m["draft_share_id"] == nil || m["published_share_id"] == nil || m["latest_published_version"] != nil {
						t.Errorf("share ids / published version: %v", m)
					}
				})},
		{name: "create retry", rpc: autoSvc + "CreateAutomation", method: "POST", path: base + "?request_id=r-{t}", body: `{"display_name":"Other","english_code":""}`,
			req:   `{"organization_id":"{org}","workspace_id":"{ws}","request_id":"r-{t}","automation":{"display_name":"Other"}}`,
			check: wantField("name", "organizations/{org}/workspaces/{ws}/automations/inv-{t}")},
		{name: "create duplicate id", rpc: autoSvc + "CreateAutomation", method: "POST", path: base + "?automation_id=inv-{t}", body: `{"display_name":"Dup"}`,
			req: `{"organization_id":"{org}","workspace_id":"{ws}","automation_id":"inv-{t}","automation":{"display_name":"Dup"}}`, want: codes.AlreadyExists, reason: "AUTOMATION_ALREADY_EXISTS"},
		{name: "create syntax error", rpc: autoSvc + "CreateAutomation", method: "POST", path: base, body: badCode,
			req: `{"organization_id":"{org}","workspace_id":"{ws}","automation":` + badCode + `}`, want: codes.InvalidArgument, reason: "CODE_SYNTAX_ERROR"},
		{name: "create blank name", rpc: autoSvc + "CreateAutomation", method: "POST", path: base, body: `{"english_code":""}`,
			req: `{"organization_id":"{org}","workspace_id":"{ws}","automation":{}}`, want: codes.InvalidArgument},
		{name: "create bad id", rpc: autoSvc + "CreateAutomation", method: "POST", path: base + "?automation_id=Bad_Id", body: `{"display_name":"x"}`,
			req: `{"organization_id":"{org}","workspace_id":"{ws}","automation_id":"Bad_Id","automation":{"display_name":"x"}}`, want: codes.InvalidArgument},
		{name: "create in missing workspace", rpc: autoSvc + "CreateAutomation", method: "POST", path: "/api/v1/organizations/{org}/workspaces/nope/automations", body: `{"display_name":"x"}`,
			req: `{"organization_id":"{org}","workspace_id":"nope","automation":{"display_name":"x"}}`, want: codes.NotFound},
		{name: "get", rpc: autoSvc + "GetAutomation", method: "GET", path: base + "/inv-{t}", req: `{"organization_id":"{org}","workspace_id":"{ws}","automation_id":"inv-{t}"}`,
			check: all(wantField("display_name", "Invoices {t}"), wantField("description", "d"))},
		{name: "get missing", rpc: autoSvc + "GetAutomation", method: "GET", path: base + "/nope", req: `{"organization_id":"{org}","workspace_id":"{ws}","automation_id":"nope"}`,
			want: codes.NotFound, reason: "AUTOMATION_NOT_FOUND"},
		{name: "query published before publish", rpc: autoSvc + "QueryAutomation", method: "GET", path: base + "/inv-{t}:query?stage=AUTOMATION_STAGE_PUBLISHED",
			req: `{"organization_id":"{org}","workspace_id":"{ws}","automation_id":"inv-{t}","stage":"AUTOMATION_STAGE_PUBLISHED"}`, want: codes.FailedPrecondition, reason: "AUTOMATION_NOT_PUBLISHED"},
		{name: "invoke published before publish", rpc: autoSvc + "InvokeAutomation", method: "POST", path: base + "/inv-{t}:invoke", body: `{"stage":"AUTOMATION_STAGE_PUBLISHED"}`,
			req: `{"organization_id":"{org}","workspace_id":"{ws}","automation_id":"inv-{t}","stage":"AUTOMATION_STAGE_PUBLISHED"}`, want: codes.FailedPrecondition, reason: "AUTOMATION_NOT_PUBLISHED"},
		{name: "publish", rpc: autoSvc + "PublishAutomation", method: "POST", path: base + "/inv-{t}:publish", body: `{}`,
			req:   `{"organization_id":"{org}","workspace_id":"{ws}","automation_id":"inv-{t}"}`,
			check: all(wantField("version", "2"), wantField("stage_version", "2"), wantField("latest_published_version", "2"), wantField("stage", "AUTOMATION_STAGE_PUBLISHED"), wantField("publish_user_id", "{user}"))},
		{name: "update draft", rpc: autoSvc + "UpdateAutomation", method: "PATCH", path: base + "/inv-{t}?update_mask=display_name,english_code",
			body:  `{"display_name":"Renamed {t}","english_code":"the output total is 1\n","description":"ignored"}`,
			req:   `{"organization_id":"{org}","workspace_id":"{ws}","automation_id":"inv-{t}","automation":{"display_name":"Renamed {t}","english_code":"the output total is 1\n","description":"ignored"},"update_mask":"displayName,englishCode"}`,
			check: all(wantField("display_name", "Renamed {t}"), wantField("english_code", "the output total is 1\n"), wantField("description", "d"), wantField("version", "3"), wantField("latest_published_version", "2"), wantField("input_specs.0.name", "amount"))},
		{name: "update marked outputs without mask", rpc: autoSvc + "UpdateAutomation", method: "PATCH", path: base + "/inv-{t}",
			// display_name is REQUIRED on the resource: the validation interceptor asks for it on every update.
			body:  `{"display_name":"Renamed {t}","marked_outputs":["output greeting"]}`,
			req:   `{"organization_id":"{org}","workspace_id":"{ws}","automation_id":"inv-{t}","automation":{"display_name":"Renamed {t}","marked_outputs":["output greeting"]}}`,
			check: all(wantField("marked_outputs.0", "output greeting"), wantField("display_name", "Renamed {t}"), wantField("version", "4"), wantField("input_specs.0.name", "amount"))},
		{name: "update syntax error", rpc: autoSvc + "UpdateAutomation", method: "PATCH", path: base + "/inv-{t}?update_mask=english_code", body: badCode,
			req: `{"organization_id":"{org}","workspace_id":"{ws}","automation_id":"inv-{t}","automation":` + badCode + `,"update_mask":"englishCode"}`, want: codes.InvalidArgument, reason: "CODE_SYNTAX_ERROR"},
		{name: "update bad mask", rpc: autoSvc + "UpdateAutomation", method: "PATCH", path: base + "/inv-{t}?update_mask=name", body: `{"display_name":"x"}`,
			req: `{"organization_id":"{org}","workspace_id":"{ws}","automation_id":"inv-{t}","automation":{"display_name":"x"},"update_mask":"name"}`, want: codes.InvalidArgument},
		{name: "query draft", rpc: autoSvc + "QueryAutomation", method: "GET", path: base + "/inv-{t}:query?stage=AUTOMATION_STAGE_DRAFT",
			req:   `{"organization_id":"{org}","workspace_id":"{ws}","automation_id":"inv-{t}","stage":"AUTOMATION_STAGE_DRAFT"}`,
			check: all(wantField("english_code", "the output total is 1\n"), wantField("stage_version", "4"))},
		{name: "query published", rpc: autoSvc + "QueryAutomation", method: "GET", path: base + "/inv-{t}:query?stage=AUTOMATION_STAGE_PUBLISHED",
			req:   `{"organization_id":"{org}","workspace_id":"{ws}","automation_id":"inv-{t}","stage":"AUTOMATION_STAGE_PUBLISHED"}`,
			check: all(wantField("english_code", greetCode), wantField("stage_version", "2"), wantField("stage", "AUTOMATION_STAGE_PUBLISHED"), wantField("marked_outputs.0", "output total"))},
		{name: "list", rpc: autoSvc + "ListAutomations", method: "GET", path: base, req: `{"organization_id":"{org}","workspace_id":"{ws}"}`,
			check: func(t *testing.T, m map[string]any, _ func(string) string) {
				if count(m, "automations") < 1 {
					t.Errorf("automations: %v", m)
				}
			}},
		{name: "list filter display_name", rpc: autoSvc + "ListAutomations", method: "GET", path: base + `?filter=display_name=%22Renamed%20{t}%22`,
			req: `{"organization_id":"{org}","workspace_id":"{ws}","filter":"display_name=\"Renamed {t}\""}`, check: all(wantCount("automations", 1), wantField("automations.0.display_name", "Renamed {t}"))},
		{name: "list order by display_name page 1", rpc: autoSvc + "ListAutomations", method: "GET", path: base + `?order_by=display_name&page_size=1`,
			req: `{"organization_id":"{org}","workspace_id":"{ws}","order_by":"display_name","page_size":1}`, check: func(t *testing.T, m map[string]any, _ func(string) string) {
				if count(m, "automations") != 1 || m["next_page_token"] == nil {
					t.Errorf("want one automation and a token: %v", m)
				}
			}},
		{name: "list bad filter", rpc: autoSvc + "ListAutomations", method: "GET", path: base + `?filter=code=%22x%22`,
			req: `{"organization_id":"{org}","workspace_id":"{ws}","filter":"code=\"x\""}`, want: codes.InvalidArgument, reason: "INVALID_FILTER"},
		{name: "list bad order", rpc: autoSvc + "ListAutomations", method: "GET", path: base + `?order_by=code`,
			req: `{"organization_id":"{org}","workspace_id":"{ws}","order_by":"code"}`, want: codes.InvalidArgument, reason: "INVALID_ORDER_BY"},
		{name: "list missing workspace", rpc: autoSvc + "ListAutomations", method: "GET", path: "/api/v1/organizations/{org}/workspaces/nope/automations",
			req: `{"organization_id":"{org}","workspace_id":"nope"}`, want: codes.NotFound},
		{name: "invoke draft", rpc: autoSvc + "InvokeAutomation", method: "POST", path: base + "/inv-{t}:invoke", body: `{"stage":"AUTOMATION_STAGE_DRAFT","request_id":"inv-{t}"}`,
			req: `{"organization_id":"{org}","workspace_id":"{ws}","automation_id":"inv-{t}","stage":"AUTOMATION_STAGE_DRAFT","request_id":"inv-{t}"}`,
			check: func(t *testing.T, m map[string]any, _ func(string) string) {
				if s, _ := m["run_id"].(string); s == "" {
					t.Errorf("run_id: %v", m)
				}
			}},
		{name: "invoke without stage", rpc: autoSvc + "InvokeAutomation", method: "POST", path: base + "/inv-{t}:invoke", body: `{}`,
			req: `{"organization_id":"{org}","workspace_id":"{ws}","automation_id":"inv-{t}"}`, want: codes.InvalidArgument},
		{name: "invoke unknown automation", rpc: autoSvc + "InvokeAutomation", method: "POST", path: base + "/nope:invoke", body: `{"stage":"AUTOMATION_STAGE_DRAFT"}`,
			req: `{"organization_id":"{org}","workspace_id":"{ws}","automation_id":"nope","stage":"AUTOMATION_STAGE_DRAFT"}`, want: codes.NotFound, reason: "AUTOMATION_NOT_FOUND"},
		{name: "invoke bad input value", rpc: autoSvc + "InvokeAutomation", method: "POST", path: base + "/inv-{t}:invoke",
			body: `{"stage":"AUTOMATION_STAGE_DRAFT","inputs":{"amount":{"number":{"lo":1,"flags":1}}}}`,
			req:  `{"organization_id":"{org}","workspace_id":"{ws}","automation_id":"inv-{t}","stage":"AUTOMATION_STAGE_DRAFT","inputs":{"amount":{"number":{"lo":1,"flags":1}}}}`, want: codes.InvalidArgument},
		{name: "invoke empty input value", rpc: autoSvc + "InvokeAutomation", method: "POST", path: base + "/inv-{t}:invoke",
			body: `{"stage":"AUTOMATION_STAGE_DRAFT","inputs":{"amount":{}}}`,
			req:  `{"organization_id":"{org}","workspace_id":"{ws}","automation_id":"inv-{t}","stage":"AUTOMATION_STAGE_DRAFT","inputs":{"amount":{}}}`, want: codes.InvalidArgument},
		{name: "invoke unknown field", rpc: autoSvc + "InvokeAutomation", method: "POST", path: base + "/inv-{t}:invoke",
			body: `{"stage":"AUTOMATION_STAGE_DRAFT","bogus":1}`, req: `{"organization_id":"{org}","workspace_id":"{ws}","automation_id":"inv-{t}","stage":"AUTOMATION_STAGE_DRAFT"}`, want: codes.OK},
		{name: "delete", rpc: autoSvc + "DeleteAutomation", method: "DELETE", path: base + "/inv-{t}", req: `{"organization_id":"{org}","workspace_id":"{ws}","automation_id":"inv-{t}"}`},
		{name: "delete again", rpc: autoSvc + "DeleteAutomation", method: "DELETE", path: base + "/inv-{t}", req: `{"organization_id":"{org}","workspace_id":"{ws}","automation_id":"inv-{t}"}`,
			want: codes.NotFound, reason: "AUTOMATION_NOT_FOUND"},
		{name: "invoke deleted", rpc: autoSvc + "InvokeAutomation", method: "POST", path: base + "/inv-{t}:invoke", body: `{"stage":"AUTOMATION_STAGE_DRAFT"}`,
			req: `{"organization_id":"{org}","workspace_id":"{ws}","automation_id":"inv-{t}","stage":"AUTOMATION_STAGE_DRAFT"}`, want: codes.NotFound},
		{name: "get deleted shows delete_time", rpc: autoSvc + "GetAutomation", method: "GET", path: base + "/inv-{t}", req: `{"organization_id":"{org}","workspace_id":"{ws}","automation_id":"inv-{t}"}`,
			check: func(t *testing.T, m map[string]any, _ func(string) string) {
				if m["delete_time"] == nil {
					t.Errorf("delete_time: %v", m)
				}
			}},
		{name: "list hides deleted", rpc: autoSvc + "ListAutomations", method: "GET", path: base + `?filter=display_name=%22Renamed%20{t}%22`,
			req: `{"organization_id":"{org}","workspace_id":"{ws}","filter":"display_name=\"Renamed {t}\""}`, check: wantCount("automations", 0)},
		{name: "list show_deleted", rpc: autoSvc + "ListAutomations", method: "GET", path: base + `?show_deleted=true&filter=display_name=%22Renamed%20{t}%22`,
			req: `{"organization_id":"{org}","workspace_id":"{ws}","show_deleted":true,"filter":"display_name=\"Renamed {t}\""}`, check: wantCount("automations", 1)},
	}
	for _, c := range calls {
		if c.name == "invoke unknown field" {
			// Unknown JSON fields are rejected over HTTP only.
			code, _, raw := e.DoHTTP(t, "POST", e.Expand(c.path, "h"), c.body, map[string]string{"Authorization": "Bearer " + e.Init.APIKey})
			if code != http.StatusBadRequest {
				t.Errorf("unknown field: HTTP %d: %s", code, raw)
			}
			continue
		}
		e.run(t, c)
	}
	// Exactly one run per transport was made (the draft invoke); every bad
	// call created nothing.
	if got := e.RunCount(t); got != before+2 {
		t.Errorf("runs = %d, want %d", got, before+2)
	}

	// The syntax error carries its byte span.
	_, _, raw := e.DoHTTP(t, "POST", e.Expand(base, "h"), badCode, map[string]string{"Authorization": "Bearer " + e.Init.APIKey})
	if !strings.Contains(string(raw), `"field":"automation.english_code"`) || !strings.Contains(string(raw), "start_byte 24, end_byte 25") {
		t.Errorf("syntax error body: %s", raw)
	}
	_, err := e.DoGRPC(t, autoSvc+"CreateAutomation", &platformv1.CreateAutomationRequest{OrganizationId: e.Init.OrganizationID, WorkspaceId: e.Init.WorkspaceID,
		Automation: &platformv1.Automation{DisplayName: "Bad", EnglishCode: "the output total is (1 +\n"}}, metadata.Pairs("authorization", "Bearer "+e.Init.APIKey))
	found := false
	for _, d := range status.Convert(err).Details() {
		if br, ok := d.(*errdetails.BadRequest); ok {
			for _, v := range br.GetFieldViolations() {
				found = found || v.GetField() == "automation.english_code" && strings.Contains(v.GetDescription(), "start_byte 24")
			}
		}
	}
	if !found {
		t.Errorf("gRPC syntax error: %v", err)
	}
}

func TestRunEndpoints(t *testing.T) {
	e := newTestEnv(t)
	greet := e.MkAutomation(t, "Greeter", greetCode, false)
	guided := e.MkAutomation(t, "Guided", guidedCode, false)
	done := fmt.Sprint(e.API(t, "POST", e.AutomationsPath()+"/"+greet.ID+":invoke", `{"stage":"AUTOMATION_STAGE_DRAFT","inputs":{"amount":{"number":{"lo":3}},"customer_name":{"text":"Bo"}}}`, 200)["run_id"])
	e.WaitRun(t, greet.ID, done, "completed")
	waiting := fmt.Sprint(e.API(t, "POST", e.AutomationsPath()+"/"+guided.ID+":invoke", `{"stage":"AUTOMATION_STAGE_DRAFT"}`, 200)["run_id"])
	e.WaitRun(t, guided.ID, waiting, "awaiting_guidance")
	other := fmt.Sprint(e.API(t, "POST", e.AutomationsPath()+"/"+guided.ID+":invoke", `{"stage":"AUTOMATION_STAGE_DRAFT"}`, 200)["run_id"])
	e.WaitRun(t, guided.ID, other, "awaiting_guidance")

	runs := "/api/v1/organizations/{org}/workspaces/{ws}/automations/"
	q := func(automation, extra string) string {
		return `{"organization_id":"{org}","workspace_id":"{ws}","automation_id":"` + automation + `"` + extra + `}`
	}
	calls := []apiCall{
		{name: "get", rpc: runSvc + "GetRun", method: "GET", path: runs + greet.ID + "/runs/" + done, req: q(greet.ID, `,"run_id":"`+done+`"`),
			check: all(wantField("name", "organizations/{org}/workspaces/{ws}/automations/"+greet.ID+"/runs/"+done), wantField("state.completed.outputs.output greeting.text", "Hello, Bo"),
				wantField("stage", "AUTOMATION_STAGE_DRAFT"), wantField("invocation_details.user_id", "{user}"), wantField("user_inputs.customer_name.text", "Bo"))},
		{name: "get through -", rpc: runSvc + "GetRun", method: "GET", path: runs + "-/runs/" + done, req: q("-", `,"run_id":"`+done+`"`),
			check: wantField("state.completed.outputs.output greeting.text", "Hello, Bo")},
		{name: "get in wrong automation", rpc: runSvc + "GetRun", method: "GET", path: runs + guided.ID + "/runs/" + done, req: q(guided.ID, `,"run_id":"`+done+`"`),
			want: codes.NotFound, reason: "RUN_NOT_FOUND"},
		{name: "get missing", rpc: runSvc + "GetRun", method: "GET", path: runs + greet.ID + "/runs/nope", req: q(greet.ID, `,"run_id":"nope"`), want: codes.NotFound, reason: "RUN_NOT_FOUND"},
		{name: "list of automation", rpc: runSvc + "ListRuns", method: "GET", path: runs + guided.ID + "/runs", req: q(guided.ID, ""),
			check: all(wantCount("runs", 2), wantField("runs.0.name", "organizations/{org}/workspaces/{ws}/automations/"+guided.ID+"/runs/"+other))},
		{name: "list all automations", rpc: runSvc + "ListRuns", method: "GET", path: runs + "-/runs", req: q("-", ""), check: wantCount("runs", 3)},
		{name: "list oldest first", rpc: runSvc + "ListRuns", method: "GET", path: runs + "-/runs?order_by=create_time", req: q("-", `,"order_by":"create_time"`),
			check: wantField("runs.0.name", "organizations/{org}/workspaces/{ws}/automations/"+greet.ID+"/runs/"+done)},
		{name: "list filter state", rpc: runSvc + "ListRuns", method: "GET", path: runs + "-/runs?filter=state=completed", req: q("-", `,"filter":"state=completed"`),
			check: all(wantCount("runs", 1), wantField("runs.0.state.completed.outputs.output greeting.text", "Hello, Bo"))},
		{name: "list filter state awaiting", rpc: runSvc + "ListRuns", method: "GET", path: runs + "-/runs?filter=state=%22awaiting_guidance%22", req: q("-", `,"filter":"state=\"awaiting_guidance\""`),
			check: wantCount("runs", 2)},
		{name: "list filter create_time", rpc: runSvc + "ListRuns", method: "GET", path: runs + "-/runs?filter=create_time%3E%222000-01-01T00:00:00Z%22", req: q("-", `,"filter":"create_time>\"2000-01-01T00:00:00Z\""`),
			check: wantCount("runs", 3)},
		{name: "list filter create_time future", rpc: runSvc + "ListRuns", method: "GET", path: runs + "-/runs?filter=create_time%3E%223000-01-01T00:00:00Z%22", req: q("-", `,"filter":"create_time>\"3000-01-01T00:00:00Z\""`),
			check: wantCount("runs", 0)},
		{name: "list page", rpc: runSvc + "ListRuns", method: "GET", path: runs + "-/runs?page_size=2", req: q("-", `,"page_size":2`),
			check: func(t *testing.T, m map[string]any, _ func(string) string) {
				if count(m, "runs") != 2 || m["next_page_token"] == nil {
					t.Errorf("want 2 runs and a token: %v", m)
				}
			}},
		{name: "list bad filter", rpc: runSvc + "ListRuns", method: "GET", path: runs + "-/runs?filter=state=running", req: q("-", `,"filter":"state=running"`), want: codes.InvalidArgument, reason: "INVALID_FILTER"},
		{name: "list bad order", rpc: runSvc + "ListRuns", method: "GET", path: runs + "-/runs?order_by=state", req: q("-", `,"order_by":"state"`), want: codes.InvalidArgument, reason: "INVALID_ORDER_BY"},
		{name: "list bad token", rpc: runSvc + "ListRuns", method: "GET", path: runs + "-/runs?page_token=zzz", req: q("-", `,"page_token":"zzz"`), want: codes.InvalidArgument, reason: "INVALID_PAGE_TOKEN"},
		{name: "list unknown automation", rpc: runSvc + "ListRuns", method: "GET", path: runs + "nope/runs", req: q("nope", ""), want: codes.NotFound, reason: "AUTOMATION_NOT_FOUND"},
		{name: "pause without reason", rpc: runSvc + "PauseRun", method: "POST", path: runs + guided.ID + "/runs/" + waiting + ":pause", body: `{}`, req: q(guided.ID, `,"run_id":"`+waiting+`"`), want: codes.InvalidArgument},
		{name: "pause completed", rpc: runSvc + "PauseRun", method: "POST", path: runs + greet.ID + "/runs/" + done + ":pause", body: `{"reason":"x"}`, req: q(greet.ID, `,"run_id":"`+done+`","reason":"x"`),
			want: codes.FailedPrecondition, reason: "RUN_STATE_CONFLICT"},
		{name: "continue completed", rpc: runSvc + "ContinueRun", method: "POST", path: runs + greet.ID + "/runs/" + done + ":continue", body: `{}`, req: q(greet.ID, `,"run_id":"`+done+`"`),
			want: codes.FailedPrecondition, reason: "RUN_STATE_CONFLICT"},
		{name: "pause missing", rpc: runSvc + "PauseRun", method: "POST", path: runs + greet.ID + "/runs/nope:pause", body: `{"reason":"x"}`, req: q(greet.ID, `,"run_id":"nope","reason":"x"`), want: codes.NotFound},
	}
	for _, c := range calls {
		e.run(t, c)
	}

	// Pause a run that waits for guidance: stopped with the reason; continue:
	// it waits again. Over HTTP, then over gRPC.
	m := e.API(t, "POST", e.RunPath(guided.ID, waiting)+":pause", `{"reason":"checking the invoice"}`, 200)
	if testenv.Field(m, "state.stopped.reason") != "checking the invoice" {
		t.Fatalf("pause: %v", m)
	}
	if m := e.API(t, "GET", e.RunPath(guided.ID, waiting), "", 200); testenv.Field(m, "state.stopped.reason") != "checking the invoice" {
		t.Fatalf("after pause: %v", m)
	}
	e.API(t, "POST", e.RunPath(guided.ID, waiting)+":pause", `{"reason":"again"}`, http.StatusBadRequest)
	m = e.API(t, "POST", e.RunPath(guided.ID, waiting)+":continue", `{}`, 200)
	if testenv.RunState(m) != "awaiting_guidance" {
		t.Fatalf("continue: %v", m)
	}
	md := metadata.Pairs("authorization", "Bearer "+e.Init.APIKey)
	g, err := e.DoGRPC(t, runSvc+"PauseRun", &platformv1.PauseRunRequest{OrganizationId: e.Init.OrganizationID, WorkspaceId: e.Init.WorkspaceID, AutomationId: guided.ID, RunId: other, Reason: "grpc"}, md)
	if err != nil || testenv.Field(g, "state.stopped.reason") != "grpc" {
		t.Fatalf("gRPC pause: %v %v", err, g)
	}
	g, err = e.DoGRPC(t, runSvc+"ContinueRun", &platformv1.ContinueRunRequest{OrganizationId: e.Init.OrganizationID, WorkspaceId: e.Init.WorkspaceID, AutomationId: guided.ID, RunId: other}, md)
	if err != nil || testenv.RunState(g) != "awaiting_guidance" {
		t.Fatalf("gRPC continue: %v %v", err, g)
	}
}

// TestPausePendingRun pauses runs no worker has claimed: pending → stopped
// with the reason; continue → pending.
func TestPausePendingRun(t *testing.T) {
	e := newTestEnv(t)
	a := e.MkAutomation(t, "Greeter", greetCode, false)
	e.StopEngine(t)
	id := fmt.Sprint(e.API(t, "POST", e.AutomationsPath()+"/"+a.ID+":invoke", `{"stage":"AUTOMATION_STAGE_DRAFT"}`, 200)["run_id"])
	if m := e.API(t, "GET", e.RunPath(a.ID, id), "", 200); testenv.RunState(m) != "pending" {
		t.Fatalf("new run: %v", m)
	}
	if v1 := e.Legacy(t, "GET", "/v1/run/"+id, "", 200); v1["state"] != "queued" {
		t.Errorf("v1 state of a pending run: %v", v1)
	}
	if v2 := e.Legacy(t, "GET", "/v2/runs/"+id, "", 200); v2["status"] != "Created" {
		t.Errorf("v2 status of a pending run: %v", v2)
	}
	m := e.API(t, "POST", e.RunPath(a.ID, id)+":pause", `{"reason":"hold"}`, 200)
	if testenv.Field(m, "state.stopped.reason") != "hold" {
		t.Fatalf("pause: %v", m)
	}
	if v1 := e.Legacy(t, "GET", "/v1/run/"+id, "", 200); v1["state"] != "stopped" {
		t.Errorf("v1 state of a stopped run: %v", v1)
	}
	if v2 := e.Legacy(t, "GET", "/v2/runs/"+id, "", 200); v2["status"] != "Stopped" {
		t.Errorf("v2 status of a stopped run: %v", v2)
	}
	m = e.API(t, "POST", e.RunPath(a.ID, id)+":continue", `{}`, 200)
	if testenv.RunState(m) != "pending" {
		t.Fatalf("continue: %v", m)
	}
	// Over gRPC.
	md := metadata.Pairs("authorization", "Bearer "+e.Init.APIKey)
	g, err := e.DoGRPC(t, runSvc+"PauseRun", &platformv1.PauseRunRequest{OrganizationId: e.Init.OrganizationID, WorkspaceId: e.Init.WorkspaceID, AutomationId: a.ID, RunId: id, Reason: "grpc hold"}, md)
	if err != nil || testenv.Field(g, "state.stopped.reason") != "grpc hold" {
		t.Fatalf("gRPC pause: %v %v", err, g)
	}
}
