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
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/internal/books"
	"github.com/proserun/prose/internal/engine"
	"github.com/proserun/prose/server/transport"
	"github.com/proserun/prose/store"
)

// The built-in message trigger books and their defaults.
const (
	NATSBook     = books.NATSBookName
	RabbitMQBook = books.RabbitMQBookName
	MQTTBook     = books.MQTTBookName

	DefaultNATSURL     = books.DefaultNATSURL
	DefaultRabbitMQURL = books.DefaultRabbitMQURL
	DefaultMQTTURL     = books.DefaultMQTTURL
)

// The delivery of a NATS trigger (its configuration's "delivery"):
// JetStream, at least once (the default), or core NATS, at most once.
const (
	NATSJetStream = "jetstream"
	NATSCore      = "core"
)

// messageBooks: each book's trigger id, its required parameter (the
// subject, queue or topic), its optional ones beside url, and its default
// broker URL with the schemes it accepts.
var messageBooks = map[string]struct {
	trigger, param, defaultURL string
	optional                   []string
	schemes                    []string
}{
	NATSBook:     {books.MessageTriggerID, "subject", DefaultNATSURL, []string{"delivery", "stream", "consumer"}, []string{"nats", "tls"}},
	RabbitMQBook: {books.MessageTriggerID, "queue", DefaultRabbitMQURL, nil, []string{"amqp", "amqps"}},
	MQTTBook:     {books.MessageTriggerID, "topic", DefaultMQTTURL, nil, []string{"tcp", "ssl", "mqtt", "mqtts", "ws", "wss"}},
}

// jetStreamName is what NATS accepts as a stream or consumer name (no
// spaces, dots, wildcards or path separators).
var jetStreamName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,200}$`)

// checkMessageConfig checks the configuration of a message trigger
// instance: url (optional), the book's parameter (required) and its
// optional ones, text values.
func checkMessageConfig(book string, cfg map[string]*platformv1.BdkValue) error {
	mb := messageBooks[book]
	for k, v := range cfg {
		switch {
		case k == "url":
			u, err := url.Parse(v.GetTextValue())
			if err != nil || u.Host == "" || !slices.Contains(mb.schemes, u.Scheme) {
				return transport.InvalidArgument(ReasonInvalidTrigger, fmt.Sprintf("configuration.url must be a %v URL", mb.schemes), transport.Violation("configuration.url", "not a broker URL"))
			}
		case k == mb.param:
			if v.GetTextValue() == "" || len(v.GetTextValue()) > 255 {
				return transport.InvalidArgument(ReasonInvalidTrigger, fmt.Sprintf("configuration.%s must be a text_value of 1 to 255 characters", k), transport.Violation("configuration."+k, "required"))
			}
		case k == "delivery":
			if d := v.GetTextValue(); d != NATSJetStream && d != NATSCore {
				return transport.InvalidArgument(ReasonInvalidTrigger, fmt.Sprintf("configuration.delivery must be %q (at least once, the default) or %q (at most once)", NATSJetStream, NATSCore),
					transport.Violation("configuration.delivery", "unknown delivery"))
			}
		case slices.Contains(mb.optional, k): // stream, consumer
			if !jetStreamName.MatchString(v.GetTextValue()) {
				return transport.InvalidArgument(ReasonInvalidTrigger, fmt.Sprintf("configuration.%s must be a JetStream name: 1 to 200 of A-Z a-z 0-9 _ -", k), transport.Violation("configuration."+k, "not a JetStream name"))
			}
		default:
			return transport.InvalidArgument(ReasonInvalidTrigger, fmt.Sprintf("configuration.%s: the %s trigger takes url, %s%s", k, book, mb.param, strings.Join(append([]string{""}, mb.optional...), ", ")),
				transport.Violation("configuration."+k, "unknown parameter"))
		}
	}
	if cfg[mb.param] == nil {
		return transport.InvalidArgument(ReasonInvalidTrigger, fmt.Sprintf("configuration.%s is required", mb.param), transport.Violation("configuration."+mb.param, "required"))
	}
	if cfg["delivery"].GetTextValue() == NATSCore && (cfg["stream"] != nil || cfg["consumer"] != nil) {
		return transport.InvalidArgument(ReasonInvalidTrigger, "configuration.stream and configuration.consumer are JetStream's: not with delivery \"core\"",
			transport.Violation("configuration.delivery", "core NATS has no streams"))
	}
	return nil
}

// MessageTriggers keeps one subscription per message trigger instance
// (NATS, RabbitMQ, MQTT) of the store, on every replica, and starts the
// runs of each message at least once: a message is acknowledged to its
// broker only once its runs are committed (or it is known to start none),
// and a subscription lost (the broker restarted, the connection cut) is
// made again. The run's request id is the message's id (NATS: the
// Nats-Msg-Id header; RabbitMQ: the message_id property; else, and for
// MQTT, the SHA-256 of the payload), so a redelivered message, or one that
// two replicas both receive, starts one run.
type MessageTriggers struct {
	triggerStarter
	poll time.Duration
	// syncMu makes Syncs one at a time; mu guards subs (also read by
	// the metrics' Collect).
	syncMu sync.Mutex
	mu     sync.Mutex
	subs   map[string]*messageSub
	// allowPrivate: see AllowPrivateNetworks (message_dial.go).
	allowPrivate bool
	// replica names this process among the replicas (SetReplicaName).
	replica string
	// failures: see Failure.
	failMu   sync.Mutex
	failures map[string]string
}

// NewMessageTriggers returns the listener; Run it.
func NewMessageTriggers(st store.Store, eng *engine.Engine, logger *slog.Logger) *MessageTriggers {
	if logger == nil {
		logger = slog.Default()
	}
	host, _ := os.Hostname()
	return &MessageTriggers{triggerStarter: triggerStarter{st: st, inv: eng, logger: logger, rates: newTriggerRates(TriggerRate{})},
		poll: 2 * time.Second, subs: map[string]*messageSub{}, replica: host}
}

// SetRate sets the bound of each instance's messages (TriggerRate); call
// it before Run.
func (m *MessageTriggers) SetRate(r TriggerRate) { m.rates = newTriggerRates(r) }

// SetReplicaName names this replica: stable across its restarts and
// unique among the replicas of one database (default: the host name). An
// MQTT trigger's session on the broker is the replica's (its client id
// is made from the instance and this name), so that a replica restarted
// takes the messages its broker kept for it. Call it before Run.
func (m *MessageTriggers) SetReplicaName(name string) {
	if name != "" {
		m.replica = name
	}
}

// Run syncs the subscriptions with the store every 2 s until ctx ends, then
// closes them (a message being handled is finished and acknowledged first).
func (m *MessageTriggers) Run(ctx context.Context) {
	defer m.closeAll()
	for {
		if err := m.sync(ctx); err != nil && ctx.Err() == nil {
			m.logger.Warn("message triggers: listing the instances", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(m.poll):
		}
	}
}

func (m *MessageTriggers) closeAll() {
	m.syncMu.Lock()
	defer m.syncMu.Unlock()
	m.mu.Lock()
	subs := m.subs
	m.subs = map[string]*messageSub{}
	m.mu.Unlock()
	for _, s := range subs {
		s.cancel()
	}
	for _, s := range subs {
		<-s.done
	}
}

// Sync subscribes to the instances that appeared or changed (it returns
// once each has tried once) and closes the subscriptions of those gone. It
// returns why the new ones could not subscribe; each is tried again in
// the background (message_supervise.go), and so is every subscription
// lost later.
func (m *MessageTriggers) Sync(ctx context.Context) error {
	listErr, subErr := m.syncSubs(ctx)
	if listErr != nil {
		return listErr
	}
	return subErr
}

// sync is Sync for Run: why an instance could not subscribe is logged by
// its supervisor; only a failure to list the instances is returned.
func (m *MessageTriggers) sync(ctx context.Context) error {
	listErr, _ := m.syncSubs(ctx)
	return listErr
}

func (m *MessageTriggers) syncSubs(ctx context.Context) (listErr, subErr error) {
	m.syncMu.Lock()
	defer m.syncMu.Unlock()
	list, err := m.st.ListTriggerInstancesOfBooks(ctx, []string{NATSBook, RabbitMQBook, MQTTBook})
	if err != nil {
		return err, nil
	}
	seen := map[string]bool{}
	var fresh []store.TriggerInstance
	var gone []*messageSub
	m.mu.Lock()
	for _, inst := range list {
		key := instanceKey(inst)
		seen[key] = true
		if s, ok := m.subs[key]; ok {
			if s.fingerprint == fingerprint(inst) {
				continue
			}
			gone = append(gone, s)
			delete(m.subs, key)
		}
		fresh = append(fresh, inst)
	}
	for k, s := range m.subs {
		if !seen[k] {
			gone = append(gone, s)
			delete(m.subs, k)
		}
	}
	m.mu.Unlock()
	// What is gone is closed before its successor subscribes (an MQTT
	// session has one client at a time).
	for _, s := range gone {
		s.forget.Store(true) // the instance is gone: so is what Prose made for it
		s.cancel()
		<-s.done
	}
	started := make([]*messageSub, 0, len(fresh))
	m.mu.Lock()
	for _, inst := range fresh {
		s := m.startSub(inst)
		m.subs[s.key] = s
		started = append(started, s)
	}
	m.mu.Unlock()
	m.failMu.Lock()
	for k := range m.failures {
		if !seen[k] {
			delete(m.failures, k)
		}
	}
	m.failMu.Unlock()
	var errs []error
	for _, s := range started {
		if err := <-s.first; err != nil {
			errs = append(errs, fmt.Errorf("trigger instance %s: %w", s.key, err))
		}
	}
	return nil, errors.Join(errs...)
}

// fingerprint is what, changed, makes an instance's subscription anew.
func fingerprint(inst store.TriggerInstance) string {
	return inst.BookName + "\x00" + string(inst.Configuration) + "\x00" + inst.Secret
}

func instanceKey(inst store.TriggerInstance) string {
	return inst.OrganizationID + "/" + inst.WorkspaceID + "/" + inst.ID
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
	if inst.Secret != "" {
		out["url"] = inst.Secret // the URL with its credentials (redactedBrokerURL)
	}
	return out, nil
}

// redactedBrokerURL returns raw and its form with the password replaced by
// "[redacted]" when raw is a URL carrying a password; shown is "" when it
// carries none (raw is shown as it is).
func redactedBrokerURL(raw string) (secret, shown string) {
	u, err := url.Parse(raw)
	if err != nil || u.User == nil {
		return "", ""
	}
	if _, has := u.User.Password(); !has {
		return "", ""
	}
	bare := *u
	bare.User = nil
	rest, _ := strings.CutPrefix(bare.String(), u.Scheme+"://")
	return raw, u.Scheme + "://" + url.User(u.User.Username()).String() + ":[redacted]@" + rest
}

// messageDeadline bounds the handling of one message: its wait for its
// turn (TriggerRate) and the creation of its runs.
const messageDeadline = 30 * time.Second

// handle starts the runs of one message; retry reports a failure another
// delivery may cure (the message should be redelivered). It returns once
// the runs are committed: the caller acknowledges the message then.
func (m *MessageTriggers) handle(inst store.TriggerInstance, msgID string, payload []byte) (retry bool) {
	// The listener outlives requests: each message gets its own deadline.
	ctx, cancel := context.WithTimeout(context.Background(), messageDeadline)
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
	dec := json.NewDecoder(bytes.NewReader(payload))
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

// subscribe makes the subscription of an instance on its broker.
func (m *MessageTriggers) subscribe(ctx context.Context, inst store.TriggerInstance) (*brokerSub, error) {
	cfg, err := configText(inst)
	if err != nil {
		return nil, err
	}
	switch inst.BookName {
	case NATSBook:
		return m.subscribeNATS(ctx, inst, cfg)
	case RabbitMQBook:
		return m.subscribeRabbitMQ(inst, cfg)
	case MQTTBook:
		return m.subscribeMQTT(inst, cfg)
	}
	return nil, fmt.Errorf("unknown message book %q", inst.BookName)
}
