package console_test

import (
	"database/sql"
	"fmt"
	"net"
	"net/url"
	"strings"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib" // the pgx driver, to make the table

	"github.com/proserun/prose/server/testenv"
	"github.com/proserun/prose/store/postgres/pgtest"
)

// Testing a databases connection connects to the database and lists its
// tables; one that cannot connect says why (PostgreSQL tier).
func TestConsoleConnectionTestDatabasePostgres(t *testing.T) {
	dbURL := pgtest.TempDatabase(t, "console_conn")
	db, err := sql.Open("pgx", dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`create table invoices (id int primary key)`); err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(dbURL)
	host, port, _ := net.SplitHostPort(u.Host)
	pw, _ := u.User.Password()
	if pw == "" {
		pw = "any-password-1" // a server that trusts loopback takes any password
	}
	e := newTestEnv(t)
	conn := func(name, database string) string {
		m := e.API(t, "POST", e.WsPath()+"/books/databases/1.0.0/connections", fmt.Sprintf(`{"connection_name": %q,
			"authentication": {"authentication_id": "password", "authentication_credentials": [{"id": "username", "value": {"text_value": %q}}, {"id": "password", "value": {"text_value": %q}}]},
			"config_map": {"engine": {"text_value": "postgresql"}, "host": {"text_value": %q}, "port": {"number_value": %s}, "database": {"text_value": %q}, "tls": {"text_value": "disable"}}}`,
			name, u.User.Username(), pw, host, port, database), 200)
		return fmt.Sprint(testenv.Field(m, "book_connection_descriptor.connection_id"))
	}
	good, broken := conn("warehouse", strings.TrimPrefix(u.Path, "/")), conn("broken", "no_such_database_x")
	c := testenv.BrowserClient(t)
	e.ConsoleSignIn(t, c, e.Init.APIKey)
	ws := "/w/" + e.Init.WorkspaceID
	_, body, _ := testenv.Page(t, c, e.Srv.URL, ws+"/connections/"+good+"?test=1")
	containsAll(t, "a databases connection tested", body, "The connection answers.", "invoices")
	_, body, _ = testenv.Page(t, c, e.Srv.URL, ws+"/connections/"+broken+"?test=1")
	containsAll(t, "a broken databases connection tested", body, `class="error" role="status" id="test-result"`, "The check failed")
	if strings.Contains(body, pw) && pw != "any-password-1" {
		t.Errorf("the check's error shows the password")
	}
}
