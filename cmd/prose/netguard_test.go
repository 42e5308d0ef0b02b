package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/proserun/prose/store"
)

// TestServeReachesOnlyPublicAddressesByDefault: without
// --allow-private-networks, a run's http call to a server on loopback is an
// exception naming the address (the server is not reached), an outbound
// webhook to one fails its deliveries with that reason; a file uploaded to
// the server is still read by a run (the books read the server's own files
// without the network, though its URL is on loopback).
func TestServeReachesOnlyPublicAddressesByDefault(t *testing.T) {
	e := newTestEnvWith(t, func(c *serveConfig) { c.allowPrivateNetworks = false; c.webhookBackoff = time.Millisecond })
	rcv := newReceiver(t, 0)

	// The http book.
	a := e.mkAutomation(t, "Caller", `call the api at "`+rcv.srv.URL+`/x"
the output done is 1
`, false)
	run := e.invokeAPI(t, a.id)
	r := e.waitRun(t, a.id, run, "awaiting_guidance")
	xid := store.LastSegment(fmt.Sprint(field(r, "state.awaiting_guidance.exception")))
	x := e.api(t, "GET", e.wsPath()+"/exceptions/"+xid, "", 200)
	if msg := fmt.Sprint(x["message"], x["description"]); !strings.Contains(msg, "127.0.0.1 is not public") || !strings.Contains(msg, "--allow-private-networks") {
		t.Errorf("the http call to loopback: %s", msg)
	}

	// An outbound webhook.
	m := e.api(t, "POST", e.wsPath()+"/webhooks", `{"url":"`+rcv.srv.URL+`/hook","event_types":["WEBHOOK_EVENT_TYPE_RUN_STATE_CHANGED"]}`, 200)
	hook := store.LastSegment(fmt.Sprint(m["name"]))
	quick := e.mkAutomation(t, "Quick", "the output x is 1\n", false)
	e.waitRun(t, quick.id, e.invokeAPI(t, quick.id), "completed")
	for _, d := range e.deliveries(t, hook, 1) {
		if d["state"] != "WEBHOOK_DELIVERY_STATE_FAILED" || !strings.Contains(fmt.Sprint(d["last_error"]), "is not public") {
			t.Errorf("a delivery to loopback: %v", d)
		}
	}
	rcv.mu.Lock()
	got := len(rcv.got)
	rcv.mu.Unlock()
	if got != 0 {
		t.Errorf("the loopback receiver got %d requests", got)
	}

	// The server's own file, by its blob URL (on loopback).
	blob, _ := e.uploadBlob(t, "orders.csv", []byte("customer,amount\nAna,12.50\nBo,3\n"))
	sum := e.mkAutomation(t, "Sum", `read the table from the orders file
the orders are the above
the total is 0
process each order in the orders as follows
  add the order's amount to the total
the output total is the total
`, false)
	inv := e.api(t, "POST", e.automationsPath()+"/"+sum.id+":invoke", `{"stage":"AUTOMATION_STAGE_DRAFT","inputs":{"orders file":{"file":{"remote":"`+blob+`"}}}}`, 200)
	done := e.waitRun(t, sum.id, fmt.Sprint(inv["run_id"]), "completed")
	if got := fmt.Sprint(field(done, "state.completed.outputs.output total.number.lo")); got != "1550" { // 15.50
		t.Errorf("the total of the uploaded file: %v", done)
	}
}
