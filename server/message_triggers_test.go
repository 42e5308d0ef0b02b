package server_test

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	mqtt "github.com/eclipse/paho.mqtt.golang"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/proserun/prose/internal/testtime"
	"github.com/proserun/prose/server"
	"github.com/proserun/prose/server/app"
	"github.com/proserun/prose/server/testenv"
	"github.com/proserun/prose/store"
)

// broker is a message broker that a message trigger listens to: the one
// on loopback (url, addr) or one a test starts (testenv.StartNATS, …).
type broker struct {
	name, book, param, url, addr string
	// config is more of the instance's configuration (JSON members).
	config string
	// publish sends body with id to dest on the broker at url (MQTT has
	// no message id: the payload names the message).
	publish func(t *testing.T, url, dest, id, body string)
	// remove removes what the broker keeps of a test's destination.
	remove func(t *testing.T, url string, d *brokerDest)
}

func brokers() []broker {
	natsBroker := broker{name: "nats", book: server.NATSBook, param: "subject", url: server.DefaultNATSURL, addr: "127.0.0.1:4222",
		publish: publishNATS, remove: removeNATS}
	core := natsBroker
	core.name, core.config = "nats-core", `"delivery":{"text_value":"core"}`
	return []broker{
		natsBroker,
		core,
		{name: "rabbitmq", book: server.RabbitMQBook, param: "queue", url: server.DefaultRabbitMQURL, addr: "127.0.0.1:5672",
			publish: publishAMQP, remove: removeAMQP},
		{name: "mqtt", book: server.MQTTBook, param: "topic", url: server.DefaultMQTTURL, addr: "127.0.0.1:1883",
			publish: publishMQTT, remove: removeMQTT},
	}
}

func publishNATS(t *testing.T, url, subject, id, body string) {
	nc, err := nats.Connect(url)
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
}

// removeNATS deletes the streams that capture the subject (Prose made
// them: it never deletes a stream).
func removeNATS(t *testing.T, url string, d *brokerDest) {
	nc, err := nats.Connect(url)
	if err != nil {
		t.Logf("removing the streams of %s: %v", d.name, err)
		return
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	ctx := context.Background()
	for range 10 {
		name, err := js.StreamNameBySubject(ctx, d.name)
		if err != nil {
			return
		}
		if err := js.DeleteStream(ctx, name); err != nil {
			t.Logf("deleting stream %s: %v", name, err)
			return
		}
	}
}

func publishAMQP(t *testing.T, url, queue, id, body string) {
	conn, err := amqp.Dial(url)
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
}

// removeAMQP deletes the queue (Prose declared it: it never deletes one).
func removeAMQP(t *testing.T, url string, d *brokerDest) {
	conn, err := amqp.Dial(url)
	if err != nil {
		t.Logf("removing queue %s: %v", d.name, err)
		return
	}
	defer conn.Close()
	if ch, err := conn.Channel(); err == nil {
		_, _ = ch.QueueDelete(d.name, false, false, false)
	}
}

func publishMQTT(t *testing.T, url, topic, _, body string) {
	c := mqtt.NewClient(mqtt.NewClientOptions().AddBroker(url).SetClientID("prose-test-" + store.NewID()))
	if tok := c.Connect(); !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
		t.Fatalf("mqtt connect: %v", tok.Error())
	}
	defer c.Disconnect(100)
	if tok := c.Publish(topic, 1, false, body); !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
		t.Fatalf("mqtt publish: %v", tok.Error())
	}
}

// removeMQTT ends the sessions of the test's subscriptions (a persistent
// session outlives its client).
func removeMQTT(t *testing.T, url string, d *brokerDest) {
	for _, id := range d.clients {
		c := mqtt.NewClient(mqtt.NewClientOptions().AddBroker(url).SetClientID(id).SetCleanSession(true))
		if tok := c.Connect(); tok.WaitTimeout(10*time.Second) && tok.Error() == nil {
			c.Disconnect(100)
		}
	}
}

// brokerDest is a test's own destination (subject, queue or topic) on a
// broker; what the broker keeps of it is removed when the test ends,
// after the test's servers stopped (freshDest registers its cleanup
// before they start).
type brokerDest struct {
	name string
	// clients are the MQTT client ids of the test's subscriptions.
	clients []string
}

// freshDest makes a destination of t on b at url; call it before the
// test's servers start.
func (b broker) freshDest(t *testing.T, url string) *brokerDest {
	t.Helper()
	d := &brokerDest{name: "prose-test-" + store.NewID()}
	t.Cleanup(func() { b.remove(t, url, d) })
	return d
}

// skipIfAbsent skips t when the broker does not answer on its address or
// PROSE_TEST_BROKERS is off.
func (b broker) skipIfAbsent(t *testing.T) {
	t.Helper()
	testenv.SkipTierIfOff(t, "PROSE_TEST_BROKERS")
	c, err := net.DialTimeout("tcp", b.addr, time.Second)
	if err != nil {
		t.Skipf("%s is not running on %s (the go-svc machine runs it on loopback; .ci/run starts it): %v", b.book, b.addr, err)
	}
	c.Close()
}

// triggerConnections holds the connection of each instance messageFixture
// made, by the instance's id (instancePath).
var triggerConnections sync.Map

// instancePath is the path of the trigger instance id that messageFixture
// made, under its connection.
func (e *testEnv) instancePath(id string) string {
	conn, _ := triggerConnections.Load(id)
	return e.WsPath() + "/connections/" + fmt.Sprint(conn) + "/triggers/" + id
}

// messageFixture makes an instance of book on destination d (at url,
// "" for the default) starting automation a (amount ← /order/total,
// customer_name ← /customer/name), and returns its id. The replicas
// that will subscribe to it are named for the broker's cleanup.
func (e *testEnv) messageFixture(t *testing.T, b broker, a string, d *brokerDest, url string, replicas ...*testEnv) (id string) {
	t.Helper()
	cfg := `"` + b.param + `":{"text_value":"` + d.name + `"}`
	if url != "" {
		cfg += `,"url":{"text_value":"` + url + `"}`
	}
	if b.config != "" {
		cfg += "," + b.config
	}
	bus, conn := e.TriggersPath(t, e.WsPath(), b.book, "bus-"+store.NewID())
	m := e.API(t, "POST", bus, `{"configuration":{`+cfg+`}}`, 200)
	checkSchema(t, "v2AddWorkspaceBookConnectionTriggerInstanceResponse", m)
	id = fmt.Sprint(testenv.Field(m, "trigger_instance.id"))
	triggerConnections.Store(id, conn)
	// Gone before the servers stop: on PostgreSQL the package's tests
	// share one database, and a later test's server would subscribe to
	// it (making again what the broker's cleanup removes).
	t.Cleanup(func() {
		_ = e.Store.DeleteTriggerInstance(context.Background(), e.Init.OrganizationID, e.Init.WorkspaceID, conn, id)
	})
	if testenv.Field(m, "trigger_instance.trigger_id") != "message" || testenv.Field(m, "trigger_instance.configuration."+b.param+".text_value") != d.name {
		t.Fatalf("instance: %v", m)
	}
	for _, r := range append([]*testEnv{e}, replicas...) {
		d.clients = append(d.clients, r.App.Messages.MQTTClientID(id))
	}
	e.API(t, "POST", e.WsPath()+"/triggers/"+id+"/automations", `{"automation_ids":["`+a+`"]}`, 200)
	e.API(t, "POST", e.AutomationsPath()+"/"+a+"/triggers", `{"trigger_id":"`+id+`","phase_type":"PHASE_TYPE_MAIN",
		"input_mapping":{"amount":"/order/total","customer_name":"/customer/name"}}`, 200)
	return id
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

// TestMessageTriggers: for NATS (JetStream, and core NATS asked for),
// RabbitMQ and MQTT on loopback, each message starts one run with inputs
// mapped from its JSON, and a message sent again (same id; for MQTT the
// same payload) starts none. A last message, consumed after the others
// (one subscriber, in order), shows that nothing more came. While
// subscribed, the instance's status is READY and its
// prose_trigger_subscription_up is 1; deleted, its subscription and its
// gauge go.
func TestMessageTriggers(t *testing.T) {
	for _, b := range brokers() {
		t.Run(b.name, func(t *testing.T) {
			b.skipIfAbsent(t)
			d := b.freshDest(t, b.url)
			e := newTestEnv(t)
			a := e.MkAutomation(t, "Orders", greetCode, false)
			id := e.messageFixture(t, b, a.ID, d, "")
			syncMessages(t, e)
			labels := []string{"organization", e.Init.OrganizationID, "workspace", e.Init.WorkspaceID, "trigger", id, "broker", b.book}
			if up, found := metricSum(e.scrape(t), "prose_trigger_subscription_up", labels...); !found || up != 1 {
				t.Errorf("prose_trigger_subscription_up = %v (found %v), want 1", up, found)
			}
			if st := testenv.Field(e.API(t, "GET", e.WsPath()+"/triggers", "", 200), "trigger_instances.0.status.state"); st != "TRIGGER_INSTANCE_STATE_READY" {
				t.Errorf("status %v, want READY", st)
			}
			b.publish(t, b.url, d.name, "m-1", orderBody(1))
			b.publish(t, b.url, d.name, "m-1", orderBody(1)) // redelivered
			b.publish(t, b.url, d.name, "m-2", orderBody(2))
			b.publish(t, b.url, d.name, "m-1", orderBody(1)) // again
			b.publish(t, b.url, d.name, "m-3", orderBody(3))
			if n := e.waitRuns(t, a.ID, 3); n != 3 {
				t.Errorf("%d runs, want 3", n)
			}
			runs := e.scheduledRuns(t, a.ID)
			r := e.WaitRun(t, a.ID, store.LastSegment(fmt.Sprint(runs[0]["name"])), "completed")
			if got := testenv.NumberOf(testenv.Field(r, "state.completed.outputs.output total.number")); got != 2 {
				t.Errorf("first run's output total = %v", got)
			}
			if testenv.Field(r, "invocation_details.invocation_source") != "INVOCATION_SOURCE_TRIGGER" {
				t.Errorf("invocation: %v", r["invocation_details"])
			}
			e.API(t, "DELETE", e.instancePath(id), "", 200)
			syncMessages(t, e)
			if _, found := metricSum(e.scrape(t), "prose_trigger_subscription_up", labels...); found {
				t.Error("a deleted instance still has its prose_trigger_subscription_up")
			}
		})
	}
}

// TestMessageTriggersTwoReplicasPostgres: two replicas on one PostgreSQL
// database listen to the same instance; 10 messages, each sent twice, then
// the 10 again: 10 runs; an 11th message makes 11.
func TestMessageTriggersTwoReplicasPostgres(t *testing.T) {
	replica := testenv.PGReplica(t)
	for _, b := range brokers() {
		t.Run(b.name, func(t *testing.T) {
			b.skipIfAbsent(t)
			d := b.freshDest(t, b.url)
			a, _ := startApp(t, replica(), app.InitResult{}, "")
			a.Email = "owner-" + store.NewID() + "@example.test"
			var err error
			a.Init, err = app.Bootstrap(context.Background(), a.Store, app.InitOptions{Organization: "Message replicas", Email: a.Email, Workspace: "Ops"})
			if err != nil {
				t.Fatal(err)
			}
			r2, _ := startApp(t, replica(), a.Init, a.Email)
			auto := a.MkAutomation(t, "Orders", greetCode, false)
			a.messageFixture(t, b, auto.ID, d, "", r2)
			for _, r := range []*testEnv{a, r2} {
				syncMessages(t, r)
			}
			for round := range 2 {
				for i := range 10 {
					b.publish(t, b.url, d.name, fmt.Sprintf("m-%d", i), orderBody(i))
					if round == 0 {
						b.publish(t, b.url, d.name, fmt.Sprintf("m-%d", i), orderBody(i))
					}
				}
			}
			a.waitRuns(t, auto.ID, 10)
			b.publish(t, b.url, d.name, "m-last", orderBody(100))
			if n := a.waitRuns(t, auto.ID, 11); n != 11 {
				t.Errorf("%d runs, want 11", n)
			}
		})
	}
}

// syncMessages subscribes env's app to the message trigger instances now
// stored and fails on an error of env's own organization. The PostgreSQL
// tier shares one database among the package's tests: another test's
// instance (a broker address that refuses on purpose) is not this test's
// failure.
func syncMessages(t *testing.T, env *testEnv) {
	t.Helper()
	err := env.App.Messages.Sync(context.Background())
	if err == nil {
		return
	}
	for _, line := range strings.Split(err.Error(), "\n") {
		if strings.Contains(line, env.Init.OrganizationID+"/") {
			t.Fatal(line)
		}
	}
}
