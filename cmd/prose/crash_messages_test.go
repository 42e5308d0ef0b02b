package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	mqtt "github.com/eclipse/paho.mqtt.golang"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/proserun/prose/internal/books"
	"github.com/proserun/prose/internal/testtime"
	"github.com/proserun/prose/server"
	"github.com/proserun/prose/server/app"
	"github.com/proserun/prose/server/testenv"
	"github.com/proserun/prose/store"
)

// The burst of TestMessageTriggersSurviveAReplicaKillPostgres: distinct
// messages, and every tenth sent twice.
const (
	burstMessages = 1000
	burstDupEvery = 10
)

// burstBroker is a broker the burst goes through: its trigger's book,
// parameter and URL, and a publisher of the burst.
type burstBroker struct {
	name, book, param, url, dest string
	// publish sends message n (its id "m-{n}", body {"n": n}) to dest;
	// it returns once the broker holds it (JetStream's ack, RabbitMQ's
	// confirm, MQTT's PUBACK).
	publish func(n int) error
	done    func()
}

// TestMessageTriggersSurviveAReplicaKillPostgres: two `prose serve`
// replicas on one PostgreSQL database follow one message trigger; 1,000
// messages and 100 duplicates are published at once, and replica 0 is
// killed (SIGKILL, not restarted) when 30% of the runs exist. Every message
// still becomes exactly one run: 1,000 runs, none doubled, on NATS
// (JetStream), RabbitMQ and MQTT. What the victim had taken and not
// committed goes back to the broker (JetStream: once its ack wait ends;
// RabbitMQ: when its connection drops; MQTT: the survivor's session has
// every message). The figures are logged (BENCHMARKS.md).
func TestMessageTriggersSurviveAReplicaKillPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test: builds the binary, runs 1,000 messages per broker across a SIGKILL")
	}
	testenv.SkipTierIfOff(t, "PROSE_TEST_BROKERS")
	dbURL := crashTempDatabase(t)
	bin := proseBinary(t)
	ini := proseInit(t, bin, "--database", dbURL)
	st, err := app.OpenStore(context.Background(), "", dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	for _, name := range []string{"nats", "rabbitmq", "mqtt"} {
		t.Run(name, func(t *testing.T) {
			b := startBurstBroker(t, name)
			// After the replicas stop (cleanups run last first): a
			// replica still running would declare the queue again.
			t.Cleanup(b.done)
			runBurstKill(t, bin, dbURL, ini, st, b)
		})
	}
}

func startBurstBroker(t *testing.T, name string) burstBroker {
	t.Helper()
	dest := "prose-burst-" + store.NewID()
	body := func(n int) []byte { return fmt.Appendf(nil, `{"n":%d}`, n) }
	switch name {
	case "nats":
		br := testenv.StartNATS(t)
		nc, err := nats.Connect(br.URL)
		if err != nil {
			t.Fatal(err)
		}
		js, _ := jetstream.New(nc)
		return burstBroker{name: name, book: server.NATSBook, param: "subject", url: br.URL, dest: dest, done: nc.Close, publish: func(n int) error {
			m := nats.NewMsg(dest)
			m.Header.Set(nats.MsgIdHdr, fmt.Sprintf("m-%d", n))
			m.Data = body(n)
			_, err := js.PublishMsg(context.Background(), m)
			return err
		}}
	case "mqtt":
		// Mosquitto queues at most 1,000 messages per session by default
		// and drops the rest: an operator expecting bursts lifts it.
		br := testenv.StartMosquitto(t, "max_queued_messages 0")
		c := mqtt.NewClient(mqtt.NewClientOptions().AddBroker(br.URL).SetClientID("prose-burst-" + store.NewID()))
		if tok := c.Connect(); !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
			t.Fatalf("mqtt connect: %v", tok.Error())
		}
		return burstBroker{name: name, book: server.MQTTBook, param: "topic", url: br.URL, dest: dest, done: func() { c.Disconnect(100) }, publish: func(n int) error {
			tok := c.Publish(dest, 1, false, body(n))
			if !tok.WaitTimeout(10 * time.Second) {
				return fmt.Errorf("no PUBACK for message %d", n)
			}
			return tok.Error()
		}}
	}
	// RabbitMQ: the machine's (heavy to start per test), on a queue of
	// the test's own, deleted at the end.
	if c, err := net.DialTimeout("tcp", "127.0.0.1:5672", time.Second); err != nil {
		t.Skipf("RabbitMQ is not running on 127.0.0.1:5672 (.ci/run starts it): %v", err)
	} else {
		c.Close()
	}
	conn, err := amqp.Dial(server.DefaultRabbitMQURL)
	if err != nil {
		t.Fatal(err)
	}
	ch, err := conn.Channel()
	if err == nil {
		_, err = ch.QueueDeclare(dest, true, false, false, false, nil)
	}
	if err == nil {
		err = ch.Confirm(false)
	}
	if err != nil {
		t.Fatal(err)
	}
	return burstBroker{name: "rabbitmq", book: server.RabbitMQBook, param: "queue", url: server.DefaultRabbitMQURL, dest: dest,
		done: func() { _, _ = ch.QueueDelete(dest, false, false, false); _ = conn.Close() },
		publish: func(n int) error {
			dc, err := ch.PublishWithDeferredConfirmWithContext(context.Background(), "", dest, true, false,
				amqp.Publishing{MessageId: fmt.Sprintf("m-%d", n), Body: body(n), DeliveryMode: amqp.Persistent, ContentType: "application/json"})
			if err != nil {
				return err
			}
			if ok, err := dc.WaitContext(context.Background()); err != nil || !ok {
				return fmt.Errorf("message %d not confirmed (%v): %w", n, ok, err)
			}
			return nil
		}}
}

// runBurstKill is the scenario of
// TestMessageTriggersSurviveAReplicaKillPostgres on one broker.
func runBurstKill(t *testing.T, bin, dbURL string, ini app.InitResult, st store.Store, b burstBroker) {
	ctx := context.Background()
	// The deadline only bounds how long a broken scenario hangs.
	deadline := testtime.Deadline(4 * time.Minute)
	procs := make([]*proseProc, 2)
	for i := range procs {
		procs[i] = startProse(t, bin, deadline, "--database", dbURL, "--replica-name", fmt.Sprintf("burst-%d", i),
			"--trigger-rate", "100", "--trigger-burst", "100")
	}
	fail := func(format string, args ...any) {
		t.Helper()
		for i, p := range procs {
			t.Logf("replica %d log tail:\n%s", i, p.logTail())
		}
		t.Fatalf(format, args...)
	}
	c := newAPIClient(procs[0].addr, ini.APIKey)
	automation, err := c.createAutomation(ctx, ini.Workspace, "the output x is the n\n")
	if err != nil {
		fail("create automation: %v", err)
	}
	var inst struct {
		TriggerInstance struct{ ID string } `json:"trigger_instance"`
	}
	var conn struct {
		Descriptor struct {
			ID string `json:"connection_id"`
		} `json:"book_connection_descriptor"`
	}
	connections := "/api/v1/" + ini.Workspace + "/books/" + b.book + "/" + books.TriggerBookVersion + "/connections"
	if err := c.do(ctx, "POST", connections, map[string]any{"connection_name": "burst " + b.book}, &conn); err != nil {
		fail("trigger connection: %v", err)
	}
	cfg := map[string]any{b.param: map[string]string{"text_value": b.dest}, "url": map[string]string{"text_value": b.url}}
	if err := c.do(ctx, "POST", connections+"/"+conn.Descriptor.ID+"/triggers", map[string]any{"configuration": cfg}, &inst); err != nil {
		fail("trigger instance: %v", err)
	}
	id := inst.TriggerInstance.ID
	if err := c.do(ctx, "POST", "/api/v1/"+ini.Workspace+"/triggers/"+id+"/automations", map[string]any{"automation_ids": []string{automation}}, nil); err != nil {
		fail("set automations: %v", err)
	}
	for i, p := range procs {
		for !subscribed(p.addr, id) {
			if time.Now().After(deadline) {
				fail("replica %d never subscribed", i)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	org, ws := ini.OrganizationID, ini.WorkspaceID
	count := func() map[int]int {
		t.Helper()
		byN, err := runsByInput(ctx, st, org, ws, automation)
		if err != nil {
			t.Fatal(err)
		}
		return byN
	}
	start := time.Now()
	published := make(chan error, 1)
	go func() {
		for n := range burstMessages {
			if err := b.publish(n); err != nil {
				published <- err
				return
			}
			if n%burstDupEvery == 0 {
				if err := b.publish(n); err != nil {
					published <- err
					return
				}
			}
		}
		published <- nil
	}()
	var killedAt time.Time
	atKill := 0
	for {
		byN := count()
		if killedAt.IsZero() && len(byN) >= burstMessages*3/10 {
			procs[0].kill()
			killedAt, atKill = time.Now(), len(byN)
		}
		if len(byN) >= burstMessages {
			break
		}
		if time.Now().After(deadline) {
			fail("%d of %d messages have runs", len(byN), burstMessages)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := <-published; err != nil {
		fail("publish: %v", err)
	}
	all := time.Since(start)
	// A last message, published after the others: once its run exists,
	// the survivor has been through what it held before it.
	if err := b.publish(burstMessages); err != nil {
		fail("publish: %v", err)
	}
	for len(count()) <= burstMessages {
		if time.Now().After(deadline) {
			fail("the last message has no run")
		}
		time.Sleep(100 * time.Millisecond)
	}
	byN := count()
	runs, doubled := 0, 0
	for n := range burstMessages + 1 {
		runs += byN[n]
		if byN[n] != 1 {
			doubled++
			t.Errorf("message %d: %d runs, want 1", n, byN[n])
		}
	}
	if len(byN) != burstMessages+1 || runs != burstMessages+1 {
		t.Errorf("%d runs of %d messages (%d distinct inputs), want one each", runs, burstMessages+1, len(byN))
	}
	t.Logf("%s: %d messages (+%d duplicates, +1 last), replica 0 killed at %d runs; %d runs, %d messages not exactly once; all runs %s after the burst began, %s after the kill",
		b.name, burstMessages, burstMessages/burstDupEvery, atKill, runs, doubled, all.Round(100*time.Millisecond), all.Round(100*time.Millisecond)-killedAt.Sub(start).Round(100*time.Millisecond))
}

// subscribed tells whether the replica at addr says its subscription of
// trigger instance id holds (prose_trigger_subscription_up 1).
func subscribed(addr, id string) bool {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(body), "\n") {
		if strings.HasPrefix(line, "prose_trigger_subscription_up{") && strings.Contains(line, `trigger="`+id+`"`) {
			return strings.HasSuffix(line, " 1")
		}
	}
	return false
}

// runsByInput counts the runs of an automation by their input n.
func runsByInput(ctx context.Context, st store.Store, org, ws, automation string) (map[int]int, error) {
	out := map[int]int{}
	req := store.ListRunsRequest{OrganizationID: org, WorkspaceID: ws, AutomationID: automation, PageSize: 1000}
	for {
		page, err := st.ListRuns(ctx, req)
		if err != nil {
			return nil, err
		}
		for _, r := range page.Items {
			p, err := server.RunToProto(r)
			if err != nil {
				return nil, err
			}
			out[int(p.GetUserInputs()["n"].GetNumber().GetLo())]++ // small whole numbers: lo alone
		}
		if page.NextPageToken == "" {
			return out, nil
		}
		req.PageToken = page.NextPageToken
	}
}
