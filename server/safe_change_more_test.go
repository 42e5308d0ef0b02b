package server_test

import (
	"fmt"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/fieldmaskpb"

	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/store"
)

// TestReplayInTheBackground: a replay of more runs than a request replays
// answers RUNNING at once and goes on in the background; its progress and
// results are read back when it has ended, and a bad filter is refused.
func TestReplayInTheBackground(t *testing.T) {
	e := newTestEnv(t)
	org, ws := e.Init.OrganizationID, e.Init.WorkspaceID
	forEachTransport(t, func(t *testing.T, tr apiTransport) {
		code := "the output total is the amount * 2\n"
		a := e.MkAutomation(t, "Double "+tr.name, code, true)
		for _, n := range []string{"1", "2", "3"} {
			m := e.mustCall(t, tr, autoSvc+"InvokeAutomation", &platformv1.InvokeAutomationRequest{OrganizationId: org, WorkspaceId: ws,
				AutomationId: a.ID, Stage: platformv1.AutomationStage_AUTOMATION_STAGE_PUBLISHED, Inputs: map[string]*platformv1.Value{"amount": decimal(n)}})
			e.WaitRun(t, a.ID, fmt.Sprint(m["run_id"]), "completed")
		}
		e.mustCall(t, tr, autoSvc+"UpdateAutomation", &platformv1.UpdateAutomationRequest{OrganizationId: org, WorkspaceId: ws, AutomationId: a.ID,
			Automation: &platformv1.Automation{EnglishCode: "the output total is the amount * 2\nif the amount is 2 then\n  the output total is 5\n"},
			UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"english_code"}}})
		if _, err := e.call(t, tr, testSvc+"ReplayAutomation", &platformv1.ReplayAutomationRequest{OrganizationId: org, WorkspaceId: ws,
			AutomationId: a.ID, Filter: "nope = 1"}); status.Code(err) != codes.InvalidArgument || errReason(t, tr, err) != "INVALID_FILTER" {
			t.Fatalf("a bad filter: %v", err)
		}
		var rep platformv1.AutomationReplay
		decodeInto(t, e.mustCall(t, tr, testSvc+"ReplayAutomation", &platformv1.ReplayAutomationRequest{OrganizationId: org, WorkspaceId: ws,
			AutomationId: a.ID, RunCount: 150, Filter: "state = completed"}), &rep)
		if rep.GetState() != platformv1.AutomationReplay_STATE_RUNNING || rep.GetRunCount() != 150 || rep.GetFilter() != "state = completed" {
			t.Fatalf("a large replay: %v", &rep)
		}
		e.Poll(t, func() (bool, bool, string) {
			decodeInto(t, e.mustCall(t, tr, testSvc+"GetAutomationReplay", &platformv1.GetAutomationReplayRequest{OrganizationId: org, WorkspaceId: ws, AutomationId: a.ID}), &rep)
			return rep.GetState() == platformv1.AutomationReplay_STATE_SUCCEEDED, rep.GetState() == platformv1.AutomationReplay_STATE_FAILED, rep.String()
		})
		if rep.GetReplayedCount() != 3 || rep.GetRunCount() != 3 || rep.GetOutputsDifferCount() != 1 || rep.GetUnchangedCount() != 2 || rep.GetEndTime() == nil {
			t.Fatalf("ended: %v", &rep)
		}
		var page platformv1.ListAutomationReplayResultsResponse
		decodeInto(t, e.mustCall(t, tr, testSvc+"ListAutomationReplayResults", &platformv1.ListAutomationReplayResultsRequest{OrganizationId: org,
			WorkspaceId: ws, AutomationId: a.ID, PageSize: 2}), &page)
		if len(page.GetResults()) != 2 || page.GetNextPageToken() == "" || page.GetResults()[0].GetRunCreateTime() == nil {
			t.Fatalf("page 1: %v", &page)
		}
		token := page.GetNextPageToken()
		decodeInto(t, e.mustCall(t, tr, testSvc+"ListAutomationReplayResults", &platformv1.ListAutomationReplayResultsRequest{OrganizationId: org,
			WorkspaceId: ws, AutomationId: a.ID, PageSize: 2, PageToken: token}), &page)
		if len(page.GetResults()) != 1 || page.GetNextPageToken() != "" {
			t.Fatalf("page 2: %v", &page)
		}
		if _, err := e.call(t, tr, testSvc+"ListAutomationReplayResults", &platformv1.ListAutomationReplayResultsRequest{OrganizationId: org,
			WorkspaceId: ws, AutomationId: a.ID, PageSize: 2, PageToken: token, Filter: "outcome = OUTCOME_FAILED"}); status.Code(err) != codes.InvalidArgument {
			t.Errorf("a token reused with another filter: %v", err)
		}
	})
}

// TestLearningsBecomeTests: an approved guide entry becomes a test of the
// draft — the source run's inputs, the entry's answer, the run's book
// results as stubs, what the answer makes of the run — which passes on
// the draft and fails once a change breaks what was taught; an entry not
// approved is refused.
func TestLearningsBecomeTests(t *testing.T) {
	e := newTestEnv(t)
	book := newSwitchBook(t)
	e.registerStampBook(t, book.srv.URL, "1.0.0")
	org, ws := e.Init.OrganizationID, e.Init.WorkspaceID
	code := "stamp the ticket\nthe output stamp is the above\nget the rate\nthe output total is the amount * the rate\n"
	forEachTransport(t, func(t *testing.T, tr apiTransport) {
		book.failing.Store(false)
		a := e.MkAutomation(t, "Rates "+tr.name, code, true)
		m := e.mustCall(t, tr, autoSvc+"InvokeAutomation", &platformv1.InvokeAutomationRequest{OrganizationId: org, WorkspaceId: ws,
			AutomationId: a.ID, Stage: platformv1.AutomationStage_AUTOMATION_STAGE_PUBLISHED,
			Inputs: map[string]*platformv1.Value{"amount": decimal("100"), "ticket": txt("T-1")}})
		run := fmt.Sprint(m["run_id"])
		r := e.WaitRunState(t, a.ID, run, store.RunAwaitingGuidance)
		var en platformv1.GuideEntry
		decodeInto(t, e.mustCall(t, tr, "/prose.platform.v1.GuideEntryService/CreateGuideEntry", &platformv1.CreateGuideEntryRequest{OrganizationId: org,
			WorkspaceId: ws, AutomationId: a.ID, GuideEntry: &platformv1.GuideEntry{SourceException: r.ExceptionID, Title: "the rate is 1.1"},
			Guidance: &platformv1.GuideEntryGuidance{Kind: &platformv1.GuideEntryGuidance_ProvideValues{
				ProvideValues: &platformv1.ProvideValues{Values: map[string]*platformv1.Value{"the rate": decimal("1.1")}}}}}), &en)
		entryID := en.GetName()[strings.LastIndexByte(en.GetName(), '/')+1:]
		mk := &platformv1.CreateAutomationTestFromGuideEntryRequest{OrganizationId: org, WorkspaceId: ws, AutomationId: a.ID, GuideEntryId: entryID}
		if _, err := e.call(t, tr, testSvc+"CreateAutomationTestFromGuideEntry", mk); status.Code(err) != codes.FailedPrecondition ||
			errReason(t, tr, err) != "GUIDE_ENTRY_STATE_CONFLICT" {
			t.Fatalf("an entry pending approval: %v", err)
		}
		e.mustCall(t, tr, "/prose.platform.v1.GuideEntryService/ApproveGuideEntry", &platformv1.ApproveGuideEntryRequest{OrganizationId: org,
			WorkspaceId: ws, AutomationId: a.ID, GuideEntryId: entryID})
		book.failing.Store(true)
		var test platformv1.AutomationTest
		decodeInto(t, e.mustCall(t, tr, testSvc+"CreateAutomationTestFromGuideEntry", mk), &test)
		if test.GetDisplayName() != "the rate is 1.1" || test.GetSourceGuideEntry() != en.GetName() || len(test.GetAnswers()) != 1 ||
			test.GetAnswers()[0].GetAsks() != "the rate" || len(test.GetBookStubs()) != 1 || numText(t, test.GetInputs()["amount"]) != "100" ||
			numText(t, test.GetExpect().GetOutputs()["output total"]) != "110.0" || numText(t, test.GetExpect().GetOutputs()["output stamp"]) != "S:T-1" {
			t.Fatalf("the test of the entry:\n%s", test.GetFileText())
		}
		var res platformv1.RunAutomationTestsResponse
		decodeInto(t, e.mustCall(t, tr, testSvc+"RunAutomationTests", &platformv1.RunAutomationTestsRequest{OrganizationId: org, WorkspaceId: ws, AutomationId: a.ID}), &res)
		if res.GetPassedCount() != 1 {
			t.Fatalf("the entry's test on the draft: %v", &res)
		}
		e.mustCall(t, tr, autoSvc+"UpdateAutomation", &platformv1.UpdateAutomationRequest{OrganizationId: org, WorkspaceId: ws, AutomationId: a.ID,
			Automation: &platformv1.Automation{EnglishCode: strings.Replace(code, "the amount * the rate", "the amount * the rate + 1", 1)},
			UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"english_code"}}})
		decodeInto(t, e.mustCall(t, tr, testSvc+"RunAutomationTests", &platformv1.RunAutomationTestsRequest{OrganizationId: org, WorkspaceId: ws, AutomationId: a.ID}), &res)
		if res.GetFailedCount() != 1 || !strings.Contains(strings.Join(res.GetResults()[0].GetFailures(), " "), "output total: expected 110.0, got 111.0") {
			t.Fatalf("the entry's test after a change that breaks it: %v", &res)
		}
		if n := book.calls.Load(); n != 0 {
			t.Fatalf("the book was called %d times", n)
		}
	})
}
