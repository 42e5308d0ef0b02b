package server_test

import (
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/proserun/prose/server/app"
	"github.com/proserun/prose/server/testenv"
	"github.com/proserun/prose/store"
)

// TestWebhookPayloadsNumberARunsEvents: deliveries are concurrent and
// retried (here the first attempt fails), so a run's events may arrive in
// any order; each payload carries "sequence", from 1 in the order the
// run's events happened, the same on a retried attempt.
func TestWebhookPayloadsNumberARunsEvents(t *testing.T) {
	e := newTestEnvWith(t, func(c *app.Config) { c.WebhookBackoff = time.Millisecond })
	rcv := newReceiver(t, 1)
	m := e.API(t, "POST", e.WsPath()+"/webhooks", `{"url":"`+rcv.srv.URL+`/hook","event_types":["WEBHOOK_EVENT_TYPE_RUN_STATE_CHANGED"]}`, 200)
	hook := store.LastSegment(fmt.Sprint(m["name"]))
	// A run that waits for guidance (its API fails once), is retried and
	// completes: several changes of state.
	api := newReceiver(t, 1)
	a := e.MkAutomation(t, "Retried", `call the api at "`+api.srv.URL+`/x"
the output x is 1
`, false)
	run := e.invokeAPI(t, a.ID)
	r := e.WaitRun(t, a.ID, run, "awaiting_guidance")
	xid := store.LastSegment(fmt.Sprint(testenv.Field(r, "state.awaiting_guidance.exception")))
	e.API(t, "POST", e.WsPath()+"/exceptions/"+xid+":resolve", `{"retry": {}}`, 200)
	e.WaitRun(t, a.ID, run, "completed")
	n := len(e.deliveries(t, hook, 3))

	seqOf := map[string]string{} // delivery id → its sequence on the first attempt
	var states []struct {
		seq   float64
		state string
	}
	for _, h := range rcv.received() {
		seq, ok := h.payload["sequence"].(float64)
		if !ok {
			t.Fatalf("a payload without a sequence: %s", h.body)
		}
		if first, seen := seqOf[h.delivery]; seen && first != fmt.Sprint(seq) {
			t.Errorf("delivery %s: sequence %v, %s at its first attempt", h.delivery, seq, first)
		}
		seqOf[h.delivery] = fmt.Sprint(seq)
		if h.ok {
			states = append(states, struct {
				seq   float64
				state string
			}{seq, fmt.Sprint(h.payload["state"])})
		}
	}
	sort.Slice(states, func(i, j int) bool { return states[i].seq < states[j].seq })
	if len(states) != n || states[len(states)-1].state != "completed" {
		t.Errorf("the run's %d events by sequence: %v, want the last completed", n, states)
	}
	for i, s := range states {
		if s.seq != float64(i+1) {
			t.Errorf("the run's events by sequence: %v, want 1 to %d", states, n)
			break
		}
	}
}
