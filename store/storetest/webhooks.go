package storetest

import (
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/proserun/prose/store"
)

// testWebhooks runs the webhook cases.
func testWebhooks(t *testing.T, open Opener) {
	t.Run("WebhookOutbox", func(t *testing.T) { testWebhookOutbox(t, setup(t, open)) })
	t.Run("WebhookLimit", func(t *testing.T) { testWebhookLimit(t, setup(t, open)) })
	t.Run("WebhookOutboxCreateRuns", func(t *testing.T) { testWebhookOutboxCreateRuns(t, setup(t, open)) })
	t.Run("WebhookRedeliver", func(t *testing.T) { testWebhookRedeliver(t, setup(t, open)) })
}

// testWebhookRedeliver: a delivery that succeeded or failed is pending
// again, due at once, its attempts from 0 and its id kept; a pending one is
// refused, and so is a delivery of another webhook.
func testWebhookRedeliver(t *testing.T, s *suite) {
	a := s.automation(t, "a1")
	hook := of(s.st.CreateWebhook(s.ctx, store.Webhook{OrganizationID: "acme", WorkspaceID: "ops", URL: "http://127.0.0.1:1/a", Runs: true, Secret: "s1"})).must(t)
	other := of(s.st.CreateWebhook(s.ctx, store.Webhook{OrganizationID: "acme", WorkspaceID: "ops", URL: "http://127.0.0.1:1/b", Exceptions: true, Secret: "s2"})).must(t)
	s.run(t, a, "")
	now := s.clock.Peek().Add(time.Hour)
	claimed := of(s.st.ClaimWebhookDeliveries(s.ctx, now, time.Minute, 100)).must(t)
	if len(claimed) == 0 {
		t.Fatal("no delivery to redeliver")
	}
	d := claimed[0]
	_, err := s.st.RedeliverWebhookDelivery(s.ctx, "acme", "ops", hook.ID, d.ID)
	wantErr(t, err, store.ErrFailedPrecondition, "redeliver a pending delivery")
	noErr(t, s.st.FinishWebhookAttempt(s.ctx, d.ID, store.WebhookAttempt{State: store.DeliveryFailed, StatusCode: 500, Error: "HTTP 500"}))
	got := of(s.st.RedeliverWebhookDelivery(s.ctx, "acme", "ops", hook.ID, d.ID)).must(t)
	if got.ID != d.ID || got.State != store.DeliveryPending || got.Attempts != 0 || got.EventType != d.EventType || got.RunID != d.RunID {
		t.Errorf("redelivered: %+v, from %+v", got, d)
	}
	if again := of(s.st.ClaimWebhookDeliveries(s.ctx, s.clock.Peek().Add(time.Second), time.Minute, 100)).must(t); len(again) != 1 || again[0].ID != d.ID {
		t.Errorf("the redelivered delivery is not due at once: %+v", again)
	}
	_, err = s.st.RedeliverWebhookDelivery(s.ctx, "acme", "ops", other.ID, d.ID)
	wantErr(t, err, store.ErrNotFound, "redeliver through another webhook")
	_, err = s.st.RedeliverWebhookDelivery(s.ctx, "acme", "ops", hook.ID, "nope")
	wantErr(t, err, store.ErrNotFound, "redeliver an unknown delivery")
}

// testWebhookOutboxCreateRuns: the runs of one CreateRuns batch (one
// statement on PostgreSQL) write one delivery each per webhook of their
// workspace that takes runs, in the state each was created in; none for a
// webhook of exceptions only, none in a workspace without webhooks.
func testWebhookOutboxCreateRuns(t *testing.T, s *suite) {
	a := s.automation(t, "a1")
	s.ws(t, "acme", "other", "Other")
	s.ws(t, "acme", "quiet", "Quiet")
	b := of(s.st.CreateAutomation(s.ctx, store.Automation{OrganizationID: "acme", WorkspaceID: "other", ID: "b1", DisplayName: "B", Code: "the output x is 1\n"})).must(t)
	q := of(s.st.CreateAutomation(s.ctx, store.Automation{OrganizationID: "acme", WorkspaceID: "quiet", ID: "q1", DisplayName: "Q", Code: "the output x is 1\n"})).must(t)
	runsHook := of(s.st.CreateWebhook(s.ctx, store.Webhook{OrganizationID: "acme", WorkspaceID: "ops", URL: "http://127.0.0.1:1/a", Runs: true, Secret: "s1"})).must(t)
	excHook := of(s.st.CreateWebhook(s.ctx, store.Webhook{OrganizationID: "acme", WorkspaceID: "ops", URL: "http://127.0.0.1:1/b", Exceptions: true, Secret: "s2"})).must(t)
	otherHook := of(s.st.CreateWebhook(s.ctx, store.Webhook{OrganizationID: "acme", WorkspaceID: "other", URL: "http://127.0.0.1:1/c", Runs: true, Secret: "s3"})).must(t)
	mk := func(a store.Automation, req string, state store.RunState) store.Run {
		r := store.Run{OrganizationID: a.OrganizationID, WorkspaceID: a.WorkspaceID, AutomationID: a.ID, Stage: store.StageDraft, StageVersion: a.Version, RequestID: req}
		if state == store.RunCompleted {
			r.State, r.Outputs, r.Step = state, []byte(`{}`), 1
		}
		return r
	}
	runs, created, errs, err := s.st.CreateRuns(s.ctx, []store.Run{
		mk(a, "w-1", store.RunCompleted), mk(b, "w-2", store.RunPending), mk(a, "w-3", store.RunPending), mk(q, "w-4", store.RunCompleted),
	})
	noErr(t, err)
	for i := range runs {
		if !created[i] || errs[i] != nil {
			t.Fatalf("run %d: created %v, %v", i, created[i], errs[i])
		}
	}
	got := func(ws, hook string) map[string]string {
		out := map[string]string{}
		for _, d := range of(s.st.ListWebhookDeliveries(s.ctx, "acme", ws, hook, 100, "")).must(t).Items {
			if d.EventType != store.EventRunStateChanged {
				t.Errorf("delivery of webhook %s: %+v", hook, d)
			}
			out[d.RunID] = d.ResourceState
		}
		return out
	}
	if d := got("ops", runsHook.ID); len(d) != 2 || d[runs[0].ID] != string(runs[0].State) || d[runs[2].ID] != string(store.RunPending) {
		t.Errorf("deliveries of the runs webhook: %v, want %s %s and %s pending", d, runs[0].ID, runs[0].State, runs[2].ID)
	}
	if d := got("ops", excHook.ID); len(d) != 0 {
		t.Errorf("deliveries of the exceptions webhook: %v", d)
	}
	if d := got("other", otherHook.ID); len(d) != 1 || d[runs[1].ID] != string(store.RunPending) {
		t.Errorf("deliveries of the other workspace's webhook: %v", d)
	}
	// A request id already used (before the batch, or earlier in it)
	// creates nothing and writes no delivery; an unknown automation
	// neither.
	again, created, errs, err := s.st.CreateRuns(s.ctx, []store.Run{
		mk(a, "w-1", store.RunCompleted), mk(a, "w-5", store.RunPending), mk(a, "w-5", store.RunPending),
		mk(store.Automation{OrganizationID: "acme", WorkspaceID: "ops", ID: "nope", Version: 1}, "w-6", store.RunPending),
	})
	noErr(t, err)
	if created[0] || again[0].ID != runs[0].ID || !created[1] || created[2] || again[2].ID != again[1].ID || errs[3] == nil {
		t.Fatalf("second batch: created %v, errs %v, ids %s %s %s (first batch's w-1: %s)", created, errs, again[0].ID, again[1].ID, again[2].ID, runs[0].ID)
	}
	if d := got("ops", runsHook.ID); len(d) != 3 || d[again[1].ID] != string(store.RunPending) {
		t.Errorf("deliveries of the runs webhook after the second batch: %v, want 3 (one more: %s pending)", d, again[1].ID)
	}
	if n := len(of(s.st.ClaimWebhookDeliveries(s.ctx, s.clock.Peek().Add(time.Hour), time.Minute, 100)).must(t)); n != 4 {
		t.Errorf("claimed %d deliveries, want 4 (none for the workspace without webhooks)", n)
	}
}

// testWebhookLimit: a workspace has at most MaxWebhooksPerWorkspace
// webhooks; another workspace is not counted; deleting one frees a place.
func testWebhookLimit(t *testing.T, s *suite) {
	s.org(t, "acme")
	s.ws(t, "acme", "w1", "One")
	s.ws(t, "acme", "w2", "Two")
	var first store.Webhook
	for i := range store.MaxWebhooksPerWorkspace {
		w := of(s.st.CreateWebhook(s.ctx, store.Webhook{OrganizationID: "acme", WorkspaceID: "w1", URL: "https://x.example/" + strconv.Itoa(i), Runs: true, Secret: "s"})).must(t)
		if i == 0 {
			first = w
		}
	}
	_, err := s.st.CreateWebhook(s.ctx, store.Webhook{OrganizationID: "acme", WorkspaceID: "w1", URL: "https://x.example/over", Runs: true, Secret: "s"})
	wantErr(t, err, store.ErrResourceExhausted, "one webhook over the limit")
	of(s.st.CreateWebhook(s.ctx, store.Webhook{OrganizationID: "acme", WorkspaceID: "w2", URL: "https://x.example/w2", Runs: true, Secret: "s"})).must(t)
	noErr(t, s.st.DeleteWebhook(s.ctx, "acme", "w1", first.ID))
	of(s.st.CreateWebhook(s.ctx, store.Webhook{OrganizationID: "acme", WorkspaceID: "w1", URL: "https://x.example/again", Runs: true, Secret: "s"})).must(t)
}

// testWebhookOutbox: every run and exception state change writes one
// delivery per subscribed webhook of the workspace; deliveries are claimed
// under a lease, retried, finished and listed newest first.
func testWebhookOutbox(t *testing.T, s *suite) {
	a := s.automation(t, "a1")
	s.ws(t, "acme", "other", "Other")
	both := of(s.st.CreateWebhook(s.ctx, store.Webhook{OrganizationID: "acme", WorkspaceID: "ops", URL: "http://127.0.0.1:1/a", Runs: true, Exceptions: true, Secret: "s1"})).must(t)
	exc := of(s.st.CreateWebhook(s.ctx, store.Webhook{OrganizationID: "acme", WorkspaceID: "ops", URL: "http://127.0.0.1:1/b", Exceptions: true, Secret: "s2", DisplayName: "exceptions"})).must(t)
	of(s.st.CreateWebhook(s.ctx, store.Webhook{OrganizationID: "acme", WorkspaceID: "other", URL: "http://127.0.0.1:1/c", Runs: true, Secret: "s3"})).must(t)
	_, err := s.st.CreateWebhook(s.ctx, store.Webhook{OrganizationID: "acme", WorkspaceID: "nope", URL: "u", Secret: "s"})
	wantErr(t, err, store.ErrNotFound, "webhook of an unknown workspace")
	if g := of(s.st.GetWebhook(s.ctx, "acme", "ops", exc.ID)).must(t); g.Secret != "s2" || g.Runs || !g.Exceptions || g.DisplayName != "exceptions" {
		t.Errorf("get: %+v", g)
	}
	if l := of(s.st.ListWebhooks(s.ctx, "acme", "ops")).must(t); len(l) != 2 || l[0].ID != exc.ID {
		t.Errorf("list (newest first) = %+v", l)
	}

	// pending → executing → awaiting_guidance with a PENDING exception.
	r, x := s.exception(t, a, "g", "What is the total?")
	all := func(webhook string) []store.WebhookDelivery {
		var out []store.WebhookDelivery
		tok := ""
		for {
			p := of(s.st.ListWebhookDeliveries(s.ctx, "acme", "ops", webhook, 2, tok)).must(t)
			out = append(out, p.Items...)
			if tok = p.NextPageToken; tok == "" {
				return out
			}
		}
	}
	got := all(both.ID)
	var runStates, excStates []string
	for i, d := range got {
		if i > 0 && d.CreateTime.After(got[i-1].CreateTime) {
			t.Errorf("deliveries not newest first: %+v", got)
		}
		if d.State != store.DeliveryPending || d.Attempts != 0 || d.RunID != r.ID || d.AutomationID != a.ID {
			t.Errorf("delivery: %+v", d)
		}
		switch d.EventType {
		case store.EventRunStateChanged:
			runStates = append(runStates, d.ResourceState)
		case store.EventExceptionStateChanged:
			excStates = append(excStates, d.ResourceState)
			if d.ExceptionID != x.ID {
				t.Errorf("exception delivery: %+v", d)
			}
		}
	}
	sort.Strings(runStates)
	if len(runStates) != 3 || runStates[0] != "awaiting_guidance" || runStates[1] != "executing" || runStates[2] != "pending" || len(excStates) != 1 {
		t.Errorf("run states %v, exception states %v", runStates, excStates)
	}
	if e := all(exc.ID); len(e) != 1 || e[0].EventType != store.EventExceptionStateChanged || e[0].ResourceState != string(store.ExceptionPending) {
		t.Errorf("exception-only webhook: %+v", e)
	}

	// Claims: once each under a lease.
	now := s.clock.Peek().Add(time.Hour)
	claimed := of(s.st.ClaimWebhookDeliveries(s.ctx, now, time.Minute, 100)).must(t)
	if len(claimed) != 5 { // 4 (both) + 1 (exceptions only); the other workspace had no event
		t.Fatalf("claimed %d deliveries, want 5", len(claimed))
	}
	if again := of(s.st.ClaimWebhookDeliveries(s.ctx, now, time.Minute, 100)).must(t); len(again) != 0 {
		t.Errorf("claimed leased deliveries again: %d", len(again))
	}
	// A claimed delivery's sequence is its rank among its run's deliveries
	// to its webhook, in the order they were written.
	byHook := map[string][]store.WebhookDelivery{}
	firstSeq := map[string]int{}
	for _, d := range claimed {
		byHook[d.WebhookID] = append(byHook[d.WebhookID], d)
		firstSeq[d.ID] = d.Sequence
	}
	for hook, ds := range byHook {
		sort.Slice(ds, func(i, j int) bool {
			if !ds[i].CreateTime.Equal(ds[j].CreateTime) {
				return ds[i].CreateTime.Before(ds[j].CreateTime)
			}
			return ds[i].ID < ds[j].ID
		})
		for i, d := range ds {
			if d.Sequence != i+1 {
				t.Errorf("webhook %s: delivery %d of the run (%s %s) has sequence %d", hook, i+1, d.EventType, d.ResourceState, d.Sequence)
			}
		}
	}
	noErr(t, s.st.FinishWebhookAttempt(s.ctx, claimed[0].ID, store.WebhookAttempt{State: store.DeliverySucceeded, StatusCode: 204}))
	noErr(t, s.st.FinishWebhookAttempt(s.ctx, claimed[1].ID, store.WebhookAttempt{State: store.DeliveryPending, StatusCode: 500, Error: "HTTP 500",
		NextAttemptTime: now.Add(10 * time.Second)}))
	noErr(t, s.st.FinishWebhookAttempt(s.ctx, claimed[2].ID, store.WebhookAttempt{State: store.DeliveryFailed, Error: "refused"}))
	wantErr(t, s.st.FinishWebhookAttempt(s.ctx, "nope", store.WebhookAttempt{State: store.DeliveryFailed}), store.ErrNotFound, "finish unknown")
	// After the lease: the two never finished, and the retried one once due.
	c := of(s.st.ClaimWebhookDeliveries(s.ctx, now.Add(2*time.Minute), time.Minute, 100)).must(t)
	if len(c) != 3 {
		t.Errorf("claimed %d after the lease, want 3 (2 unfinished + 1 retried)", len(c))
	}
	for _, d := range c {
		if d.Sequence != firstSeq[d.ID] {
			t.Errorf("delivery %s claimed again has sequence %d, first %d", d.ID, d.Sequence, firstSeq[d.ID])
		}
	}
	var retried store.WebhookDelivery
	for _, d := range append(all(both.ID), all(exc.ID)...) {
		if d.ID == claimed[1].ID {
			retried = d
		}
	}
	if retried.Attempts != 1 || retried.LastStatusCode != 500 || retried.LastError != "HTTP 500" || retried.State != store.DeliveryPending {
		t.Errorf("retried delivery: %+v", retried)
	}

	noErr(t, s.st.DeleteWebhook(s.ctx, "acme", "ops", exc.ID))
	wantErr(t, s.st.DeleteWebhook(s.ctx, "acme", "ops", exc.ID), store.ErrNotFound, "delete twice")
	if d := all(exc.ID); len(d) != 0 {
		t.Errorf("deliveries of a deleted webhook: %d", len(d))
	}
}
