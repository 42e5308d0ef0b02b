package server_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/server/testenv"
	"github.com/proserun/prose/store"
)

const revSvc = "/prose.platform.v1.AutomationRevisionService/"

// wantStatus fails unless err is the status code with the reason (over
// gRPC in its ErrorInfo, over HTTP in the rpcStatus body call returns as
// the error's message).
func wantStatus(t *testing.T, tr apiTransport, err error, code codes.Code, reason string) {
	t.Helper()
	if status.Code(err) != code {
		t.Fatalf("over %s: %v, want %v %s", tr, err, code, reason)
	}
	got := testenv.GRPCReason(err)
	if !tr.grpc && strings.Contains(err.Error(), `"reason":"`+reason+`"`) {
		got = reason
	}
	if got != reason {
		t.Errorf("over %s: reason %q, want %q (%v)", tr, got, reason, err)
	}
}

func revisionIDs(m map[string]any) []string {
	var out []string
	l, _ := m["revisions"].([]any)
	for _, r := range l {
		out = append(out, store.LastSegment(fmt.Sprint(testenv.Field(r, "name"))))
	}
	return out
}

// TestAutomationRevisions: every save and publish of an automation leaves
// a revision, listed newest first (filtered by stage, paged), read by id
// or `latest`; its default inputs history lists the saves that changed
// them. Over HTTP and gRPC, and over HTTP each answer fits the reference.
func TestAutomationRevisions(t *testing.T) {
	ref := loadReference(t)
	forEachTransport(t, func(t *testing.T, tr apiTransport) {
		e := newTestEnv(t)
		org, ws := e.Init.OrganizationID, e.Init.WorkspaceID
		base := e.AutomationsPath()
		num := func(n int) string { return fmt.Sprintf(`{"number": {"lo": %d}}`, n) }
		// 1: created with default inputs, 2: code, 3: default inputs, 4: publish, 5: renamed.
		m := e.API(t, "POST", base, `{"display_name": "Invoices", "english_code": "the output x is 1\n", "default_inputs": {"the rate": `+num(1)+`}}`, 200)
		id := store.LastSegment(fmt.Sprint(m["name"]))
		e.API(t, "PATCH", base+"/"+id+"?update_mask=english_code", `{"english_code": "the output x is 2\n"}`, 200)
		e.API(t, "PATCH", base+"/"+id+"?update_mask=default_inputs", `{"default_inputs": {"the rate": `+num(2)+`}}`, 200)
		e.API(t, "POST", base+"/"+id+":publish", `{}`, 200)
		e.API(t, "PATCH", base+"/"+id+"?update_mask=display_name", `{"display_name": "Invoices 2"}`, 200)

		list := e.mustCall(t, tr, revSvc+"ListAutomationRevisions", &platformv1.ListAutomationRevisionsRequest{OrganizationId: org, WorkspaceId: ws, AutomationId: id})
		if got := revisionIDs(list); !slices.Equal(got, []string{"5", "4", "3", "2", "1"}) {
			t.Fatalf("revisions %v, want 5 4 3 2 1", got)
		}
		revs, _ := list["revisions"].([]any)
		if fmt.Sprint(testenv.Field(revs[0], "alternate_ids")) != "[latest]" || testenv.Field(revs[1], "alternate_ids") != nil {
			t.Errorf("alternate ids: %v, %v", testenv.Field(revs[0], "alternate_ids"), testenv.Field(revs[1], "alternate_ids"))
		}
		for i, want := range []struct {
			published           bool
			code, name, version string
		}{
			{false, "the output x is 2\n", "Invoices 2", "5"},
			{true, "the output x is 2\n", "Invoices", "4"},
			{false, "the output x is 2\n", "Invoices", "3"},
			{false, "the output x is 2\n", "Invoices", "2"},
			{false, "the output x is 1\n", "Invoices", "1"},
		} {
			s := testenv.Field(revs[i], "snapshot")
			// A publish's snapshot says who published it and when; a save's does not.
			if (testenv.Field(s, "publish_time") != nil) != want.published || (testenv.Field(s, "latest_published_version") == want.version) != want.published || testenv.Field(s, "english_code") != want.code || testenv.Field(s, "display_name") != want.name ||
				testenv.Field(s, "version") != want.version || testenv.Field(s, "name") != "organizations/"+org+"/workspaces/"+ws+"/automations/"+id ||
				testenv.Field(revs[i], "create_time") == nil {
				t.Errorf("revision %s: %v", want.version, revs[i])
			}
		}
		if r := testenv.Field(revs[2], "snapshot.default_inputs.the rate.number.lo"); fmt.Sprint(r) != "2" {
			t.Errorf("revision 3 default inputs: %v", testenv.Field(revs[2], "snapshot.default_inputs"))
		}
		pub := e.mustCall(t, tr, revSvc+"ListAutomationRevisions", &platformv1.ListAutomationRevisionsRequest{OrganizationId: org, WorkspaceId: ws, AutomationId: id, Filter: `stage = "PUBLISHED"`})
		if got := revisionIDs(pub); !slices.Equal(got, []string{"4"}) {
			t.Errorf("published revisions %v", got)
		}
		p1 := e.mustCall(t, tr, revSvc+"ListAutomationRevisions", &platformv1.ListAutomationRevisionsRequest{OrganizationId: org, WorkspaceId: ws, AutomationId: id, PageSize: 3})
		p2 := e.mustCall(t, tr, revSvc+"ListAutomationRevisions", &platformv1.ListAutomationRevisionsRequest{OrganizationId: org, WorkspaceId: ws, AutomationId: id, PageSize: 3,
			PageToken: fmt.Sprint(p1["next_page_token"])})
		if !slices.Equal(revisionIDs(p1), []string{"5", "4", "3"}) || !slices.Equal(revisionIDs(p2), []string{"2", "1"}) || p2["next_page_token"] != nil {
			t.Errorf("pages %v then %v (%v)", revisionIDs(p1), revisionIDs(p2), p2["next_page_token"])
		}

		latest := e.mustCall(t, tr, revSvc+"GetAutomationRevision", &platformv1.GetAutomationRevisionRequest{OrganizationId: org, WorkspaceId: ws, AutomationId: id, RevisionId: "latest"})
		if store.LastSegment(fmt.Sprint(latest["name"])) != "5" || fmt.Sprint(latest["alternate_ids"]) != "[latest]" {
			t.Errorf("latest: %v", latest)
		}
		four := e.mustCall(t, tr, revSvc+"GetAutomationRevision", &platformv1.GetAutomationRevisionRequest{OrganizationId: org, WorkspaceId: ws, AutomationId: id, RevisionId: "4"})
		if testenv.Field(four, "snapshot.latest_published_version") != "4" || testenv.Field(four, "snapshot.publish_user_id") != e.Init.UserID {
			t.Errorf("revision 4: %v", four)
		}

		hist := e.mustCall(t, tr, revSvc+"ListDefaultInputsHistory", &platformv1.ListDefaultInputsHistoryRequest{OrganizationId: org, WorkspaceId: ws, AutomationId: id})
		entries, _ := hist["default_inputs_history_entries"].([]any)
		if len(entries) != 2 || fmt.Sprint(testenv.Field(entries[0], "default_inputs.the rate.number.lo")) != "2" ||
			fmt.Sprint(testenv.Field(entries[1], "default_inputs.the rate.number.lo")) != "1" || testenv.Field(entries[0], "change_actor") != e.Init.UserID ||
			testenv.Field(entries[0], "change_time") == nil || hist["next_page_token"] != nil {
			t.Errorf("default inputs history: %v", hist)
		}
		h1 := e.mustCall(t, tr, revSvc+"ListDefaultInputsHistory", &platformv1.ListDefaultInputsHistoryRequest{OrganizationId: org, WorkspaceId: ws, AutomationId: id, PageSize: 1})
		h2 := e.mustCall(t, tr, revSvc+"ListDefaultInputsHistory", &platformv1.ListDefaultInputsHistoryRequest{OrganizationId: org, WorkspaceId: ws, AutomationId: id, PageSize: 1,
			PageToken: fmt.Sprint(h1["next_page_token"])})
		e1, _ := h1["default_inputs_history_entries"].([]any)
		e2, _ := h2["default_inputs_history_entries"].([]any)
		if len(e1) != 1 || len(e2) != 1 || fmt.Sprint(testenv.Field(e1[0], "default_inputs.the rate.number.lo")) != "2" ||
			fmt.Sprint(testenv.Field(e2[0], "default_inputs.the rate.number.lo")) != "1" || h1["next_page_token"] == nil || h2["next_page_token"] != nil {
			t.Errorf("history pages: %v then %v", h1, h2)
		}

		// Client mistakes.
		_, err := e.call(t, tr, revSvc+"GetAutomationRevision", &platformv1.GetAutomationRevisionRequest{OrganizationId: org, WorkspaceId: ws, AutomationId: id, RevisionId: "9"})
		wantStatus(t, tr, err, codes.NotFound, "REVISION_NOT_FOUND")
		_, err = e.call(t, tr, revSvc+"GetAutomationRevision", &platformv1.GetAutomationRevisionRequest{OrganizationId: org, WorkspaceId: ws, AutomationId: id, RevisionId: "first"})
		wantStatus(t, tr, err, codes.NotFound, "REVISION_NOT_FOUND")
		_, err = e.call(t, tr, revSvc+"GetAutomationRevision", &platformv1.GetAutomationRevisionRequest{OrganizationId: org, WorkspaceId: ws, AutomationId: "nope", RevisionId: "latest"})
		wantStatus(t, tr, err, codes.NotFound, "AUTOMATION_NOT_FOUND")
		_, err = e.call(t, tr, revSvc+"ListAutomationRevisions", &platformv1.ListAutomationRevisionsRequest{OrganizationId: org, WorkspaceId: ws, AutomationId: "nope"})
		wantStatus(t, tr, err, codes.NotFound, "AUTOMATION_NOT_FOUND")
		_, err = e.call(t, tr, revSvc+"ListAutomationRevisions", &platformv1.ListAutomationRevisionsRequest{OrganizationId: org, WorkspaceId: ws, AutomationId: id, Filter: `stage = "SHIPPED"`})
		wantStatus(t, tr, err, codes.InvalidArgument, "INVALID_FILTER")
		_, err = e.call(t, tr, revSvc+"ListAutomationRevisions", &platformv1.ListAutomationRevisionsRequest{OrganizationId: org, WorkspaceId: ws, AutomationId: id, PageSize: 3,
			PageToken: fmt.Sprint(p1["next_page_token"]), Filter: `stage = DRAFT`})
		wantStatus(t, tr, err, codes.InvalidArgument, "INVALID_PAGE_TOKEN")
		_, err = e.call(t, tr, revSvc+"ListDefaultInputsHistory", &platformv1.ListDefaultInputsHistoryRequest{OrganizationId: org, WorkspaceId: ws, AutomationId: id, PageToken: "junk"})
		wantStatus(t, tr, err, codes.InvalidArgument, "INVALID_PAGE_TOKEN")

		if tr.grpc {
			return
		}
		// The JSON, field by field, against the reference's schemas.
		const p = "/api/v1/organizations/{organization_id}/workspaces/{workspace_id}/automations/{automation_id}"
		for _, c := range []struct{ path, refPath, schema string }{
			{base + "/" + id + "/revisions", p + "/revisions", "v1ListAutomationRevisionsResponse"},
			{base + "/" + id + "/revisions/latest", p + "/revisions/{revision_id}", "v1AutomationRevision"},
			{base + "/" + id + "/revisions/4", p + "/revisions/{revision_id}", "v1AutomationRevision"},
			{base + "/" + id + ":listDefaultInputsHistory?page_size=1", p + ":listDefaultInputsHistory", "v1ListDefaultInputsHistoryResponse"},
		} {
			code, raw := e.APIRaw(t, "GET", c.path, "")
			if code != 200 {
				t.Fatalf("GET %s: %d %s", c.path, code, raw)
			}
			ref.checkAnswer(t, c.refPath, "GET", raw)
			checkSchema(t, c.schema, decodeJSON(t, raw))
		}
	})
}
