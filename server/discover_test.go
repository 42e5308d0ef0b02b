package server_test

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"strings"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	bookv1 "github.com/proserun/prose/gen/prose/book/v1"
	"github.com/proserun/prose/server/testenv"
	"github.com/proserun/prose/store/postgres/pgtest"
)

const discoverSecret = "disc-pw-Kq71"

// TestConnectionDiscovery lists the tables of a real PostgreSQL database
// through a databases connection and records some as discovered, over HTTP
// and gRPC, each answer checked against the reference's schema.
func TestConnectionDiscovery(t *testing.T) {
	dbURL := pgtest.TempDatabase(t, "discover")
	db, err := sql.Open("pgx", dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`create table orders (id int primary key, amount numeric); create view big_orders as select * from orders where amount > 100`); err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(dbURL)
	host, port, _ := net.SplitHostPort(u.Host)
	pw, _ := u.User.Password()
	if pw == "" {
		pw = discoverSecret // a server that trusts loopback takes any password
	}
	e, logs := newLoggedEnv(t)
	conn := func(name, database, password string) string {
		m := e.API(t, "POST", e.WsPath()+"/books/databases/1.0.0/connections", fmt.Sprintf(`{"connection_name": %q,
			"authentication": {"authentication_id": "password", "authentication_credentials": [{"id": "username", "value": {"text_value": %q}}, {"id": "password", "value": {"text_value": %q}}]},
			"config_map": {"engine": {"text_value": "postgresql"}, "host": {"text_value": %q}, "port": {"number_value": %s}, "database": {"text_value": %q}, "tls": {"text_value": "disable"}}}`,
			name, u.User.Username(), password, host, port, database), 200)
		return fmt.Sprint(testenv.Field(m, "book_connection_descriptor.connection_id"))
	}
	wh := conn("warehouse", strings.TrimPrefix(u.Path, "/"), pw)
	broken := conn("broken", "no_such_database_x", discoverSecret)
	api := fmt.Sprint(testenv.Field(e.API(t, "POST", e.WsPath()+"/books/http/1.0.0/connections", `{"connection_name": "api"}`, 200), "book_connection_descriptor.connection_id"))

	var answers []string
	forEachTransport(t, func(t *testing.T, tr apiTransport) {
		org, ws := e.Init.OrganizationID, e.Init.WorkspaceID
		call := func(rpc string, in proto.Message, want codes.Code) map[string]any {
			t.Helper()
			m, err := e.call(t, tr, "/prose.book.v1.ConnectionService/"+rpc, in)
			if status.Code(err) != want {
				t.Fatalf("%s over %s: %v, want %v", rpc, tr, err, want)
			}
			if err != nil {
				answers = append(answers, err.Error())
			}
			b, _ := json.Marshal(m)
			answers = append(answers, string(b))
			return m
		}
		list := func(id, search string, offset, limit uint64, want codes.Code) map[string]any {
			return call("ListWorkspaceBookConnectionDiscoverables", &bookv1.ListWorkspaceBookConnectionDiscoverablesRequest{OrganizationId: org, WorkspaceId: ws,
				ConnectionId: id, Search: search, Offset: offset, Limit: limit}, want)
		}
		m := list(wh, "", 0, 0, codes.OK)
		if tr.name == "http" {
			checkSchema(t, "v2RetrieveDiscoverablesResponse", m)
		}
		if b, _ := json.Marshal(m["discoverables"]); string(b) != `[{"description":"view","name":"public.big_orders"},{"description":"base table","name":"public.orders"}]` {
			t.Errorf("discoverables: %s", b)
		}
		if l, _ := list(wh, "BIG", 0, 0, codes.OK)["discoverables"].([]any); len(l) != 1 || testenv.Field(l[0], "name") != "public.big_orders" {
			t.Errorf("search: %v", l)
		}
		if l, _ := list(wh, "", 1, 1, codes.OK)["discoverables"].([]any); len(l) != 1 || testenv.Field(l[0], "name") != "public.orders" {
			t.Errorf("offset and limit: %v", l)
		}
		list(api, "", 0, 0, codes.FailedPrecondition)
		list("nope", "", 0, 0, codes.NotFound)
		list(broken, "", 0, 0, codes.FailedPrecondition)

		set := func(id string, what []string, want codes.Code) map[string]any {
			return call("SetDiscovered", &bookv1.SetDiscoveredRequest{OrganizationId: org, WorkspaceId: ws, ConnectionId: id, What: what}, want)
		}
		m = set(wh, []string{"public.orders"}, codes.OK)
		if tr.name == "http" {
			checkSchema(t, "v2DiscoverWorkspaceBookConnectionProceduresResponse", m)
		}
		got := e.API(t, "GET", e.WsPath()+"/connections/"+wh, "", 200)
		if b, _ := json.Marshal(testenv.Field(got, "book_connection.discovered")); string(b) != `["public.orders"]` {
			t.Errorf("discovered: %v", got)
		}
		set(wh, []string{"public.nope"}, codes.InvalidArgument)
		set(api, []string{"x"}, codes.FailedPrecondition)
		// An update keeps what was discovered.
		e.API(t, "PUT", e.WsPath()+"/books/databases/1.0.0/connections/"+wh, `{"connection_name": "warehouse", "config_map": {"engine": {"text_value": "postgresql"},
			"host": {"text_value": "`+host+`"}, "port": {"number_value": `+port+`}, "database": {"text_value": "`+strings.TrimPrefix(u.Path, "/")+`"}, "tls": {"text_value": "disable"}}}`, 200)
		got = e.API(t, "GET", e.WsPath()+"/connections/"+wh, "", 200)
		if b, _ := json.Marshal(testenv.Field(got, "book_connection.discovered")); string(b) != `["public.orders"]` {
			t.Errorf("discovered after an update: %v", got)
		}
		set(wh, nil, codes.OK) // clears
		got = e.API(t, "GET", e.WsPath()+"/connections/"+wh, "", 200)
		if testenv.Field(got, "book_connection.discovered") != nil {
			t.Errorf("cleared: %v", got)
		}
	})
	for _, a := range answers {
		if strings.Contains(a, discoverSecret) {
			t.Fatalf("an answer carries the password: %s", a)
		}
	}
	if strings.Contains(logs.String(), discoverSecret) {
		t.Fatal("a log line carries the password")
	}
}
