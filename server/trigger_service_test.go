package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/server"
	"github.com/proserun/prose/server/app"
	"github.com/proserun/prose/server/testenv"
	"github.com/proserun/prose/store"
)

// deliver posts a webhook delivery; sig "" signs it with secret.
func (e *testEnv) deliver(t *testing.T, endpoint, secret, body, delivery, sig string) (int, map[string]any, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, e.Srv.URL+endpoint, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if sig == "" {
		sig = server.SignWebhook(secret, time.Now(), delivery, []byte(body))
	}
	req.Header.Set(server.WebhookSignatureHeader, sig)
	if delivery != "" {
		req.Header.Set(server.WebhookDeliveryHeader, delivery)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var m map[string]any
	_ = json.Unmarshal(raw, &m)
	return resp.StatusCode, m, string(raw)
}

// webhookFixture makes a webhook instance starting automation a with
// input_mapping amount ← /order/total, customer_name ← /customer/name.
func (e *testEnv) webhookFixture(t *testing.T, a string) (id, endpoint, secret string) {
	t.Helper()
	path, orders := e.TriggersPath(t, e.WsPath(), "webhook", "orders")
	m := e.API(t, "POST", path,
		`{"name":"Orders","configuration":{"secret":{"text_value":"a-secret-of-24-characters"}}}`, 200)
	checkSchema(t, "v2AddWorkspaceBookConnectionTriggerInstanceResponse", m)
	inst := m["trigger_instance"].(map[string]any)
	id, endpoint = fmt.Sprint(inst["id"]), fmt.Sprint(inst["endpoint"])
	if endpoint != server.WebhookPath(e.Init.OrganizationID, e.Init.WorkspaceID, id) || testenv.Field(inst, "configuration.secret.text_value") != "a-secret-of-24-characters" ||
		inst["book_name"] != "webhook" || inst["connection_id"] != orders || testenv.Field(inst, "status.state") != "TRIGGER_INSTANCE_STATE_READY" {
		t.Fatalf("instance: %v", inst)
	}
	s := e.API(t, "POST", e.WsPath()+"/triggers/"+id+"/automations", `{"automation_ids":["`+a+`"],"connection_id":"`+orders+`"}`, 200)
	checkSchema(t, "v2SetAutomationsForTriggerInstanceResponse", s)
	if testenv.Field(s, "trigger_instance.automation_ids.0") != a || testenv.Field(s, "trigger_instance.configuration.secret") != nil {
		t.Fatalf("set automations: %v", s)
	}
	at := e.API(t, "POST", e.AutomationsPath()+"/"+a+"/triggers", `{"trigger_id":"`+id+`","phase_type":"PHASE_TYPE_MAIN","phase_sub_type":"PHASE_SUB_TYPE_WEBHOOK",
		"input_mapping":{"amount":"/order/total","customer_name":"/customer/name"}}`, 200)
	checkSchema(t, "v1AutomationTrigger", at)
	if at["is_active"] != true || at["automation"] != "organizations/"+e.Init.OrganizationID+"/workspaces/"+e.Init.WorkspaceID+"/automations/"+a {
		t.Fatalf("automation trigger: %v", at)
	}
	return id, endpoint, "a-secret-of-24-characters"
}

// TestWebhookTrigger: a signed delivery starts one run with inputs mapped
// from its body; a redelivery (same delivery id, or the same body without
// one) starts none; bad signatures and bodies are refused; the trigger
// operations answer with the reference's JSON over HTTP and gRPC.
func TestWebhookTrigger(t *testing.T) {
	e := newTestEnv(t)
	a := e.MkAutomation(t, "Greeter", greetCode, false)
	id, endpoint, secret := e.webhookFixture(t, a.ID)
	orders := fmt.Sprint(testenv.Field(e.API(t, "GET", e.WsPath()+"/triggers", "", 200), "trigger_instances.0.connection_id"))

	body := `{"order":{"total":1.25},"customer":{"name":"Ana"}}`
	code, m, raw := e.deliver(t, endpoint, secret, body, "d-1", "")
	if code != http.StatusAccepted || testenv.Field(m, "runs.0.created") != true {
		t.Fatalf("delivery: %d %s", code, raw)
	}
	run := store.LastSegment(fmt.Sprint(testenv.Field(m, "runs.0.run")))
	r := e.WaitRun(t, a.ID, run, "completed")
	if got := testenv.NumberOf(testenv.Field(r, "state.completed.outputs.output total.number")); got != 2.5 {
		t.Errorf("output total = %v (%v)", got, r)
	}
	if testenv.Field(r, "invocation_details.invocation_source") != "INVOCATION_SOURCE_TRIGGER" ||
		testenv.Field(r, "invocation_details.trigger_id") != "organizations/"+e.Init.OrganizationID+"/workspaces/"+e.Init.WorkspaceID+"/triggers/"+id {
		t.Errorf("invocation details: %v", r["invocation_details"])
	}
	// Redelivered (concurrently, too): the same run.
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			code, m, raw := e.deliver(t, endpoint, secret, body, "d-1", "")
			if code != http.StatusAccepted || testenv.Field(m, "runs.0.created") != false || store.LastSegment(fmt.Sprint(testenv.Field(m, "runs.0.run"))) != run {
				t.Errorf("redelivery: %d %s", code, raw)
			}
		})
	}
	wg.Wait()
	// No delivery id: the body names the delivery.
	_, m1, _ := e.deliver(t, endpoint, secret, `{"order":{"total":2}}`, "", "")
	_, m2, _ := e.deliver(t, endpoint, secret, `{"order":{"total":2}}`, "", "")
	if testenv.Field(m1, "runs.0.created") != true || testenv.Field(m2, "runs.0.created") != false || testenv.Field(m1, "runs.0.run") != testenv.Field(m2, "runs.0.run") {
		t.Errorf("same body twice: %v / %v", m1, m2)
	}
	if n := len(e.scheduledRuns(t, a.ID)); n != 2 {
		t.Errorf("%d runs, want 2", n)
	}

	for _, bad := range []struct {
		name, body, sig, delivery string
		want                      int
	}{
		{"no signature", body, "none", "", http.StatusUnauthorized},
		{"another secret", body, server.SignWebhook("another-secret-of-24-chars", time.Now(), "", []byte(body)), "", http.StatusUnauthorized},
		{"not JSON", `{"order":`, "", "", http.StatusBadRequest},
		{"bad delivery id", body, "", "has spaces", http.StatusBadRequest},
	} {
		if code, _, raw := e.deliver(t, endpoint, secret, bad.body, bad.delivery, bad.sig); code != bad.want {
			t.Errorf("%s: %d %s, want %d", bad.name, code, raw, bad.want)
		}
	}
	if code, _, _ := e.deliver(t, server.WebhookPath(e.Init.OrganizationID, e.Init.WorkspaceID, "nope"), secret, body, "", ""); code != http.StatusNotFound {
		t.Errorf("unknown webhook: %d", code)
	}
	if code, _, raw := e.deliver(t, endpoint, secret, strings.Repeat(" ", server.MaxWebhookBody+1)+"{}", "", ""); code != http.StatusRequestEntityTooLarge {
		t.Errorf("large body: %d %s", code, raw)
	}

	// An inactive trigger starts nothing.
	e.API(t, "POST", e.AutomationsPath()+"/"+a.ID+"/triggers", `{"trigger_id":"`+id+`","phase_type":"PHASE_TYPE_MAIN","is_active":false}`, 200)
	if _, m, _ := e.deliver(t, endpoint, secret, body, "d-2", ""); testenv.Field(m, "runs.0.run") != nil {
		t.Errorf("inactive trigger started %v", m)
	}

	// Lists, with filters.
	l := e.API(t, "GET", e.AutomationsPath()+"/"+a.ID+"/triggers?filter="+url.QueryEscape(`is_active = false`), "", 200)
	checkSchema(t, "v1ListAutomationTriggersResponse", l)
	if testenv.Field(l, "automation_triggers.0.trigger_id") != id {
		t.Errorf("list automation triggers: %v", l)
	}
	if l := e.API(t, "GET", e.AutomationsPath()+"/"+a.ID+"/triggers?filter="+url.QueryEscape(`is_active = true`), "", 200); l["automation_triggers"] != nil {
		t.Errorf("active triggers: %v", l)
	}
	w := e.API(t, "GET", e.WsPath()+"/triggers?filter="+url.QueryEscape(`connection_id = "`+orders+`"`), "", 200)
	checkSchema(t, "v2RetrieveWorkspaceTriggerInstancesResponse", w)
	if testenv.Field(w, "trigger_instances.0.id") != id || testenv.Field(w, "trigger_instances.0.configuration.secret") != nil {
		t.Errorf("list instances: %v", w)
	}

	// Errors with their fields.
	for _, c := range []struct{ method, path, body, want string }{
		{"POST", e.WsPath() + "/books/http/1.0.0/connections/c/triggers", `{}`, "TRIGGER_BOOK_UNKNOWN"},
		{"POST", e.WsPath() + "/books/smtp/1/connections/c/triggers", `{}`, "BOOK_NOT_FOUND"},
		{"POST", e.WsPath() + "/books/webhook/1.0.0/connections/c/triggers", `{}`, "CONNECTION_NOT_FOUND"},
		{"POST", e.WsPath() + "/books/webhook/1.0.0/connections/" + orders + "/triggers", `{"configuration":{"secret":{"text_value":"short"}}}`, "INVALID_TRIGGER"},
		{"POST", e.WsPath() + "/books/webhook/1.0.0/connections/" + orders + "/triggers", `{"trigger_id":"message"}`, "INVALID_TRIGGER"},
		{"POST", e.WsPath() + "/books/nats/1.0.0/connections/" + orders + "/triggers", `{}`, "CONNECTION_NOT_FOUND"},
		{"POST", e.AutomationsPath() + "/" + a.ID + "/triggers", `{"trigger_id":"` + id + `"}`, "REQUIRED_FIELD_MISSING"},
		{"POST", e.AutomationsPath() + "/" + a.ID + "/triggers", `{"trigger_id":"` + id + `","phase_type":"PHASE_TYPE_MAIN","input_mapping":{"x":"order.total"}}`, "INVALID_TRIGGER"},
		{"POST", e.AutomationsPath() + "/" + a.ID + "/triggers", `{"trigger_id":"nope","phase_type":"PHASE_TYPE_MAIN"}`, "TRIGGER_INSTANCE_NOT_FOUND"},
		{"POST", e.WsPath() + "/triggers/" + id + "/automations", `{"automation_ids":["nope"]}`, "AUTOMATION_NOT_FOUND"},
		{"GET", e.WsPath() + "/triggers?filter=" + url.QueryEscape(`secret = "x"`), ``, "INVALID_FILTER"},
	} {
		code, m, raw := e.DoHTTP(t, c.method, c.path, c.body, e.Bearer())
		if code < 400 || code >= 500 || testenv.Field(m, "details.0.reason") != c.want {
			t.Errorf("%s %s %s: %d %s, want %s", c.method, c.path, c.body, code, raw, c.want)
		}
	}

	// gRPC: list, then delete; the endpoint is gone.
	ctx := metadata.NewOutgoingContext(context.Background(), metadata.Pairs("authorization", "Bearer "+e.Init.APIKey))
	cl := platformv1.NewTriggerServiceClient(e.Conn)
	lr, err := cl.ListWorkspaceTriggerInstances(ctx, &platformv1.ListWorkspaceTriggerInstancesRequest{OrganizationId: e.Init.OrganizationID, WorkspaceId: e.Init.WorkspaceID})
	if err != nil || len(lr.GetTriggerInstances()) != 1 {
		t.Fatalf("gRPC list: %v %v", lr, err)
	}
	del := &platformv1.RemoveWorkspaceBookConnectionTriggerInstanceRequest{OrganizationId: e.Init.OrganizationID, WorkspaceId: e.Init.WorkspaceID, ConnectionId: orders, TriggerInstanceId: id}
	if _, err := cl.RemoveWorkspaceBookConnectionTriggerInstance(ctx, del); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.RemoveWorkspaceBookConnectionTriggerInstance(ctx, del); status.Code(err) != codes.NotFound {
		t.Errorf("delete twice: %v", err)
	}
	if code, _, _ := e.deliver(t, endpoint, secret, body, "d-3", ""); code != http.StatusNotFound {
		t.Errorf("delivery to a deleted webhook: %d", code)
	}
}

// TestWebhookTwoReplicasPostgres: the same delivery sent to two replicas on
// one PostgreSQL database at once, many times, starts one run.
func TestWebhookTwoReplicasPostgres(t *testing.T) {
	replica := testenv.PGReplica(t)
	a, _ := startApp(t, replica(), app.InitResult{}, "")
	a.Email = "owner-" + store.NewID() + "@example.test"
	var err error
	a.Init, err = app.Bootstrap(context.Background(), a.Store, app.InitOptions{Organization: "Webhook replicas", Email: a.Email, Workspace: "Ops"})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := startApp(t, replica(), a.Init, a.Email)
	auto := a.MkAutomation(t, "Greeter", greetCode, false)
	_, endpoint, secret := a.webhookFixture(t, auto.ID)
	body := `{"order":{"total":3},"customer":{"name":"Bo"}}`
	runs := map[string]int{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := range 10 {
		r := []*testEnv{a, b}[i%2]
		wg.Go(func() {
			code, m, raw := r.deliver(t, endpoint, secret, body, "order-42", "")
			if code != http.StatusAccepted {
				t.Errorf("delivery: %d %s", code, raw)
				return
			}
			mu.Lock()
			runs[fmt.Sprint(testenv.Field(m, "runs.0.run"))]++
			mu.Unlock()
		})
	}
	wg.Wait()
	if len(runs) != 1 {
		t.Errorf("runs = %v, want one", runs)
	}
	if n := len(b.scheduledRuns(t, auto.ID)); n != 1 {
		t.Errorf("%d runs stored, want 1", n)
	}
}

// TestWebhookDeliveriesAreRateLimited: a trigger instance takes at most
// --trigger-burst deliveries at once and --trigger-rate a second after;
// one over it is 429 with Retry-After and starts nothing, and the same
// delivery sent again later starts its runs. A wrongly signed flood does
// not use the instance's budget (it is refused before).
func TestWebhookDeliveriesAreRateLimited(t *testing.T) {
	// The buckets' clock stands still until the test moves it: the burst
	// is one burst however long the machine takes to serve it (on the real
	// clock, a loaded machine refilled a token between the third delivery
	// and the fourth, which was then accepted).
	start := time.Now()
	var elapsed atomic.Int64
	now := func() time.Time { return start.Add(time.Duration(elapsed.Load())) }
	e := newTestEnvWith(t, func(c *app.Config) { c.TriggerRate = server.TriggerRate{PerSecond: 2, Burst: 3, Now: now} })
	a := e.MkAutomation(t, "Orders", "the output x is 1\n", false)
	_, endpoint, secret := e.webhookFixture(t, a.ID)
	for i := range 10 {
		if code, _, raw := e.deliver(t, endpoint, secret, `{"n":1}`, fmt.Sprintf("bad-%d", i), "sha256=00"); code != http.StatusUnauthorized {
			t.Fatalf("a wrongly signed delivery: %d %s", code, raw)
		}
	}
	for i := range 3 {
		if code, _, raw := e.deliver(t, endpoint, secret, `{"n":1}`, fmt.Sprintf("d-%d", i), ""); code != http.StatusAccepted {
			t.Fatalf("delivery %d within the burst: %d %s", i, code, raw)
		}
	}
	for try := range 2 { // sent again before a token is back: refused again
		req, _ := http.NewRequest(http.MethodPost, e.Srv.URL+endpoint, strings.NewReader(`{"n":1}`))
		req.Header.Set(server.WebhookSignatureHeader, server.SignWebhook(secret, time.Now(), "d-3", []byte(`{"n":1}`)))
		req.Header.Set(server.WebhookDeliveryHeader, "d-3")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "1" || !strings.Contains(string(raw), "at most 2 deliveries a second") {
			t.Fatalf("a delivery over the burst (try %d): %d %v %s", try, resp.StatusCode, resp.Header, raw)
		}
	}
	if n := e.waitRuns(t, a.ID, 3); n != 3 {
		t.Fatalf("%d runs, want 3 (the refused delivery starts none)", n)
	}
	// Half a second later (2 a second), one token is back: the delivery
	// sent again starts its run, and the next is refused.
	elapsed.Add(int64(500 * time.Millisecond))
	code, m, raw := e.deliver(t, endpoint, secret, `{"n":1}`, "d-3", "")
	if code != http.StatusAccepted || testenv.Field(m, "runs.0.created") != true {
		t.Fatalf("the delivery sent again: %d %s", code, raw)
	}
	if code, _, raw := e.deliver(t, endpoint, secret, `{"n":1}`, "d-4", ""); code != http.StatusTooManyRequests {
		t.Fatalf("a delivery after the returned token was taken: %d %s", code, raw)
	}
}
