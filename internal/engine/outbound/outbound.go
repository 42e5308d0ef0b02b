// Package outbound delivers the run and exception events of a workspace to
// its webhooks. The store writes one delivery per event and subscribed
// webhook in the transaction of the change (an outbox); a Dispatcher on
// every replica claims due deliveries under a lease, POSTs them signed
// with HMAC-SHA256, and retries failures with exponential backoff. A run
// never waits for a receiver.
package outbound

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/proserun/prose/internal/names"
	"github.com/proserun/prose/internal/netguard"
	"github.com/proserun/prose/internal/webhooksig"
	"github.com/proserun/prose/store"
)

// Headers of a delivery.
const (
	SignatureHeader = webhooksig.Header  // "t=<unix>,v1=<hex HMAC-SHA256 of t.delivery.body>" under the webhook's secret
	DeliveryHeader  = "X-Prose-Delivery" // the delivery id: the same on every attempt (receivers dedupe on it)
	EventHeader     = "X-Prose-Event"    // the event type
)

// Defaults of Options.
const (
	DefaultMaxAttempts = 10
	DefaultBaseBackoff = time.Second
	DefaultMaxBackoff  = time.Hour
	DefaultTimeout     = 10 * time.Second
)

// Options configures a Dispatcher.
type Options struct {
	Now func() time.Time
	// Poll is the longest wait between two looks at the outbox (default 1s).
	Poll time.Duration
	// Lease is how long a claimed delivery is this dispatcher's (default
	// twice Timeout); a replica that dies mid-attempt gives it up then.
	Lease time.Duration
	// Timeout bounds one attempt (default 10s).
	Timeout time.Duration
	// MaxAttempts: a delivery failing this many times is failed (default 10).
	MaxAttempts int
	// BaseBackoff and MaxBackoff: attempt n waits BaseBackoff·2^(n-1), at
	// most MaxBackoff, after failure n (defaults 1s and 1h).
	BaseBackoff, MaxBackoff time.Duration
	// Concurrency bounds the attempts in flight (default 8); Batch the
	// deliveries one pass claims (default 64).
	Concurrency, Batch int
	Client             *http.Client
	Logger             *slog.Logger
}

// Dispatcher delivers due deliveries.
type Dispatcher struct {
	st   store.Webhooks
	opts Options
	wake chan struct{}
}

// New returns a dispatcher.
func New(st store.Webhooks, opts Options) *Dispatcher {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Poll <= 0 {
		opts.Poll = time.Second
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.Lease <= 0 {
		opts.Lease = 2 * opts.Timeout
	}
	if opts.MaxAttempts <= 0 {
		opts.MaxAttempts = DefaultMaxAttempts
	}
	if opts.BaseBackoff <= 0 {
		opts.BaseBackoff = DefaultBaseBackoff
	}
	if opts.MaxBackoff <= 0 {
		opts.MaxBackoff = DefaultMaxBackoff
	}
	if opts.Concurrency <= 0 {
		opts.Concurrency = 8
	}
	if opts.Batch <= 0 {
		opts.Batch = 64
	}
	if opts.Client == nil {
		// Every way out is made by netguard; serve passes a guarded one.
		opts.Client = netguard.HTTPClient(opts.Timeout, false)
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	return &Dispatcher{st: st, opts: opts, wake: make(chan struct{}, 1)}
}

// Wake makes a running dispatcher look at the outbox now.
func (d *Dispatcher) Wake() {
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// Run delivers until ctx ends.
func (d *Dispatcher) Run(ctx context.Context) {
	for {
		n, err := d.Tick(ctx)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			d.opts.Logger.Warn("webhook deliveries", "err", err)
		}
		if n == d.opts.Batch {
			continue
		}
		timer := time.NewTimer(d.opts.Poll)
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-d.wake:
			timer.Stop()
		case <-timer.C:
		}
	}
}

// Tick claims the due deliveries, attempts each once, and records the
// outcomes. It returns how many it claimed.
func (d *Dispatcher) Tick(ctx context.Context) (int, error) {
	claimed, err := d.st.ClaimWebhookDeliveries(ctx, d.opts.Now(), d.opts.Lease, d.opts.Batch)
	if err != nil || len(claimed) == 0 {
		return 0, err
	}
	hooks := map[string]*store.Webhook{}
	var mu sync.Mutex
	var errs []error
	sem := make(chan struct{}, d.opts.Concurrency)
	var wg sync.WaitGroup
	for _, del := range claimed {
		key := del.OrganizationID + "/" + del.WorkspaceID + "/" + del.WebhookID
		w, ok := hooks[key]
		if !ok {
			got, err := d.st.GetWebhook(ctx, del.OrganizationID, del.WorkspaceID, del.WebhookID)
			if errors.Is(err, store.ErrNotFound) {
				continue // deleted meanwhile: its deliveries went with it
			}
			if err != nil {
				return len(claimed), err
			}
			w = &got
			hooks[key] = w
		}
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			a := d.attempt(ctx, *w, del)
			if err := d.st.FinishWebhookAttempt(ctx, del.ID, a); err != nil && !errors.Is(err, store.ErrNotFound) {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return len(claimed), errors.Join(errs...)
}

// attempt POSTs one delivery and says what follows.
func (d *Dispatcher) attempt(ctx context.Context, w store.Webhook, del store.WebhookDelivery) store.WebhookAttempt {
	body, err := json.Marshal(Payload(del))
	if err != nil {
		return store.WebhookAttempt{State: store.DeliveryFailed, Error: err.Error()}
	}
	status, err := d.post(ctx, w, del, body)
	if err == nil && status >= 200 && status < 300 {
		return store.WebhookAttempt{State: store.DeliverySucceeded, StatusCode: status}
	}
	msg := fmt.Sprintf("HTTP %d", status)
	if err != nil {
		msg = err.Error()
	}
	n := del.Attempts + 1
	if n >= d.opts.MaxAttempts {
		return store.WebhookAttempt{State: store.DeliveryFailed, StatusCode: status, Error: msg}
	}
	return store.WebhookAttempt{State: store.DeliveryPending, StatusCode: status, Error: msg, NextAttemptTime: d.opts.Now().Add(d.Backoff(n))}
}

// Backoff is the wait after failure n (1-based).
func (d *Dispatcher) Backoff(n int) time.Duration {
	b := d.opts.BaseBackoff
	for i := 1; i < n && b < d.opts.MaxBackoff; i++ {
		b *= 2
	}
	return min(b, d.opts.MaxBackoff)
}

func (d *Dispatcher) post(ctx context.Context, w store.Webhook, del store.WebhookDelivery, body []byte) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, d.opts.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.URL, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "prose-webhooks/1")
	// Each attempt is signed at its own time: a receiver refuses one
	// signed outside its tolerance (webhooksig.DefaultTolerance).
	req.Header.Set(SignatureHeader, webhooksig.Sign(w.Secret, d.opts.Now(), del.ID, body))
	req.Header.Set(DeliveryHeader, del.ID)
	req.Header.Set(EventHeader, del.EventType)
	resp, err := d.opts.Client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	return resp.StatusCode, nil
}

// Payload is the JSON body of a delivery: {"id", "type", "time",
// "workspace", "automation", "run", "state", "sequence"} and, for exception
// events, "exception" (resource names; state is the run's or exception's
// new one). Deliveries are concurrent and retried, so a run's events can
// arrive out of order: "sequence" numbers them per run and webhook from 1
// in the order they happened (store.WebhookDelivery.Sequence), for a
// receiver to put them back in order or drop a stale one.
func Payload(del store.WebhookDelivery) map[string]any {
	o, w := del.OrganizationID, del.WorkspaceID
	p := map[string]any{
		"id": del.ID, "type": del.EventType, "time": del.CreateTime.UTC().Format(time.RFC3339Nano),
		"workspace": names.Workspace(o, w), "automation": names.Automation(o, w, del.AutomationID),
		"run": names.Run(o, w, del.AutomationID, del.RunID), "state": del.ResourceState,
	}
	if del.Sequence > 0 {
		p["sequence"] = del.Sequence
	}
	if del.ExceptionID != "" {
		p["exception"] = names.Exception(o, w, del.ExceptionID)
	}
	return p
}
