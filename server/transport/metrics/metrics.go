// Package metrics is the chain's metrics entry: per-method counters and
// handling-time histograms, the series of grpcprom.ServerMetrics, counted
// with less work per call.
package metrics

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	grpcprom "github.com/grpc-ecosystem/go-grpc-middleware/providers/prometheus"
	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/proserun/prose/server/transport"
	"google.golang.org/grpc/codes"
)

// rpcMetrics are the per-RPC metrics of grpcprom.ServerMetrics with its
// handling time histogram (grpcprom.WithServerHandlingTimeHistogram): the
// same series, with the same names, help, labels and buckets, counted at
// the same points of a call (go-grpc-middleware's reporting interceptors
// drive it). grpcprom's reporter finds every series of a call by its label
// values (hashing them, locking the vector) on every call, 5 lookups for
// a unary call; rpcMetrics finds each method's series once, the first time
// it counts in them, and then only increments them. A series appears when
// grpcprom's would, at its first count (none is made at 0 beforehand).
type rpcMetrics struct {
	started, handled, received, sent *prometheus.CounterVec
	handling                         *prometheus.HistogramVec

	mu      sync.Mutex
	methods atomic.Pointer[map[methodKey]*methodReporter] // copied on write
}

type methodKey struct {
	typ             interceptors.GRPCType
	service, method string
}

var _ interceptors.ServerReportable = (*rpcMetrics)(nil)

func newRPCMetrics() *rpcMetrics {
	labels := []string{"grpc_type", "grpc_service", "grpc_method"}
	return &rpcMetrics{
		handling: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "grpc_server_handling_seconds",
			Help:    "Histogram of response latency (seconds) of gRPC that had been application-level handled by the server.",
			Buckets: prometheus.DefBuckets,
		}, labels),
		started: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "grpc_server_started_total",
			Help: "Total number of RPCs started on the server.",
		}, labels),
		handled: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "grpc_server_handled_total",
			Help: "Total number of RPCs completed on the server, regardless of success or failure.",
		}, append(labels[:3:3], "grpc_code")),
		received: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "grpc_server_msg_received_total",
			Help: "Total number of RPC stream messages received on the server.",
		}, labels),
		sent: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "grpc_server_msg_sent_total",
			Help: "Total number of gRPC stream messages sent by the server.",
		}, labels),
	}
}

// Describe implements prometheus.Collector, as grpcprom.ServerMetrics.
func (m *rpcMetrics) Describe(ch chan<- *prometheus.Desc) {
	m.started.Describe(ch)
	m.handled.Describe(ch)
	m.received.Describe(ch)
	m.sent.Describe(ch)
	m.handling.Describe(ch)
}

// Collect implements prometheus.Collector, as grpcprom.ServerMetrics.
func (m *rpcMetrics) Collect(ch chan<- prometheus.Metric) {
	m.started.Collect(ch)
	m.handled.Collect(ch)
	m.received.Collect(ch)
	m.sent.Collect(ch)
	m.handling.Collect(ch)
}

// ServerReporter implements interceptors.ServerReportable: the call's
// method's reporter, its start counted.
func (m *rpcMetrics) ServerReporter(ctx context.Context, meta interceptors.CallMeta) (interceptors.Reporter, context.Context) {
	k := methodKey{meta.Typ, meta.Service, meta.Method}
	var r *methodReporter
	if p := m.methods.Load(); p != nil {
		r = (*p)[k]
	}
	if r == nil {
		r = m.reporter(k)
	}
	r.started.get(r).Inc()
	return r, ctx
}

// reporter returns the reporter of k, made the first time.
func (m *rpcMetrics) reporter(k methodKey) *methodReporter {
	m.mu.Lock()
	defer m.mu.Unlock()
	old := map[methodKey]*methodReporter{}
	if p := m.methods.Load(); p != nil {
		old = *p
	}
	if r := old[k]; r != nil {
		return r
	}
	r := &methodReporter{m: m, labels: [3]string{string(k.typ), k.service, k.method}}
	r.started.vec, r.received.vec, r.sent.vec = m.started, m.received, m.sent
	next := make(map[methodKey]*methodReporter, len(old)+1)
	for k, v := range old {
		next[k] = v
	}
	next[k] = r
	m.methods.Store(&next)
	return r
}

// methodReporter counts the calls of one method (of one type): an
// interceptors.Reporter shared by them.
type methodReporter struct {
	m                       *rpcMetrics
	labels                  [3]string
	started, received, sent lazyCounter
	handling                atomic.Pointer[prometheus.Observer]
	// handled holds the handled counter of each code (codes.OK through
	// codes.Unauthenticated); another code is looked up each time.
	handled [codes.Unauthenticated + 1]atomic.Pointer[prometheus.Counter]
}

// lazyCounter is a series of a vector, looked up at its first count.
type lazyCounter struct {
	vec *prometheus.CounterVec
	c   atomic.Pointer[prometheus.Counter]
}

func (l *lazyCounter) get(r *methodReporter) prometheus.Counter {
	if c := l.c.Load(); c != nil {
		return *c
	}
	c := l.vec.WithLabelValues(r.labels[:]...)
	l.c.Store(&c)
	return c
}

// PostCall counts the call handled with its code (grpcprom.FromError, as
// grpcprom: a context error is its status) and observes its duration.
func (r *methodReporter) PostCall(err error, d time.Duration) {
	code := grpcprom.FromError(err).Code()
	var c prometheus.Counter
	if code <= codes.Unauthenticated {
		if p := r.handled[code].Load(); p != nil {
			c = *p
		} else {
			c = r.m.handled.WithLabelValues(r.labels[0], r.labels[1], r.labels[2], code.String())
			r.handled[code].Store(&c)
		}
	} else {
		c = r.m.handled.WithLabelValues(r.labels[0], r.labels[1], r.labels[2], code.String())
	}
	c.Inc()
	h := r.handling.Load()
	if h == nil {
		o := r.m.handling.WithLabelValues(r.labels[:]...)
		r.handling.Store(&o)
		h = &o
	}
	(*h).Observe(d.Seconds())
}

// PostMsgSend counts a message sent (not one whose send failed).
func (r *methodReporter) PostMsgSend(_ any, err error, _ time.Duration) {
	if err == nil {
		r.sent.get(r).Inc()
	}
}

// PostMsgReceive counts a message received (not a failed receive).
func (r *methodReporter) PostMsgReceive(_ any, err error, _ time.Duration) {
	if err == nil {
		r.received.get(r).Inc()
	}
}

func serverMetrics(reg prometheus.Registerer) *rpcMetrics {
	if reg == nil {
		reg = prometheus.DefaultRegisterer
	}
	m := newRPCMetrics()
	if err := reg.Register(m); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(*rpcMetrics); ok {
				return existing
			}
		}
		// Some other collector clashes: keep counting, unexported.
		return m
	}
	return m
}

// Name is the entry's name in the chain.
const Name = "metrics"

// Middleware is the metrics entry, its collector registered with reg
// (nil: prometheus.DefaultRegisterer; one already registered there is
// reused, as when several servers share a process in tests).
func Middleware(reg prometheus.Registerer) transport.Middleware {
	m := serverMetrics(reg)
	return transport.Middleware{Name: Name, Unary: interceptors.UnaryServerInterceptor(m), Stream: interceptors.StreamServerInterceptor(m)}
}
