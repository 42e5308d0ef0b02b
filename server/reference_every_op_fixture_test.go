package server_test

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/proserun/prose/server/testenv"
	"github.com/proserun/prose/store"
)

// everyOpCode asks for an input, calls a book, decides and outputs: a run
// of it without the input waits for guidance, with it completes.
const everyOpCode = `get the invoice total
get the current time
if the invoice total is more than 100 then
  say "a big invoice"
the output total is the invoice total * 2
`

// everyOpFile is the file the fixture uploads.
const everyOpFile = "id,total\n1,120.50\n"

// opFixture is a workspace with something of every kind the reference's
// operations read, so that lists are not empty and optional parts are set:
// vals holds their ids by placeholder name ({a} in a case is vals["a"]).
type opFixture struct {
	e    *testEnv
	vals map[string]string
}

// newOpFixture makes it: members and invitations, workspace books and
// connections of every kind, an automation with a schedule, a trigger, an
// estimate, a guide entry and revisions, a completed run and one waiting
// for guidance with an exception and a conversation, and a file.
func newOpFixture(t *testing.T, e *testEnv) *opFixture {
	t.Helper()
	fx := &opFixture{e: e, vals: map[string]string{
		"org": e.Init.OrganizationID, "ws": e.Init.WorkspaceID, "owner": e.Init.UserID,
	}}
	fx.vals["viewer"] = e.NewViewer(t).ID
	inv := e.API(t, "POST", e.WsPath()+"/invites", `{"email": "invited-`+store.NewID()+`@example.test", "roles": ["workspace_viewer"]}`, 200)
	fx.vals["inv"] = fmt.Sprint(inv["invitation_id"])
	fx.connections(t)
	fx.automation(t)
	fx.runs(t)
	_, fx.vals["file"] = fx.upload(t, "invoices.csv")
	return fx
}

// add adds a connection to a book and returns its id.
func (fx *opFixture) add(t *testing.T, book, version, body string) string {
	t.Helper()
	m := fx.e.API(t, "POST", fx.e.WsPath()+"/books/"+book+"/"+version+"/connections", body, 200)
	return fmt.Sprint(testenv.Field(m, "book_connection_descriptor.connection_id"))
}

func (fx *opFixture) connections(t *testing.T) {
	t.Helper()
	e := fx.e
	book := stampServer(t)
	e.registerStampBook(t, book.URL, "1.0.0")
	e.registerStampBook(t, book.URL, "2.0.0")
	fx.vals["crm"] = fx.add(t, "http", "1.0.0", `{"connection_name": "crm", "authentication": {"authentication_id": "bearer",
		"authentication_credentials": [{"id": "token", "value": {"text_value": "secret-token"}}]},
		"config_map": {"base url": {"text_value": "https://crm.example.test"}}, "labels": [{"key": "team", "value": "ops"}]}`)
	fx.vals["crm2"] = fx.add(t, "http", "1.0.0", `{"connection_name": "crm2"}`)
	fx.vals["oauth"] = fx.add(t, "http", "1.0.0", `{"connection_name": "oauth",
		"authentication": {"authentication_id": "oauth2", "authentication_credentials": [{"id": "client id", "value": {"text_value": "cid"}}, {"id": "client secret", "value": {"text_value": "cs"}}]},
		"config_map": {"base url": {"text_value": "https://api.example.test"}, "authorize url": {"text_value": "https://id.example.test/authorize"},
		"token url": {"text_value": "https://id.example.test/token"}, "scopes": {"text_value": "read write"}}}`)
	fx.vals["mail"] = fx.add(t, "email", "1.0.0", `{"connection_name": "mail", "config_map": {"host": {"text_value": "smtp.example.test"}, "from": {"text_value": "robot@example.test"}}}`)
	fx.vals["stamps"] = fx.add(t, "test.stamps", "1.0.0", `{"connection_name": "stamps", "authentication": {"authentication_id": "token",
		"authentication_credentials": [{"id": "key", "value": {"text_value": "stamp-key"}}]}, "config_map": {"region": {"text_value": "eu"}}}`)
	fx.vals["stamps2"] = fx.add(t, "test.stamps", "2.0.0", `{"connection_name": "stamps two"}`)
	fx.vals["db"] = fx.database(t)
	_, fx.vals["hook"] = e.TriggersPath(t, e.WsPath(), "webhook", "orders")
}

// database adds a databases connection to the MariaDB on loopback or the
// package's PostgreSQL database, whichever answers ("" when neither does:
// the discovery cases are skipped, saying so).
func (fx *opFixture) database(t *testing.T) string {
	t.Helper()
	addr := "127.0.0.1:3306"
	if a := os.Getenv("PROSE_TEST_MARIADB_ADDR"); a != "" {
		addr = a
	}
	if c, err := net.Dial("tcp", addr); err == nil {
		c.Close()
		host, port, _ := net.SplitHostPort(addr)
		return fx.add(t, "databases", "1.0.0", fmt.Sprintf(`{"connection_name": "warehouse",
			"authentication": {"authentication_id": "password", "authentication_credentials": [{"id": "username", "value": {"text_value": "root"}}, {"id": "password", "value": {"text_value": ""}}]},
			"config_map": {"engine": {"text_value": "mariadb"}, "host": {"text_value": %q}, "port": {"number_value": %s}, "database": {"text_value": "information_schema"},
			"tls": {"text_value": "disable"}}}`, host, port))
	}
	raw := os.Getenv("PROSE_TEST_POSTGRES_URL")
	if raw == "" {
		return ""
	}
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	host, port, _ := net.SplitHostPort(u.Host)
	pw, _ := u.User.Password()
	return fx.add(t, "databases", "1.0.0", fmt.Sprintf(`{"connection_name": "warehouse",
		"authentication": {"authentication_id": "password", "authentication_credentials": [{"id": "username", "value": {"text_value": %q}}, {"id": "password", "value": {"text_value": %q}}]},
		"config_map": {"engine": {"text_value": "postgresql"}, "host": {"text_value": %q}, "port": {"number_value": %s}, "database": {"text_value": %q}, "tls": {"text_value": "disable"}}}`,
		u.User.Username(), pw, host, port, strings.TrimPrefix(u.Path, "/")))
}

// automation makes the automation the cases read ({a}, published twice,
// with a schedule, a trigger instance starting it, an automation trigger,
// an estimate) and one that uses the crm connection ({uses}).
func (fx *opFixture) automation(t *testing.T) {
	t.Helper()
	e := fx.e
	a := e.MkAutomation(t, "Invoices", everyOpCode, true)
	fx.vals["a"] = a.ID
	base := e.AutomationsPath() + "/" + a.ID
	// Default inputs set, then cleared (the runs without the input must
	// wait for guidance): their history has two entries.
	e.API(t, "PATCH", base, `{"default_inputs": {"invoice total": {"number": {"lo": 100}}}}`, 200)
	e.API(t, "PATCH", base+"?update_mask=description,default_inputs,input_specs,marked_outputs", `{"description": "Doubles invoice totals",
		"input_specs": [{"name": "invoice total", "type": {"scalar_type": "VALUE_SCALAR_TYPE_NUMBER"}}], "marked_outputs": ["total"]}`, 200)
	e.API(t, "POST", base+":publish", `{}`, 200)
	e.API(t, "POST", base+"/schedule", weekdayBerlin, 200)
	fx.vals["uses"] = e.MkAutomation(t, "Uses crm", "call the api at \"/customers\" with\n  the connection is \"crm\"\n", true).ID
	inst := e.API(t, "POST", e.WsPath()+"/books/webhook/1.0.0/connections/"+fx.vals["hook"]+"/triggers",
		`{"name": "Orders", "configuration": {"secret": {"text_value": "a-secret-of-24-characters"}}}`, 200)
	fx.vals["inst"] = fmt.Sprint(testenv.Field(inst, "trigger_instance.id"))
	e.API(t, "POST", e.WsPath()+"/triggers/"+fx.vals["inst"]+"/automations", `{"automation_ids": ["`+a.ID+`"]}`, 200)
	e.API(t, "POST", base+"/triggers", `{"trigger_id": "`+fx.vals["inst"]+`", "phase_type": "PHASE_TYPE_MAIN",
		"phase_sub_type": "PHASE_SUB_TYPE_WEBHOOK", "input_mapping": {"invoice total": "/total"}}`, 200)
	e.API(t, "POST", e.WsPath()+"/dashboards:configureAutomationEstimates",
		`{"automation_estimates": [{"automation_id": "`+a.ID+`", "cost_usd": "0.10", "time_saved_secs": 30}]}`, 200)
}

// runs makes a completed run ({run}) and one waiting for guidance ({wait},
// its exception {exc}, an event of its conversation {event}), and a guide
// entry learnt from the exception ({guide}).
func (fx *opFixture) runs(t *testing.T) {
	t.Helper()
	e := fx.e
	a := fx.vals["a"]
	done := e.API(t, "POST", e.AutomationsPath()+"/"+a+":invoke", `{"stage": "AUTOMATION_STAGE_PUBLISHED", "inputs": {"invoice total": {"number": {"lo": 15025, "flags": 131072}}}}`, 200)
	fx.vals["run"] = fmt.Sprint(done["run_id"])
	e.WaitRunState(t, a, fx.vals["run"], store.RunCompleted)
	fx.vals["wait"], fx.vals["exc"] = fx.awaiting(t)
	ev := e.API(t, "POST", e.RunPath(a, fx.vals["wait"])+"/agents/prose/events", `{"user_message": {"content": "What is missing?"}}`, 200)
	fx.vals["event"] = store.LastSegment(fmt.Sprint(ev["name"]))
	g := e.API(t, "POST", e.AutomationsPath()+"/"+a+"/guideEntries", `{"guide_entry": {"source_exception": "`+fx.vals["exc"]+`", "title": "Invoice total",
		"root_cause": "the sender leaves it out", "resolution_notes": "ask accounts"}, "guidance": {"provide_values": {"values": {"the invoice total": {"number": {"lo": 7}}}}}}`, 200)
	fx.vals["guide"] = store.LastSegment(fmt.Sprint(g["name"]))
}

// awaiting starts a run of {a} without its input and waits until it asks
// for it: the run and its exception.
func (fx *opFixture) awaiting(t *testing.T) (run, exception string) {
	t.Helper()
	e := fx.e
	m := e.API(t, "POST", e.AutomationsPath()+"/"+fx.vals["a"]+":invoke", `{"stage": "AUTOMATION_STAGE_PUBLISHED"}`, 200)
	run = fmt.Sprint(m["run_id"])
	r := e.WaitRunState(t, fx.vals["a"], run, store.RunAwaitingGuidance)
	return run, r.ExceptionID
}

// upload stores a file named name and returns its metadata's name and id.
func (fx *opFixture) upload(t *testing.T, name string) (string, string) {
	t.Helper()
	code, _, raw := fx.e.fileHTTP(t, "POST", "/api/v1/organizations/"+fx.vals["org"]+"/files:upload?filename="+url.QueryEscape(name), "text/csv",
		[]byte(everyOpFile), fx.e.Init.APIKey)
	if code != 200 {
		t.Fatalf("upload: %d %s", code, raw)
	}
	full := fieldString(jsonMap(t, raw), "metadata.name")
	return full, store.LastSegment(full)
}

// window is the query of a time window around now, under prefix.
func window(prefix string) string {
	now := time.Now().UTC()
	q := url.Values{prefix + "start_time": {now.Add(-24 * time.Hour).Format(time.RFC3339)}, prefix + "end_time": {now.Add(time.Hour).Format(time.RFC3339)}}
	return q.Encode()
}

// today is the query of QueryDailyRunAggregates for today in UTC.
func today() string {
	d := time.Now().UTC()
	q := url.Values{"time_zone": {"UTC"}}
	for _, part := range []string{"start_date", "end_date"} {
		q.Set(part+".year", fmt.Sprint(d.Year()))
		q.Set(part+".month", fmt.Sprint(int(d.Month())))
		q.Set(part+".day", fmt.Sprint(d.Day()))
	}
	return q.Encode()
}
