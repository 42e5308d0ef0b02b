package server_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/server/testenv"
	"github.com/proserun/prose/store"
)

// TestWorkspaceScopeOfSchedulesTriggersConnectionsWebhooks: a key scoped to
// workspace A neither sees nor changes workspace B's schedules, trigger
// instances, automation triggers, connections and webhook subscriptions:
// by B's paths it is PERMISSION_DENIED WORKSPACE_OUT_OF_SCOPE; by A's paths
// with B's ids it finds nothing (404), and A's lists do not show them; B's
// resources are unchanged afterwards. (TestAuthorizationMatrix checks
// every RPC of these services with a key of another workspace on made-up
// ids; this one uses real resources of both workspaces.)
func TestWorkspaceScopeOfSchedulesTriggersConnectionsWebhooks(t *testing.T) {
	e := newTestEnv(t)
	org := e.Init.OrganizationID
	wsA, wsB := e.Init.WorkspaceID, e.NewWorkspace(t, "B")
	pathA := "/api/v1/organizations/" + org + "/workspaces/" + wsA
	pathB := "/api/v1/organizations/" + org + "/workspaces/" + wsB
	keyA := e.NewKey(t, testenv.KeySpec{Workspaces: []string{wsA}})
	owner := func(method, path, body string) map[string]any {
		t.Helper()
		st, m, raw := e.DoHTTP(t, method, path, body, map[string]string{"authorization": "Bearer " + e.Init.APIKey})
		if st != http.StatusOK {
			t.Fatalf("%s %s: %d %s", method, path, st, raw)
		}
		return m
	}
	mk := func(base, title string) (auto, inst, orders, conn, hook string) {
		// Titles differ: ids are slugs of them, and B's must not name one of A's.
		a := owner("POST", base+"/automations", `{"display_name":"`+title+`","english_code":"the output x is 1\n"}`)
		auto = store.LastSegment(fmt.Sprint(a["name"]))
		owner("POST", base+"/automations/"+auto+"/schedule", weekdayBerlin)
		triggers, orders := e.TriggersPath(t, base, "webhook", "orders")
		i := owner("POST", triggers, `{"name":"Orders"}`)
		inst = fmt.Sprint(testenv.Field(i, "trigger_instance.id"))
		owner("POST", base+"/triggers/"+inst+"/automations", `{"automation_ids":["`+auto+`"]}`)
		owner("POST", base+"/automations/"+auto+"/triggers", `{"trigger_id":"`+inst+`","phase_type":"PHASE_TYPE_MAIN"}`)
		c := owner("POST", base+"/books/http/1.0.0/connections", `{"connection_name":"crm","config_map":{"base url":{"text_value":"https://crm.example"}}}`)
		conn = fmt.Sprint(testenv.Field(c, "book_connection_descriptor.connection_id"))
		h := owner("POST", base+"/webhooks", `{"url":"https://ops.example/hook","event_types":["WEBHOOK_EVENT_TYPE_RUN_STATE_CHANGED"]}`)
		hook = store.LastSegment(fmt.Sprint(h["name"]))
		return
	}
	autoA, instA, _, _, _ := mk(pathA, "Daily")
	autoB, instB, ordersB, connB, hookB := mk(pathB, "Nightly")

	call := func(method, path, body string) (int, map[string]any, string) {
		t.Helper()
		st, m, raw := e.DoHTTP(t, method, path, body, map[string]string{"authorization": "Bearer " + keyA})
		return st, m, string(raw)
	}
	// B's paths: out of scope, whatever the call.
	for _, c := range []struct{ method, path, body string }{
		{"GET", pathB + "/automations/" + autoB + "/schedule", ""},
		{"PATCH", pathB + "/automations/" + autoB + "/schedule", weekdayBerlin},
		{"DELETE", pathB + "/automations/" + autoB + "/schedule", ""},
		{"POST", pathB + "/automations/" + autoB + ":disableAutomationSchedule", "{}"},
		{"GET", pathB + "/triggers", ""},
		{"POST", pathB + "/triggers/" + instB + "/automations", `{"automation_ids":[]}`},
		{"DELETE", pathB + "/connections/" + ordersB + "/triggers/" + instB, ""},
		{"GET", pathB + "/automations/" + autoB + "/triggers", ""},
		{"GET", pathB + "/connections", ""},
		{"GET", pathB + "/connections/" + connB, ""},
		{"PUT", pathB + "/books/http/1.0.0/connections/" + connB, `{"connection_name":"stolen"}`},
		{"DELETE", pathB + "/automations:deleteConnection?connection_id=" + connB, ""},
		{"GET", pathB + "/webhooks", ""},
		{"GET", pathB + "/webhooks/" + hookB, ""},
		{"GET", pathB + "/webhooks/" + hookB + "/deliveries", ""},
		{"DELETE", pathB + "/webhooks/" + hookB, ""},
	} {
		st, m, raw := call(c.method, c.path, c.body)
		if st != http.StatusForbidden || testenv.HTTPReason(m) != "WORKSPACE_OUT_OF_SCOPE" {
			t.Errorf("%s %s with a key of A: %d %s, want 403 WORKSPACE_OUT_OF_SCOPE", c.method, c.path, st, raw)
		}
	}
	// A's paths with B's ids: nothing found.
	for _, c := range []struct{ method, path, body string }{
		{"GET", pathA + "/automations/" + autoB + "/schedule", ""},
		{"PATCH", pathA + "/automations/" + autoB + "/schedule", weekdayBerlin},
		{"DELETE", pathA + "/automations/" + autoB + "/schedule", ""},
		{"POST", pathA + "/automations/" + autoB + ":disableAutomationSchedule", "{}"},
		{"POST", pathA + "/triggers/" + instB + "/automations", `{"automation_ids":["` + autoA + `"]}`},
		{"DELETE", pathA + "/connections/" + ordersB + "/triggers/" + instB, ""},
		{"GET", pathA + "/automations/" + autoB + "/triggers", ""},
		{"GET", pathA + "/connections/" + connB, ""},
		{"PUT", pathA + "/books/http/1.0.0/connections/" + connB, `{"connection_name":"stolen"}`},
		{"DELETE", pathA + "/automations:deleteConnection?connection_id=" + connB, ""},
		{"GET", pathA + "/webhooks/" + hookB, ""},
		{"GET", pathA + "/webhooks/" + hookB + "/deliveries", ""},
		{"DELETE", pathA + "/webhooks/" + hookB, ""},
	} {
		if st, _, raw := call(c.method, c.path, c.body); st != http.StatusNotFound {
			t.Errorf("%s %s (an id of B on A's path): %d %s, want 404", c.method, c.path, st, raw)
		}
	}
	// A's instance may not start B's automation.
	if st, _, raw := call("POST", pathA+"/triggers/"+instA+"/automations", `{"automation_ids":["`+autoB+`"]}`); st != http.StatusNotFound && st != http.StatusBadRequest {
		t.Errorf("A's trigger instance set to start B's automation: %d %s", st, raw)
	}
	// A's lists show A's only.
	for _, list := range []string{"/triggers", "/connections", "/webhooks", "/automations/" + autoA + "/triggers"} {
		st, _, raw := call("GET", pathA+list, "")
		if st != http.StatusOK {
			t.Fatalf("GET %s: %d %s", list, st, raw)
		}
		for _, id := range []string{instB, connB, hookB, autoB} {
			if strings.Contains(raw, id) {
				t.Errorf("GET %s%s with a key of A shows %s of B: %s", pathA, list, id, raw)
			}
		}
	}
	// B's resources are as they were.
	if m := owner("GET", pathB+"/automations/"+autoB+"/schedule", ""); m["enabled"] != true {
		t.Errorf("B's schedule: %v", m)
	}
	if m := owner("GET", pathB+"/connections/"+connB, ""); !strings.Contains(fmt.Sprint(m), "crm") {
		t.Errorf("B's connection: %v", m)
	}
	owner("GET", pathB+"/webhooks/"+hookB, "")
	if m := owner("GET", pathB+"/triggers", ""); !strings.Contains(fmt.Sprint(m), instB) || !strings.Contains(fmt.Sprint(m), autoB) {
		t.Errorf("B's trigger instance: %v", m)
	}
}

// TestWorkspaceLimitsOfWebhooksAndTriggers: a workspace has at most 25
// webhooks and 100 trigger instances; one more is 429 / RESOURCE_EXHAUSTED
// WORKSPACE_LIMIT_REACHED, over HTTP and gRPC; another workspace is not
// counted.
func TestWorkspaceLimitsOfWebhooksAndTriggers(t *testing.T) {
	e := newTestEnv(t)
	for i := range store.MaxWebhooksPerWorkspace {
		e.API(t, "POST", e.WsPath()+"/webhooks", fmt.Sprintf(`{"url":"https://ops.example/%d","event_types":["WEBHOOK_EVENT_TYPE_RUN_STATE_CHANGED"]}`, i), 200)
	}
	orders, _ := e.TriggersPath(t, e.WsPath(), "webhook", "orders")
	for i := range store.MaxTriggerInstancesPerWorkspace {
		e.API(t, "POST", orders, fmt.Sprintf(`{"name":"T%d"}`, i), 200)
	}
	for _, c := range []struct{ path, body, want string }{
		{"/webhooks", `{"url":"https://ops.example/over","event_types":["WEBHOOK_EVENT_TYPE_RUN_STATE_CHANGED"]}`, "at most 25 webhooks"},
		{strings.TrimPrefix(orders, e.WsPath()), `{"name":"over"}`, "at most 100 trigger instances"},
	} {
		st, m, raw := e.DoHTTP(t, "POST", e.WsPath()+c.path, c.body, map[string]string{"authorization": "Bearer " + e.Init.APIKey})
		if st != http.StatusTooManyRequests || testenv.HTTPReason(m) != "WORKSPACE_LIMIT_REACHED" || !strings.Contains(string(raw), c.want) {
			t.Errorf("POST %s over the limit: %d %s", c.path, st, raw)
		}
	}
	ctx := metadata.AppendToOutgoingContext(t.Context(), "authorization", "Bearer "+e.Init.APIKey)
	_, err := platformv1.NewWebhookServiceClient(e.Conn).CreateWebhook(ctx, &platformv1.CreateWebhookRequest{OrganizationId: e.Init.OrganizationID, WorkspaceId: e.Init.WorkspaceID,
		Webhook: &platformv1.Webhook{Url: "https://ops.example/grpc", EventTypes: []platformv1.WebhookEventType{platformv1.WebhookEventType_WEBHOOK_EVENT_TYPE_RUN_STATE_CHANGED}}})
	if status.Code(err) != codes.ResourceExhausted || testenv.GRPCReason(err) != "WORKSPACE_LIMIT_REACHED" {
		t.Errorf("gRPC CreateWebhook over the limit: %v", err)
	}
	other := e.NewWorkspace(t, "Other")
	e.API(t, "POST", "/api/v1/organizations/"+e.Init.OrganizationID+"/workspaces/"+other+"/webhooks", `{"url":"https://ops.example/o","event_types":["WEBHOOK_EVENT_TYPE_RUN_STATE_CHANGED"]}`, 200)
}
