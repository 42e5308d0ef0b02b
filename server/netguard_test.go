package server_test

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protojson"

	"github.com/proserun/prose/server/app"
	"github.com/proserun/prose/server/testenv"
	"github.com/proserun/prose/store"
)

// TestServeReachesOnlyPublicAddressesByDefault: without
// --allow-private-networks, a run's http call to a server on loopback is an
// exception naming the address (the server is not reached), an outbound
// webhook to one fails its deliveries with that reason; a file uploaded to
// the server is still read by a run (the books read the server's own files
// without the network, though its URL is on loopback).
func TestServeReachesOnlyPublicAddressesByDefault(t *testing.T) {
	e := newTestEnvWith(t, func(c *app.Config) { c.AllowPrivateNetworks = false; c.WebhookBackoff = time.Millisecond })
	rcv := newReceiver(t, 0)

	// The http book.
	a := e.MkAutomation(t, "Caller", `call the api at "`+rcv.srv.URL+`/x"
the output done is 1
`, false)
	run := e.invokeAPI(t, a.ID)
	r := e.WaitRun(t, a.ID, run, "awaiting_guidance")
	xid := store.LastSegment(fmt.Sprint(testenv.Field(r, "state.awaiting_guidance.exception")))
	x := e.API(t, "GET", e.WsPath()+"/exceptions/"+xid, "", 200)
	if msg := fmt.Sprint(x["message"], x["description"]); !strings.Contains(msg, "refused: not a public address") || !strings.Contains(msg, "--allow-private-networks") {
		t.Errorf("the http call to loopback: %s", msg)
	}

	// An outbound webhook.
	m := e.API(t, "POST", e.WsPath()+"/webhooks", `{"url":"`+rcv.srv.URL+`/hook","event_types":["WEBHOOK_EVENT_TYPE_RUN_STATE_CHANGED"]}`, 200)
	hook := store.LastSegment(fmt.Sprint(m["name"]))
	quick := e.MkAutomation(t, "Quick", "the output x is 1\n", false)
	e.WaitRun(t, quick.ID, e.invokeAPI(t, quick.ID), "completed")
	for _, d := range e.deliveries(t, hook, 1) {
		if d["state"] != "WEBHOOK_DELIVERY_STATE_FAILED" || !strings.Contains(fmt.Sprint(d["last_error"]), "refused: not a public address") {
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
	sum := e.MkAutomation(t, "Sum", `read the table from the orders file
the orders are the above
the total is 0
process each order in the orders as follows
  add the order's amount to the total
the output total is the total
`, false)
	inv := e.API(t, "POST", e.AutomationsPath()+"/"+sum.ID+":invoke", `{"stage":"AUTOMATION_STAGE_DRAFT","inputs":{"orders file":{"file":{"remote":"`+blob+`"}}}}`, 200)
	done := e.WaitRun(t, sum.ID, fmt.Sprint(inv["run_id"]), "completed")
	if got := fmt.Sprint(testenv.Field(done, "state.completed.outputs.output total.number.lo")); got != "1550" { // 15.50
		t.Errorf("the total of the uploaded file: %v", done)
	}
}

// TestRegisteredBooksReachOnlyPublicAddresses: without
// --allow-private-networks, a book a workspace registers with an endpoint
// on loopback (by address, by name, over IPv6) or at the cloud metadata
// address is never called: the run's exception says "refused: not a public
// address", names no resolver, and the book's server receives nothing.
func TestRegisteredBooksReachOnlyPublicAddresses(t *testing.T) {
	e := newTestEnvWith(t, func(c *app.Config) { c.AllowPrivateNetworks = false })
	var calls atomic.Int64
	book := discountBook()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		book.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	endpoints := []string{srv.URL, "http://localhost:" + port, "http://[::1]:" + port, "http://169.254.169.254/book"}
	for i, endpoint := range endpoints {
		d := discountBook().Descriptor(endpoint)
		d.Name = fmt.Sprintf("test.private%d", i)
		raw, err := protojson.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		e.API(t, "POST", e.booksPath(), string(raw), 200)
		a := e.MkAutomation(t, fmt.Sprintf("Private %d", i), "get the discount of the order\nthe output discount is the above\n", false)
		inv := e.API(t, "POST", e.AutomationsPath()+"/"+a.ID+":invoke", `{"stage":"AUTOMATION_STAGE_DRAFT","inputs":{"order":{"text":"A-1"}}}`, 200)
		r := e.WaitRun(t, a.ID, fmt.Sprint(inv["run_id"]), "awaiting_guidance")
		xid := store.LastSegment(fmt.Sprint(testenv.Field(r, "state.awaiting_guidance.exception")))
		x := e.API(t, "GET", e.WsPath()+"/exceptions/"+xid, "", 200)
		msg := fmt.Sprint(x["message"], x["description"])
		if !strings.Contains(msg, "refused: not a public address") || strings.Contains(msg, ":53") {
			t.Errorf("%s: the exception says %q, want \"refused: not a public address\" and no resolver", endpoint, msg)
		}
	}
	if n := calls.Load(); n != 0 {
		t.Errorf("the book's server on loopback received %d requests", n)
	}
}
