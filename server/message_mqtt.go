package server

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"

	mqtt "github.com/eclipse/paho.mqtt.golang"

	"github.com/proserun/prose/store"
)

// mqttQueue is the messages one replica's subscription holds received
// and not yet handled; the broker holds the rest (it sends a session at
// most its in-flight window of unacknowledged QoS 1 messages: 20 on
// Mosquitto by default).
const mqttQueue = 64

// MQTTClientID is the client id, and so the session on the broker, of
// the subscription of MQTT trigger instance id on this replica:
// "prose-{instance}-{8 hex digits of the SHA-256 of the replica's name}",
// the same after the replica restarts (its name is stable), another on
// each replica.
func (m *MessageTriggers) MQTTClientID(id string) string {
	sum := sha256.Sum256([]byte(m.replica))
	return "prose-" + id + "-" + hex.EncodeToString(sum[:4])
}

// subscribeMQTT subscribes to a topic at QoS 1 in a persistent session
// (clean session off, the client id of mqttClientID) and acknowledges each
// message once its runs are committed; one whose runs could not be started
// is tried again in place (an MQTT message unacknowledged comes back only
// when its session reconnects). Every replica has its own session and gets
// every message: a shared subscription would hand some of the messages to
// a replica that is down (Mosquitto queues them in its session), and the
// run's request id makes each message one run whichever replica commits it
// first. The subscription is lost when the connection is.
func (m *MessageTriggers) subscribeMQTT(inst store.TriggerInstance, cfg map[string]string) (*brokerSub, error) {
	b := newBrokerSub()
	topic := cfg["topic"]
	msgs := make(chan mqtt.Message, mqttQueue)
	stop, done := make(chan struct{}), make(chan struct{})
	enqueue := func(_ mqtt.Client, msg mqtt.Message) {
		select {
		case msgs <- msg:
		case <-stop: // not acknowledged: the session keeps it
		}
	}
	opts := mqtt.NewClientOptions().AddBroker(cfg["url"]).SetClientID(m.MQTTClientID(inst.ID)).SetCleanSession(false).
		SetAutoReconnect(false).SetConnectRetry(false).SetAutoAckDisabled(true).SetOrderMatters(true).
		SetConnectTimeout(brokerConnectTimeout).SetKeepAlive(15 * time.Second).SetPingTimeout(5 * time.Second).
		SetCustomOpenConnectionFn(m.mqttOpen).
		// The session's messages may arrive before Subscribe returns.
		SetDefaultPublishHandler(enqueue).
		SetConnectionLostHandler(func(_ mqtt.Client, err error) { b.fail(fmt.Errorf("mqtt connection lost: %w", err)) })
	c := mqtt.NewClient(opts)
	if tok := c.Connect(); !tok.WaitTimeout(brokerConnectTimeout) || tok.Error() != nil {
		c.Disconnect(0)
		return nil, fmt.Errorf("mqtt connect: %w", tokenError(tok))
	}
	if tok := c.Subscribe(topic, 1, enqueue); !tok.WaitTimeout(brokerConnectTimeout) || tok.Error() != nil {
		c.Disconnect(100)
		return nil, fmt.Errorf("mqtt subscribe: %w", tokenError(tok))
	}
	go func() {
		defer close(done)
		for {
			var msg mqtt.Message
			select {
			case <-stop:
				return
			case msg = <-msgs:
			}
			id := payloadID([]byte(topic), msg.Payload())
			for wait := time.Second; m.handle(inst, id, msg.Payload()); wait = min(2*wait, 10*time.Second) {
				select {
				case <-stop:
					return // not acknowledged: the session keeps it
				case <-time.After(wait):
				}
			}
			msg.Ack()
		}
	}()
	b.connected = c.IsConnectionOpen
	b.close = func(forget bool) {
		close(stop)
		<-done
		c.Disconnect(250)
		if forget { // the instance is gone: so is its session on the broker
			opts.SetCleanSession(true).SetDefaultPublishHandler(nil).SetConnectionLostHandler(nil)
			clean := mqtt.NewClient(opts)
			if tok := clean.Connect(); tok.WaitTimeout(brokerConnectTimeout) && tok.Error() == nil {
				clean.Disconnect(100)
			}
		}
	}
	return b, nil
}

// tokenError is a token's error, or that it timed out.
func tokenError(tok mqtt.Token) error {
	if err := tok.Error(); err != nil {
		return err
	}
	return fmt.Errorf("no answer within %s", brokerConnectTimeout)
}
