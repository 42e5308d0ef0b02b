package server_test

import (
	"context"
	"strings"
	"testing"

	"github.com/proserun/prose/client"
	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/internal/names"
	"github.com/proserun/prose/server/testenv"
)

// TestPlainValuesWhereValuesAreExpected: a plain JSON value sent over HTTP
// where the reference's Value is expected is INVALID_ARGUMENT INVALID_FIELD
// naming the field and the input, showing the Value's shape and the value
// converted; the Value shape itself and the legacy API's plain values keep
// working.
func TestPlainValuesWhereValuesAreExpected(t *testing.T) {
	e := newTestEnv(t)
	ctx := testenv.WithKey(context.Background(), e.Init.APIKey)
	c := client.New(e.Conn)
	a, err := c.Automations.CreateAutomation(ctx, &platformv1.CreateAutomationRequest{OrganizationId: e.Init.OrganizationID, WorkspaceId: e.Init.WorkspaceID,
		AutomationId: "inv", Automation: &platformv1.Automation{DisplayName: "inv", EnglishCode: "get the invoice total\nthe output is the invoice total\n"}})
	if err != nil {
		t.Fatal(err)
	}
	run, err := c.Invoke(ctx, a.GetName(), nil, client.Draft())
	if err != nil {
		t.Fatal(err)
	}
	r, err := c.WaitForRun(ctx, run)
	if err != nil {
		t.Fatal(err)
	}
	exc := client.ExceptionOf(r)
	if exc == "" {
		t.Fatalf("run %s, want awaiting guidance", client.StateName(r))
	}
	ws := "/api/v1/" + names.Workspace(e.Init.OrganizationID, e.Init.WorkspaceID)
	auth := map[string]string{"Authorization": "Bearer " + e.Init.APIKey}
	for _, tc := range []struct {
		name, path, body, field, example string
	}{
		{"invoke input", ws + "/automations/inv:invoke", `{"stage": "AUTOMATION_STAGE_DRAFT", "inputs": {"invoice_total": 120.5}}`,
			`inputs["invoice_total"]`, `{"number":{"lo":1205,"flags":65536}}`},
		{"invoke text input", ws + "/automations/inv:invoke", `{"stage": "AUTOMATION_STAGE_DRAFT", "inputs": {"customer": "ACME", "invoice_total": {"text": "ok"}}}`,
			`inputs["customer"]`, `{"text":"ACME"}`},
		{"a list's item", ws + "/automations/inv:invoke", `{"stage": "AUTOMATION_STAGE_DRAFT", "inputs": {"totals": {"list": {"items": [3]}}}}`,
			`inputs["totals"].list.items[0]`, `{"number":{"lo":3}}`},
		{"provided value", "/api/v1/" + exc + ":resolve", `{"provide_values": {"values": {"the invoice total": 120.50}}}`,
			`provide_values.values["the invoice total"]`, `{"number":{"lo":12050,"flags":131072}}`},
		{"answer", "/api/v1/" + exc + ":resolve", `{"answer": {"value": true}}`, `answer.value`, `{"bool_value":true}`},
		{"default input", ws + "/automations", `{"display_name": "d", "english_code": "stop", "default_inputs": {"n": [1, "a"]}}`,
			`default_inputs["n"]`, `{"list":{"items":[{"number":{"lo":1}},{"text":"a"}]}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, m, raw := e.DoHTTP(t, "POST", tc.path, tc.body, auth)
			if code != 400 || testenv.HTTPReason(m) != "INVALID_FIELD" {
				t.Fatalf("HTTP %d %s", code, raw)
			}
			msg, _ := m["message"].(string)
			for _, want := range []string{tc.field + ": ", "is not a Value", `{"text": "ACME"}`, "as a Value is " + tc.example, "--input name=value"} {
				if !strings.Contains(msg, want) {
					t.Errorf("message %q lacks %q", msg, want)
				}
			}
			if !strings.Contains(string(raw), `"field_violations":[{"field":`) || !strings.Contains(string(raw), "BadRequest") {
				t.Errorf("no field violation: %s", raw)
			}
		})
	}
	// Other body mistakes keep protojson's message.
	if code, m, raw := e.DoHTTP(t, "POST", ws+"/automations/inv:invoke", `{"stage": "AUTOMATION_STAGE_DRAFT", "nope": 1}`, auth); code != 400 || strings.Contains(m["message"].(string), "Value") {
		t.Errorf("unknown field: %d %s", code, raw)
	}
	// The reference's shape is taken, and the run goes on.
	if code, _, raw := e.DoHTTP(t, "POST", "/api/v1/"+exc+":resolve", `{"provide_values": {"values": {"the invoice total": {"number": {"lo": 12050, "flags": 131072}}}}}`, auth); code != 200 {
		t.Fatalf("resolve with a Value: %d %s", code, raw)
	}
	if r, err = c.WaitForRun(ctx, run); err != nil || client.StateName(r) != "completed" {
		t.Fatalf("run %s %v", client.StateName(r), err)
	}
	if out, _ := client.PlainMap(r.GetState().GetCompleted().GetOutputs()); string(out["output"]) != "120.50" {
		t.Errorf("output %s", out["output"])
	}
	// The legacy API takes plain JSON.
	a, err = c.Automations.GetAutomation(ctx, &platformv1.GetAutomationRequest{OrganizationId: e.Init.OrganizationID, WorkspaceId: e.Init.WorkspaceID, AutomationId: "inv"})
	if err != nil {
		t.Fatal(err)
	}
	if code, _, raw := e.DoHTTP(t, "POST", "/v1/invoke/"+a.GetDraftShareId(), `{"invoice_total": 120.5}`, map[string]string{"x-api-key": e.Init.APIKey}); code != 201 {
		t.Fatalf("v1 invoke with plain JSON: %d %s", code, raw)
	}
}
