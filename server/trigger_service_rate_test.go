package server

import (
	"context"
	"testing"
	"time"

	"github.com/proserun/prose/store"
)

// A message over its instance's rate waits for its turn, and is handed
// back when its turn comes after its deadline; instances have buckets of
// their own; a negative rate is no bound.
func TestTriggerRatesWait(t *testing.T) {
	r := newTriggerRates(TriggerRate{PerSecond: 0.01, Burst: 1})
	a := store.TriggerInstance{OrganizationID: "o", WorkspaceID: "w", ID: "a"}
	b := store.TriggerInstance{OrganizationID: "o", WorkspaceID: "w", ID: "b"}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := r.wait(ctx, a); err != nil {
		t.Fatalf("the first message: %v", err)
	}
	if err := r.wait(ctx, a); err == nil {
		t.Fatal("a second message of a within its deadline, at 0.01 a second")
	}
	if !r.allow(b) || r.allow(b) {
		t.Fatal("b's bucket: want one event, then none")
	}
	if none := newTriggerRates(TriggerRate{PerSecond: -1}); none != nil || !none.allow(a) || none.wait(ctx, a) != nil {
		t.Fatal("a negative rate bounds nothing")
	}
}
