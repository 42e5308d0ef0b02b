package server_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/internal/books"
	"github.com/proserun/prose/server"
	"github.com/proserun/prose/server/testenv"
	"github.com/proserun/prose/store"
)

// TestNATSTriggerConfiguration: a NATS trigger's delivery is "jetstream"
// (the default) or "core"; stream and consumer are JetStream names, and
// not with core. Anything else is INVALID_ARGUMENT INVALID_TRIGGER naming
// the field, over HTTP and gRPC; the accepted ones are shown as given.
func TestNATSTriggerConfiguration(t *testing.T) {
	e := newTestEnv(t)
	_, bus := e.TriggersPath(t, e.WsPath(), server.NATSBook, "bus")
	// The instances go before the server stops (on PostgreSQL a later
	// test's server would subscribe to them).
	t.Cleanup(func() {
		list, _ := testenv.Field(e.API(t, "GET", e.WsPath()+"/triggers", "", 200), "trigger_instances").([]any)
		for _, x := range list {
			e.API(t, "DELETE", e.WsPath()+"/connections/"+bus+"/triggers/"+fmt.Sprint(testenv.Field(x, "id")), "", 200)
		}
	})
	text := func(v string) *platformv1.BdkValue {
		return &platformv1.BdkValue{Kind: &platformv1.BdkValue_TextValue{TextValue: v}}
	}
	add := func(cfg map[string]string) *platformv1.AddWorkspaceBookConnectionTriggerInstanceRequest {
		c := map[string]*platformv1.BdkValue{"subject": text("orders.created")}
		for k, v := range cfg {
			c[k] = text(v)
		}
		return &platformv1.AddWorkspaceBookConnectionTriggerInstanceRequest{OrganizationId: e.Init.OrganizationID, WorkspaceId: e.Init.WorkspaceID,
			BookName: server.NATSBook, BookVersion: books.TriggerBookVersion, ConnectionId: bus, Configuration: c}
	}
	const rpc = "/prose.platform.v1.TriggerService/AddWorkspaceBookConnectionTriggerInstance"
	forEachTransport(t, func(t *testing.T, tr apiTransport) {
		for _, c := range []struct {
			cfg   map[string]string
			field string
		}{
			{map[string]string{"delivery": "exactly-once"}, "configuration.delivery"},
			{map[string]string{"stream": "orders.stream"}, "configuration.stream"},
			{map[string]string{"consumer": "has space"}, "configuration.consumer"},
			{map[string]string{"consumer": strings.Repeat("c", 201)}, "configuration.consumer"},
			{map[string]string{"delivery": "core", "stream": "ORDERS"}, "configuration.delivery"},
			{map[string]string{"queue": "orders"}, "configuration.queue"},
		} {
			_, err := e.call(t, tr, rpc, add(c.cfg))
			if status.Code(err) != codes.InvalidArgument || !strings.Contains(fmt.Sprint(err, status.Convert(err).Details()), "INVALID_TRIGGER") {
				t.Errorf("%v: %v, want INVALID_ARGUMENT INVALID_TRIGGER", c.cfg, err)
			}
			if !strings.Contains(fmt.Sprint(err, status.Convert(err).Details()), c.field) {
				t.Errorf("%v: %v does not name %s", c.cfg, err, c.field)
			}
		}
		for _, cfg := range []map[string]string{{"delivery": "core"}, {"delivery": "jetstream", "stream": "ORDERS", "consumer": "orders-prose"}} {
			m := e.mustCall(t, tr, rpc, add(cfg))
			for k, v := range cfg {
				if got := testenv.Field(m, "trigger_instance.configuration."+k+".text_value"); got != v {
					t.Errorf("%v: configuration.%s = %v", cfg, k, got)
				}
			}
		}
	})
}

// TestNATSTriggerOnAStreamOfYourOwn: a trigger naming a stream and a
// consumer the operator made reads from them, and deleting the trigger
// leaves them; a trigger naming neither, on a subject that stream
// captures, gets its durable consumer prose-{instance} on that stream
// (no stream of its own), which goes with the trigger.
func TestNATSTriggerOnAStreamOfYourOwn(t *testing.T) {
	b := brokers()[0]
	b.skipIfAbsent(t)
	d := b.freshDest(t, b.url) // removes the stream capturing it at the end
	nc, err := nats.Connect(b.url)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	ctx := context.Background()
	stream, own := "prose-test-own-"+store.NewID(), "mine"
	st, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: stream, Subjects: []string{d.name}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreateConsumer(ctx, jetstream.ConsumerConfig{Durable: own, AckPolicy: jetstream.AckExplicitPolicy}); err != nil {
		t.Fatal(err)
	}
	e := newTestEnv(t)
	a := e.MkAutomation(t, "Orders", greetCode, false)
	mine := b
	mine.config = `"stream":{"text_value":"` + stream + `"},"consumer":{"text_value":"` + own + `"}`
	id := e.messageFixture(t, mine, a.ID, d, "")
	syncMessages(t, e)
	b.publish(t, b.url, d.name, "m-1", orderBody(1))
	if n := e.waitRuns(t, a.ID, 1); n != 1 {
		t.Errorf("%d runs, want 1", n)
	}
	// A second trigger on the subject: its consumer on the same stream.
	a2 := e.MkAutomation(t, "More orders", greetCode, false)
	id2 := e.messageFixture(t, b, a2.ID, d, "")
	syncMessages(t, e)
	if _, err := js.Consumer(ctx, stream, "prose-"+id2); err != nil {
		t.Fatalf("the second trigger's consumer on the operator's stream: %v", err)
	}
	if name, err := js.StreamNameBySubject(ctx, d.name); err != nil || name != stream {
		t.Errorf("the subject's stream is %q (%v), want only %q", name, err, stream)
	}
	b.publish(t, b.url, d.name, "m-2", orderBody(2))
	e.waitRuns(t, a2.ID, 1)
	for _, x := range []string{id, id2} {
		e.API(t, "DELETE", e.instancePath(x), "", 200)
	}
	syncMessages(t, e)
	if _, err := js.Consumer(ctx, stream, own); err != nil {
		t.Errorf("the operator's consumer after its trigger was deleted: %v", err)
	}
	// Sync closes the subscriptions of deleted instances before it returns.
	if _, err := js.Consumer(ctx, stream, "prose-"+id2); !errors.Is(err, jetstream.ErrConsumerNotFound) {
		t.Errorf("the consumer Prose made, after its trigger was deleted: %v, want not found", err)
	}
}
