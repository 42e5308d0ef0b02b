package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/internal/engine/outbound"
	"github.com/proserun/prose/internal/testtime"
	"github.com/proserun/prose/internal/webhooksig"
	"github.com/proserun/prose/server/app"
	"github.com/proserun/prose/server/testenv"
	"github.com/proserun/prose/store"
)

// receiver is an httptest webhook receiver: it answers 500 to the first
// fails requests, then 200, and keeps what it received.
type receiver struct {
	mu    sync.Mutex
	fails int
	got   []receivedHook
	srv   *httptest.Server
}

type receivedHook struct {
	sig, delivery, event string
	body                 []byte
	payload              map[string]any
	ok                   bool // answered 2xx
}

func newReceiver(t *testing.T, fails int) *receiver {
	r := &receiver{fails: fails}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		var p map[string]any
		_ = json.Unmarshal(body, &p)
		r.mu.Lock()
		fail := r.fails > 0
		r.got = append(r.got, receivedHook{req.Header.Get(outbound.SignatureHeader), req.Header.Get(outbound.DeliveryHeader), req.Header.Get(outbound.EventHeader), body, p, !fail})
		r.fails--
		r.mu.Unlock()
		if fail {
			http.Error(w, "not now", http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) received() []receivedHook {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]receivedHook(nil), r.got...)
}

// deliveries waits until the webhook's delivery log has no pending
// delivery and at least n deliveries, and returns it.
func (e *testEnv) deliveries(t *testing.T, webhook string, n int) []map[string]any {
	t.Helper()
	deadline := testtime.Deadline(testtime.Wait)
	for {
		m := e.API(t, "GET", e.WsPath()+"/webhooks/"+webhook+"/deliveries?page_size=1000", "", 200)
		list, _ := m["deliveries"].([]any)
		pending := 0
		var out []map[string]any
		for _, x := range list {
			d := x.(map[string]any)
			if d["state"] == "WEBHOOK_DELIVERY_STATE_PENDING" {
				pending++
			}
			out = append(out, d)
		}
		if len(out) >= n && pending == 0 {
			return out
		}
		if time.Now().After(deadline) {
			t.Fatalf("deliveries of %s: %d, %d pending: %v", webhook, len(out), pending, m)
		}
		e.App.Dispatcher.Wake()
		time.Sleep(5 * time.Millisecond)
	}
}

// TestOutboundWebhooks: a workspace's run and exception events reach a
// subscribed URL signed, retried after failures, listed in the delivery
// log; a receiver that never answers does not hold a run back.
func TestOutboundWebhooks(t *testing.T) {
	e := newTestEnvWith(t, func(c *app.Config) { c.WebhookBackoff = time.Millisecond })
	rcv := newReceiver(t, 2)
	const secret = "receiver-secret-0123456789"
	m := e.API(t, "POST", e.WsPath()+"/webhooks", `{"url":"`+rcv.srv.URL+`/hook","secret":"`+secret+`","display_name":"Ops board",
		"event_types":["WEBHOOK_EVENT_TYPE_RUN_STATE_CHANGED","WEBHOOK_EVENT_TYPE_EXCEPTION_STATE_CHANGED"]}`, 200)
	if m["secret"] != secret || m["url"] != rcv.srv.URL+"/hook" || len(m["event_types"].([]any)) != 2 {
		t.Fatalf("created: %v", m)
	}
	hook := store.LastSegment(fmt.Sprint(m["name"]))
	if g := e.API(t, "GET", e.WsPath()+"/webhooks/"+hook, "", 200); g["secret"] != nil || g["display_name"] != "Ops board" {
		t.Errorf("get shows: %v", g)
	}

	a := e.MkAutomation(t, "Greeter", greetCode, false)
	run := e.invokeAPI(t, a.ID)
	_ = e.WaitRun(t, a.ID, run, "awaiting_guidance") // no inputs: it asks for the amount
	// executing, awaiting_guidance, the exception (and pending first, unless
	// the run was created executing, leased to the replica that made it).
	log := e.deliveries(t, hook, 3)
	states := map[string]bool{}
	retried := 0
	for _, d := range log {
		if d["state"] != "WEBHOOK_DELIVERY_STATE_SUCCEEDED" || d["last_status_code"] != float64(204) {
			t.Errorf("delivery: %v", d)
		}
		if d["attempts"].(float64) > 1 {
			retried++
		}
		p := d["payload"].(map[string]any)
		states[fmt.Sprint(p["type"], " ", p["state"])] = true
		if p["run"] != "organizations/"+e.Init.OrganizationID+"/workspaces/"+e.Init.WorkspaceID+"/automations/"+a.ID+"/runs/"+run {
			t.Errorf("payload run: %v", p)
		}
	}
	for _, want := range []string{"run.state_changed executing", "run.state_changed awaiting_guidance", "exception.state_changed PENDING"} {
		if !states[want] {
			t.Errorf("no delivery of %q: %v", want, states)
		}
	}
	if retried == 0 {
		t.Errorf("no delivery was retried, though the receiver failed twice: %v", log)
	}
	// Every request was signed with the secret and named its delivery; the
	// retries of a delivery carried the same id and body.
	bodies := map[string]string{}
	for _, h := range rcv.received() {
		if webhooksig.Verify(secret, h.sig, h.delivery, h.body, time.Now(), webhooksig.DefaultTolerance) != nil || h.delivery != h.payload["id"] || h.event != h.payload["type"] {
			t.Errorf("request: sig %s delivery %s event %s payload %v", h.sig, h.delivery, h.event, h.payload)
		}
		if b, ok := bodies[h.delivery]; ok && b != string(h.body) {
			t.Errorf("retry of %s with another body", h.delivery)
		}
		bodies[h.delivery] = string(h.body)
	}
	if n := len(rcv.received()); n != len(log)+2 {
		t.Errorf("%d requests for %d deliveries and 2 failures", n, len(log))
	}

	// A receiver that never answers holds no run back.
	stuck := make(chan struct{})
	hang := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { <-stuck }))
	t.Cleanup(hang.Close)
	t.Cleanup(func() { close(stuck) })
	e.API(t, "POST", e.WsPath()+"/webhooks", `{"url":"`+hang.URL+`","event_types":["WEBHOOK_EVENT_TYPE_RUN_STATE_CHANGED"]}`, 200)
	b := e.MkAutomation(t, "Quick", "the output x is 1\n", false)
	_ = e.WaitRun(t, b.ID, e.invokeAPI(t, b.ID), "completed")

	// Bad requests.
	for _, c := range []struct{ body, want string }{
		{`{"url":"ftp://x","event_types":["WEBHOOK_EVENT_TYPE_RUN_STATE_CHANGED"]}`, "INVALID_WEBHOOK"},
		{`{"url":"http://127.0.0.1:1"}`, "REQUIRED_FIELD_MISSING"},
		{`{"url":"http://127.0.0.1:1","event_types":["WEBHOOK_EVENT_TYPE_RUN_STATE_CHANGED"],"secret":"short"}`, "INVALID_WEBHOOK"},
	} {
		code, m, raw := e.DoHTTP(t, "POST", e.WsPath()+"/webhooks", c.body, e.Bearer())
		if code != http.StatusBadRequest || testenv.Field(m, "details.0.reason") != c.want {
			t.Errorf("%s: %d %s", c.body, code, raw)
		}
	}

	// gRPC: list and delete.
	ctx := metadata.NewOutgoingContext(context.Background(), metadata.Pairs("authorization", "Bearer "+e.Init.APIKey))
	cl := platformv1.NewWebhookServiceClient(e.Conn)
	l, err := cl.ListWebhooks(ctx, &platformv1.ListWebhooksRequest{OrganizationId: e.Init.OrganizationID, WorkspaceId: e.Init.WorkspaceID})
	if err != nil || len(l.GetWebhooks()) != 2 || l.GetWebhooks()[0].GetSecret() != "" {
		t.Fatalf("gRPC list: %v %v", l, err)
	}
	ref := &platformv1.DeleteWebhookRequest{OrganizationId: e.Init.OrganizationID, WorkspaceId: e.Init.WorkspaceID, WebhookId: hook}
	if _, err := cl.DeleteWebhook(ctx, ref); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.GetWebhook(ctx, &platformv1.GetWebhookRequest{OrganizationId: e.Init.OrganizationID, WorkspaceId: e.Init.WorkspaceID, WebhookId: hook}); status.Code(err) != codes.NotFound {
		t.Errorf("get after delete: %v", err)
	}
	e.API(t, "GET", e.WsPath()+"/webhooks/"+hook+"/deliveries", "", 404)
}

// TestOutboundWebhooksTwoReplicasPostgres: two replicas on one PostgreSQL
// database, both dispatching, one subscription and runs started on either:
// every delivery reaches the receiver successfully exactly once (by delivery
// id), retries after failures carry the same id and body, none is lost.
func TestOutboundWebhooksTwoReplicasPostgres(t *testing.T) {
	replica := testenv.PGReplica(t)
	fast := func() app.Config { c := replica(); c.WebhookBackoff = time.Millisecond; return c }
	a, _ := startApp(t, fast(), app.InitResult{}, "")
	a.Email = "owner-" + store.NewID() + "@example.test"
	var err error
	a.Init, err = app.Bootstrap(context.Background(), a.Store, app.InitOptions{Organization: "Outbound replicas", Email: a.Email, Workspace: "Ops"})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := startApp(t, fast(), a.Init, a.Email)
	const fails = 3
	rcv := newReceiver(t, fails)
	const secret = "receiver-secret-0123456789"
	m := a.API(t, "POST", a.WsPath()+"/webhooks", `{"url":"`+rcv.srv.URL+`/hook","secret":"`+secret+`","event_types":["WEBHOOK_EVENT_TYPE_RUN_STATE_CHANGED"]}`, 200)
	hook := store.LastSegment(fmt.Sprint(m["name"]))

	auto := a.MkAutomation(t, "Quick", "the output x is 1\n", false)
	const nRuns = 6
	runs := map[string]bool{}
	for i := range nRuns {
		r := []*testEnv{a, b}[i%2]
		run := r.invokeAPI(t, auto.ID)
		_ = r.WaitRun(t, auto.ID, run, "completed")
		runs[run] = true
	}
	// Each run at least reaches completed (a run leased at creation may
	// report no earlier state).
	b.App.Dispatcher.Wake()
	log := a.deliveries(t, hook, nRuns)
	ids := map[string]bool{}
	completed := map[string]bool{}
	for _, d := range log {
		if d["state"] != "WEBHOOK_DELIVERY_STATE_SUCCEEDED" {
			t.Errorf("delivery: %v", d)
		}
		p := d["payload"].(map[string]any)
		ids[fmt.Sprint(p["id"])] = true
		if p["state"] == "completed" {
			completed[store.LastSegment(fmt.Sprint(p["run"]))] = true
		}
	}
	if len(ids) != len(log) {
		t.Errorf("%d delivery ids for %d deliveries", len(ids), len(log))
	}
	for run := range runs {
		if !completed[run] {
			t.Errorf("no completed delivery for run %s", run)
		}
	}
	okBy := map[string]int{}
	bodies := map[string]string{}
	got := rcv.received()
	for _, h := range got {
		if !ids[h.delivery] {
			t.Errorf("request for unknown delivery %q", h.delivery)
		}
		if webhooksig.Verify(secret, h.sig, h.delivery, h.body, time.Now(), webhooksig.DefaultTolerance) != nil {
			t.Errorf("bad signature on %s", h.delivery)
		}
		if prev, ok := bodies[h.delivery]; ok && prev != string(h.body) {
			t.Errorf("retry of %s with another body", h.delivery)
		}
		bodies[h.delivery] = string(h.body)
		if h.ok {
			okBy[h.delivery]++
		}
	}
	for id := range ids {
		if okBy[id] != 1 {
			t.Errorf("delivery %s received successfully %d times, want once", id, okBy[id])
		}
	}
	if len(got) != len(log)+fails {
		t.Errorf("%d requests for %d deliveries and %d failures", len(got), len(log), fails)
	}
	// Both replicas see the same log.
	if n := len(b.deliveries(t, hook, len(log))); n != len(log) {
		t.Errorf("replica b lists %d deliveries, a %d", n, len(log))
	}
}
