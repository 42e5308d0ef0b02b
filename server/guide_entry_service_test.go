package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/fieldmaskpb"

	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/server/app"
	"github.com/proserun/prose/server/testenv"
	"github.com/proserun/prose/store"
)

const guideSvc = "/prose.platform.v1.GuideEntryService/"

// guideCode needs `the grand total`, which nobody gives: every run of it
// meets the same gap at the same statement.
const guideCode = "the tax is the subtotal * 0.1\nthe output total is the grand total\n"

// guideInvoke invokes automation a with the subtotal over tr and returns
// the run id.
func (e *testEnv) guideInvoke(t *testing.T, tr apiTransport, a string, subtotal uint32) string {
	t.Helper()
	m := e.mustCall(t, tr, "/prose.platform.v1.AutomationService/InvokeAutomation", &platformv1.InvokeAutomationRequest{
		OrganizationId: e.Init.OrganizationID, WorkspaceId: e.Init.WorkspaceID, AutomationId: a,
		Stage:  platformv1.AutomationStage_AUTOMATION_STAGE_DRAFT,
		Inputs: map[string]*platformv1.Value{"subtotal": {Kind: &platformv1.Value_Number{Number: &platformv1.Number{Lo: subtotal}}}},
	})
	return fmt.Sprint(m["run_id"])
}

// guideRunExceptions lists the exceptions of one run over tr.
func (e *testEnv) guideRunExceptions(t *testing.T, tr apiTransport, run string) []any {
	t.Helper()
	m := e.mustCall(t, tr, excSvc+"ListExceptions", &platformv1.ListExceptionsRequest{
		OrganizationId: e.Init.OrganizationID, WorkspaceId: e.Init.WorkspaceID, Filter: `run = "` + run + `"`,
	})
	l, _ := m["exceptions"].([]any)
	return l
}

func (e *testEnv) guideReq(a, id string) (org, ws, aut, gid string) {
	return e.Init.OrganizationID, e.Init.WorkspaceID, a, id
}

// TestGuideEntryLearningLoop: a run needs guidance; the person resolves it
// with "remember"; the entry made is approved; the next 100 runs meeting
// the same gap complete with no exception left pending, each resolved by
// the entry (resolver guideEntries/{g}, resolution_guide_entry its name);
// once the statement's text changes the entry no longer applies. Over HTTP
// and gRPC, on the store of the environment (SQLite, or PostgreSQL with
// PROSE_TEST_POSTGRES_URL).
func TestGuideEntryLearningLoop(t *testing.T) {
	forEachTransport(t, func(t *testing.T, tr apiTransport) {
		e := newTestEnv(t)
		a := e.ExcAutomation(t, guideCode)
		first := e.guideInvoke(t, tr, a.ID, 100)
		r := e.WaitRunState(t, a.ID, first, store.RunAwaitingGuidance)
		// Resolve with remember: the run goes on, and an entry waits for approval.
		res := e.mustCall(t, tr, excSvc+"ResolveException", &platformv1.ResolveExceptionRequest{
			OrganizationId: e.Init.OrganizationID, WorkspaceId: e.Init.WorkspaceID, ExceptionId: r.ExceptionID, Remember: true,
			Guidance: &platformv1.ResolveExceptionRequest_ProvideValues{ProvideValues: &platformv1.ProvideValues{
				Values: map[string]*platformv1.Value{"the grand total": {Kind: &platformv1.Value_Number{Number: &platformv1.Number{Lo: 11000, Flags: 2 << 16}}}},
			}},
		})
		if res["resolver"] != "users/"+e.Init.UserID || res["state"] != "EXCEPTION_STATE_RESOLVED" {
			t.Fatalf("resolve: %v", res)
		}
		entryName := fmt.Sprint(testenv.Field(res, "extra.remembered_guide_entry"))
		wantPrefix := "organizations/" + e.Init.OrganizationID + "/workspaces/" + e.Init.WorkspaceID + "/automations/" + a.ID + "/guideEntries/"
		if !strings.HasPrefix(entryName, wantPrefix) {
			t.Fatalf("no entry remembered: %v", res)
		}
		gid := store.LastSegment(entryName)
		e.WaitRunState(t, a.ID, first, store.RunCompleted)

		org, ws, aut, _ := e.guideReq(a.ID, gid)
		g := e.mustCall(t, tr, guideSvc+"GetGuideEntry", &platformv1.GetGuideEntryRequest{OrganizationId: org, WorkspaceId: ws, AutomationId: aut, GuideEntryId: gid})
		want := map[string]string{
			"name": entryName, "state": "STATE_PENDING_APPROVAL", "version": "0.1",
			"automation":       "organizations/" + org + "/workspaces/" + ws + "/automations/" + a.ID,
			"source_exception": "organizations/" + org + "/workspaces/" + ws + "/exceptions/" + r.ExceptionID,
			"source_run":       "organizations/" + org + "/workspaces/" + ws + "/automations/" + a.ID + "/runs/" + first,
			"resolution_code":  "the grand total is 110.00",
			"title":            "Provide the grand total",
		}
		for k, v := range want {
			if got := fmt.Sprint(testenv.Field(g, k)); got != v {
				t.Errorf("entry %s = %q, want %q", k, got, v)
			}
		}
		// Not approved yet: the next run waits for a person.
		waiting := e.guideInvoke(t, tr, a.ID, 100)
		wr := e.WaitRunState(t, a.ID, waiting, store.RunAwaitingGuidance)

		ap := e.mustCall(t, tr, guideSvc+"ApproveGuideEntry", &platformv1.ApproveGuideEntryRequest{OrganizationId: org, WorkspaceId: ws, AutomationId: aut, GuideEntryId: gid})
		if ap["state"] != "STATE_APPROVED" || ap["version"] != "1.0" {
			t.Fatalf("approve: %v", ap)
		}
		// An exception raised before the approval still waits: entries
		// apply as exceptions are raised.
		if x, err := e.Store.GetException(context.Background(), org, ws, wr.ExceptionID); err != nil || x.State != store.ExceptionPending {
			t.Fatalf("earlier exception: %+v %v", x, err)
		}

		// The next 100 runs complete by themselves, each saying which entry resolved its gap.
		runs := make([]string, 100)
		for i := range runs {
			runs[i] = e.guideInvoke(t, tr, a.ID, uint32(i+1))
		}
		for _, id := range runs {
			done := e.WaitRunState(t, a.ID, id, store.RunCompleted)
			if got := testenv.ExcNum(testenv.ExcOutputs(t, done)["output total"]); got != 110 {
				t.Fatalf("run %s: output total = %v, want 110", id, got)
			}
			xs := e.guideRunExceptions(t, tr, id)
			if len(xs) != 1 {
				t.Fatalf("run %s: %d exceptions, want 1: %v", id, len(xs), xs)
			}
			x := xs[0]
			if testenv.Field(x, "state") != "EXCEPTION_STATE_RESOLVED" || testenv.Field(x, "resolution_guide_entry") != entryName ||
				testenv.Field(x, "resolver") != "guideEntries/"+gid {
				t.Fatalf("run %s: exception %v", id, x)
			}
		}
		pending := e.mustCall(t, tr, excSvc+"ListExceptions", &platformv1.ListExceptionsRequest{
			OrganizationId: org, WorkspaceId: ws, Filter: `state = PENDING AND automation = "` + a.ID + `"`,
		})
		if fmt.Sprint(pending["total_size"]) != "1" { // the run that waited before the approval
			t.Fatalf("pending: %v", pending)
		}

		// The statement's text changes: the entry no longer applies.
		if _, err := e.Store.UpdateAutomation(context.Background(), store.Automation{
			OrganizationID: org, WorkspaceID: ws, ID: a.ID, Code: "the tax is the subtotal * 0.1\nthe output total is the grand total * 1\n",
		}, []string{"code"}); err != nil {
			t.Fatal(err)
		}
		changed := e.guideInvoke(t, tr, a.ID, 5)
		cr := e.WaitRunState(t, a.ID, changed, store.RunAwaitingGuidance)
		x, err := e.Store.GetException(context.Background(), org, ws, cr.ExceptionID)
		if err != nil || x.State != store.ExceptionPending || x.ResolutionGuideEntry != "" {
			t.Fatalf("after the edit: %+v %v", x, err)
		}
	})
}

// TestGuideEntryExpressionsAndLifecycle: an entry made with a separate
// Create call computes its value from the run's facts (the subtotal + the
// tax) in each run; delete (soft) stops it applying, undelete brings it
// back; update changes its text (minor version) and not what it does;
// list filters, show_deleted and errors for client mistakes.
func TestGuideEntryExpressionsAndLifecycle(t *testing.T) {
	forEachTransport(t, func(t *testing.T, tr apiTransport) {
		e := newTestEnv(t)
		a := e.ExcAutomation(t, guideCode)
		first := e.guideInvoke(t, tr, a.ID, 100)
		r := e.WaitRunState(t, a.ID, first, store.RunAwaitingGuidance)
		org, ws := e.Init.OrganizationID, e.Init.WorkspaceID
		mk := &platformv1.CreateGuideEntryRequest{
			OrganizationId: org, WorkspaceId: ws, AutomationId: a.ID, RequestId: "make-1",
			GuideEntry: &platformv1.GuideEntry{SourceException: r.ExceptionID, Title: "Grand total", RootCause: "Nobody sends it"},
			Guidance: &platformv1.GuideEntryGuidance{Kind: &platformv1.GuideEntryGuidance_ProvideExpressions{
				ProvideExpressions: &platformv1.ProvideExpressions{Expressions: map[string]string{"the grand total": "the subtotal + the tax"}},
			}},
		}
		g := e.mustCall(t, tr, guideSvc+"CreateGuideEntry", mk)
		gid := store.LastSegment(fmt.Sprint(g["name"]))
		if g["resolution_code"] != "the grand total is the subtotal + the tax" || g["title"] != "Grand total" || g["root_cause"] != "Nobody sends it" {
			t.Fatalf("create: %v", g)
		}
		// The same request id: the same entry.
		if again := e.mustCall(t, tr, guideSvc+"CreateGuideEntry", mk); again["name"] != g["name"] {
			t.Fatalf("retry made %v, want %v", again["name"], g["name"])
		}
		e.mustCall(t, tr, guideSvc+"ApproveGuideEntry", &platformv1.ApproveGuideEntryRequest{OrganizationId: org, WorkspaceId: ws, AutomationId: a.ID, GuideEntryId: gid})
		for _, sub := range []uint32{200, 40} {
			id := e.guideInvoke(t, tr, a.ID, sub)
			done := e.WaitRunState(t, a.ID, id, store.RunCompleted)
			if got, want := testenv.ExcNum(testenv.ExcOutputs(t, done)["output total"]), float64(sub)*1.1; fmt.Sprintf("%.2f", got) != fmt.Sprintf("%.2f", want) {
				t.Fatalf("subtotal %d: output total %v, want %v", sub, got, want)
			}
		}
		// Update: the text changes, the minor version increases.
		up := e.mustCall(t, tr, guideSvc+"UpdateGuideEntry", &platformv1.UpdateGuideEntryRequest{
			OrganizationId: org, WorkspaceId: ws, AutomationId: a.ID, GuideEntryId: gid,
			GuideEntry: &platformv1.GuideEntry{ResolutionNotes: "Check with finance"}, UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"resolution_notes"}},
		})
		if up["resolution_notes"] != "Check with finance" || up["version"] != "1.1" || up["title"] != "Grand total" {
			t.Fatalf("update: %v", up)
		}
		// Without a mask: the fields set (the notes stay).
		up = e.mustCall(t, tr, guideSvc+"UpdateGuideEntry", &platformv1.UpdateGuideEntryRequest{
			OrganizationId: org, WorkspaceId: ws, AutomationId: a.ID, GuideEntryId: gid, GuideEntry: &platformv1.GuideEntry{Title: "Grand total"},
		})
		if up["resolution_notes"] != "Check with finance" || up["version"] != "1.2" {
			t.Fatalf("update without a mask: %v", up)
		}
		// A read-only field in the mask: INVALID_ARGUMENT.
		_, err := e.call(t, tr, guideSvc+"UpdateGuideEntry", &platformv1.UpdateGuideEntryRequest{
			OrganizationId: org, WorkspaceId: ws, AutomationId: a.ID, GuideEntryId: gid,
			GuideEntry: &platformv1.GuideEntry{}, UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"state"}},
		})
		wantGRPCCode(t, err, codes.InvalidArgument)
		// Filters.
		list := func(filter string, showDeleted bool) map[string]any {
			m := e.mustCall(t, tr, guideSvc+"ListGuideEntries", &platformv1.ListGuideEntriesRequest{
				OrganizationId: org, WorkspaceId: ws, AutomationId: "-", Filter: filter, ShowDeleted: showDeleted,
			})
			if m["total_size"] == nil { // proto JSON leaves a zero out
				m["total_size"] = 0
			}
			return m
		}
		for filter, n := range map[string]string{
			`title : "grand"`: "1", `title : "nothing"`: "0", `state = STATE_APPROVED`: "1", `automation = "` + a.ID + `"`: "1",
			`resolution_code : "subtotal" AND create_time > "2000-01-01T00:00:00Z"`: "1",
			// The reference's spelling of a partial match.
			`(title contains 'Grand' OR resolution_steps contains 'error') AND create_time > "2025-01-01T00:00:00Z"`: "1",
		} {
			if got := fmt.Sprint(list(filter, false)["total_size"]); got != n {
				t.Errorf("filter %s: total_size %s, want %s", filter, got, n)
			}
		}
		_, err = e.call(t, tr, guideSvc+"ListGuideEntries", &platformv1.ListGuideEntriesRequest{OrganizationId: org, WorkspaceId: ws, AutomationId: a.ID, Filter: `nope = "x"`})
		wantGRPCCode(t, err, codes.InvalidArgument)
		// Soft delete: archived, hidden, no longer applied.
		del := e.mustCall(t, tr, guideSvc+"DeleteGuideEntry", &platformv1.DeleteGuideEntryRequest{OrganizationId: org, WorkspaceId: ws, AutomationId: a.ID, GuideEntryId: gid})
		if del["state"] != "STATE_ARCHIVED" || del["delete_time"] == nil {
			t.Fatalf("delete: %v", del)
		}
		if got := fmt.Sprint(list("", false)["total_size"]); got != "0" {
			t.Fatalf("deleted entry listed: %s", got)
		}
		if got := fmt.Sprint(list("", true)["total_size"]); got != "1" {
			t.Fatalf("show_deleted: %s", got)
		}
		waits := e.guideInvoke(t, tr, a.ID, 10)
		e.WaitRunState(t, a.ID, waits, store.RunAwaitingGuidance)
		_, err = e.call(t, tr, guideSvc+"DeleteGuideEntry", &platformv1.DeleteGuideEntryRequest{OrganizationId: org, WorkspaceId: ws, AutomationId: a.ID, GuideEntryId: gid})
		wantGRPCCode(t, err, codes.NotFound)
		// Undelete: approved again, applied again.
		un := e.mustCall(t, tr, guideSvc+"UndeleteGuideEntry", &platformv1.UndeleteGuideEntryRequest{OrganizationId: org, WorkspaceId: ws, AutomationId: a.ID, GuideEntryId: gid})
		if un["state"] != "STATE_APPROVED" || un["delete_time"] != nil {
			t.Fatalf("undelete: %v", un)
		}
		_, err = e.call(t, tr, guideSvc+"UndeleteGuideEntry", &platformv1.UndeleteGuideEntryRequest{OrganizationId: org, WorkspaceId: ws, AutomationId: a.ID, GuideEntryId: gid})
		wantGRPCCode(t, err, codes.AlreadyExists)
		id := e.guideInvoke(t, tr, a.ID, 10)
		e.WaitRunState(t, a.ID, id, store.RunCompleted)
		// Client mistakes.
		_, err = e.call(t, tr, guideSvc+"GetGuideEntry", &platformv1.GetGuideEntryRequest{OrganizationId: org, WorkspaceId: ws, AutomationId: a.ID, GuideEntryId: "nope"})
		wantGRPCCode(t, err, codes.NotFound)
		bad := []*platformv1.CreateGuideEntryRequest{
			{OrganizationId: org, WorkspaceId: ws, AutomationId: a.ID, GuideEntry: &platformv1.GuideEntry{SourceException: r.ExceptionID}}, // no guidance
			{OrganizationId: org, WorkspaceId: ws, AutomationId: a.ID, GuideEntry: &platformv1.GuideEntry{}, Guidance: mk.Guidance},        // no source
			{OrganizationId: org, WorkspaceId: ws, AutomationId: a.ID, GuideEntry: &platformv1.GuideEntry{SourceException: r.ExceptionID},
				Guidance: &platformv1.GuideEntryGuidance{Kind: &platformv1.GuideEntryGuidance_ProvideExpressions{ProvideExpressions: &platformv1.ProvideExpressions{
					Expressions: map[string]string{"the grand total": "the subtotal +"}}}}}, // does not parse
			{OrganizationId: org, WorkspaceId: ws, AutomationId: a.ID, GuideEntry: &platformv1.GuideEntry{SourceException: r.ExceptionID},
				Guidance: &platformv1.GuideEntryGuidance{Kind: &platformv1.GuideEntryGuidance_ProvideExpressions{ProvideExpressions: &platformv1.ProvideExpressions{
					Expressions: map[string]string{"the colour": "1"}}}}}, // another fact
			{OrganizationId: org, WorkspaceId: ws, AutomationId: a.ID, GuideEntry: &platformv1.GuideEntry{SourceException: r.ExceptionID},
				Guidance: &platformv1.GuideEntryGuidance{Kind: &platformv1.GuideEntryGuidance_Answer{Answer: &platformv1.Answer{Value: &platformv1.Value{Kind: &platformv1.Value_Text{Text: "x"}}}}}}, // no question
		}
		for i, req := range bad {
			_, err := e.call(t, tr, guideSvc+"CreateGuideEntry", req)
			wantGRPCCode(t, err, codes.InvalidArgument)
			_ = i
		}
		// Retry cannot be remembered; the exception stays pending.
		_, err = e.call(t, tr, excSvc+"ResolveException", &platformv1.ResolveExceptionRequest{
			OrganizationId: org, WorkspaceId: ws, ExceptionId: r.ExceptionID, Remember: true,
			Guidance: &platformv1.ResolveExceptionRequest_Retry{Retry: &platformv1.Retry{}},
		})
		wantGRPCCode(t, err, codes.InvalidArgument)
		if x, _ := e.Store.GetException(context.Background(), org, ws, r.ExceptionID); x.State != store.ExceptionPending {
			t.Fatalf("refused remember changed the exception: %s", x.State)
		}
	})
}

// TestGuideEntryBoundPerRun: a skip entry for a statement met in each turn
// of a loop resolves at most --max-guided-per-run of them in one run; the
// next waits for a person, its description saying why.
func TestGuideEntryBoundPerRun(t *testing.T) {
	e := newTestEnvWith(t, func(c *app.Config) { c.MaxGuidedPerRun = 3 })
	code := "the items are 1, 2, 3, 4, 5\nthe count is 0\nprocess each item in the items as follows\n  the x is the item / 0\n  add 1 to the count\nthe output count is the count\n"
	a, r, xid := e.ExcMake(t, code)
	x, err := e.Store.GetException(context.Background(), e.Init.OrganizationID, e.Init.WorkspaceID, xid)
	if err != nil {
		t.Fatal(err)
	}
	m := e.mustCall(t, overHTTP, excSvc+"ResolveException", &platformv1.ResolveExceptionRequest{
		OrganizationId: e.Init.OrganizationID, WorkspaceId: e.Init.WorkspaceID, ExceptionId: x.ID, Remember: true,
		Guidance: &platformv1.ResolveExceptionRequest_Skip{Skip: &platformv1.Skip{}},
	})
	gid := store.LastSegment(fmt.Sprint(testenv.Field(m, "extra.remembered_guide_entry")))
	// The person's skip covers item 1; the entry is not approved yet, so item 2 waits.
	r2 := e.WaitRunState(t, a.ID, r.ID, store.RunAwaitingGuidance)
	for r2.ExceptionID == xid {
		r2 = e.WaitRunState(t, a.ID, r.ID, store.RunAwaitingGuidance)
	}
	e.mustCall(t, overHTTP, guideSvc+"ApproveGuideEntry", &platformv1.ApproveGuideEntryRequest{
		OrganizationId: e.Init.OrganizationID, WorkspaceId: e.Init.WorkspaceID, AutomationId: a.ID, GuideEntryId: gid,
	})
	// A new run: items 1-3 are skipped by the entry, item 4 waits.
	id := e.guideInvoke(t, overHTTP, a.ID, 0)
	w := e.WaitRunState(t, a.ID, id, store.RunAwaitingGuidance)
	xs := e.guideRunExceptions(t, overHTTP, id)
	guided, pending := 0, 0
	for _, x := range xs {
		switch testenv.Field(x, "state") {
		case "EXCEPTION_STATE_RESOLVED":
			if testenv.Field(x, "resolver") == "guideEntries/"+gid {
				guided++
			}
		case "EXCEPTION_STATE_PENDING":
			pending++
			if d := fmt.Sprint(testenv.Field(x, "description")); !strings.Contains(d, "the most they may") {
				t.Errorf("description %q does not say the bound was reached", d)
			}
		}
	}
	if guided != 3 || pending != 1 {
		t.Fatalf("guided %d, pending %d, want 3 and 1: %v", guided, pending, xs)
	}
	// A person skips item 4; the bound still holds for item 5.
	e.mustCall(t, overHTTP, excSvc+"ResolveException", &platformv1.ResolveExceptionRequest{
		OrganizationId: e.Init.OrganizationID, WorkspaceId: e.Init.WorkspaceID, ExceptionId: w.ExceptionID,
		Guidance: &platformv1.ResolveExceptionRequest_Skip{Skip: &platformv1.Skip{}},
	})
	w5 := e.WaitRunState(t, a.ID, id, store.RunAwaitingGuidance)
	for w5.ExceptionID == w.ExceptionID {
		w5 = e.WaitRunState(t, a.ID, id, store.RunAwaitingGuidance)
	}
}

// wantGRPCCode fails t unless err is a gRPC status of code want.
func wantGRPCCode(t *testing.T, err error, want codes.Code) {
	t.Helper()
	var se interface{ GRPCStatus() *status.Status }
	if !errors.As(err, &se) || se.GRPCStatus().Code() != want {
		t.Fatalf("got %v, want %v", err, want)
	}
}

// TestGuideEntryAnswersFitTheReference: GetGuideEntry and ListGuideEntries
// answer with the reference's JSON, field by field (v1GuideEntry,
// v1ListGuideEntriesResponse), every field of v1GuideEntry being set, and
// an exception resolved by an entry renders resolution_guide_entry and
// resolver as v1Exception declares them.
func TestGuideEntryAnswersFitTheReference(t *testing.T) {
	ref := loadReference(t)
	e := newTestEnv(t)
	a := e.ExcAutomation(t, guideCode)
	first := e.guideInvoke(t, overHTTP, a.ID, 100)
	r := e.WaitRunState(t, a.ID, first, store.RunAwaitingGuidance)
	base := "/api/v1/organizations/{organization_id}/workspaces/{workspace_id}/automations/{automation_id}/guideEntries"
	path := e.WsPath() + "/automations/" + a.ID + "/guideEntries"
	code, raw := e.APIRaw(t, "POST", path, `{"guide_entry": {"source_exception": "`+r.ExceptionID+`", "title": "Grand total",
		"root_cause": "nobody sends it", "resolution_notes": "ask finance"}, "guidance": {"provide_values": {"values": {"the grand total": {"number": {"lo": 7}}}}}}`)
	if code != 200 {
		t.Fatalf("create: %d %s", code, raw)
	}
	g := decodeJSON(t, raw)
	gid := store.LastSegment(fmt.Sprint(g["name"]))
	for _, op := range []string{":approve", ""} {
		method := "POST"
		body := "{}"
		if op == "" {
			method, body = "DELETE", ""
		}
		if code, raw := e.APIRaw(t, method, path+"/"+gid+op, body); code != 200 {
			t.Fatalf("%s %s: %d %s", method, op, code, raw)
		}
	}
	code, raw = e.APIRaw(t, "GET", path+"/"+gid, "")
	if code != 200 {
		t.Fatalf("get: %d %s", code, raw)
	}
	ref.checkAnswer(t, base+"/{guide_entry_id}", "GET", raw)
	got := decodeJSON(t, raw)
	props, _ := ref.schema("v1GuideEntry")["properties"].(map[string]any)
	for k := range props {
		if _, ok := got[k]; !ok && k != "content" { // content is deprecated: never set
			t.Errorf("GetGuideEntry leaves %s out: %s", k, raw)
		}
	}
	code, raw = e.APIRaw(t, "GET", path+"?show_deleted=true&page_size=1", "")
	if code != 200 || !strings.Contains(string(raw), `"total_size":1`) {
		t.Fatalf("list: %d %s", code, raw)
	}
	ref.checkAnswer(t, base, "GET", raw)
	// Undeleted and approved, the entry resolves the next run's exception.
	if code, raw := e.APIRaw(t, "POST", path+"/"+gid+":undelete", "{}"); code != 200 {
		t.Fatalf("undelete: %d %s", code, raw)
	}
	next := e.guideInvoke(t, overHTTP, a.ID, 1)
	e.WaitRunState(t, a.ID, next, store.RunCompleted)
	xs := e.guideRunExceptions(t, overHTTP, next)
	if len(xs) != 1 {
		t.Fatalf("exceptions: %v", xs)
	}
	x := xs[0].(map[string]any)
	delete(x, "guidance_request") // Prose's additions, checked elsewhere
	delete(x, "run_number")
	if x["resolution_guide_entry"] == nil || x["resolver"] != "guideEntries/"+gid {
		t.Fatalf("exception: %v", x)
	}
	if errs := ref.check(x, ref.schema("v1Exception"), "$"); len(errs) > 0 {
		t.Errorf("exception outside v1Exception: %v", errs)
	}
}

// TestGuideEntryPermissions: reading and making entries needs
// exceptions.get / exceptions.resolve; approving one (the automation then
// acts by itself) needs automations.write. A restricted key with the first
// two toggles on makes an entry and cannot approve it.
func TestGuideEntryPermissions(t *testing.T) {
	e := newTestEnv(t)
	a := e.ExcAutomation(t, guideCode)
	first := e.guideInvoke(t, overHTTP, a.ID, 100)
	r := e.WaitRunState(t, a.ID, first, store.RunAwaitingGuidance)
	key := e.NewKey(t, testenv.KeySpec{Level: store.PermissionRestricted, Toggles: map[string]bool{store.PermExceptionsGet: true, store.PermExceptionsResolve: true}})
	h := map[string]string{"Authorization": "Bearer " + key}
	path := e.WsPath() + "/automations/" + a.ID + "/guideEntries"
	code, m, raw := e.DoHTTP(t, "POST", path, `{"guide_entry": {"source_exception": "`+r.ExceptionID+`"}, "guidance": {"skip": {}}}`, h)
	if code != 200 {
		t.Fatalf("create with exceptions.resolve: %d %s", code, raw)
	}
	gid := store.LastSegment(fmt.Sprint(m["name"]))
	if code, _, raw := e.DoHTTP(t, "GET", path+"/"+gid, "", h); code != 200 {
		t.Fatalf("get: %d %s", code, raw)
	}
	for _, op := range []string{":approve", ":reject"} {
		if code, _, raw := e.DoHTTP(t, "POST", path+"/"+gid+op, "{}", h); code != 403 {
			t.Fatalf("%s without automations.write: %d %s", op, code, raw)
		}
	}
	ro := e.NewKey(t, testenv.KeySpec{Level: store.PermissionReadOnly})
	if code, _, raw := e.DoHTTP(t, "POST", path+"/"+gid+":approve", "{}", map[string]string{"Authorization": "Bearer " + ro}); code != 403 {
		t.Fatalf("approve with a read-only key: %d %s", code, raw)
	}
}

func decodeJSON(t *testing.T, raw []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("%v: %s", err, raw)
	}
	return m
}

// TestGuideEntryThatDoesNotApply: an approved entry whose expression reads
// a fact the run has no value for is passed over; the exception waits for
// a person, its description saying which entry matched and why it did not
// apply.
func TestGuideEntryThatDoesNotApply(t *testing.T) {
	e := newTestEnv(t)
	a := e.ExcAutomation(t, guideCode)
	first := e.guideInvoke(t, overHTTP, a.ID, 100)
	r := e.WaitRunState(t, a.ID, first, store.RunAwaitingGuidance)
	org, ws := e.Init.OrganizationID, e.Init.WorkspaceID
	g := e.mustCall(t, overHTTP, guideSvc+"CreateGuideEntry", &platformv1.CreateGuideEntryRequest{
		OrganizationId: org, WorkspaceId: ws, AutomationId: a.ID,
		GuideEntry: &platformv1.GuideEntry{SourceException: r.ExceptionID},
		Guidance: &platformv1.GuideEntryGuidance{Kind: &platformv1.GuideEntryGuidance_ProvideExpressions{
			ProvideExpressions: &platformv1.ProvideExpressions{Expressions: map[string]string{"the grand total": "the discount * 2"}},
		}},
	})
	gid := store.LastSegment(fmt.Sprint(g["name"]))
	e.mustCall(t, overHTTP, guideSvc+"ApproveGuideEntry", &platformv1.ApproveGuideEntryRequest{OrganizationId: org, WorkspaceId: ws, AutomationId: a.ID, GuideEntryId: gid})
	id := e.guideInvoke(t, overHTTP, a.ID, 3)
	w := e.WaitRunState(t, a.ID, id, store.RunAwaitingGuidance)
	x, err := e.Store.GetException(context.Background(), org, ws, w.ExceptionID)
	if err != nil || x.State != store.ExceptionPending || !strings.Contains(x.Description, "The learning “"+fmt.Sprint(g["title"])+"” matched but did not apply") {
		t.Fatalf("exception: %+v %v", x, err)
	}
}
