package server

import (
	"context"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/proserun/prose/store"
)

// Default rate of the events one trigger instance starts runs for, on one
// replica (TriggerRate): 20 a second, in bursts of up to 200. Each event
// starts a run of each of the instance's automations (at most 100).
const (
	DefaultTriggerRate  = 20
	DefaultTriggerBurst = 200
)

// TriggerRate bounds the events of each trigger instance a replica takes:
// PerSecond on average, Burst at once. A webhook delivery over it is 429
// with Retry-After (the sender delivers again; a delivery starts its runs
// once); a message waits for its turn (the broker holds the next ones).
// Zero fields: the defaults; a negative PerSecond: no bound.
type TriggerRate struct {
	PerSecond float64
	Burst     int
	// Now is the clock webhook deliveries are counted on (nil: time.Now);
	// tests pass one they move by hand, so that the burst a test sends is
	// one burst however slowly the machine serves it. Messages wait for
	// their turn on the real clock.
	Now func() time.Time
}

// triggerRates keeps one token bucket per trigger instance.
type triggerRates struct {
	mu      sync.Mutex
	limit   rate.Limit
	burst   int
	now     func() time.Time
	buckets map[string]*rate.Limiter
}

// maxBuckets bounds the buckets kept; past it they start afresh (an
// instance gets a full burst again).
const maxBuckets = 10_000

func newTriggerRates(r TriggerRate) *triggerRates {
	if r.PerSecond == 0 {
		r.PerSecond = DefaultTriggerRate
	}
	if r.Burst <= 0 {
		r.Burst = DefaultTriggerBurst
	}
	if r.PerSecond < 0 {
		return nil
	}
	now := r.Now
	if now == nil {
		now = time.Now
	}
	return &triggerRates{limit: rate.Limit(r.PerSecond), burst: r.Burst, now: now, buckets: map[string]*rate.Limiter{}}
}

func (t *triggerRates) bucket(inst store.TriggerInstance) *rate.Limiter {
	key := inst.OrganizationID + "/" + inst.WorkspaceID + "/" + inst.ID
	t.mu.Lock()
	defer t.mu.Unlock()
	b, ok := t.buckets[key]
	if !ok {
		if len(t.buckets) >= maxBuckets {
			t.buckets = map[string]*rate.Limiter{}
		}
		b = rate.NewLimiter(t.limit, t.burst)
		t.buckets[key] = b
	}
	return b
}

// allow takes an event of inst now, or reports that it is over the rate
// (a nil triggerRates allows everything).
func (t *triggerRates) allow(inst store.TriggerInstance) bool {
	return t == nil || t.bucket(inst).AllowN(t.now(), 1)
}

// wait takes an event of inst, waiting for its turn until ctx ends.
func (t *triggerRates) wait(ctx context.Context, inst store.TriggerInstance) error {
	if t == nil {
		return nil
	}
	return t.bucket(inst).Wait(ctx)
}
