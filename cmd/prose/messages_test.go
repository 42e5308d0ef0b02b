package main

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	mqtt "github.com/eclipse/paho.mqtt.golang"
	"github.com/nats-io/nats.go"
	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/proserun/prose/internal/testtime"
	"github.com/proserun/prose/server"
	"github.com/proserun/prose/store"
)

// broker is a message broker on loopback that a message trigger listens to.
type broker struct {
	book, param, addr string
	// publish sends body with id (MQTT has no message id: the payload
	// names the message).
	publish func(t *testing.T, dest, id, body string)
}

func brokers() []broker {
	return []broker{
		{book: server.NATSBook, param: "subject", addr: "127.0.0.1:4222", publish: func(t *testing.T, subject, id, body string) {
			nc, err := nats.Connect(server.DefaultNATSURL)
			if err != nil {
				t.Fatal(err)
			}
			defer nc.Close()
			msg := nats.NewMsg(subject)
			msg.Header.Set(nats.MsgIdHdr, id)
			msg.Data = []byte(body)
			if err := nc.PublishMsg(msg); err != nil {
				t.Fatal(err)
			}
			if err := nc.Flush(); err != nil {
				t.Fatal(err)
			}
		}},
		{book: server.RabbitMQBook, param: "queue", addr: "127.0.0.1:5672", publish: func(t *testing.T, queue, id, body string) {
			conn, err := amqp.Dial(server.DefaultRabbitMQURL)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			ch, err := conn.Channel()
			if err != nil {
				t.Fatal(err)
			}
			if err := ch.PublishWithContext(context.Background(), "", queue, true, false,
				amqp.Publishing{ContentType: "application/json", MessageId: id, Body: []byte(body), DeliveryMode: amqp.Persistent}); err != nil {
				t.Fatal(err)
			}
		}},
		{book: server.MQTTBook, param: "topic", addr: "127.0.0.1:1883", publish: func(t *testing.T, topic, _, body string) {
			c := mqtt.NewClient(mqtt.NewClientOptions().AddBroker(server.DefaultMQTTURL).SetClientID("prose-test-" + store.NewID()))
			if tok := c.Connect(); !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
				t.Fatalf("mqtt connect: %v", tok.Error())
			}
			defer c.Disconnect(100)
			if tok := c.Publish(topic, 1, false, body); !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
				t.Fatalf("mqtt publish: %v", tok.Error())
			}
		}},
	}
}

// skipIfAbsent skips t when the broker does not answer on its address or
// PROSE_TEST_BROKERS is off.
func (b broker) skipIfAbsent(t *testing.T) {
	t.Helper()
	skipTierIfOff(t, "PROSE_TEST_BROKERS")
	c, err := net.DialTimeout("tcp", b.addr, time.Second)
	if err != nil {
		t.Skipf("%s is not running on %s (the go-svc machine runs it on loopback): %v", b.book, b.addr, err)
	}
	c.Close()
}

// messageFixture makes an instance of book on a fresh destination starting
// automation a (amount ← /order/total, customer_name ← /customer/name).
func (e *testEnv) messageFixture(t *testing.T, b broker, a string) (dest string) {
	t.Helper()
	dest = "prose-test-" + store.NewID()
	m := e.api(t, "POST", e.wsPath()+"/books/"+b.book+"/1/connections/bus/triggers",
		`{"configuration":{"`+b.param+`":{"text_value":"`+dest+`"}}}`, 200)
	checkSchema(t, "v2AddWorkspaceBookConnectionTriggerInstanceResponse", m)
	id := fmt.Sprint(field(m, "trigger_instance.id"))
	if field(m, "trigger_instance.trigger_id") != "message" || field(m, "trigger_instance.configuration."+b.param+".text_value") != dest {
		t.Fatalf("instance: %v", m)
	}
	e.api(t, "POST", e.wsPath()+"/triggers/"+id+"/automations", `{"automation_ids":["`+a+`"]}`, 200)
	e.api(t, "POST", e.automationsPath()+"/"+a+"/triggers", `{"trigger_id":"`+id+`","phase_type":"PHASE_TYPE_MAIN",
		"input_mapping":{"amount":"/order/total","customer_name":"/customer/name"}}`, 200)
	return dest
}

// waitRuns waits until automation a has at least n runs and returns how many.
func (e *testEnv) waitRuns(t *testing.T, a string, n int) int {
	t.Helper()
	deadline := testtime.Deadline(testtime.Wait)
	for {
		got := len(e.scheduledRuns(t, a))
		if got >= n {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("automation %s has %d runs, want %d", a, got, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func orderBody(n int) string {
	return fmt.Sprintf(`{"order":{"total":%d},"customer":{"name":"Customer %d"}}`, n, n)
}

// TestMessageTriggers: for NATS, RabbitMQ and MQTT on loopback, each
// message starts one run with inputs mapped from its JSON, and a message
// sent again (same id; for MQTT the same payload) starts none. A last
// message, consumed after the others (one subscriber, in order), shows
// that nothing more came.
func TestMessageTriggers(t *testing.T) {
	for _, b := range brokers() {
		t.Run(b.book, func(t *testing.T) {
			b.skipIfAbsent(t)
			e := newTestEnv(t)
			a := e.mkAutomation(t, "Orders", greetCode, false)
			dest := e.messageFixture(t, b, a.id)
			if err := e.app.messages.Sync(context.Background()); err != nil {
				t.Fatal(err)
			}
			b.publish(t, dest, "m-1", orderBody(1))
			b.publish(t, dest, "m-1", orderBody(1)) // redelivered
			b.publish(t, dest, "m-2", orderBody(2))
			b.publish(t, dest, "m-1", orderBody(1)) // again
			b.publish(t, dest, "m-3", orderBody(3))
			if n := e.waitRuns(t, a.id, 3); n != 3 {
				t.Errorf("%d runs, want 3", n)
			}
			runs := e.scheduledRuns(t, a.id)
			r := e.waitRun(t, a.id, store.LastSegment(fmt.Sprint(runs[0]["name"])), "completed")
			if got := numberOf(field(r, "state.completed.outputs.output total.number")); got != 2 {
				t.Errorf("first run's output total = %v", got)
			}
			if field(r, "invocation_details.invocation_source") != "INVOCATION_SOURCE_TRIGGER" {
				t.Errorf("invocation: %v", r["invocation_details"])
			}
		})
	}
}

// TestMessageTriggersTwoReplicasPostgres: two replicas on one PostgreSQL
// database listen to the same instance; 10 messages, each sent twice, then
// the 10 again: 10 runs; an 11th message makes 11.
func TestMessageTriggersTwoReplicasPostgres(t *testing.T) {
	replica := pgReplica(t)
	for _, b := range brokers() {
		t.Run(b.book, func(t *testing.T) {
			b.skipIfAbsent(t)
			a, _ := startApp(t, replica(), initResult{}, "")
			a.email = "owner-" + store.NewID() + "@example.test"
			var err error
			a.init, err = bootstrap(context.Background(), a.st, initOptions{organization: "Message replicas", email: a.email, workspace: "Ops"})
			if err != nil {
				t.Fatal(err)
			}
			r2, _ := startApp(t, replica(), a.init, a.email)
			auto := a.mkAutomation(t, "Orders", greetCode, false)
			dest := a.messageFixture(t, b, auto.id)
			for _, r := range []*testEnv{a, r2} {
				if err := r.app.messages.Sync(context.Background()); err != nil {
					t.Fatal(err)
				}
			}
			for round := range 2 {
				for i := range 10 {
					b.publish(t, dest, fmt.Sprintf("m-%d", i), orderBody(i))
					if round == 0 {
						b.publish(t, dest, fmt.Sprintf("m-%d", i), orderBody(i))
					}
				}
			}
			a.waitRuns(t, auto.id, 10)
			b.publish(t, dest, "m-last", orderBody(100))
			if n := a.waitRuns(t, auto.id, 11); n != 11 {
				t.Errorf("%d runs, want 11", n)
			}
		})
	}
}
