package server_test

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/server/testenv"
)

const historySvc = "/prose.platform.v1.RunHistoryService/"

// historyCode says a line, calls the stamp book, waits for a value nobody
// gave (the subtotal), and says another line.
const historyCode = "say \"hello \" + the key\nthe alpha is the key + \"/1\"\nstamp the alpha\nthe output a is the above\n" +
	"the output total is the subtotal + 1\nsay \"done\"\n"

// listAllRunEvents reads a run's history page by page over tr.
func (e *testEnv) listAllRunEvents(t *testing.T, tr apiTransport, automation, run, filter string, size int32) []map[string]any {
	t.Helper()
	var out []map[string]any
	token := ""
	for range 1000 {
		m := e.mustCall(t, tr, historySvc+"ListRunEvents", &platformv1.ListRunEventsRequest{
			OrganizationId: e.Init.OrganizationID, WorkspaceId: e.Init.WorkspaceID, AutomationId: automation, RunId: run,
			PageSize: size, PageToken: token, Filter: filter,
		})
		evs, _ := m["run_events"].([]any)
		// a page holds the facts of its last entry in full: past its
		// size, only facts
		for i := int(size); size > 0 && i < len(evs); i++ {
			if k := describeEvent(evs[i].(map[string]any)); !strings.HasPrefix(k, "SetFact:") {
				t.Fatalf("a page of %d events, page_size %d, event %d %s", len(evs), size, i, k)
			}
		}
		for _, ev := range evs {
			out = append(out, ev.(map[string]any))
		}
		token, _ = m["next_page_token"].(string)
		if token == "" {
			return out
		}
	}
	t.Fatal("the pages do not end")
	return nil
}

// describeEvent is a short account of a run event: "state:pending",
// "Say:hello", "FunctionCall:stamp", "Exception:PENDING".
func describeEvent(ev map[string]any) string {
	if u, ok := ev["run_update"]; ok {
		return "state:" + testenv.RunState(testenv.Field(u, "run").(map[string]any))
	}
	j := ev["execution_journal"]
	node, _ := testenv.Field(j, "node_executed").(map[string]any)
	if node == nil {
		node, _ = testenv.Field(j, "node_patched").(map[string]any)
	}
	kind := fmt.Sprint(node["node_kind"])
	switch kind {
	case "Say":
		return "Say:" + fmt.Sprint(testenv.Field(node, "outputs.text.text"))
	case "FunctionCall":
		return "FunctionCall:" + fmt.Sprint(testenv.Field(node, "book_function_call.book_function.function_name"))
	case "Exception":
		return "Exception:" + fmt.Sprint(testenv.Field(j, "extra_metadata.exception_state.text"))
	case "SetFact":
		return "SetFact:" + fmt.Sprint(testenv.Field(j, "extra_metadata.fact.text"))
	}
	return kind
}

// TestRunHistory: a run's history over HTTP and gRPC, oldest first and
// paged: its states (pause and continue included, each after an entry
// naming who paused or continued it), what it said, its book
// call with inputs and outputs, its exception raised and resolved by the
// caller with the values given; the node_kind filter; a completed run's
// outputs with their types; the errors of bad requests.
func TestRunHistory(t *testing.T) {
	e := newTestEnv(t)
	e.registerStampBook(t, stampServer(t).URL, "1.0.0")
	a := e.MkAutomation(t, "Historian", historyCode, true)

	forEachTransport(t, func(t *testing.T, tr apiTransport) {
		m := e.API(t, "POST", e.AutomationsPath()+"/"+a.ID+":invoke",
			`{"stage":"AUTOMATION_STAGE_PUBLISHED","inputs":{"key":{"text":"`+tr.name+`"}}}`, 200)
		id := fmt.Sprint(m["run_id"])
		waiting := e.WaitRun(t, a.ID, id, "awaiting_guidance")
		x := fmt.Sprint(testenv.Field(waiting, "state.awaiting_guidance.exception"))
		req := func(reason string) *platformv1.PauseRunRequest {
			return &platformv1.PauseRunRequest{OrganizationId: e.Init.OrganizationID, WorkspaceId: e.Init.WorkspaceID, AutomationId: a.ID, RunId: id, Reason: reason}
		}
		e.mustCall(t, tr, runSvc+"PauseRun", req("a look first"))
		e.mustCall(t, tr, runSvc+"ContinueRun", &platformv1.ContinueRunRequest{OrganizationId: e.Init.OrganizationID, WorkspaceId: e.Init.WorkspaceID, AutomationId: a.ID, RunId: id})
		// Not completed: no outputs yet.
		_, err := e.call(t, tr, historySvc+"GetExecutionOutputs", &platformv1.GetExecutionOutputsRequest{
			OrganizationId: e.Init.OrganizationID, WorkspaceId: e.Init.WorkspaceID, ExecutionId: id})
		if status.Code(err) != codes.FailedPrecondition || !hasReason(err, "RUN_STATE_CONFLICT") {
			t.Errorf("outputs of a waiting run: %v", err)
		}
		e.API(t, "POST", e.WsPath()+"/exceptions/"+x+":resolve", `{"provide_values":{"values":{"the subtotal":{"number":{"lo":150,"flags":131072}}}}}`, 200)
		e.WaitRun(t, a.ID, id, "completed")

		want := []string{"Say:hello " + tr.name, "SetFact:alpha", "FunctionCall:stamp", "SetFact:output a", "Exception:PENDING", "state:awaiting_guidance",
			"Pause", "state:stopped", "Continue", "state:awaiting_guidance", "Exception:RESOLVED", "state:pending", "state:executing", "SetFact:output total", "Say:done", "state:completed"}
		for _, size := range []int32{0, 1, 4} {
			evs := e.listAllRunEvents(t, tr, a.ID, id, "", size)
			var got []string
			for _, ev := range evs {
				got = append(got, describeEvent(ev))
			}
			// The run starts pending or leased at its creation (then
			// executing): what follows is the same.
			start := 0
			for start < len(got) && strings.HasPrefix(got[start], "state:") {
				start++
			}
			if start == 0 || strings.Join(got[start:], ",") != strings.Join(want, ",") {
				t.Fatalf("page size %d: history\n %v\nwant the states of its start, then\n %v", size, got, want)
			}
			if size != 0 {
				continue
			}
			// The book call with its inputs and output, where it is in the code.
			// The fact set, its value and its statement.
			fact := evs[start+1]["execution_journal"]
			if fmt.Sprint(testenv.Field(fact, "node_executed.outputs.alpha.text")) != tr.name+"/1" {
				t.Errorf("fact set: %v", fact)
			}
			if s, e := toInt(testenv.Field(fact, "node_executed.code_location.start_byte")), toInt(testenv.Field(fact, "node_executed.code_location.end_byte")); historyCode[s:e] != `the alpha is the key + "/1"` {
				t.Errorf("fact set at %q", historyCode[s:e])
			}
			call := evs[start+2]["execution_journal"]
			if !strings.HasPrefix(fmt.Sprint(testenv.Field(call, "node_executed.book_function_call.book_function.book_name")), "test.stamps") ||
				fmt.Sprint(testenv.Field(call, "node_executed.book_function_call.output.text")) != "S:"+tr.name+"/1" ||
				fmt.Sprint(testenv.Field(call, "node_executed.book_function_call.inputs.ticket.text")) != tr.name+"/1" {
				t.Errorf("book call: %v", call)
			}
			span := testenv.Field(call, "node_executed.code_location")
			if s, e := toInt(testenv.Field(span, "start_byte")), toInt(testenv.Field(span, "end_byte")); historyCode[s:e] != "stamp the alpha" {
				t.Errorf("book call at %v: %q", span, historyCode[s:e])
			}
			if fmt.Sprint(testenv.Field(call, "execution_id")) != id || fmt.Sprint(testenv.Field(call, "run_id")) != id || testenv.Field(call, "event_time") == nil {
				t.Errorf("journal entry: %v", call)
			}
			say := evs[start]["execution_journal"]
			if s, e := toInt(testenv.Field(say, "node_executed.code_location.start_byte")), toInt(testenv.Field(say, "node_executed.code_location.end_byte")); !strings.HasPrefix(historyCode[s:e], "say \"hello \"") {
				t.Errorf("say at %q", historyCode[s:e])
			}
			// Who paused and continued it (the calls' API key), and the
			// pause's reason; the resolution: who, and the values given.
			key := "organizations/" + e.Init.OrganizationID + "/apiKeys/" + e.keyID(t, e.Init.APIKey)
			for i, kind := range map[int]string{start + 6: "Pause", start + 8: "Continue"} {
				j := evs[i]["execution_journal"]
				if fmt.Sprint(testenv.Field(j, "extra_metadata.actor.text")) != key || fmt.Sprint(testenv.Field(j, "node_executed.node_kind")) != kind ||
					fmt.Sprint(testenv.Field(j, "node_executed.node_id")) != "organizations/"+e.Init.OrganizationID+"/workspaces/"+e.Init.WorkspaceID+"/automations/"+a.ID+"/runs/"+id {
					t.Errorf("%s: %v, want the actor %s", kind, j, key)
				}
			}
			if fmt.Sprint(testenv.Field(evs[start+7]["run_update"], "run.state.stopped.reason")) != "a look first" {
				t.Errorf("stopped: %v", evs[start+7])
			}
			res := evs[start+10]["execution_journal"]
			if fmt.Sprint(testenv.Field(res, "extra_metadata.resolver.text")) != "users/"+e.Init.UserID ||
				fmt.Sprint(testenv.Field(res, "extra_metadata.guidance.text")) != "provide_values" ||
				fmt.Sprint(testenv.Field(res, "extra_metadata.exception.text")) != "organizations/"+e.Init.OrganizationID+"/workspaces/"+e.Init.WorkspaceID+"/exceptions/"+x ||
				testenv.Field(res, "node_patched.inputs_patch.the subtotal.number.lo") != float64(150) {
				t.Errorf("resolution: %v", res)
			}
			raised := evs[start+4]["execution_journal"]
			if fmt.Sprint(testenv.Field(raised, "node_executed.error.0.id")) != x && fmt.Sprint(testenv.Field(testenv.Field(raised, "node_executed.error").([]any)[0], "id")) != x {
				t.Errorf("raised: %v", raised)
			}
			done := evs[len(evs)-1]["run_update"]
			if fmt.Sprint(testenv.Field(done, "run.state.completed.outputs.output a.text")) != "S:"+tr.name+"/1" {
				t.Errorf("completed: %v", done)
			}
		}
		// node_kind filters the journal's entries.
		says := e.listAllRunEvents(t, tr, a.ID, id, `node_kind = "Say"`, 0)
		if len(says) != 2 {
			t.Errorf("node_kind = Say: %d events", len(says))
		}
		calls := e.listAllRunEvents(t, tr, "-", id, `node_kind = "FunctionCall" OR node_kind = "Exception"`, 0)
		if len(calls) != 3 {
			t.Errorf("FunctionCall or Exception (automation -): %d events", len(calls))
		}
		// The outputs with their types.
		outs := e.mustCall(t, tr, historySvc+"GetExecutionOutputs", &platformv1.GetExecutionOutputsRequest{
			OrganizationId: e.Init.OrganizationID, WorkspaceId: e.Init.WorkspaceID, ExecutionId: id})
		if fmt.Sprint(testenv.Field(outs, "outputs.output a.value.text")) != "S:"+tr.name+"/1" ||
			fmt.Sprint(testenv.Field(outs, "outputs.output a.type.scalar_type")) != "VALUE_SCALAR_TYPE_TEXT" ||
			fmt.Sprint(testenv.Field(outs, "outputs.output total.type.scalar_type")) != "VALUE_SCALAR_TYPE_NUMBER" ||
			testenv.Field(outs, "outputs.output total.value.number.lo") != float64(250) {
			t.Errorf("outputs: %v", outs)
		}

		// Mistakes are told clearly.
		first := e.mustCall(t, tr, historySvc+"ListRunEvents", &platformv1.ListRunEventsRequest{
			OrganizationId: e.Init.OrganizationID, WorkspaceId: e.Init.WorkspaceID, AutomationId: a.ID, RunId: id, PageSize: 2})
		for _, tc := range []struct {
			name   string
			rpc    string
			req    *platformv1.ListRunEventsRequest
			out    *platformv1.GetExecutionOutputsRequest
			code   codes.Code
			reason string
		}{
			{name: "negative page size", req: &platformv1.ListRunEventsRequest{PageSize: -1}, code: codes.InvalidArgument, reason: "INVALID_PAGE_SIZE"},
			{name: "unknown field", req: &platformv1.ListRunEventsRequest{Filter: `state = "x"`}, code: codes.InvalidArgument, reason: "INVALID_FILTER"},
			{name: "token with another filter", req: &platformv1.ListRunEventsRequest{PageSize: 2, PageToken: fmt.Sprint(first["next_page_token"]), Filter: `node_kind = "Say"`},
				code: codes.InvalidArgument, reason: "INVALID_PAGE_TOKEN"},
			{name: "no such run", req: &platformv1.ListRunEventsRequest{RunId: "nope"}, code: codes.NotFound, reason: "RUN_NOT_FOUND"},
			{name: "another automation", req: &platformv1.ListRunEventsRequest{AutomationId: "other"}, code: codes.NotFound, reason: "RUN_NOT_FOUND"},
			{name: "no such execution", out: &platformv1.GetExecutionOutputsRequest{ExecutionId: "nope"}, code: codes.NotFound, reason: "RUN_NOT_FOUND"},
		} {
			var err error
			if tc.out != nil {
				tc.out.OrganizationId, tc.out.WorkspaceId = e.Init.OrganizationID, e.Init.WorkspaceID
				_, err = e.call(t, tr, historySvc+"GetExecutionOutputs", tc.out)
			} else {
				r := tc.req
				r.OrganizationId, r.WorkspaceId = e.Init.OrganizationID, e.Init.WorkspaceID
				if r.AutomationId == "" {
					r.AutomationId = a.ID
				}
				if r.RunId == "" {
					r.RunId = id
				}
				_, err = e.call(t, tr, historySvc+"ListRunEvents", r)
			}
			if status.Code(err) != tc.code || !hasReason(err, tc.reason) {
				t.Errorf("%s: %v, want %v %s", tc.name, err, tc.code, tc.reason)
			}
		}
	})
}

// hasReason reports whether err (from e.call, over either transport)
// carries the error reason.
func hasReason(err error, reason string) bool {
	return grpcError(err).reason == reason || strings.Contains(err.Error(), `"reason":"`+reason+`"`)
}

func toInt(v any) int {
	switch n := v.(type) {
	case float64:
		return int(n)
	case string:
		var i int
		_, _ = fmt.Sscan(n, &i)
		return i
	}
	return 0
}

// TestRunHistoryFitsTheReference: ListRunEvents and GetExecutionOutputs
// answer with the reference's JSON, field by field (every field declared
// by its schema, of its type and enum), for every kind of event.
func TestRunHistoryFitsTheReference(t *testing.T) {
	ref := loadReference(t)
	e := newTestEnv(t)
	e.registerStampBook(t, stampServer(t).URL, "1.0.0")
	a := e.MkAutomation(t, "Historian", historyCode, true)
	m := e.API(t, "POST", e.AutomationsPath()+"/"+a.ID+":invoke", `{"stage":"AUTOMATION_STAGE_PUBLISHED","inputs":{"key":{"text":"ref"}}}`, 200)
	id := fmt.Sprint(m["run_id"])
	x := fmt.Sprint(testenv.Field(e.WaitRun(t, a.ID, id, "awaiting_guidance"), "state.awaiting_guidance.exception"))
	e.API(t, "POST", e.RunPath(a.ID, id)+":pause", `{"reason":"look"}`, 200)
	e.API(t, "POST", e.RunPath(a.ID, id)+":continue", `{}`, 200)
	e.API(t, "POST", e.WsPath()+"/exceptions/"+x+":resolve", `{"provide_values":{"values":{"the subtotal":{"number":{"lo":150,"flags":131072}}}}}`, 200)
	e.WaitRun(t, a.ID, id, "completed")

	const base = "/api/v1/organizations/{organization_id}/workspaces/{workspace_id}"
	code, raw := e.APIRaw(t, "GET", e.RunPath(a.ID, id)+"/events?page_size=1000", "")
	if code != 200 {
		t.Fatalf("ListRunEvents: %d %s", code, raw)
	}
	ref.checkAnswer(t, base+"/automations/{automation_id}/runs/{run_id}/events", "GET", raw)
	var list struct {
		Events []map[string]any `json:"run_events"`
	}
	if err := json.Unmarshal(raw, &list); err != nil {
		t.Fatal(err)
	}
	kinds := map[string]bool{}
	for _, ev := range list.Events {
		kinds[strings.SplitN(describeEvent(ev), ":", 2)[0]] = true
	}
	for _, k := range []string{"state", "Say", "FunctionCall", "Exception"} {
		if !kinds[k] {
			t.Errorf("the history checked has no %s event: %v", k, kinds)
		}
	}
	code, raw = e.APIRaw(t, "GET", e.WsPath()+"/executions/"+id+"/outputs", "")
	if code != 200 {
		t.Fatalf("GetExecutionOutputs: %d %s", code, raw)
	}
	ref.checkAnswer(t, base+"/executions/{execution_id}/outputs", "GET", raw)
	// A filter travels in the query, as the reference has it.
	code, raw = e.APIRaw(t, "GET", e.RunPath(a.ID, id)+"/events?filter="+url.QueryEscape(`node_kind = "Say"`), "")
	if code != 200 || strings.Count(string(raw), `"node_kind":"Say"`) != 2 {
		t.Errorf("filter over HTTP: %d %s", code, raw)
	}
}
