package server_test

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/proserun/prose/server/testenv"
)

// TestMessageTriggersFollowABrokerRestart: a subscription lost when its
// broker goes away is made again when the broker is back, with a log line
// and prose_trigger_subscription_up going 0 then 1, and the messages
// published once the broker is back (before Prose has subscribed again)
// start their runs: NATS (JetStream) and Mosquitto are brokers of the
// test's own, stopped (SIGTERM) and started again on their port and store;
// RabbitMQ is the machine's, reached through a TCP proxy the test cuts and
// opens again (restarting a shared RabbitMQ would disturb other tests: for
// Prose the connection closes all the same), the messages going straight
// to the broker.
func TestMessageTriggersFollowABrokerRestart(t *testing.T) {
	for _, b := range brokers() {
		if b.name == "nats-core" {
			continue // at most once: what is published while it reconnects is lost
		}
		t.Run(b.name, func(t *testing.T) {
			var subURL, pubURL string
			var br *testenv.Broker
			var down, up func(t *testing.T)
			switch b.name {
			case "nats", "mqtt":
				if b.name == "nats" {
					br = testenv.StartNATS(t)
				} else {
					br = testenv.StartMosquitto(t)
				}
				subURL, pubURL, down, up = br.URL, br.URL, br.Stop, br.Start
			case "rabbitmq":
				b.skipIfAbsent(t)
				p := newCutProxy(t, b.addr)
				subURL, pubURL = "amqp://guest:guest@"+p.addr+"/", b.url
				down, up = func(*testing.T) { p.cut() }, p.restore
			}
			d := b.freshDest(t, pubURL)
			logs := &testenv.SyncBuffer{}
			e := newTestEnvLogged(t, nil, slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo})))
			a := e.MkAutomation(t, "Orders", greetCode, false)
			id := e.messageFixture(t, b, a.ID, d, subURL)
			syncMessages(t, e)
			b.publish(t, pubURL, d.name, "m-1", orderBody(1))
			e.waitRuns(t, a.ID, 1)
			labels := []string{"trigger", id, "broker", b.book}
			gauge := func() float64 { v, _ := metricSum(e.scrape(t), "prose_trigger_subscription_up", labels...); return v }

			down(t)
			waitFor(t, "the gauge to say the subscription is down", func() bool { return gauge() == 0 })
			up(t)
			back := time.Now()
			b.publish(t, pubURL, d.name, "m-2", orderBody(2))
			b.publish(t, pubURL, d.name, "m-3", orderBody(3))
			t.Cleanup(func() {
				if t.Failed() {
					t.Logf("Prose's log:\n%s", logs.String())
					if br != nil {
						t.Logf("the broker's log:\n%s", br.Log())
					}
				}
			})
			if n := e.waitRuns(t, a.ID, 3); n != 3 {
				t.Errorf("%d runs, want 3", n)
			}
			t.Logf("%s: the messages published once the broker was back started their runs %s later", b.name, time.Since(back).Round(10*time.Millisecond))
			waitFor(t, "the gauge to say the subscription is up", func() bool { return gauge() == 1 })
			if b.name != "nats" && !strings.Contains(logs.String(), "subscription re-established") {
				// (NATS reconnects by itself: its subscription is not lost.)
				t.Errorf("no log line says the subscription was made again:\n%s", logs.String())
			}
		})
	}
}
