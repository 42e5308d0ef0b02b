package server

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/proserun/prose/store"
)

// JetStream consumers: what Prose asks of the consumers it makes, and how
// much of a burst one replica holds (the rest waits in the stream).
const (
	// natsPrefetch is the most messages one replica's subscription holds
	// taken but not yet handled (PullMaxMessages; fewer when the trigger
	// rate would keep them waiting past half of natsAckWait).
	natsPrefetch = 32
	// natsMaxAckPending bounds the messages handed out and not yet
	// acknowledged, over every replica (the consumer's MaxAckPending).
	natsMaxAckPending = 256
	// natsAckWait is how long a message handed out stays unacknowledged
	// before the stream hands it to another subscriber (that of a replica
	// killed is handed out again after it); while it is handled, its
	// clock is started again every third of it (InProgress).
	natsAckWait = 15 * time.Second
	// natsStreamMaxAge bounds how long a stream Prose made keeps a
	// message no consumer took.
	natsStreamMaxAge = 7 * 24 * time.Hour
)

// natsStreamName and natsConsumerName are the names of the stream and the
// durable consumer Prose makes for an instance when its configuration
// names none.
func natsStreamName(inst store.TriggerInstance) string   { return "prose-" + inst.ID }
func natsConsumerName(inst store.TriggerInstance) string { return "prose-" + inst.ID }

// natsMsgID names a NATS message: its Nats-Msg-Id header, else the SHA-256
// of its subject and payload.
func natsMsgID(h nats.Header, subject string, data []byte) string {
	id := h.Get(nats.MsgIdHdr)
	if id == "" || len(id) > 64 {
		id = payloadID([]byte(subject), data)
	}
	return id
}

func (m *MessageTriggers) subscribeNATS(ctx context.Context, inst store.TriggerInstance, cfg map[string]string) (*brokerSub, error) {
	b := newBrokerSub()
	// check asks for the consumer to be looked at: after a reconnection,
	// or when Consume reports trouble (the consumer or its stream may be
	// gone, e.g. a broker started again without its store).
	check := make(chan struct{}, 1)
	poke := func() {
		select {
		case check <- struct{}{}:
		default:
		}
	}
	closed := make(chan struct{})
	nc, err := nats.Connect(cfg["url"], nats.Name("prose"), nats.MaxReconnects(-1), nats.ReconnectWait(time.Second), m.natsOptions(),
		nats.ReconnectHandler(func(*nats.Conn) { poke() }), nats.ClosedHandler(func(*nats.Conn) { close(closed) }))
	if err != nil {
		return nil, err
	}
	b.connected = nc.IsConnected
	if cfg["delivery"] == NATSCore {
		return m.subscribeCoreNATS(nc, inst, cfg, b, closed)
	}
	cons, forget, err := m.jetStreamConsumer(ctx, nc, inst, cfg)
	if err != nil {
		nc.Close()
		return nil, err
	}
	var stopping atomic.Bool
	cc, err := cons.Consume(func(msg jetstream.Msg) {
		if stopping.Load() {
			_ = msg.Nak() // taken, not handled: back to the stream for another replica
			return
		}
		defer keepInProgress(msg)()
		if m.handle(inst, natsMsgID(msg.Headers(), msg.Subject(), msg.Data()), msg.Data()) {
			_ = msg.NakWithDelay(time.Second)
			return
		}
		_ = msg.Ack() // lost: the stream delivers it again, and its runs are found by request id
	}, m.natsPrefetch(), jetstream.PullExpiry(10*time.Second), jetstream.PullHeartbeat(2*time.Second),
		jetstream.ConsumeErrHandler(func(_ jetstream.ConsumeContext, err error) {
			if errors.Is(err, jetstream.ErrConsumerDeleted) || errors.Is(err, jetstream.ErrBadRequest) {
				b.fail(err) // Consume stops by itself
				return
			}
			poke()
		}))
	if err != nil {
		nc.Close()
		return nil, err
	}
	quit, checked := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(checked)
		for {
			select {
			case <-quit:
				return
			case <-check:
			}
			ictx, cancel := context.WithTimeout(ctx, 5*time.Second)
			_, err := cons.Info(ictx)
			cancel()
			if errors.Is(err, jetstream.ErrConsumerNotFound) || errors.Is(err, jetstream.ErrStreamNotFound) {
				b.fail(err)
				return
			}
		}
	}()
	b.close = func(forgetIt bool) {
		stopping.Store(true)
		close(quit)
		<-checked
		cc.Drain() // the messages held are handed back (Nak), the one being handled finishes
		select {
		case <-cc.Closed():
		case <-time.After(messageDeadline + 5*time.Second):
		}
		if forgetIt && forget != nil {
			fctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			forget(fctx)
			cancel()
		}
		nc.Close()
	}
	return b, nil
}

// keepInProgress tells the stream that msg is being handled, now and every
// third of natsAckWait until the returned function is called.
func keepInProgress(msg jetstream.Msg) (done func()) {
	_ = msg.InProgress()
	stop := make(chan struct{})
	go func() {
		t := time.NewTicker(natsAckWait / 3)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				_ = msg.InProgress()
			}
		}
	}()
	return func() { close(stop) }
}

// natsPrefetch is PullMaxMessages: natsPrefetch, or fewer when the
// trigger rate would keep the last one waiting past half of natsAckWait.
func (m *MessageTriggers) natsPrefetch() jetstream.PullMaxMessages {
	n := natsPrefetch
	if m.rates != nil {
		n = min(n, max(1, int(float64(m.rates.limit)*natsAckWait.Seconds()/2)))
	}
	return jetstream.PullMaxMessages(n)
}

// jetStreamConsumer finds or makes the stream and the durable consumer of
// an instance: the configuration's stream (it must exist), else the stream
// that captures the subject, else a new one, "prose-{instance}", capturing
// just the subject (interest retention: a message is kept until every
// consumer acknowledged it, at most natsStreamMaxAge); the configuration's
// consumer (it must exist: Prose uses it as it is), else the durable
// "prose-{instance}" on the subject, made if absent, delivering the
// messages the stream took since the instance was made. forget deletes the
// consumer when Prose made it (nil otherwise).
func (m *MessageTriggers) jetStreamConsumer(ctx context.Context, nc *nats.Conn, inst store.TriggerInstance, cfg map[string]string) (jetstream.Consumer, func(context.Context), error) {
	ctx, cancel := context.WithTimeout(ctx, brokerConnectTimeout)
	defer cancel()
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, nil, err
	}
	subject, stream := cfg["subject"], cfg["stream"]
	if stream == "" {
		stream, err = js.StreamNameBySubject(ctx, subject)
		if errors.Is(err, jetstream.ErrStreamNotFound) {
			stream = natsStreamName(inst)
			_, err = js.CreateStream(ctx, jetstream.StreamConfig{Name: stream, Subjects: []string{subject},
				Description: "Prose message trigger " + instanceKey(inst), Retention: jetstream.InterestPolicy,
				Storage: jetstream.FileStorage, MaxAge: natsStreamMaxAge, Discard: jetstream.DiscardOld})
		}
		if err != nil {
			return nil, nil, fmt.Errorf("jetstream stream for subject %q: %w", subject, err)
		}
	}
	if name := cfg["consumer"]; name != "" {
		c, err := js.Consumer(ctx, stream, name)
		if err != nil {
			return nil, nil, fmt.Errorf("jetstream consumer %q of stream %q: %w", name, stream, err)
		}
		return c, nil, nil
	}
	name := natsConsumerName(inst)
	c, err := js.Consumer(ctx, stream, name)
	if errors.Is(err, jetstream.ErrConsumerNotFound) {
		start := inst.CreateTime
		c, err = js.CreateOrUpdateConsumer(ctx, stream, jetstream.ConsumerConfig{Durable: name, Description: "Prose message trigger " + instanceKey(inst),
			FilterSubject: subject, AckPolicy: jetstream.AckExplicitPolicy, AckWait: natsAckWait, MaxDeliver: -1,
			MaxAckPending: natsMaxAckPending, DeliverPolicy: jetstream.DeliverByStartTimePolicy, OptStartTime: &start})
	}
	if err != nil {
		return nil, nil, fmt.Errorf("jetstream consumer %q of stream %q: %w", name, stream, err)
	}
	forget := func(ctx context.Context) {
		if err := js.DeleteConsumer(ctx, stream, name); err != nil && !errors.Is(err, jetstream.ErrConsumerNotFound) {
			m.logger.Warn("message trigger: deleting the consumer of a deleted instance", "instance", inst.ID, "stream", stream, "consumer", name, "err", err)
		}
	}
	return c, forget, nil
}

// subscribeCoreNATS subscribes to a subject with core NATS, at most once:
// a queue group ("prose-{instance}") gives each message to one replica,
// and a message that replica has not committed when it stops, or that
// arrives while no replica is connected, is lost. The run's request id
// makes a message published twice one run.
func (m *MessageTriggers) subscribeCoreNATS(nc *nats.Conn, inst store.TriggerInstance, cfg map[string]string, b *brokerSub, closed <-chan struct{}) (*brokerSub, error) {
	_, err := nc.QueueSubscribe(cfg["subject"], "prose-"+inst.ID, func(msg *nats.Msg) {
		m.handle(inst, natsMsgID(msg.Header, msg.Subject, msg.Data), msg.Data)
		if msg.Reply != "" {
			_ = msg.Respond([]byte(`{"accepted":true}`))
		}
	})
	if err == nil {
		err = nc.Flush()
	}
	if err != nil {
		nc.Close()
		return nil, err
	}
	b.close = func(bool) {
		// Drain lets the message being handled finish, then closes.
		if nc.Drain() != nil {
			nc.Close()
		}
		select {
		case <-closed:
		case <-time.After(messageDeadline + 5*time.Second):
			nc.Close()
		}
	}
	return b, nil
}
