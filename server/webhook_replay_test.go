package server_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/proserun/prose/server"
	"github.com/proserun/prose/server/testenv"
)

// TestWebhookReplayRefused (issue 26, finding 4): the signature covers the
// time and the delivery id with the body, so a captured delivery sent again
// under a new X-Prose-Delivery is refused (401), one signed outside the
// tolerance window is refused (401, saying so), the old body-only form is
// refused, and the same delivery sent again starts no new run.
func TestWebhookReplayRefused(t *testing.T) {
	e := newTestEnv(t)
	a := e.MkAutomation(t, "Orders", "the output x is 1\n", false)
	_, endpoint, secret := e.webhookFixture(t, a.ID)
	body := `{"order":{"total":7}}`
	sig := server.SignWebhook(secret, time.Now(), "order-7", []byte(body))
	if code, m, raw := e.deliver(t, endpoint, secret, body, "order-7", sig); code != http.StatusAccepted || testenv.Field(m, "runs.0.created") != true {
		t.Fatalf("the first delivery: %d %s", code, raw)
	}
	// The same signature, replayed under new delivery ids: refused.
	for _, d := range []string{"order-8", "order-7-again"} {
		if code, _, raw := e.deliver(t, endpoint, secret, body, d, sig); code != http.StatusUnauthorized || !strings.Contains(raw, "does not match") {
			t.Errorf("replayed as %s: %d %s, want 401", d, code, raw)
		}
	}
	// Signed six minutes ago, correctly: outside the window.
	old := server.SignWebhook(secret, time.Now().Add(-6*time.Minute), "order-9", []byte(body))
	if code, _, raw := e.deliver(t, endpoint, secret, body, "order-9", old); code != http.StatusUnauthorized || !strings.Contains(raw, "within that window") {
		t.Errorf("signed 6 minutes ago: %d %s, want 401", code, raw)
	}
	// The body-only signature of before: refused.
	if code, _, raw := e.deliver(t, endpoint, secret, body, "order-10", "sha256="+strings.Repeat("0", 64)); code != http.StatusUnauthorized {
		t.Errorf("the old scheme: %d %s, want 401", code, raw)
	}
	// The same delivery again (a sender's retry): nothing new starts.
	if code, m, raw := e.deliver(t, endpoint, secret, body, "order-7", sig); code != http.StatusAccepted || testenv.Field(m, "runs.0.created") != false {
		t.Errorf("the same delivery again: %d %s, want no new run", code, raw)
	}
	if n := len(e.scheduledRuns(t, a.ID)); n != 1 {
		t.Errorf("%d runs, want 1", n)
	}
}
