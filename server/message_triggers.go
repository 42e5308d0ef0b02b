package server

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"sync"
	"time"

	mqtt "github.com/eclipse/paho.mqtt.golang"
	"github.com/nats-io/nats.go"
	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/proserun/prose/engine"
	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/server/transport"
	"github.com/proserun/prose/store"
)

// The built-in message trigger books and their defaults.
const (
	NATSBook     = "nats"
	RabbitMQBook = "rabbitmq"
	MQTTBook     = "mqtt"

	DefaultNATSURL     = "nats://127.0.0.1:4222"
	DefaultRabbitMQURL = "amqp://guest:guest@127.0.0.1:5672/"
	DefaultMQTTURL     = "tcp://127.0.0.1:1883"
)

// messageBooks: each book's trigger id, its required parameter (the
// subject, queue or topic) and its default broker URL with the schemes it
// accepts.
var messageBooks = map[string]struct {
	trigger, param, defaultURL string
	schemes                    []string
}{
	NATSBook:     {"message", "subject", DefaultNATSURL, []string{"nats", "tls"}},
	RabbitMQBook: {"message", "queue", DefaultRabbitMQURL, []string{"amqp", "amqps"}},
	MQTTBook:     {"message", "topic", DefaultMQTTURL, []string{"tcp", "ssl", "mqtt", "mqtts", "ws", "wss"}},
}

// checkMessageConfig checks the configuration of a message trigger
// instance: url (optional) and the book's parameter (required), text values.
func checkMessageConfig(book string, cfg map[string]*platformv1.BdkValue) error {
	mb := messageBooks[book]
	for k, v := range cfg {
		switch k {
		case "url":
			u, err := url.Parse(v.GetTextValue())
			ok := err == nil && u.Host != ""
			if ok {
				ok = false
				for _, s := range mb.schemes {
					ok = ok || u.Scheme == s
				}
			}
			if !ok {
				return transport.InvalidArgument(ReasonInvalidTrigger, fmt.Sprintf("configuration.url must be a %v URL", mb.schemes), transport.Violation("configuration.url", "not a broker URL"))
			}
		case mb.param:
			if v.GetTextValue() == "" || len(v.GetTextValue()) > 255 {
				return transport.InvalidArgument(ReasonInvalidTrigger, fmt.Sprintf("configuration.%s must be a text_value of 1 to 255 characters", k), transport.Violation("configuration."+k, "required"))
			}
		default:
			return transport.InvalidArgument(ReasonInvalidTrigger, fmt.Sprintf("configuration.%s: the %s trigger takes url and %s", k, book, mb.param), transport.Violation("configuration."+k, "unknown parameter"))
		}
	}
	if cfg[mb.param] == nil {
		return transport.InvalidArgument(ReasonInvalidTrigger, fmt.Sprintf("configuration.%s is required", mb.param), transport.Violation("configuration."+mb.param, "required"))
	}
	return nil
}

// MessageTriggers keeps one subscription per message trigger instance
// (NATS, RabbitMQ, MQTT) of the store, on every replica. Each message
// starts one run of every automation of its instance; the run's request id
// is the message's id (NATS: the Nats-Msg-Id header; RabbitMQ: the
// message_id property; else, and for MQTT, the SHA-256 of the payload), so
// a redelivered message, or one that two replicas both receive, starts one
// run.
type MessageTriggers struct {
	triggerStarter
	poll time.Duration
	mu   sync.Mutex
	subs map[string]*messageSub
}

type messageSub struct {
	fingerprint string
	stop        func()
}

// NewMessageTriggers returns the listener; Run it.
func NewMessageTriggers(st store.Store, eng *engine.Engine, logger *slog.Logger) *MessageTriggers {
	if logger == nil {
		logger = slog.Default()
	}
	return &MessageTriggers{triggerStarter: triggerStarter{st: st, inv: eng, logger: logger, rates: newTriggerRates(TriggerRate{})},
		poll: 2 * time.Second, subs: map[string]*messageSub{}}
}

// SetRate sets the bound of each instance's messages (TriggerRate); call
// it before Run.
func (m *MessageTriggers) SetRate(r TriggerRate) { m.rates = newTriggerRates(r) }

// Run syncs the subscriptions with the store every 2 s until ctx ends, then
// closes them.
func (m *MessageTriggers) Run(ctx context.Context) {
	defer m.closeAll()
	for {
		if err := m.Sync(ctx); err != nil && ctx.Err() == nil {
			m.logger.Warn("message triggers", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(m.poll):
		}
	}
}

func (m *MessageTriggers) closeAll() {
	m.mu.Lock()
	defer m.mu.Unlock()
	for k, s := range m.subs {
		s.stop()
		delete(m.subs, k)
	}
}

// Sync subscribes to the instances that appeared or changed and closes the
// subscriptions of those gone. A broker that cannot be reached is tried
// again at the next sync.
func (m *MessageTriggers) Sync(ctx context.Context) error {
	list, err := m.st.ListTriggerInstancesOfBooks(ctx, []string{NATSBook, RabbitMQBook, MQTTBook})
	if err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	seen := map[string]bool{}
	var errs []error
	for _, inst := range list {
		key := inst.OrganizationID + "/" + inst.WorkspaceID + "/" + inst.ID
		seen[key] = true
		fp := inst.BookName + "\x00" + string(inst.Configuration)
		if s, ok := m.subs[key]; ok {
			if s.fingerprint == fp {
				continue
			}
			s.stop()
			delete(m.subs, key)
		}
		stop, err := m.subscribe(inst)
		if err != nil {
			errs = append(errs, fmt.Errorf("trigger instance %s: %w", key, err))
			continue
		}
		m.subs[key] = &messageSub{fingerprint: fp, stop: stop}
	}
	for k, s := range m.subs {
		if !seen[k] {
			s.stop()
			delete(m.subs, k)
		}
	}
	return errors.Join(errs...)
}

func configText(inst store.TriggerInstance) (map[string]string, error) {
	cfg, err := decodeTriggerConfig(inst.Configuration)
	if err != nil {
		return nil, err
	}
	out := map[string]string{"url": messageBooks[inst.BookName].defaultURL}
	for k, v := range cfg.GetConfiguration() {
		out[k] = v.GetTextValue()
	}
	return out, nil
}

// handle starts the runs of one message; retry reports a failure another
// delivery may cure (the message should be redelivered).
func (m *MessageTriggers) handle(inst store.TriggerInstance, msgID string, payload []byte) (retry bool) {
	// The listener outlives requests: each message gets its own deadline.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// Re-read the instance: its automations may have changed since the
	// subscription began.
	cur, err := m.st.GetTriggerInstance(ctx, inst.OrganizationID, inst.WorkspaceID, inst.ID)
	if errors.Is(err, store.ErrNotFound) {
		return false
	}
	if err != nil {
		m.logger.Error("message trigger", "err", err)
		return true
	}
	// A storm of messages waits for its turn (the broker keeps the rest);
	// one that waits past its deadline is handed back.
	if err := m.rates.wait(ctx, cur); err != nil {
		m.logger.Warn("message trigger: over its rate; handed back", "instance", cur.ID, "message", msgID)
		return true
	}
	var doc any
	if err := json.Unmarshal(payload, &doc); err != nil {
		doc = string(payload) // not JSON: the payload as text
	} else {
		doc = decodeNumbers(payload, doc)
	}
	filter, err := instanceFilter(cur)
	if err != nil {
		m.logger.Error("message trigger", "err", err)
		return false // a corrupt row: retrying does not help
	}
	if filter != nil && !filterMatches(filter, doc) {
		m.logger.Debug("message trigger: filtered out", "instance", cur.ID, "message", msgID)
		return false
	}
	for _, a := range cur.AutomationIDs {
		res := m.start(ctx, cur, a, "message:"+cur.ID+":"+a+":"+msgID, doc)
		if res.Error == errRetry {
			retry = true
		} else if res.Error != "" {
			m.logger.Warn("message trigger: no run", "instance", cur.ID, "automation", a, "reason", res.Error)
		}
	}
	return retry
}

// decodeNumbers decodes a JSON payload keeping numbers exact.
func decodeNumbers(payload []byte, fallback any) any {
	var doc any
	dec := json.NewDecoder(bytesReader(payload))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		return fallback
	}
	return doc
}

func payloadID(parts ...[]byte) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write(p)
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}

func (m *MessageTriggers) subscribe(inst store.TriggerInstance) (func(), error) {
	cfg, err := configText(inst)
	if err != nil {
		return nil, err
	}
	group := "prose-" + inst.ID
	switch inst.BookName {
	case NATSBook:
		nc, err := nats.Connect(cfg["url"], nats.Name("prose"), nats.MaxReconnects(-1))
		if err != nil {
			return nil, err
		}
		// A queue group: one replica gets each message (and the request id
		// makes a message published twice one run).
		_, err = nc.QueueSubscribe(cfg["subject"], group, func(msg *nats.Msg) {
			id := msg.Header.Get(nats.MsgIdHdr)
			if id == "" || len(id) > 64 {
				id = payloadID([]byte(msg.Subject), msg.Data)
			}
			m.handle(inst, id, msg.Data)
			if msg.Reply != "" {
				_ = msg.Respond([]byte(`{"accepted":true}`))
			}
		})
		if err != nil {
			nc.Close()
			return nil, err
		}
		if err := nc.Flush(); err != nil {
			nc.Close()
			return nil, err
		}
		return nc.Close, nil
	case RabbitMQBook:
		conn, err := amqp.Dial(cfg["url"])
		if err != nil {
			return nil, err
		}
		ch, err := conn.Channel()
		if err == nil {
			_, err = ch.QueueDeclare(cfg["queue"], true, false, false, false, nil)
		}
		if err == nil {
			err = ch.Qos(16, 0, false)
		}
		var deliveries <-chan amqp.Delivery
		if err == nil {
			deliveries, err = ch.Consume(cfg["queue"], "", false, false, false, false, nil)
		}
		if err != nil {
			_ = conn.Close()
			return nil, err
		}
		done := make(chan struct{})
		go func() {
			defer close(done)
			for d := range deliveries {
				id := d.MessageId
				if id == "" || len(id) > 64 {
					id = payloadID([]byte(cfg["queue"]), d.Body)
				}
				if m.handle(inst, id, d.Body) {
					_ = d.Nack(false, true) // redelivered later: the same run if it was started
					continue
				}
				_ = d.Ack(false)
			}
		}()
		return func() { _ = conn.Close(); <-done }, nil
	case MQTTBook:
		opts := mqtt.NewClientOptions().AddBroker(cfg["url"]).SetClientID("prose-" + store.NewID()).
			SetCleanSession(true).SetAutoReconnect(true)
		c := mqtt.NewClient(opts)
		if tok := c.Connect(); !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
			return nil, fmt.Errorf("mqtt connect: %w", tok.Error())
		}
		// A shared subscription: one replica gets each message.
		topic := "$share/" + group + "/" + cfg["topic"]
		tok := c.Subscribe(topic, 1, func(_ mqtt.Client, msg mqtt.Message) {
			m.handle(inst, payloadID([]byte(cfg["topic"]), msg.Payload()), msg.Payload())
		})
		if !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
			c.Disconnect(100)
			return nil, fmt.Errorf("mqtt subscribe: %w", tok.Error())
		}
		return func() { c.Disconnect(250) }, nil
	}
	return nil, fmt.Errorf("unknown message book %q", inst.BookName)
}

func bytesReader(b []byte) *bytes.Reader { return bytes.NewReader(b) }
