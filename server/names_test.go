package server_test

import (
	"fmt"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/fieldmaskpb"

	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/store"
)

// An automation created without automation_id is named by a slug of its
// display name, the first free in the workspace; a given id keeps its
// validation and conflict. Runs are numbered 1, 2, 3 in their automation
// (run_number, an int64: a string in JSON).
func TestReadableNames(t *testing.T) {
	forEachTransport(t, func(t *testing.T, tr apiTransport) {
		e := newTestEnv(t)
		org, ws := e.Init.OrganizationID, e.Init.WorkspaceID
		create := func(id, title string) (map[string]any, error) {
			return e.call(t, tr, autoSvc+"CreateAutomation", &platformv1.CreateAutomationRequest{OrganizationId: org, WorkspaceId: ws, AutomationId: id,
				Automation: &platformv1.Automation{DisplayName: title, EnglishCode: greetCode}})
		}
		for _, c := range []struct{ id, title, want string }{
			{"", "Monthly invoices", "monthly-invoices"},
			{"", "Monthly  Invoices!", "monthly-invoices-2"},
			{"", "Rechnungen prüfen", "rechnungen-prufen"},
			{"", "請求書", "qing-qiu-shu"},
			{"", "???", "automation"},
			{"mine", "Monthly invoices", "mine"},
		} {
			m, err := create(c.id, c.title)
			if err != nil {
				t.Fatalf("create %q: %v", c.title, err)
			}
			if got := store.LastSegment(fmt.Sprint(m["name"])); got != c.want {
				t.Errorf("create %q: id %q, want %q", c.title, got, c.want)
			}
		}
		if _, err := create("monthly-invoices", "again"); status.Code(err) != codes.AlreadyExists {
			t.Errorf("a taken id: %v, want ALREADY_EXISTS", err)
		}
		if _, err := create("Not An Id", "x"); status.Code(err) != codes.InvalidArgument {
			t.Errorf("a bad id: %v, want INVALID_ARGUMENT", err)
		}
		for want := 1; want <= 3; want++ {
			inv := e.mustCall(t, tr, autoSvc+"InvokeAutomation", &platformv1.InvokeAutomationRequest{OrganizationId: org, WorkspaceId: ws,
				AutomationId: "monthly-invoices", Stage: platformv1.AutomationStage_AUTOMATION_STAGE_DRAFT})
			run := e.mustCall(t, tr, runSvc+"GetRun", &platformv1.GetRunRequest{OrganizationId: org, WorkspaceId: ws,
				AutomationId: "monthly-invoices", RunId: fmt.Sprint(inv["run_id"])})
			if run["run_number"] != fmt.Sprint(want) {
				t.Errorf("run %d: run_number %v", want, run["run_number"])
			}
		}
		// An exception carries its run's number.
		if _, err := create("", "Guided"); err != nil {
			t.Fatal(err)
		}
		e.mustCall(t, tr, autoSvc+"UpdateAutomation", &platformv1.UpdateAutomationRequest{OrganizationId: org, WorkspaceId: ws, AutomationId: "guided",
			Automation: &platformv1.Automation{EnglishCode: guidedCode}, UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"english_code"}}})
		inv := e.mustCall(t, tr, autoSvc+"InvokeAutomation", &platformv1.InvokeAutomationRequest{OrganizationId: org, WorkspaceId: ws,
			AutomationId: "guided", Stage: platformv1.AutomationStage_AUTOMATION_STAGE_DRAFT})
		waiting := e.WaitRunState(t, "guided", fmt.Sprint(inv["run_id"]), store.RunAwaitingGuidance)
		x := e.mustCall(t, tr, excSvc+"GetException", &platformv1.GetExceptionRequest{OrganizationId: org, WorkspaceId: ws, ExceptionId: waiting.ExceptionID})
		xs := e.mustCall(t, tr, excSvc+"ListExceptions", &platformv1.ListExceptionsRequest{OrganizationId: org, WorkspaceId: ws})
		if x["run_number"] != "1" || xs["exceptions"].([]any)[0].(map[string]any)["run_number"] != "1" {
			t.Errorf("exception: run_number %v, listed %v", x["run_number"], xs)
		}
		list := e.mustCall(t, tr, runSvc+"ListRuns", &platformv1.ListRunsRequest{OrganizationId: org, WorkspaceId: ws, AutomationId: "monthly-invoices"})
		runs, _ := list["runs"].([]any)
		if len(runs) != 3 || runs[0].(map[string]any)["run_number"] != "3" {
			t.Errorf("list, newest first: %v", list)
		}
		// A run is found by its number (the CLI's "Monthly invoices #2").
		for filter, want := range map[string]string{"run_number = 2": "2", "run_number > 2": "3"} {
			list := e.mustCall(t, tr, runSvc+"ListRuns", &platformv1.ListRunsRequest{OrganizationId: org, WorkspaceId: ws, AutomationId: "monthly-invoices", Filter: filter})
			runs, _ := list["runs"].([]any)
			if len(runs) != 1 || runs[0].(map[string]any)["run_number"] != want {
				t.Errorf("filter %s: %v, want #%s alone", filter, list, want)
			}
		}
		if _, err := e.call(t, tr, runSvc+"ListRuns", &platformv1.ListRunsRequest{OrganizationId: org, WorkspaceId: ws, AutomationId: "-", Filter: `run_number = "2"`}); status.Code(err) != codes.InvalidArgument {
			t.Errorf("run_number compared with a string: %v, want INVALID_ARGUMENT", err)
		}
	})
}
