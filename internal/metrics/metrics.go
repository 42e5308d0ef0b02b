// Package metrics counts Prose's work for Prometheus: runs started and how
// they end, their duration and queue wait, the queue's depth, busy workers,
// lease takeovers, exceptions raised, resolved and pending, book call
// latency. (The
// per-RPC counters and latencies are transport's, from go-grpc-middleware.)
//
// Label values are bounded: an automation is named by its id in the
// automation label for the first MaxAutomations automations seen by the
// process, later ones count under "other"; a book by its name for the first
// MaxBooks; exception kinds are the language's groups and resolvers the
// kind of principal ("user", "other"). Every method is safe on a nil *Work
// (no metrics), so the engine calls them unconditionally.
package metrics

import (
	"context"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Other is the label value of the automations (books) past the cap.
const Other = "other"

// DefaultMaxAutomations is Options.MaxAutomations's default.
const DefaultMaxAutomations = 100

// Options configures New.
type Options struct {
	// MaxAutomations automations get their own automation label value
	// (0: DefaultMaxAutomations; negative: none, every run counts under
	// "other").
	MaxAutomations int
	// MaxBooks books get their own book label value (0: 100).
	MaxBooks int
	// PendingRuns, when set, is read at each scrape for prose_runs_pending
	// (with a 2s timeout).
	PendingRuns func(ctx context.Context) (int64, error)
	// PendingExceptions, when set, is read at each scrape for
	// prose_exceptions_pending (with a 2s timeout); its label sets are
	// capped by MaxAutomations (capPending).
	PendingExceptions func(ctx context.Context) ([]PendingCount, error)
	// BusyWorkers and Workers, when set, are read at each scrape.
	BusyWorkers func() int64
	Workers     func() int
}

// Work holds the collectors. Register it with a prometheus.Registerer.
type Work struct {
	runsStarted   *prometheus.CounterVec
	runsEnded     *prometheus.CounterVec
	runDuration   *prometheus.HistogramVec
	queueWait     prometheus.Histogram
	takeovers     prometheus.Counter
	raised        *prometheus.CounterVec
	resolved      *prometheus.CounterVec
	bookCalls     *prometheus.HistogramVec
	automations   *capped
	books         *capped
	funcs         []prometheus.Collector
	pendingReader func(ctx context.Context) (int64, error)
}

// Outcomes of prose_runs_ended_total.
const (
	OutcomeCompleted        = "completed"
	OutcomeFailed           = "failed"
	OutcomeAwaitingGuidance = "awaiting_guidance"
)

// New makes the collectors and registers them with reg.
func New(reg prometheus.Registerer, opts Options) (*Work, error) {
	maxA := opts.MaxAutomations
	if maxA == 0 {
		maxA = DefaultMaxAutomations
	}
	maxB := opts.MaxBooks
	if maxB == 0 {
		maxB = 100
	}
	secs := []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600}
	w := &Work{
		runsStarted: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "prose_runs_started_total",
			Help: "Runs created, by automation (id; the first --metrics-automations automations, later ones as \"other\")."}, []string{"automation"}),
		runsEnded: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "prose_runs_ended_total",
			Help: "Runs that completed, failed or stopped to await guidance, by automation and outcome."}, []string{"automation", "outcome"}),
		runDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "prose_run_duration_seconds",
			Help: "Time from a run's creation to its completion or failure.", Buckets: secs}, []string{"outcome"}),
		queueWait: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "prose_run_queue_wait_seconds",
			Help: "Time from a run's creation to the start of its first execution.", Buckets: secs}),
		takeovers: prometheus.NewCounter(prometheus.CounterOpts{Name: "prose_lease_takeovers_total",
			Help: "Executing runs taken back to the queue because their worker's lease expired (a replica died or stalled)."}),
		raised: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "prose_exceptions_raised_total",
			Help: "Exceptions raised by runs (a run then awaits guidance), by kind."}, []string{"kind"}),
		resolved: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "prose_exceptions_resolved_total",
			Help: "Exceptions resolved, by kind and resolver (user: a person; other: a key without a user)."}, []string{"kind", "resolver"}),
		bookCalls: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "prose_book_call_duration_seconds",
			Help: "Latency of book calls made by runs (journaled answers excluded), by book and outcome.", Buckets: prometheus.DefBuckets}, []string{"book", "outcome"}),
		automations:   newCapped(maxA),
		books:         newCapped(maxB),
		pendingReader: opts.PendingRuns,
	}
	if opts.PendingRuns != nil {
		w.funcs = append(w.funcs, prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "prose_runs_pending",
			Help: "Runs waiting in the queue for a worker (all replicas)."}, w.pending))
	}
	if opts.PendingExceptions != nil {
		w.funcs = append(w.funcs, newPendingExceptions(opts.PendingExceptions, maxA))
	}
	if opts.BusyWorkers != nil {
		busy := opts.BusyWorkers
		w.funcs = append(w.funcs, prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "prose_workers_busy",
			Help: "Workers of this replica executing a run."}, func() float64 { return float64(busy()) }))
	}
	if opts.Workers != nil {
		n := opts.Workers
		w.funcs = append(w.funcs, prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "prose_workers",
			Help: "Workers of this replica (--workers)."}, func() float64 { return float64(n()) }))
	}
	for _, c := range append([]prometheus.Collector{w.runsStarted, w.runsEnded, w.runDuration, w.queueWait, w.takeovers, w.raised, w.resolved, w.bookCalls}, w.funcs...) {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return w, nil
}

func (w *Work) pending() float64 {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	n, err := w.pendingReader(ctx)
	if err != nil {
		return -1
	}
	return float64(n)
}

// RunStarted counts a run created.
func (w *Work) RunStarted(automation string) {
	if w == nil {
		return
	}
	w.runsStarted.WithLabelValues(w.automations.label(automation)).Inc()
}

// RunEnded counts a run's outcome; sinceCreate is observed for completed
// and failed runs.
func (w *Work) RunEnded(automation, outcome string, sinceCreate time.Duration) {
	if w == nil {
		return
	}
	w.runsEnded.WithLabelValues(w.automations.label(automation), outcome).Inc()
	if outcome != OutcomeAwaitingGuidance && sinceCreate >= 0 {
		w.runDuration.WithLabelValues(outcome).Observe(sinceCreate.Seconds())
	}
}

// QueueWait observes the wait of a run's first execution.
func (w *Work) QueueWait(d time.Duration) {
	if w == nil || d < 0 {
		return
	}
	w.queueWait.Observe(d.Seconds())
}

// LeaseTakeovers counts runs taken back from an expired lease
// (store.QueueStats.OnLeasesRecovered).
func (w *Work) LeaseTakeovers(n int64) {
	if w == nil {
		return
	}
	w.takeovers.Add(float64(n))
}

// ExceptionRaised counts an exception of kind (the language's group).
func (w *Work) ExceptionRaised(kind string) {
	if w == nil {
		return
	}
	w.raised.WithLabelValues(kindLabel(kind)).Inc()
}

// ExceptionResolved counts a resolution; resolver is the resolver's
// resource name ("users/…") or "".
func (w *Work) ExceptionResolved(kind, resolver string) {
	if w == nil {
		return
	}
	r := Other
	if strings.HasPrefix(resolver, "users/") {
		r = "user"
	}
	w.resolved.WithLabelValues(kindLabel(kind), r).Inc()
}

// BookCall observes a book call's latency.
func (w *Work) BookCall(book string, d time.Duration, err error) {
	if w == nil {
		return
	}
	outcome := "ok"
	if err != nil {
		outcome = "error"
	}
	w.bookCalls.WithLabelValues(w.books.label(book), outcome).Observe(d.Seconds())
}

// kindLabel keeps exception kinds (the language's groups, a short fixed
// set) to identifiers.
func kindLabel(k string) string {
	if k == "" || len(k) > 64 {
		return Other
	}
	return k
}

// capped admits the first max label values; later ones are Other.
type capped struct {
	max  int
	seen sync.Map // value → struct{}
	n    atomic.Int64
	mu   sync.Mutex
}

func newCapped(max int) *capped { return &capped{max: max} }

func (c *capped) label(v string) string {
	if v == "" || c.max < 0 {
		return Other
	}
	if _, ok := c.seen.Load(v); ok {
		return v
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.seen.Load(v); ok {
		return v
	}
	if c.n.Load() >= int64(c.max) {
		return Other
	}
	c.seen.Store(v, struct{}{})
	c.n.Add(1)
	return v
}

var fqName = regexp.MustCompile(`fqName: "([^"]+)"`)

// Names lists the metric families Work exports (those without a sample yet
// included).
func (w *Work) Names() []string {
	ch := make(chan *prometheus.Desc, 64)
	go func() {
		for _, c := range append([]prometheus.Collector{w.runsStarted, w.runsEnded, w.runDuration, w.queueWait, w.takeovers, w.raised, w.resolved, w.bookCalls}, w.funcs...) {
			c.Describe(ch)
		}
		close(ch)
	}()
	var out []string
	for d := range ch {
		if m := fqName.FindStringSubmatch(d.String()); m != nil {
			out = append(out, m[1])
		}
	}
	return out
}
