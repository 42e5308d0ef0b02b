package server

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/proserun/prose/store"
)

// brokerSub is a subscription a broker holds for a trigger instance, made
// by subscribe (message_nats.go, message_amqp.go, message_mqtt.go).
type brokerSub struct {
	// lost receives why the subscription ended on the broker's side (its
	// connection closed, its consumer, queue or session gone): it is made
	// again. Buffered: fail never blocks.
	lost chan error
	// connected tells whether the client is connected now (nil: always,
	// until lost); NATS reconnects by itself and is down meanwhile.
	connected func() bool
	// close ends the subscription once the message being handled is
	// finished and acknowledged; the messages taken but not handled go
	// back to the broker. forget: the instance is gone, so what Prose
	// made for it on the broker goes too (a JetStream consumer, an MQTT
	// subscription).
	close func(forget bool)
}

func newBrokerSub() *brokerSub { return &brokerSub{lost: make(chan error, 1)} }

// fail reports the subscription lost (the first report counts).
func (b *brokerSub) fail(err error) {
	select {
	case b.lost <- err:
	default:
	}
}

// messageSub supervises the subscription of one instance on this replica:
// it subscribes, and subscribes again whenever the subscription is lost or
// could not be made, with a backoff, until cancelled.
type messageSub struct {
	key, fingerprint string
	inst             store.TriggerInstance
	cancel           context.CancelFunc
	// forget is set before cancel when the instance is gone.
	forget atomic.Bool
	// first gets the result of the first try; done is closed when the
	// supervisor has closed its subscription and returned.
	first chan error
	done  chan struct{}
	// live is the subscription while it holds (nil while it is being
	// made again).
	live atomic.Pointer[brokerSub]
}

// Backoff between tries to subscribe: from resubscribeMin, doubled to at
// most resubscribeMax, so a broker back after a restart is followed
// within resubscribeMax.
const (
	resubscribeMin = 250 * time.Millisecond
	resubscribeMax = 4 * time.Second
	// failureLogEvery spaces the log lines of a broker that stays
	// unreachable (the first failure of a streak is logged at once).
	failureLogEvery = time.Minute
)

// startSub starts the supervisor of inst's subscription.
func (m *MessageTriggers) startSub(inst store.TriggerInstance) *messageSub {
	ctx, cancel := context.WithCancel(context.Background())
	s := &messageSub{key: instanceKey(inst), fingerprint: fingerprint(inst), inst: inst, cancel: cancel,
		first: make(chan error, 1), done: make(chan struct{})}
	go m.supervise(ctx, s)
	return s
}

func (m *MessageTriggers) supervise(ctx context.Context, s *messageSub) {
	defer close(s.done)
	log := m.logger.With("instance", s.inst.ID, "organization", s.inst.OrganizationID, "workspace", s.inst.WorkspaceID, "broker", s.inst.BookName)
	wait := time.Duration(0)
	first, lostOnce := true, false
	var loggedAt time.Time // the last "cannot subscribe" logged, in this streak of failures
	for ctx.Err() == nil {
		sub, err := m.subscribe(ctx, s.inst)
		if first {
			s.first <- err
			first = false
		}
		if err != nil {
			m.setFailure(s.key, err)
			if time.Since(loggedAt) >= failureLogEvery {
				log.Warn("message trigger: cannot subscribe; trying again", "err", err)
				loggedAt = time.Now()
			}
			wait = min(max(2*wait, resubscribeMin), resubscribeMax)
			select {
			case <-ctx.Done():
			case <-time.After(wait):
			}
			continue
		}
		m.setFailure(s.key, nil)
		if lostOnce {
			log.Info("message trigger: subscription re-established")
		} else {
			log.Info("message trigger: subscribed")
		}
		wait, loggedAt = 0, time.Time{}
		s.live.Store(sub)
		select {
		case err := <-sub.lost:
			s.live.Store(nil)
			lostOnce = true
			m.setFailure(s.key, fmt.Errorf("subscription lost (being made again): %w", err))
			log.Warn("message trigger: subscription lost; making it again", "err", err)
			sub.close(false)
		case <-ctx.Done():
			s.live.Store(nil)
			sub.close(s.forget.Load())
		}
	}
	if first {
		s.first <- ctx.Err()
	}
}

// up tells whether the instance's subscription holds and its client is
// connected.
func (s *messageSub) up() bool {
	b := s.live.Load()
	return b != nil && (b.connected == nil || b.connected())
}

// subscribeFailures records why instances of this replica have no
// subscription (key: org/ws/id), for their status; nil error: subscribed.
func (m *MessageTriggers) setFailure(key string, err error) {
	m.failMu.Lock()
	defer m.failMu.Unlock()
	if m.failures == nil {
		m.failures = map[string]string{}
	}
	if err == nil {
		delete(m.failures, key)
		return
	}
	m.failures[key] = err.Error()
}

// Failure tells why this replica has no subscription for instance id of
// workspace ws of org ("refused: not a public address", a broker that
// cannot be reached, a subscription lost and being made again, a client
// reconnecting, …); false while it is subscribed and connected, or not
// tried yet.
func (m *MessageTriggers) Failure(org, ws, id string) (string, bool) {
	key := org + "/" + ws + "/" + id
	m.failMu.Lock()
	why, ok := m.failures[key]
	m.failMu.Unlock()
	if ok {
		return why, true
	}
	m.mu.Lock()
	s := m.subs[key]
	m.mu.Unlock()
	if s != nil && s.live.Load() != nil && !s.up() {
		return "the connection to the broker is down; reconnecting", true
	}
	return "", false
}

// subscriptionUp is the gauge prose_trigger_subscription_up.
var subscriptionUp = prometheus.NewDesc("prose_trigger_subscription_up",
	"1 while this replica's subscription of a message trigger instance holds and its broker connection is up, 0 while it is being made (again).",
	[]string{"organization", "workspace", "trigger", "broker"}, nil)

// Describe and Collect make m a prometheus.Collector: one
// prose_trigger_subscription_up per instance this replica follows.
func (m *MessageTriggers) Describe(ch chan<- *prometheus.Desc) { ch <- subscriptionUp }

// Collect sends the gauge of every instance this replica follows.
func (m *MessageTriggers) Collect(ch chan<- prometheus.Metric) {
	m.mu.Lock()
	subs := make([]*messageSub, 0, len(m.subs))
	for _, s := range m.subs {
		subs = append(subs, s)
	}
	m.mu.Unlock()
	for _, s := range subs {
		v := 0.0
		if s.up() {
			v = 1
		}
		ch <- prometheus.MustNewConstMetric(subscriptionUp, prometheus.GaugeValue, v, s.inst.OrganizationID, s.inst.WorkspaceID, s.inst.ID, s.inst.BookName)
	}
}
