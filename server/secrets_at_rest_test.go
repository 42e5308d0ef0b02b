package server_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/proserun/prose/server/app"
	"github.com/proserun/prose/server/testenv"
	"github.com/proserun/prose/store"
)

// TestSecretsSealedAtRest (issue 26, findings 2 and 6): every secret kind a
// tenant gives — a connection's credentials, an inbound webhook trigger's
// HMAC secret, a broker URL's password, an outbound webhook's HMAC secret —
// is found neither in the database (the SQLite file and its WAL, or a
// PostgreSQL dump of the test database) nor in any answer to a
// workspace_viewer, which sees the broker URL as "[redacted]".
func TestSecretsSealedAtRest(t *testing.T) {
	data := t.TempDir()
	e := newTestEnvWith(t, func(c *app.Config) { c.Data = data })
	secrets := map[string]string{
		"connection password":     "conn-password-" + store.NewID(),
		"webhook trigger secret":  "trigger-secret-" + store.NewID(),
		"broker password":         "broker-password-" + store.NewID(),
		"outbound webhook secret": "outbound-secret-" + store.NewID(),
	}
	e.API(t, "POST", e.WsPath()+"/books/http/1.0.0/connections", `{"connection_name": "crm",
		"authentication": {"authentication_id": "basic", "authentication_credentials": [{"id": "username", "value": {"text_value": "ana"}},
		{"id": "password", "value": {"sensitive_value": {"value": {"text_value": "`+secrets["connection password"]+`"}}}}]}}`, 200)
	orders, _ := e.TriggersPath(t, e.WsPath(), "webhook", "orders")
	e.API(t, "POST", orders,
		`{"name":"Orders","configuration":{"secret":{"text_value":"`+secrets["webhook trigger secret"]+`"}}}`, 200)
	// 192.0.2.1 (TEST-NET-1) answers nobody: the subscription only retries.
	busPath, _ := e.TriggersPath(t, e.WsPath(), "rabbitmq", "bus")
	bus := e.API(t, "POST", busPath,
		`{"configuration":{"queue":{"text_value":"orders"},"url":{"text_value":"amqp://ana:`+secrets["broker password"]+`@192.0.2.1:5672/vhost?heartbeat=5"}}}`, 200)
	e.API(t, "POST", e.WsPath()+"/webhooks", `{"url":"https://example.test/hook","secret":"`+secrets["outbound webhook secret"]+`","event_types":["WEBHOOK_EVENT_TYPE_RUN_STATE_CHANGED"]}`, 200)

	if got := testenv.Field(bus, "trigger_instance.configuration.url.text_value"); got != "amqp://ana:[redacted]@192.0.2.1:5672/vhost?heartbeat=5" {
		t.Errorf("the broker URL as created: %v", got)
	}
	// A viewer reads every trigger and webhook of the workspace: no secret.
	viewer := e.NewKey(t, testenv.KeySpec{User: e.NewViewer(t).ID})
	for _, path := range []string{e.WsPath() + "/triggers", e.WsPath() + "/webhooks",
		e.WsPath() + "/books/http/1.0.0/connections"} {
		code, _, raw := e.DoHTTP(t, "GET", path, "", map[string]string{"Authorization": "Bearer " + viewer})
		if code != 200 {
			t.Errorf("GET %s as a viewer: %d %s", path, code, raw)
		}
		for kind, s := range secrets {
			if strings.Contains(string(raw), s) {
				t.Errorf("GET %s as a viewer shows the %s: %s", path, kind, raw)
			}
		}
	}

	var stored []byte
	if url := os.Getenv("PROSE_TEST_POSTGRES_URL"); url != "" {
		out, err := exec.Command("pg_dump", "--data-only", "--dbname", url).Output()
		if err != nil {
			t.Fatalf("pg_dump of the test database (postgresql-client, installed by .ci/run): %v", err)
		}
		stored = out
	} else {
		files, _ := filepath.Glob(filepath.Join(data, "*"))
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err == nil {
				stored = append(stored, b...)
			}
		}
		if len(stored) == 0 {
			t.Fatalf("no database file in %s", data)
		}
	}
	for kind, s := range secrets {
		if bytes.Contains(stored, []byte(s)) {
			t.Errorf("the %s is stored in plain text", kind)
		}
	}
}
