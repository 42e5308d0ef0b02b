package server_test

import (
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protojson"

	"github.com/proserun/prose/internal/testtime"
	"github.com/proserun/prose/server/app"
	"github.com/proserun/prose/server/testenv"
	"github.com/proserun/prose/store"
)

// acceptCounter is a TCP listener on loopback that counts the
// connections it accepts (and closes them): the peer every outbound path is
// pointed at.
type acceptCounter struct {
	net.Listener
	accepted atomic.Int64
}

func newAcceptCounter(t *testing.T) *acceptCounter {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c := &acceptCounter{Listener: l}
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			c.accepted.Add(1)
			_ = conn.Close()
		}
	}()
	t.Cleanup(func() { _ = l.Close() })
	return c
}

// outboundPath drives one way a tenant makes the server dial out, pointed
// at addr (host:port on loopback), and returns what the tenant reads of
// the refusal.
type outboundPath struct {
	name  string
	drive func(t *testing.T, e *testEnv, addr string) string
}

// outboundPaths is every outbound path a tenant can point somewhere: a new
// one belongs here (internal/netguard's TestOneWayOut fails on a dial site
// outside the guard and names this table).
func outboundPaths() []outboundPath {
	return []outboundPath{
		{"http book", func(t *testing.T, e *testEnv, addr string) string {
			a := e.MkAutomation(t, "Http", `call the api at "http://`+addr+`/x"`+"\nthe output done is 1\n", false)
			return e.exceptionText(t, a.ID, e.invokeAPI(t, a.ID))
		}},
		{"http book, by name", func(t *testing.T, e *testEnv, addr string) string {
			_, port, _ := net.SplitHostPort(addr)
			a := e.MkAutomation(t, "Http by name", `call the api at "http://localhost:`+port+`/x"`+"\nthe output done is 1\n", false)
			return e.exceptionText(t, a.ID, e.invokeAPI(t, a.ID))
		}},
		{"registered book", func(t *testing.T, e *testEnv, addr string) string {
			d := discountBook().Descriptor("http://" + addr)
			d.Name = "test.outbound"
			raw, err := protojson.Marshal(d)
			if err != nil {
				t.Fatal(err)
			}
			e.API(t, "POST", e.booksPath(), string(raw), 200)
			a := e.MkAutomation(t, "Registered", "get the discount of the order\nthe output discount is the above\n", false)
			inv := e.API(t, "POST", e.AutomationsPath()+"/"+a.ID+":invoke", `{"stage":"AUTOMATION_STAGE_DRAFT","inputs":{"order":{"text":"A-1"}}}`, 200)
			return e.exceptionText(t, a.ID, fmt.Sprint(inv["run_id"]))
		}},
		{"file download", func(t *testing.T, e *testEnv, addr string) string {
			a := e.MkAutomation(t, "Download", "read the table from the orders file\nthe output rows is the above\n", false)
			inv := e.API(t, "POST", e.AutomationsPath()+"/"+a.ID+":invoke", `{"stage":"AUTOMATION_STAGE_DRAFT","inputs":{"orders file":{"file":{"remote":"http://`+addr+`/orders.csv"}}}}`, 200)
			return e.exceptionText(t, a.ID, fmt.Sprint(inv["run_id"]))
		}},
		{"email", func(t *testing.T, e *testEnv, addr string) string {
			host, port, _ := net.SplitHostPort(addr)
			e.API(t, "POST", e.WsPath()+"/books/email/1.0.0/connections", `{"connection_name": "mail",
				"config_map": {"host": {"text_value": "`+host+`"}, "port": {"number_value": `+port+`}, "security": {"text_value": "none"}, "from": {"text_value": "robot@acme.test"}}}`, 200)
			a := e.MkAutomation(t, "Mail", "send an email to \"ops@acme.test\" with\n  the subject is \"x\"\n  the body is \"y\"\n  the connection is \"mail\"\nthe output done is 1\n", false)
			return e.exceptionText(t, a.ID, e.invokeAPI(t, a.ID))
		}},
		{"database query", func(t *testing.T, e *testEnv, addr string) string {
			host, port, _ := net.SplitHostPort(addr)
			addDatabaseConnection(t, e, "postgresql", host, port, "db", "u", "pw-x")
			a := e.MkAutomation(t, "Query", bigOrdersCode, false)
			inv := e.API(t, "POST", e.AutomationsPath()+"/"+a.ID+":invoke", `{"stage":"AUTOMATION_STAGE_DRAFT","inputs":{"sql":{"text":"select 1"},"minimum":{"number":{"lo":1}}}}`, 200)
			return e.exceptionText(t, a.ID, fmt.Sprint(inv["run_id"]))
		}},
		{"database discovery", func(t *testing.T, e *testEnv, addr string) string {
			host, port, _ := net.SplitHostPort(addr)
			m := e.API(t, "POST", e.WsPath()+"/books/databases/1.0.0/connections", `{"connection_name": "disc",
				"authentication": {"authentication_id": "password", "authentication_credentials": [{"id": "username", "value": {"text_value": "u"}}, {"id": "password", "value": {"text_value": "pw-x"}}]},
				"config_map": {"engine": {"text_value": "mysql"}, "host": {"text_value": "`+host+`"}, "port": {"number_value": `+port+`}, "database": {"text_value": "db"}, "tls": {"text_value": "disable"}}}`, 200)
			id := fmt.Sprint(testenv.Field(m, "book_connection_descriptor.connection_id"))
			code, body := e.APIRaw(t, "GET", e.WsPath()+"/connections/"+id+"/discoverables", "")
			if code < 400 {
				t.Errorf("discovery answered %d", code)
			}
			return string(body)
		}},
		{"OAuth token url", func(t *testing.T, e *testEnv, addr string) string {
			m := e.API(t, "POST", e.WsPath()+"/books/http/1.0.0/connections", `{"connection_name": "crm",
				"authentication": {"authentication_id": "oauth2", "authentication_credentials": [{"id": "client id", "value": {"text_value": "cid"}}, {"id": "client secret", "value": {"text_value": "cs-x"}}]},
				"config_map": {"authorize url": {"text_value": "https://provider.example/authorize"}, "token url": {"text_value": "http://`+addr+`/token"}}}`, 200)
			id := fmt.Sprint(testenv.Field(m, "book_connection_descriptor.connection_id"))
			a := e.API(t, "PUT", e.WsPath()+"/connections/"+id+"/authorize", "", 200)
			u, _ := url.Parse(fmt.Sprint(testenv.Field(a, "authorize_url.url")))
			code, body := e.APIRaw(t, "GET", "/oauth/callback?code=c&state="+url.QueryEscape(u.Query().Get("state")), "")
			if code != http.StatusBadRequest {
				t.Errorf("callback answered %d", code)
			}
			return string(body)
		}},
		{"outbound webhook", func(t *testing.T, e *testEnv, addr string) string {
			m := e.API(t, "POST", e.WsPath()+"/webhooks", `{"url":"http://`+addr+`/hook","event_types":["WEBHOOK_EVENT_TYPE_RUN_STATE_CHANGED"]}`, 200)
			hook := store.LastSegment(fmt.Sprint(m["name"]))
			a := e.MkAutomation(t, "Quick", "the output x is 1\n", false)
			e.WaitRun(t, a.ID, e.invokeAPI(t, a.ID), "completed")
			var out []string
			for _, d := range e.deliveries(t, hook, 1) {
				if d["state"] != "WEBHOOK_DELIVERY_STATE_FAILED" {
					t.Errorf("delivery: %v", d)
				}
				out = append(out, fmt.Sprint(d["last_error"]))
			}
			return strings.Join(out, "\n")
		}},
		{"NATS trigger", brokerPath("nats", "subject", "nats://%s")},
		{"NATS trigger over TLS", brokerPath("nats", "subject", "tls://%s")},
		{"RabbitMQ trigger", brokerPath("rabbitmq", "queue", "amqp://guest:pw-x@%s/")},
		{"RabbitMQ trigger over TLS", brokerPath("rabbitmq", "queue", "amqps://guest:pw-x@%s/")},
		{"MQTT trigger", brokerPath("mqtt", "topic", "tcp://%s")},
		{"MQTT trigger over TLS", brokerPath("mqtt", "topic", "ssl://%s")},
		{"MQTT trigger over WebSocket", brokerPath("mqtt", "topic", "ws://%s/mqtt")},
	}
}

// brokerPath is a message trigger instance of book whose broker URL is
// urlFormat with the address; its status tells why it has no subscription.
func brokerPath(book, param, urlFormat string) func(t *testing.T, e *testEnv, addr string) string {
	return func(t *testing.T, e *testEnv, addr string) string {
		triggers, conn := e.TriggersPath(t, e.WsPath(), book, "bus-"+store.NewID())
		e.API(t, "POST", triggers,
			`{"configuration":{"url":{"text_value":"`+fmt.Sprintf(urlFormat, addr)+`"},"`+param+`":{"text_value":"orders"}}}`, 200)
		deadline := testtime.Deadline(testtime.Wait)
		for {
			l := e.API(t, "GET", e.WsPath()+"/triggers?filter="+url.QueryEscape(`connection_id = "`+conn+`"`), "", 200)
			if testenv.Field(l, "trigger_instances.0.status.state") == "TRIGGER_INSTANCE_STATE_FAILED" {
				return fmt.Sprint(testenv.Field(l, "trigger_instances.0.status.reason"))
			}
			if time.Now().After(deadline) {
				t.Fatalf("the instance's status never says it has no subscription: %v", l)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// exceptionText waits for run of automation a to wait for guidance and
// returns its exception's message and description.
func (e *testEnv) exceptionText(t *testing.T, a, run string) string {
	t.Helper()
	r := e.WaitRun(t, a, run, "awaiting_guidance")
	xid := store.LastSegment(fmt.Sprint(testenv.Field(r, "state.awaiting_guidance.exception")))
	x := e.API(t, "GET", e.WsPath()+"/exceptions/"+xid, "", 200)
	return fmt.Sprint(x["message"], " ", x["description"])
}

// TestOutboundPathsRefuseLoopback walks every outbound path a tenant can
// point at an address, with --allow-private-networks off: each is refused
// with "refused: not a public address", names no resolver, and the
// listener it was pointed at accepts no connection.
func TestOutboundPathsRefuseLoopback(t *testing.T) {
	e := newTestEnvWith(t, func(c *app.Config) {
		c.AllowPrivateNetworks = false
		c.WebhookBackoff = time.Millisecond
		c.PublicURL = oauthPublic
	})
	for _, p := range outboundPaths() {
		t.Run(p.name, func(t *testing.T) {
			l := newAcceptCounter(t)
			said := p.drive(t, e, l.Addr().String())
			if !strings.Contains(said, "refused: not a public address") {
				t.Errorf("the tenant reads %q, want \"refused: not a public address\"", said)
			}
			if strings.Contains(said, ":53") || strings.Contains(said, "pw-x") {
				t.Errorf("the tenant reads a resolver's address or a password: %q", said)
			}
			if n := l.accepted.Load(); n != 0 {
				t.Errorf("the loopback listener accepted %d connections", n)
			}
		})
	}
}
