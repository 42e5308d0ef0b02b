package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/proserun/prose/server/testenv"
	"github.com/proserun/prose/store"
)

const excSvc = "/prose.platform.v1.ExceptionService/"

func (e *testEnv) excGroup(g string) string {
	return "organizations/" + e.Init.OrganizationID + "/workspaces/" + e.Init.WorkspaceID + "/exceptionGroups/" + g
}

// xcall is one ExceptionService call, made over either transport.
type xcall struct {
	rpc   string     // method name
	id    string     // exception id, for methods on one exception
	query url.Values // query parameters (GET); request fields over gRPC
	body  string     // JSON body (POST); request fields over gRPC
}

// xresult is what a call answered.
type xresult struct {
	code      codes.Code
	m         map[string]any
	reason    string
	violation string // the first BadRequest field violation's field
	raw       string
}

var excHTTP = map[string][2]string{
	"GetException":                {"GET", "/exceptions/{id}"},
	"ListExceptions":              {"GET", "/exceptions"},
	"ListExceptionGroups":         {"GET", "/exceptionGroups"},
	"CountExceptionsByGroup":      {"GET", "/exceptions:countByGroup"},
	"CountExceptionsByAutomation": {"GET", "/exceptions:countByAutomation"},
	"ResolveException":            {"POST", "/exceptions/{id}:resolve"},
	"ArchiveException":            {"POST", "/exceptions/{id}:archive"},
	"UnarchiveException":          {"POST", "/exceptions/{id}:unarchive"},
	"AssignException":             {"POST", "/exceptions/{id}:assign"},
	"BatchArchiveExceptions":      {"POST", "/exceptions:batchArchive"},
	"BatchUnarchiveExceptions":    {"POST", "/exceptions:batchUnarchive"},
	"BatchAssignExceptions":       {"POST", "/exceptions:batchAssign"},
}

// xdo makes c over tr with the owner's key. Over HTTP it sends c's query
// and body as they are (so a malformed value reaches the gateway), over
// gRPC it builds the request from them.
func (e *testEnv) xdo(t *testing.T, tr apiTransport, c xcall) xresult {
	t.Helper()
	if tr.grpc {
		req := map[string]any{"organization_id": e.Init.OrganizationID, "workspace_id": e.Init.WorkspaceID}
		if c.id != "" {
			req["exception_id"] = c.id
		}
		for k, v := range c.query {
			req[k] = v[0]
		}
		if c.body != "" {
			if err := json.Unmarshal([]byte(c.body), &req); err != nil {
				t.Fatalf("body: %v", err)
			}
		}
		raw, _ := json.Marshal(req)
		in := dynamicpb.NewMessage(testenv.MethodDescriptor(t, excSvc+c.rpc).Input())
		if err := protojson.Unmarshal(raw, in); err != nil {
			// What the gateway would refuse before the call.
			return xresult{code: codes.InvalidArgument, raw: err.Error()}
		}
		m, err := e.call(t, tr, excSvc+c.rpc, in)
		if err != nil {
			return grpcError(err)
		}
		return xresult{code: codes.OK, m: m}
	}
	mp, ok := excHTTP[c.rpc]
	if !ok {
		t.Fatalf("no HTTP route for %s", c.rpc)
	}
	path := e.WsPath() + strings.ReplaceAll(mp[1], "{id}", c.id)
	if len(c.query) > 0 {
		path += "?" + c.query.Encode()
	}
	body := c.body
	if mp[0] == "POST" && body == "" {
		body = "{}"
	}
	code, m, raw := e.DoHTTP(t, mp[0], path, body, map[string]string{"Authorization": "Bearer " + e.Init.APIKey})
	if code != 200 {
		return httpError(t, code, m, raw)
	}
	return xresult{code: codes.OK, m: m, raw: string(raw)}
}

// xwant makes c and fails unless it answers want.
func (e *testEnv) xwant(t *testing.T, tr apiTransport, c xcall, want codes.Code) xresult {
	t.Helper()
	r := e.xdo(t, tr, c)
	if r.code != want {
		t.Fatalf("%s %s (over %s): %v, want %v: %s %v", c.rpc, c.id, tr, r.code, want, r.raw, r.m)
	}
	return r
}

func q(kv ...string) url.Values {
	v := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		v.Set(kv[i], kv[i+1])
	}
	return v
}

func excIDs(m map[string]any) []string {
	var ids []string
	l, _ := m["exceptions"].([]any)
	for _, x := range l {
		ids = append(ids, store.LastSegment(fmt.Sprint(testenv.Field(x, "name"))))
	}
	return ids
}

// TestExceptionGuidedOverHTTP: an automation reads a missing invoice total;
// the run waits for guidance at the statement; the exception is listed
// under state = PENDING AND group = missing_values; a value given over HTTP
// resolves it and the run completes with outputs that use it.
func TestExceptionGuidedOverHTTP(t *testing.T) {
	e := newTestEnv(t)
	a, r, xid := e.ExcMake(t, testenv.ExcMissingCode)
	if r.Location != (store.Location{Start: 0, End: 21}) || r.Description != "Please provide the invoice total" {
		t.Fatalf("awaiting_guidance at %+v: %q", r.Location, r.Description)
	}
	filter := `state = PENDING AND group = "` + e.excGroup("missing_values") + `"`
	list := e.xwant(t, overHTTP, xcall{rpc: "ListExceptions", query: q("filter", filter)}, codes.OK)
	if ids := excIDs(list.m); len(ids) != 1 || ids[0] != xid || fmt.Sprint(list.m["total_size"]) != "1" {
		t.Fatalf("pending missing values: %v", list.m)
	}
	x := testenv.Field(list.m, "exceptions.0").(map[string]any)
	want := map[string]string{
		"name":              "organizations/" + e.Init.OrganizationID + "/workspaces/" + e.Init.WorkspaceID + "/exceptions/" + xid,
		"run":               "organizations/" + e.Init.OrganizationID + "/workspaces/" + e.Init.WorkspaceID + "/automations/" + a.ID + "/runs/" + r.ID,
		"automation":        "organizations/" + e.Init.OrganizationID + "/workspaces/" + e.Init.WorkspaceID + "/automations/" + a.ID,
		"group":             e.excGroup("missing_values"),
		"state":             "EXCEPTION_STATE_PENDING",
		"message":           "Please provide the invoice total",
		"location.end_byte": "21",
		"stage":             "AUTOMATION_STAGE_DRAFT",
		"execution_id":      "0",
	}
	for k, v := range want {
		if got := fmt.Sprint(testenv.Field(x, k)); got != v {
			t.Errorf("%s = %q, want %q", k, got, v)
		}
	}
	if s, _ := testenv.Field(x, "description").(string); s == "" {
		t.Errorf("no description: %v", x)
	}
	if testenv.Field(x, "create_time") == nil || testenv.Field(x, "update_time") == nil {
		t.Errorf("times missing: %v", x)
	}
	// A value for the fact: RESOLVED by the caller, and the run goes on.
	res := e.xwant(t, overHTTP, xcall{rpc: "ResolveException", id: xid,
		body: `{"provide_values": {"values": {"the invoice total": {"number": {"lo": 1250, "flags": 131072}}}}}`}, codes.OK)
	if res.m["state"] != "EXCEPTION_STATE_RESOLVED" || res.m["resolver"] != "users/"+e.Init.UserID {
		t.Fatalf("resolved: %v", res.m)
	}
	done := e.WaitRunState(t, a.ID, r.ID, store.RunCompleted)
	if got := testenv.ExcNum(testenv.ExcOutputs(t, done)["output total"]); got != 25 {
		t.Fatalf("output total = %v, want 25", got)
	}
	// It is no longer pending, and cannot be resolved again.
	list = e.xwant(t, overHTTP, xcall{rpc: "ListExceptions", query: q("filter", filter)}, codes.OK)
	if len(excIDs(list.m)) != 0 {
		t.Fatalf("still pending: %v", list.m)
	}
	again := e.xwant(t, overHTTP, xcall{rpc: "ResolveException", id: xid, body: `{"skip": {}}`}, codes.FailedPrecondition)
	if again.reason != "EXCEPTION_STATE_CONFLICT" {
		t.Errorf("reason %q", again.reason)
	}
}

// TestExceptionGuidanceKinds resolves an exception with each kind of
// guidance, over each transport.
func TestExceptionGuidanceKinds(t *testing.T) {
	e := newTestEnv(t)
	forEachTransport(t, func(t *testing.T, tr apiTransport) {
		t.Run("skip", func(t *testing.T) {
			a, r, xid := e.ExcMake(t, testenv.ExcSkipCode)
			x := e.xwant(t, tr, xcall{rpc: "GetException", id: xid}, codes.OK)
			if x.m["group"] != e.excGroup("user_system_error") {
				t.Fatalf("group: %v", x.m)
			}
			e.xwant(t, tr, xcall{rpc: "ResolveException", id: xid, body: `{"skip": {}}`}, codes.OK)
			out := testenv.ExcOutputs(t, e.WaitRunState(t, a.ID, r.ID, store.RunCompleted))
			if out["output done"].GetText() != "yes" {
				t.Fatalf("outputs: %v", out)
			}
		})
		t.Run("retry", func(t *testing.T) {
			a, r, xid := e.ExcMake(t, testenv.ExcDivisionCode)
			e.xwant(t, tr, xcall{rpc: "ResolveException", id: xid, body: `{"retry": {}}`}, codes.OK)
			// The statement runs again as it is, and fails again: a new
			// exception at the same place.
			cur := e.PollRun(t, a.ID, r.ID, "the retry never ran",
				func(r store.Run) bool { return r.State == store.RunAwaitingGuidance && r.ExceptionID != xid },
				func(r store.Run) bool { return r.State.Terminal() })
			if cur.Location != r.Location {
				t.Fatalf("retried at %+v, first at %+v", cur.Location, r.Location)
			}
			old := e.xwant(t, tr, xcall{rpc: "GetException", id: xid}, codes.OK)
			if old.m["state"] != "EXCEPTION_STATE_RESOLVED" {
				t.Fatalf("retried exception: %v", old.m)
			}
		})
		t.Run("replace_step", func(t *testing.T) {
			a, r, xid := e.ExcMake(t, testenv.ExcDivisionCode)
			e.xwant(t, tr, xcall{rpc: "ResolveException", id: xid, body: `{"replace_step": {"code": "the x is 10 / 2"}}`}, codes.OK)
			out := testenv.ExcOutputs(t, e.WaitRunState(t, a.ID, r.ID, store.RunCompleted))
			if testenv.ExcNum(out["output x"]) != 5 {
				t.Fatalf("outputs: %v", out)
			}
		})
		t.Run("answer", func(t *testing.T) {
			a, r, xid := e.ExcMake(t, testenv.ExcAskCode)
			x := e.xwant(t, tr, xcall{rpc: "GetException", id: xid}, codes.OK)
			if x.m["message"] != "Approve?" || x.m["group"] != e.excGroup("missing_values") {
				t.Fatalf("question: %v", x.m)
			}
			e.xwant(t, tr, xcall{rpc: "ResolveException", id: xid, body: `{"answer": {"value": {"text": "yes"}}}`}, codes.OK)
			out := testenv.ExcOutputs(t, e.WaitRunState(t, a.ID, r.ID, store.RunCompleted))
			if out["output approved"].GetText() != "yes" {
				t.Fatalf("outputs: %v", out)
			}
		})
		t.Run("answer_choice", func(t *testing.T) {
			a, r, xid := e.ExcMake(t, testenv.ExcChoiceCode)
			bad := e.xwant(t, tr, xcall{rpc: "ResolveException", id: xid, body: `{"answer": {"value": {"text": "green"}}}`}, codes.InvalidArgument)
			if bad.violation != "answer.value" {
				t.Errorf("violation %q: %s", bad.violation, bad.raw)
			}
			e.xwant(t, tr, xcall{rpc: "ResolveException", id: xid, body: `{"answer": {"value": {"text": "red"}}}`}, codes.OK)
			out := testenv.ExcOutputs(t, e.WaitRunState(t, a.ID, r.ID, store.RunCompleted))
			if out["output colour"].GetText() != "red" {
				t.Fatalf("outputs: %v", out)
			}
		})
		t.Run("provide_values_validate", func(t *testing.T) {
			a, r, xid := e.ExcMake(t, testenv.ExcValidateCode)
			x := e.xwant(t, tr, xcall{rpc: "GetException", id: xid}, codes.OK)
			if !strings.HasPrefix(fmt.Sprint(x.m["message"]), "Please review") || x.m["group"] != e.excGroup("missing_values") {
				t.Fatalf("validate: %v", x.m)
			}
			e.xwant(t, tr, xcall{rpc: "ResolveException", id: xid,
				body: `{"provide_values": {"values": {"the quantity": {"number": {"lo": 7}}}}}`}, codes.OK)
			out := testenv.ExcOutputs(t, e.WaitRunState(t, a.ID, r.ID, store.RunCompleted))
			if testenv.ExcNum(out["output quantity"]) != 7 {
				t.Fatalf("outputs: %v", out)
			}
		})
	})
}

// TestExceptionBadGuidance: guidance that does not fit is INVALID_ARGUMENT
// naming the field, and changes nothing.
func TestExceptionBadGuidance(t *testing.T) {
	e := newTestEnv(t)
	_, missingRun, missing := e.ExcMake(t, testenv.ExcMissingCode)
	_, _, question := e.ExcMake(t, testenv.ExcAskCode)
	for _, tc := range []struct {
		name, id, body, field, reason string
	}{
		{"no guidance", missing, `{}`, "guidance", "GUIDANCE_DOES_NOT_FIT"},
		{"values for another fact", missing, `{"provide_values": {"values": {"the customer": {"text": "x"}}}}`, "provide_values.values", "GUIDANCE_DOES_NOT_FIT"},
		{"no values", missing, `{"provide_values": {}}`, "provide_values.values", "GUIDANCE_DOES_NOT_FIT"},
		{"answer to no question", missing, `{"answer": {"value": {"text": "yes"}}}`, "answer", "GUIDANCE_DOES_NOT_FIT"},
		{"answer without value", question, `{"answer": {}}`, "answer.value", "GUIDANCE_DOES_NOT_FIT"},
		{"values for a question", question, `{"provide_values": {"values": {"the answer": {"text": "x"}}}}`, "provide_values", "GUIDANCE_DOES_NOT_FIT"},
		{"empty replacement", missing, `{"replace_step": {"code": "  "}}`, "replace_step.code", "GUIDANCE_DOES_NOT_FIT"},
		{"replacement that does not parse", missing, `{"replace_step": {"code": "the x is (1 +"}}`, "replace_step.code", "GUIDANCE_DOES_NOT_FIT"},
		{"two kinds", missing, `{"skip": {}, "retry": {}}`, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			forEachTransport(t, func(t *testing.T, tr apiTransport) {
				r := e.xwant(t, tr, xcall{rpc: "ResolveException", id: tc.id, body: tc.body}, codes.InvalidArgument)
				if tc.field != "" && r.violation != tc.field {
					t.Errorf("violation on %q, want %q: %s", r.violation, tc.field, r.raw)
				}
				if tc.reason != "" && r.reason != tc.reason {
					t.Errorf("reason %q, want %q", r.reason, tc.reason)
				}
			})
		})
	}
	// Nothing changed.
	for _, id := range []string{missing, question} {
		x, err := e.Store.GetException(context.Background(), e.Init.OrganizationID, e.Init.WorkspaceID, id)
		if err != nil || x.State != store.ExceptionPending || x.Resolver != "" {
			t.Fatalf("%s after bad guidance: %v %+v", id, err, x)
		}
	}
	if r := e.WaitRunState(t, missingRun.AutomationID, missingRun.ID, store.RunAwaitingGuidance); r.ExceptionID != missing {
		t.Fatalf("run moved on: %+v", r)
	}
	forEachTransport(t, func(t *testing.T, tr apiTransport) {
		r := e.xwant(t, tr, xcall{rpc: "ResolveException", id: "nope", body: `{"skip": {}}`}, codes.NotFound)
		if r.reason != "EXCEPTION_NOT_FOUND" {
			t.Errorf("reason %q", r.reason)
		}
	})
}

// TestExceptionArchiveUnarchiveAssign: archive (run stopped) → unarchive (the
// run waits again) → resolve; transitions outside the table are
// FAILED_PRECONDITION; assign and unassign.
func TestExceptionArchiveUnarchiveAssign(t *testing.T) {
	e := newTestEnv(t)
	forEachTransport(t, func(t *testing.T, tr apiTransport) {
		a, r, xid := e.ExcMake(t, testenv.ExcMissingCode)
		e.xwant(t, tr, xcall{rpc: "UnarchiveException", id: xid}, codes.FailedPrecondition)
		x := e.xwant(t, tr, xcall{rpc: "ArchiveException", id: xid}, codes.OK)
		if x.m["state"] != "EXCEPTION_STATE_ARCHIVED" {
			t.Fatalf("archived: %v", x.m)
		}
		e.WaitRunState(t, a.ID, r.ID, store.RunStopped)
		e.xwant(t, tr, xcall{rpc: "ArchiveException", id: xid}, codes.FailedPrecondition)
		res := e.xwant(t, tr, xcall{rpc: "ResolveException", id: xid, body: `{"skip": {}}`}, codes.FailedPrecondition)
		if res.reason != "EXCEPTION_STATE_CONFLICT" {
			t.Errorf("reason %q", res.reason)
		}
		x = e.xwant(t, tr, xcall{rpc: "UnarchiveException", id: xid}, codes.OK)
		if x.m["state"] != "EXCEPTION_STATE_PENDING" {
			t.Fatalf("unarchived: %v", x.m)
		}
		if w := e.WaitRunState(t, a.ID, r.ID, store.RunAwaitingGuidance); w.ExceptionID != xid {
			t.Fatalf("run waits on %s", w.ExceptionID)
		}
		// Assign to a member, unassign, and refuse a stranger.
		x = e.xwant(t, tr, xcall{rpc: "AssignException", id: xid, body: `{"assignee": "users/` + e.Init.UserID + `"}`}, codes.OK)
		if x.m["assignee"] != "users/"+e.Init.UserID {
			t.Fatalf("assigned: %v", x.m)
		}
		x = e.xwant(t, tr, xcall{rpc: "AssignException", id: xid, body: `{"assignee": ""}`}, codes.OK)
		if x.m["assignee"] != nil {
			t.Fatalf("unassigned: %v", x.m)
		}
		bad := e.xwant(t, tr, xcall{rpc: "AssignException", id: xid, body: `{"assignee": "users/stranger"}`}, codes.InvalidArgument)
		if bad.violation != "assignee" || bad.reason != "ASSIGNEE_NOT_A_MEMBER" {
			t.Errorf("stranger: %q %q", bad.violation, bad.reason)
		}
		bad = e.xwant(t, tr, xcall{rpc: "AssignException", id: xid, body: `{"assignee": "someone"}`}, codes.InvalidArgument)
		if bad.violation != "assignee" {
			t.Errorf("not a user name: %q", bad.violation)
		}
		e.xwant(t, tr, xcall{rpc: "AssignException", id: "nope", body: `{"assignee": ""}`}, codes.NotFound)
		// An absent exception is NOT_FOUND whatever the assignee.
		e.xwant(t, tr, xcall{rpc: "AssignException", id: "nope", body: `{"assignee": "users/stranger"}`}, codes.NotFound)
		e.xwant(t, tr, xcall{rpc: "AssignException", id: "nope", body: `{"assignee": "someone"}`}, codes.NotFound)
		// Resolve; the run completes; RESOLVED is terminal.
		e.xwant(t, tr, xcall{rpc: "ResolveException", id: xid,
			body: `{"provide_values": {"values": {"invoice total": {"number": {"lo": 4}}}}}`}, codes.OK)
		if got := testenv.ExcNum(testenv.ExcOutputs(t, e.WaitRunState(t, a.ID, r.ID, store.RunCompleted))["output total"]); got != 8 {
			t.Fatalf("output total = %v", got)
		}
		e.xwant(t, tr, xcall{rpc: "ArchiveException", id: xid}, codes.FailedPrecondition)
		e.xwant(t, tr, xcall{rpc: "UnarchiveException", id: xid}, codes.FailedPrecondition)
		e.xwant(t, tr, xcall{rpc: "AssignException", id: xid, body: `{"assignee": ""}`}, codes.FailedPrecondition)
		e.xwant(t, tr, xcall{rpc: "GetException", id: "nope"}, codes.NotFound)
	})
}

// excFixture is a workspace with four pending exceptions: two missing
// values of automation a (runs r1, r2), a division by zero of automation b
// and a question of automation c.
type excFixture struct {
	a, b, c    store.Automation
	r1, r2, rb store.Run
	times      []time.Time // create times of r1's, r2's, b's, c's exceptions
}

func newExcFixture(t *testing.T, e *testEnv) excFixture {
	t.Helper()
	var f excFixture
	f.a = e.ExcAutomation(t, testenv.ExcMissingCode)
	f.r1 = e.ExcRun(t, f.a)
	f.r2 = e.ExcRun(t, f.a)
	var rc store.Run
	f.b, f.rb, _ = e.ExcMake(t, testenv.ExcDivisionCode)
	f.c, rc, _ = e.ExcMake(t, testenv.ExcAskCode)
	for _, r := range []store.Run{f.r1, f.r2, f.rb, rc} {
		x, err := e.Store.GetException(context.Background(), e.Init.OrganizationID, e.Init.WorkspaceID, r.ExceptionID)
		if err != nil {
			t.Fatal(err)
		}
		f.times = append(f.times, x.CreateTime)
	}
	return f
}

// TestExceptionFilters checks each filter field and operator, the logical
// operators, time zones, several runs and invalid filters, over both
// transports.
func TestExceptionFilters(t *testing.T) {
	e := newTestEnv(t)
	f := newExcFixture(t, e)
	if _, err := e.Store.ArchiveException(context.Background(), e.Init.OrganizationID, e.Init.WorkspaceID, f.rb.ExceptionID, nil); err != nil {
		t.Fatal(err)
	}
	autoName := func(a store.Automation) string {
		return "organizations/" + e.Init.OrganizationID + "/workspaces/" + e.Init.WorkspaceID + "/automations/" + a.ID
	}
	runName := func(r store.Run) string { return autoName(f.a) + "/runs/" + r.ID }
	tz := time.FixedZone("+05:30", 5*3600+1800)
	second := f.times[1].In(tz).Format(time.RFC3339Nano)
	x1, x2, xb := f.r1.ExceptionID, f.r2.ExceptionID, f.rb.ExceptionID
	xc := ""
	{
		p, _, err := e.Store.ListExceptions(context.Background(), store.ListExceptionsRequest{OrganizationID: e.Init.OrganizationID, WorkspaceID: e.Init.WorkspaceID, PageSize: 10})
		if err != nil || len(p.Items) != 4 {
			t.Fatalf("fixture: %v %d", err, len(p.Items))
		}
		xc = p.Items[0].ID
	}
	all4 := []string{xc, xb, x2, x1}
	cases := []struct {
		filter string
		want   []string // exception ids, newest first
	}{
		{``, all4},
		{`state = PENDING`, []string{xc, x2, x1}},
		{`state = EXCEPTION_STATE_PENDING`, []string{xc, x2, x1}},
		{`state = "ARCHIVED"`, []string{xb}},
		{`state != ARCHIVED`, []string{xc, x2, x1}},
		{`state = RESOLVED`, nil},
		{`state > PENDING`, []string{xb}},
		{`state >= RESOLVED`, []string{xb}},
		{`state < ARCHIVED`, []string{xc, x2, x1}},
		{`state <= PENDING`, []string{xc, x2, x1}},
		{`automation = "` + autoName(f.a) + `"`, []string{x2, x1}},
		{`automation = "` + f.a.ID + `"`, []string{x2, x1}},
		{`automation != "` + f.a.ID + `"`, []string{xc, xb}},
		{`run = "` + runName(f.r1) + `"`, []string{x1}},
		{`run = "` + f.r1.ID + `" OR run = "` + f.r2.ID + `" OR run = "` + f.rb.ID + `"`, []string{xb, x2, x1}},
		{`run != "` + f.r1.ID + `"`, []string{xc, xb, x2}},
		{`group = "` + e.excGroup("missing_values") + `"`, []string{xc, x2, x1}},
		{`group = "user_system_error"`, []string{xb}},
		{`group != "missing_values"`, []string{xb}},
		{`group = ""`, nil},
		{`group != ""`, all4},
		{`create_time > "2000-01-01T00:00:00Z"`, all4},
		{`create_time < "2000-01-01T00:00:00+02:00"`, nil},
		{`create_time >= "` + second + `"`, []string{xc, xb, x2}},
		{`create_time > "` + second + `"`, []string{xc, xb}},
		{`create_time <= "` + second + `"`, []string{x2, x1}},
		{`create_time < "` + second + `"`, []string{x1}},
		{`create_time = "` + second + `"`, []string{x2}},
		{`create_time != "` + second + `"`, []string{xc, xb, x1}},
		{`create_time = "` + f.times[1].UTC().Format(time.RFC3339Nano) + `"`, []string{x2}},
		{`NOT state = ARCHIVED`, []string{xc, x2, x1}},
		{`NOT (state = ARCHIVED OR group = "missing_values")`, nil},
		{`(state = PENDING OR state = ARCHIVED) AND NOT automation = "` + f.a.ID + `"`, []string{xc, xb}},
		{`state = PENDING AND (run = "` + f.r1.ID + `" OR group = "user_system_error")`, []string{x1}},
		{`-state = PENDING`, []string{xb}},
	}
	forEachTransport(t, func(t *testing.T, tr apiTransport) {
		for _, tc := range cases {
			r := e.xwant(t, tr, xcall{rpc: "ListExceptions", query: q("filter", tc.filter)}, codes.OK)
			if got := excIDs(r.m); strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Errorf("filter %s: got %v, want %v", tc.filter, got, tc.want)
			}
			if ts := fmt.Sprint(r.m["total_size"]); len(tc.want) > 0 && ts != fmt.Sprint(len(tc.want)) {
				t.Errorf("filter %s: total_size %s, want %d", tc.filter, ts, len(tc.want))
			}
		}
		for _, bad := range []string{
			`foo = "x"`, `automation < "x"`, `run : "x"`, `group > ""`, `state = BOGUS`, `state`,
			`create_time > "yesterday"`, `create_time > "2024-01-01"`, `create_time > 5`, `state = PENDING AND`, `(state = PENDING`,
		} {
			r := e.xwant(t, tr, xcall{rpc: "ListExceptions", query: q("filter", bad)}, codes.InvalidArgument)
			if r.violation != "filter" || r.reason != "INVALID_FILTER" {
				t.Errorf("filter %s: violation %q reason %q: %s", bad, r.violation, r.reason, r.raw)
			}
			e.xwant(t, tr, xcall{rpc: "CountExceptionsByGroup", query: q("filter", bad)}, codes.InvalidArgument)
		}
	})
}

// TestExceptionListsAndCounts checks paging, skip, total_size, the groups
// and both counts over both transports.
func TestExceptionListsAndCounts(t *testing.T) {
	e := newTestEnv(t)
	f := newExcFixture(t, e)
	forEachTransport(t, func(t *testing.T, tr apiTransport) {
		// Pages of two: the same four, with the total on every page.
		var seen []string
		tok := ""
		for range 3 {
			r := e.xwant(t, tr, xcall{rpc: "ListExceptions", query: q("page_size", "2", "page_token", tok)}, codes.OK)
			if fmt.Sprint(r.m["total_size"]) != "4" {
				t.Fatalf("total_size: %v", r.m)
			}
			seen = append(seen, excIDs(r.m)...)
			tok, _ = r.m["next_page_token"].(string)
			if tok == "" {
				break
			}
		}
		if len(seen) != 4 {
			t.Fatalf("pages: %v", seen)
		}
		// skip 1: from the second newest on; the token goes on from there.
		r := e.xwant(t, tr, xcall{rpc: "ListExceptions", query: q("skip", "1", "page_size", "2")}, codes.OK)
		if got := excIDs(r.m); len(got) != 2 || got[0] != seen[1] || fmt.Sprint(r.m["total_size"]) != "4" {
			t.Fatalf("skip 1: %v (all %v)", got, seen)
		}
		r = e.xwant(t, tr, xcall{rpc: "ListExceptions", query: q("skip", "1", "page_size", "2", "page_token", fmt.Sprint(r.m["next_page_token"]))}, codes.OK)
		if got := excIDs(r.m); len(got) != 1 || got[0] != seen[3] {
			t.Fatalf("skip 1, page 2: %v (all %v)", got, seen)
		}
		first := e.xwant(t, tr, xcall{rpc: "ListExceptions", query: q("page_size", "1")}, codes.OK)
		tok = fmt.Sprint(first.m["next_page_token"])
		for _, bad := range []url.Values{
			q("page_size", "1", "page_token", tok, "filter", "state = PENDING"),
			q("page_size", "1", "page_token", tok, "skip", "2"),
			q("page_token", "garbage"),
			q("page_size", "-1"),
			q("skip", "-1"),
		} {
			e.xwant(t, tr, xcall{rpc: "ListExceptions", query: bad}, codes.InvalidArgument)
		}
		r = e.xwant(t, tr, xcall{rpc: "ListExceptions", query: q("skip", "10")}, codes.OK)
		if len(excIDs(r.m)) != 0 || fmt.Sprint(r.m["total_size"]) != "4" {
			t.Fatalf("skip past the end: %v", r.m)
		}

		// The static groups, paged.
		gr := e.xwant(t, tr, xcall{rpc: "ListExceptionGroups"}, codes.OK)
		if count(gr.m, "groups") != 3 || testenv.Field(gr.m, "groups.0.name") != e.excGroup("missing_values") ||
			testenv.Field(gr.m, "groups.1.name") != e.excGroup("user_system_error") || testenv.Field(gr.m, "groups.2.name") != e.excGroup("internal_error") {
			t.Fatalf("groups: %v", gr.m)
		}
		for i := range 3 {
			for _, k := range []string{"title", "description", "suggested_action"} {
				if s, _ := testenv.Field(gr.m, fmt.Sprintf("groups.%d.%s", i, k)).(string); s == "" {
					t.Errorf("group %d has no %s", i, k)
				}
			}
		}
		gr = e.xwant(t, tr, xcall{rpc: "ListExceptionGroups", query: q("page_size", "2")}, codes.OK)
		gr2 := e.xwant(t, tr, xcall{rpc: "ListExceptionGroups", query: q("page_size", "2", "page_token", fmt.Sprint(gr.m["next_page_token"]))}, codes.OK)
		if count(gr.m, "groups") != 2 || count(gr2.m, "groups") != 1 || gr2.m["next_page_token"] != nil && gr2.m["next_page_token"] != "" {
			t.Fatalf("group pages: %v %v", gr.m, gr2.m)
		}

		// Counts by group.
		c := e.xwant(t, tr, xcall{rpc: "CountExceptionsByGroup"}, codes.OK)
		if fmt.Sprint(c.m["total_size"]) != "2" || fmt.Sprint(c.m["total_exception_count"]) != "4" ||
			testenv.Field(c.m, "group_counts.0.group.name") != e.excGroup("missing_values") || fmt.Sprint(testenv.Field(c.m, "group_counts.0.count")) != "3" ||
			testenv.Field(c.m, "group_counts.1.group.name") != e.excGroup("user_system_error") || fmt.Sprint(testenv.Field(c.m, "group_counts.1.count")) != "1" ||
			testenv.Field(c.m, "group_counts.0.group.title") != "Missing values" {
			t.Fatalf("count by group: %v", c.m)
		}
		c = e.xwant(t, tr, xcall{rpc: "CountExceptionsByGroup", query: q("page_size", "1", "filter", `automation = "`+f.a.ID+`" OR automation = "`+f.b.ID+`"`)}, codes.OK)
		if count(c.m, "group_counts") != 1 || fmt.Sprint(c.m["total_size"]) != "2" || fmt.Sprint(c.m["total_exception_count"]) != "3" {
			t.Fatalf("count by group page 1: %v", c.m)
		}
		c2 := e.xwant(t, tr, xcall{rpc: "CountExceptionsByGroup", query: q("page_size", "1", "page_token", fmt.Sprint(c.m["next_page_token"]),
			"filter", `automation = "`+f.a.ID+`" OR automation = "`+f.b.ID+`"`)}, codes.OK)
		if testenv.Field(c2.m, "group_counts.0.group.name") != e.excGroup("user_system_error") || fmt.Sprint(testenv.Field(c2.m, "group_counts.0.count")) != "1" {
			t.Fatalf("count by group page 2: %v", c2.m)
		}
		e.xwant(t, tr, xcall{rpc: "CountExceptionsByGroup", query: q("page_size", "1", "page_token", fmt.Sprint(c.m["next_page_token"]))}, codes.InvalidArgument)

		// Counts by automation.
		c = e.xwant(t, tr, xcall{rpc: "CountExceptionsByAutomation", query: q("filter", "state = PENDING")}, codes.OK)
		if fmt.Sprint(c.m["total_size"]) != "3" || fmt.Sprint(c.m["total_exception_count"]) != "4" || count(c.m, "automation_counts") != 3 {
			t.Fatalf("count by automation: %v", c.m)
		}
		counts := map[string]string{}
		for i := range 3 {
			counts[fmt.Sprint(testenv.Field(c.m, fmt.Sprintf("automation_counts.%d.automation", i)))] = fmt.Sprint(testenv.Field(c.m, fmt.Sprintf("automation_counts.%d.count", i)))
		}
		prefix := "organizations/" + e.Init.OrganizationID + "/workspaces/" + e.Init.WorkspaceID + "/automations/"
		if counts[prefix+f.a.ID] != "2" || counts[prefix+f.b.ID] != "1" || counts[prefix+f.c.ID] != "1" {
			t.Fatalf("count by automation: %v", counts)
		}
		c = e.xwant(t, tr, xcall{rpc: "CountExceptionsByAutomation", query: q("page_size", "2")}, codes.OK)
		if count(c.m, "automation_counts") != 2 || c.m["next_page_token"] == nil {
			t.Fatalf("count by automation, page of 2: %v", c.m)
		}
	})
	// An unknown workspace is NOT_FOUND, not an empty list.
	code, _, raw := e.DoHTTP(t, "GET", "/api/v1/organizations/"+e.Init.OrganizationID+"/workspaces/nope/exceptions", "", map[string]string{"Authorization": "Bearer " + e.Init.APIKey})
	if code != 404 && code != 403 {
		t.Fatalf("unknown workspace: %d %s", code, raw)
	}
}

// TestExceptionBatches archives, unarchives and assigns by filter.
func TestExceptionBatches(t *testing.T) {
	e := newTestEnv(t)
	f := newExcFixture(t, e)
	forEachTransport(t, func(t *testing.T, tr apiTransport) {
		byA := `{"filter": "automation = \"` + f.a.ID + `\""}`
		r := e.xwant(t, tr, xcall{rpc: "BatchArchiveExceptions", body: byA}, codes.OK)
		if count(r.m, "exceptions") != 2 || testenv.Field(r.m, "exceptions.0.state") != "EXCEPTION_STATE_ARCHIVED" {
			t.Fatalf("batch archive: %v", r.m)
		}
		e.WaitRunState(t, f.a.ID, f.r1.ID, store.RunStopped)
		e.WaitRunState(t, f.a.ID, f.r2.ID, store.RunStopped)
		if r := e.xwant(t, tr, xcall{rpc: "BatchArchiveExceptions", body: byA}, codes.OK); count(r.m, "exceptions") != 0 {
			t.Fatalf("batch archive again: %v", r.m)
		}
		r = e.xwant(t, tr, xcall{rpc: "BatchUnarchiveExceptions", body: `{"filter": "state = ARCHIVED"}`}, codes.OK)
		if count(r.m, "exceptions") != 2 || testenv.Field(r.m, "exceptions.1.state") != "EXCEPTION_STATE_PENDING" {
			t.Fatalf("batch unarchive: %v", r.m)
		}
		e.WaitRunState(t, f.a.ID, f.r1.ID, store.RunAwaitingGuidance)
		e.WaitRunState(t, f.a.ID, f.r2.ID, store.RunAwaitingGuidance)
		me := `"users/` + e.Init.UserID + `"`
		r = e.xwant(t, tr, xcall{rpc: "BatchAssignExceptions", body: `{"filter": "state = PENDING", "assignee": ` + me + `}`}, codes.OK)
		if count(r.m, "exceptions") != 4 || testenv.Field(r.m, "exceptions.3.assignee") != "users/"+e.Init.UserID {
			t.Fatalf("batch assign: %v", r.m)
		}
		if r := e.xwant(t, tr, xcall{rpc: "BatchAssignExceptions", body: `{"filter": "state = PENDING", "assignee": ` + me + `}`}, codes.OK); count(r.m, "exceptions") != 0 {
			t.Fatalf("batch assign again: %v", r.m)
		}
		r = e.xwant(t, tr, xcall{rpc: "BatchAssignExceptions", body: `{"filter": "group = \"user_system_error\"", "assignee": ""}`}, codes.OK)
		if count(r.m, "exceptions") != 1 || testenv.Field(r.m, "exceptions.0.assignee") != nil {
			t.Fatalf("batch unassign: %v", r.m)
		}
		e.xwant(t, tr, xcall{rpc: "BatchAssignExceptions", body: `{"filter": ""}`}, codes.InvalidArgument)
		e.xwant(t, tr, xcall{rpc: "BatchArchiveExceptions", body: `{"filter": "bogus = 1"}`}, codes.InvalidArgument)
		e.xwant(t, tr, xcall{rpc: "BatchUnarchiveExceptions", body: `{}`}, codes.InvalidArgument)
		e.xwant(t, tr, xcall{rpc: "BatchAssignExceptions", body: `{"filter": "state = PENDING", "assignee": "users/stranger"}`}, codes.InvalidArgument)
		// Put the assignees back for the other transport.
		e.xwant(t, tr, xcall{rpc: "BatchAssignExceptions", body: `{"filter": "state = PENDING", "assignee": ""}`}, codes.OK)
	})
}

// TestExceptionResolveRace: of two concurrent resolutions of one exception
// exactly one wins; the other is FAILED_PRECONDITION.
func TestExceptionResolveRace(t *testing.T) {
	e := newTestEnv(t)
	a := e.ExcAutomation(t, testenv.ExcMissingCode)
	const races = 10
	for i := range races {
		r := e.ExcRun(t, a)
		var wg sync.WaitGroup
		results := make([]xresult, 2)
		for j := range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				results[j] = e.xdo(t, []apiTransport{overHTTP, overGRPC}[j], xcall{rpc: "ResolveException", id: r.ExceptionID,
					body: fmt.Sprintf(`{"provide_values": {"values": {"the invoice total": {"number": {"lo": %d}}}}}`, j+1)})
			}()
		}
		wg.Wait()
		won, lost := 0, 0
		for _, res := range results {
			switch res.code {
			case codes.OK:
				won++
			case codes.FailedPrecondition:
				lost++
			default:
				t.Fatalf("race %d: %v %s", i, res.code, res.raw)
			}
		}
		if won != 1 || lost != 1 {
			t.Fatalf("race %d: %d won, %d lost", i, won, lost)
		}
		done := e.WaitRunState(t, a.ID, r.ID, store.RunCompleted)
		if got := testenv.ExcNum(testenv.ExcOutputs(t, done)["output total"]); got != 2 && got != 4 {
			t.Fatalf("race %d: output total %v", i, got)
		}
	}
}
