package server_test

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"
	"testing"
)

// The automation of the database end-to-end tests: a query with a
// parameter, its rows processed one by one.
const bigOrdersCode = `run a query on a database with
  the query is the sql
  the parameters are the minimum
  the connection is "warehouse"
the rows are the above
the names are ""
process each row in the rows as follows
  the names is the names + the row's name + ";"
the output names is the names
`

// addDatabaseConnection adds the databases connection "warehouse" over
// HTTP.
func addDatabaseConnection(t *testing.T, e *testEnv, engine, host, port, db, user, pw string) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{
		"connection_name": "warehouse",
		"authentication": map[string]any{"authentication_id": "password", "authentication_credentials": []any{
			map[string]any{"id": "username", "value": map[string]any{"text_value": user}},
			map[string]any{"id": "password", "value": map[string]any{"text_value": pw}},
		}},
		"config_map": map[string]any{"engine": map[string]any{"text_value": engine}, "host": map[string]any{"text_value": host},
			"port": map[string]any{"number_value": port}, "database": map[string]any{"text_value": db}, "tls": map[string]any{"text_value": "disable"}},
	})
	e.API(t, "POST", e.WsPath()+"/books/databases/1.0.0/connections", string(body), 200)
}

// runOnce invokes a published automation with inputs (JSON) over HTTP
// and waits for want.
func (e *testEnv) runOnce(t *testing.T, name, code, inputs, want string) map[string]any {
	t.Helper()
	a := e.MkAutomation(t, name, code, true)
	inv := e.API(t, "POST", e.AutomationsPath()+"/"+a.ID+":invoke", `{"stage": "AUTOMATION_STAGE_PUBLISHED", "inputs": `+inputs+`}`, 200)
	return e.WaitRun(t, a.ID, fmt.Sprint(inv["run_id"]), want)
}

// TestDatabasesBookEndToEndPostgreSQL: an automation made and run over
// HTTP queries the PostgreSQL server on loopback through a connection.
func TestDatabasesBookEndToEndPostgreSQL(t *testing.T) {
	dbURL := os.Getenv("PROSE_TEST_POSTGRES_URL")
	if dbURL == "" {
		t.Skip("PROSE_TEST_POSTGRES_URL is not set")
	}
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	e, logs := newLoggedEnv(t)
	host, port, _ := net.SplitHostPort(u.Host)
	pw, _ := u.User.Password()
	addDatabaseConnection(t, e, "postgresql", host, port, strings.TrimPrefix(u.Path, "/"), u.User.Username(), pw)
	r := e.runOnce(t, "Big orders", bigOrdersCode, `{"sql": {"text": "select name from (values ('Ana', 12.5), ('Bo', 3), ('Cy', 40)) as t(name, amount) where amount > $1 order by name"}, "minimum": {"number": {"lo": 10}}}`, "completed")
	out, _ := json.Marshal(r)
	if !strings.Contains(string(out), `Ana;Cy;`) {
		t.Errorf("run: %s", out)
	}
	if pw != "" && (strings.Contains(string(out), pw) || strings.Contains(logs.String(), pw)) {
		t.Error("the database password reached an answer or a log line")
	}
}

// TestDatabasesBookEndToEndMariaDB: the same on the MariaDB server on
// loopback (skipped when there is none).
func TestDatabasesBookEndToEndMariaDB(t *testing.T) {
	addr := "127.0.0.1:3306"
	if a := os.Getenv("PROSE_TEST_MARIADB_ADDR"); a != "" {
		addr = a
	}
	if c, err := net.Dial("tcp", addr); err != nil {
		t.Skipf("no MariaDB at %s: %v", addr, err)
	} else {
		c.Close()
	}
	e := newTestEnv(t)
	host, port, _ := net.SplitHostPort(addr)
	addDatabaseConnection(t, e, "mariadb", host, port, "information_schema", "root", "")
	r := e.runOnce(t, "Big orders", bigOrdersCode, `{"sql": {"text": "select name from (select 'Ana' as name, 12.5 as amount union all select 'Bo', 3 union all select 'Cy', 40) t where amount > ? order by name"}, "minimum": {"number": {"lo": 10}}}`, "completed")
	if out, _ := json.Marshal(r); !strings.Contains(string(out), `Ana;Cy;`) {
		t.Errorf("run: %s", out)
	}
}

// TestDocumentsBookEndToEnd: an automation run over HTTP reads the text of
// a PDF file given as its input.
func TestDocumentsBookEndToEnd(t *testing.T) {
	pdf, err := os.ReadFile("testdata/invoice.pdf")
	if err != nil {
		t.Fatal(err)
	}
	e := newTestEnv(t)
	r := e.runOnce(t, "Invoice text", "read the text of the invoice\nthe output text is the above\n",
		`{"invoice": {"file": {"inline": {"file_name": "invoice.pdf", "content": "`+base64.StdEncoding.EncodeToString(pdf)+`"}}}}`, "completed")
	if out, _ := json.Marshal(r); !strings.Contains(string(out), "Invoice 2026-31") || !strings.Contains(string(out), "Total due 42.00 EUR") {
		t.Errorf("run: %s", out)
	}
}
