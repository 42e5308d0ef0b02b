package server_test

import (
	"fmt"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/internal/testtime"
	"github.com/proserun/prose/server/app"
	"github.com/proserun/prose/store"
)

// A delivered event is sent again on :redeliver, over HTTP and gRPC: the
// delivery is pending again with its attempts from 0, and the receiver gets
// it once more with the same X-Prose-Delivery. An unknown delivery, or one
// of another webhook, is NOT_FOUND WEBHOOK_DELIVERY_NOT_FOUND.
func TestWebhookRedeliver(t *testing.T) {
	e := newTestEnvWith(t, func(c *app.Config) { c.WebhookBackoff = time.Millisecond })
	rcv := newReceiver(t, 0)
	m := e.API(t, "POST", e.WsPath()+"/webhooks", `{"url":"`+rcv.srv.URL+`/hook","event_types":["WEBHOOK_EVENT_TYPE_RUN_STATE_CHANGED"]}`, 200)
	hook := store.LastSegment(fmt.Sprint(m["name"]))
	other := store.LastSegment(fmt.Sprint(e.API(t, "POST", e.WsPath()+"/webhooks", `{"url":"`+rcv.srv.URL+`/other","event_types":["WEBHOOK_EVENT_TYPE_EXCEPTION_STATE_CHANGED"]}`, 200)["name"]))
	a := e.MkAutomation(t, "Greeter", greetCode, false)
	run := e.invokeAPI(t, a.ID)
	_ = e.WaitRun(t, a.ID, run, "awaiting_guidance")
	log := e.deliveries(t, hook, 2)
	forEachTransport(t, func(t *testing.T, tr apiTransport) {
		d := log[0]
		id := store.LastSegment(fmt.Sprint(d["name"]))
		before := len(rcv.received())
		got, err := e.call(t, tr, "/prose.platform.v1.WebhookService/RedeliverWebhookDelivery", &platformv1.RedeliverWebhookDeliveryRequest{
			OrganizationId: e.Init.OrganizationID, WorkspaceId: e.Init.WorkspaceID, WebhookId: hook, DeliveryId: id})
		if err != nil {
			t.Fatal(err)
		}
		if got["name"] != d["name"] || got["state"] != "WEBHOOK_DELIVERY_STATE_PENDING" || got["attempts"] != nil && got["attempts"] != float64(0) {
			t.Errorf("redelivered: %v", got)
		}
		deadline := testtime.Deadline(testtime.Wait)
		for len(rcv.received()) == before {
			if time.Now().After(deadline) {
				t.Fatal("the redelivery never reached the receiver")
			}
			e.App.Dispatcher.Wake()
			time.Sleep(5 * time.Millisecond)
		}
		last := rcv.received()[before]
		if last.delivery != id || fmt.Sprint(last.payload["run"]) != fmt.Sprint(d["payload"].(map[string]any)["run"]) {
			t.Errorf("redelivered as %q %v, want delivery %q of the same event", last.delivery, last.payload, id)
		}
		for _, req := range []*platformv1.RedeliverWebhookDeliveryRequest{
			{OrganizationId: e.Init.OrganizationID, WorkspaceId: e.Init.WorkspaceID, WebhookId: hook, DeliveryId: "nope"},
			{OrganizationId: e.Init.OrganizationID, WorkspaceId: e.Init.WorkspaceID, WebhookId: other, DeliveryId: id},
		} {
			_, err := e.call(t, tr, "/prose.platform.v1.WebhookService/RedeliverWebhookDelivery", req)
			if status.Code(err) != codes.NotFound || !hasReason(err, "WEBHOOK_DELIVERY_NOT_FOUND") {
				t.Errorf("redeliver %s of %s: %v, want NOT_FOUND WEBHOOK_DELIVERY_NOT_FOUND", req.GetDeliveryId(), req.GetWebhookId(), err)
			}
		}
	})
}
