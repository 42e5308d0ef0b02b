package server_test

import (
	"strconv"
	"strings"
	"testing"

	"google.golang.org/protobuf/types/known/fieldmaskpb"

	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/server/testenv"
)

// warnedCode sets an output fact only inside a block (line 3): no output
// of the run, which the syntax check says at that statement.
const warnedCode = `the output status is "new"
if true then
  the output note is "inside"
`

// TestAutomationCodeWarnings: CreateAutomation and UpdateAutomation answer
// the syntax check's warnings of the draft's code in code_warnings (over
// HTTP as the documented JSON, and over gRPC), with the statement's span,
// line and column; the code is saved all the same. Code without warnings,
// and GetAutomation, answer none; ParseAutomationCode answers the same
// warnings beside its errors.
func TestAutomationCodeWarnings(t *testing.T) {
	e := newTestEnv(t)
	org, ws := e.Init.OrganizationID, e.Init.WorkspaceID
	at := strings.Index(warnedCode, "the output note")
	end := at + len(`the output note is "inside"`)
	checkWarned := func(t *testing.T, what string, got any) {
		t.Helper()
		ws, _ := got.([]any)
		if len(ws) != 1 {
			t.Fatalf("%s: %d warnings %v, want 1", what, len(ws), got)
		}
		w := ws[0]
		if msg, _ := testenv.Field(w, "message").(string); !strings.Contains(msg, "'the output note' is set only inside a block") {
			t.Errorf("%s: message %q", what, msg)
		}
		// int64 fields travel as JSON strings, int32 as numbers
		if testenv.Field(w, "location.start_byte") != strconv.Itoa(at) || testenv.Field(w, "location.end_byte") != strconv.Itoa(end) ||
			testenv.Field(w, "line") != float64(3) || testenv.Field(w, "column") != float64(3) {
			t.Errorf("%s: warning at %v, want bytes %d-%d, line 3, column 3", what, w, at, end)
		}
	}
	forEachTransport(t, func(t *testing.T, tr apiTransport) {
		id := "warned-" + tr.name
		a, err := e.call(t, tr, autoSvc+"CreateAutomation", &platformv1.CreateAutomationRequest{
			OrganizationId: org, WorkspaceId: ws, AutomationId: id,
			Automation: &platformv1.Automation{DisplayName: "Warned", EnglishCode: warnedCode},
		})
		if err != nil {
			t.Fatal(err)
		}
		checkWarned(t, "create", a["code_warnings"])
		if a["english_code"] != warnedCode {
			t.Errorf("create saved %v", a["english_code"])
		}

		g, err := e.call(t, tr, autoSvc+"GetAutomation", &platformv1.GetAutomationRequest{OrganizationId: org, WorkspaceId: ws, AutomationId: id})
		if err != nil || g["code_warnings"] != nil {
			t.Errorf("get: %v, code_warnings %v (want none)", err, g["code_warnings"])
		}

		clean := "the output status is \"new\"\nif true then\n  the output status is \"checked\"\n"
		u, err := e.call(t, tr, autoSvc+"UpdateAutomation", &platformv1.UpdateAutomationRequest{
			OrganizationId: org, WorkspaceId: ws, AutomationId: id,
			Automation: &platformv1.Automation{EnglishCode: clean}, UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"english_code"}},
		})
		if err != nil || u["code_warnings"] != nil {
			t.Errorf("update to clean code: %v, code_warnings %v (want none)", err, u["code_warnings"])
		}

		u, err = e.call(t, tr, autoSvc+"UpdateAutomation", &platformv1.UpdateAutomationRequest{
			OrganizationId: org, WorkspaceId: ws, AutomationId: id,
			Automation: &platformv1.Automation{EnglishCode: warnedCode}, UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"english_code"}},
		})
		if err != nil {
			t.Fatal(err)
		}
		checkWarned(t, "update", u["code_warnings"])

		// an update of another field answers the warnings of the code kept
		u, err = e.call(t, tr, autoSvc+"UpdateAutomation", &platformv1.UpdateAutomationRequest{
			OrganizationId: org, WorkspaceId: ws, AutomationId: id,
			Automation: &platformv1.Automation{DisplayName: "Renamed"}, UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"display_name"}},
		})
		if err != nil {
			t.Fatal(err)
		}
		checkWarned(t, "update of the name", u["code_warnings"])

		p, err := e.call(t, tr, autoSvc+"ParseAutomationCode", &platformv1.ParseAutomationCodeRequest{OrganizationId: org, WorkspaceId: ws, Code: warnedCode})
		if err != nil {
			t.Fatal(err)
		}
		checkWarned(t, "parse", p["warnings"])
		if p["errors"] != nil {
			t.Errorf("parse errors %v", p["errors"])
		}
	})
}
