package console_test

import (
	"bytes"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/proserun/prose/server"
	"github.com/proserun/prose/server/testenv"
	"github.com/proserun/prose/store"
)

// seeded is a workspace with something on every page: an automation with
// a waiting run, a learning that resolved a later run by itself, estimates,
// a webhook, a webhook trigger that started a run, a schedule and a
// connection.
type seeded struct {
	Automation, Waiting, Resolved, Learning, Exception string
	Webhook, Trigger, TriggerConnection, Connection    string
}

const seedCode = "get the invoice total\nthe output total is the invoice total * 2\n"

func seedProduct(t *testing.T, e *testEnv) seeded {
	t.Helper()
	var sd seeded
	sd.Automation = "invoice-totals"
	e.API(t, "POST", e.AutomationsPath()+"?automation_id="+sd.Automation, `{"display_name":"Invoice totals","english_code":`+testenv.JSONStr(seedCode)+`}`, 200)
	e.API(t, "POST", e.AutomationsPath()+"/"+sd.Automation+":publish", `{}`, 200)
	invoke := func() string {
		m := e.API(t, "POST", e.AutomationsPath()+"/"+sd.Automation+":invoke", `{"stage":"AUTOMATION_STAGE_PUBLISHED"}`, 200)
		return fmt.Sprint(m["run_id"])
	}
	// A run that waits, resolved with "remember": a learning, approved.
	first := invoke()
	r := e.WaitRunState(t, sd.Automation, first, store.RunAwaitingGuidance)
	res := e.API(t, "POST", e.WsPath()+"/exceptions/"+r.ExceptionID+":resolve",
		`{"remember":true,"provide_values":{"values":{"the invoice total":{"number":{"lo":12050,"flags":131072}}}}}`, 200)
	sd.Learning = store.LastSegment(fmt.Sprint(testenv.Field(res, "extra.remembered_guide_entry")))
	e.API(t, "POST", e.AutomationsPath()+"/"+sd.Automation+"/guideEntries/"+sd.Learning+":approve", `{}`, 200)
	// The next run is resolved by the learning; another one is made to wait
	// by a draft the learning does not know.
	sd.Resolved = invoke()
	e.WaitRunState(t, sd.Automation, sd.Resolved, store.RunCompleted)
	// An id given on create (every other automation's is a slug of its
	// name): the walk checks that no 20-character random id shows.
	e.API(t, "POST", e.AutomationsPath()+"?automation_id=supplier-check", `{"display_name":"Supplier check","english_code":`+testenv.JSONStr(testenv.ExcAskCode)+`}`, 200)
	m := e.API(t, "POST", e.AutomationsPath()+"/supplier-check:invoke", `{"stage":"AUTOMATION_STAGE_DRAFT"}`, 200)
	sd.Waiting = fmt.Sprint(m["run_id"])
	sd.Exception = e.WaitRunState(t, "supplier-check", sd.Waiting, store.RunAwaitingGuidance).ExceptionID

	e.API(t, "POST", e.WsPath()+"/dashboards:configureAutomationEstimates", `{"automation_estimates":[{"automation_id":"organizations/`+
		e.Init.OrganizationID+`/workspaces/`+e.Init.WorkspaceID+`/automations/`+sd.Automation+`","cost_usd":"12.50","time_saved_secs":600}]}`, 200)
	wh := e.API(t, "POST", e.WsPath()+"/webhooks", `{"url":"https://127.0.0.1:9/prose","display_name":"Ops board","event_types":["WEBHOOK_EVENT_TYPE_RUN_STATE_CHANGED"]}`, 200)
	sd.Webhook = store.LastSegment(fmt.Sprint(wh["name"]))
	e.API(t, "POST", e.AutomationsPath()+"/"+sd.Automation+"/schedule", `{"config":{"start":{"start_date":{"year":2030,"month":1,"day":7},"time":{"hours":9},"time_zone":"Europe/Berlin"},"repeat_interval":{"unit":"FREQUENCY_UNIT_DAY"}}}`, 200)
	cn := e.API(t, "POST", e.WsPath()+"/books/http/1.0.0/connections", `{"connection_name":"crm",
		"authentication":{"authentication_id":"bearer","authentication_credentials":[{"id":"token","value":{"text_value":"s3cret-token-value"}}]},
		"config_map":{"base url":{"text_value":"https://crm.example.com/api"}}}`, 200)
	sd.Connection = fmt.Sprint(testenv.Field(cn, "book_connection_descriptor.connection_id"))
	sd.Trigger, sd.TriggerConnection = seedTrigger(t, e, sd.Automation)
	return sd
}

// seedTrigger makes a webhook trigger of the automation and delivers one
// signed event to it (a run started by the trigger); it returns the
// trigger's id and its connection's.
func seedTrigger(t *testing.T, e *testEnv, automation string) (string, string) {
	t.Helper()
	const secret = "a-secret-of-24-characters"
	path, conn := e.TriggersPath(t, e.WsPath(), "webhook", "orders")
	ti := e.API(t, "POST", path, `{"name":"Orders","configuration":{"secret":{"text_value":"`+secret+`"}}}`, 200)
	id := fmt.Sprint(testenv.Field(ti, "trigger_instance.id"))
	e.API(t, "POST", e.WsPath()+"/triggers/"+id+"/automations", `{"automation_ids":["`+automation+`"]}`, 200)
	body := []byte(`{"invoice total": 3}`)
	req, err := http.NewRequest(http.MethodPost, e.Srv.URL+server.WebhookPath(e.Init.OrganizationID, e.Init.WorkspaceID, id), bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Prose-Signature", server.SignWebhook(secret, time.Now(), "order-1", body))
	req.Header.Set("X-Prose-Delivery", "order-1")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusAccepted {
		t.Fatalf("trigger delivery: %d", res.StatusCode)
	}
	return id, conn
}

// productPages are the paths (under /w/{ws}) of every page of the product,
// with an element each page shows.
func productPages(sd seeded) []struct{ Name, Path, Sel string } {
	return []struct{ Name, Path, Sel string }{
		{"insights", "/insights", "#chart-runs"},
		{"learnings", "/learnings", "#learnings"},
		{"learning", "/learnings/" + sd.Automation + "/" + sd.Learning, "#resolved-runs"},
		{"connections", "/connections?book=http@1.0.0", "#connection-list"},
		{"connection", "/connections/" + sd.Connection, "#test-connection"},
		{"triggers", "/triggers", "#schedules"},
		{"webhooks", "/webhooks", "#webhook-list"},
		{"webhook", "/webhooks/" + sd.Webhook, "#deliveries"},
		{"books", "/books?q=send+an+email", "#book-list"},
		{"book", "/books/http", "#procedures"},
		{"automation", "/automations/" + sd.Automation, "#flow"},
	}
}

func containsAll(t *testing.T, what, body string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(body, w) {
			t.Errorf("%s does not show %q", what, w)
		}
	}
}
