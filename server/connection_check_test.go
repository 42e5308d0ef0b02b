package server_test

import (
	"fmt"
	"net"
	"strings"
	"sync/atomic"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/proserun/prose/server/app"
	"github.com/proserun/prose/server/testenv"

	bookv1 "github.com/proserun/prose/gen/prose/book/v1"
)

// closedPort is a loopback port nothing listens on.
func closedPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	return port
}

const checkRPC = "/prose.book.v1.ConnectionService/CheckWorkspaceBookConnection"

// CheckWorkspaceBookConnection signs in to an email connection's SMTP
// server and sends nothing; wrong credentials or an unreachable server are
// an answer (reached false, a problem naming no password); a book Prose
// cannot check remotely says so (checked false); an unknown connection is
// NOT_FOUND.
func TestCheckConnection(t *testing.T) {
	e := newTestEnv(t)
	sink := &mailSink{user: "robot", pw: "mail-pw-Q72"}
	port := startSink(t, sink)
	mail := func(name, pw string, port int) string {
		m := e.API(t, "POST", e.WsPath()+"/books/email/1.0.0/connections", fmt.Sprintf(`{"connection_name": %q,
			"authentication": {"authentication_id": "password", "authentication_credentials": [{"id": "username", "value": {"text_value": "robot"}}, {"id": "password", "value": {"text_value": %q}}]},
			"config_map": {"host": {"text_value": "127.0.0.1"}, "port": {"number_value": %d}, "security": {"text_value": "none"}, "from": {"text_value": "robot@acme.test"}}}`, name, pw, port), 200)
		return fmt.Sprint(testenv.Field(m, "book_connection_descriptor.connection_id"))
	}
	good, wrong, closed := mail("mail", "mail-pw-Q72", port), mail("wrong", "not-the-pw-77", port), mail("closed", "mail-pw-Q72", closedPort(t))
	// A connection named as another's id: the check of that id is the other's.
	mail(good, "mail-pw-Q72", closedPort(t))
	m := e.API(t, "POST", e.WsPath()+"/books/http/1.0.0/connections", `{"connection_name": "crm",
		"authentication": {"authentication_id": "bearer", "authentication_credentials": [{"id": "token", "value": {"text_value": "tok-123456"}}]},
		"config_map": {"base url": {"text_value": "https://crm.example.test"}}}`, 200)
	crm := fmt.Sprint(testenv.Field(m, "book_connection_descriptor.connection_id"))

	forEachTransport(t, func(t *testing.T, tr apiTransport) {
		check := func(id string) map[string]any {
			t.Helper()
			m, err := e.call(t, tr, checkRPC, &bookv1.CheckWorkspaceBookConnectionRequest{OrganizationId: e.Init.OrganizationID, WorkspaceId: e.Init.WorkspaceID, ConnectionId: id})
			if err != nil {
				t.Fatalf("check %s: %v", id, err)
			}
			return m
		}
		m := check(good)
		if m["checked"] != true || m["reached"] != true || testenv.Field(m, "details.user") != "robot" ||
			testenv.Field(m, "details.server") != fmt.Sprintf("127.0.0.1:%d", port) || testenv.Field(m, "details.acts as") != "robot@acme.test" {
			t.Errorf("a good email connection: %v", m)
		}
		m = check(wrong)
		if m["checked"] != true || m["reached"] == true || !strings.Contains(fmt.Sprint(m["problem"]), "refused the connection's credentials") || strings.Contains(fmt.Sprint(m), "not-the-pw-77") {
			t.Errorf("wrong credentials: %v", m)
		}
		if m := check(closed); m["reached"] == true || !strings.Contains(fmt.Sprint(m["problem"]), "could not reach the mail server") {
			t.Errorf("no server: %v", m)
		}
		if m := check(crm); m["checked"] == true || m["reached"] == true || m["problem"] != nil {
			t.Errorf("an http connection is not checked remotely: %v", m)
		}
		_, err := e.call(t, tr, checkRPC, &bookv1.CheckWorkspaceBookConnectionRequest{OrganizationId: e.Init.OrganizationID, WorkspaceId: e.Init.WorkspaceID, ConnectionId: "nope"})
		if status.Code(err) != codes.NotFound {
			t.Errorf("an unknown connection: %v", err)
		}
	})
	sink.mu.Lock()
	defer sink.mu.Unlock()
	if len(sink.msgs) != 0 {
		t.Errorf("a check sent %d messages", len(sink.msgs))
	}
}

// Without --allow-private-networks the check of a connection on loopback
// never reaches it.
func TestCheckConnectionReachesOnlyPublicAddresses(t *testing.T) {
	e := newTestEnvWith(t, func(c *app.Config) { c.AllowPrivateNetworks = false })
	var sessions atomic.Int64
	sink := &mailSink{user: "robot", pw: "mail-pw-Q72", sessions: &sessions}
	port := startSink(t, sink)
	m := e.API(t, "POST", e.WsPath()+"/books/email/1.0.0/connections", fmt.Sprintf(`{"connection_name": "mail",
		"config_map": {"host": {"text_value": "127.0.0.1"}, "port": {"number_value": %d}, "security": {"text_value": "none"}, "from": {"text_value": "robot@acme.test"}}}`, port), 200)
	id := fmt.Sprint(testenv.Field(m, "book_connection_descriptor.connection_id"))
	m = e.API(t, "POST", e.WsPath()+"/connections/"+id+":check", `{}`, 200)
	if m["reached"] == true || !strings.Contains(fmt.Sprint(m["problem"]), "refused: not a public address") || strings.Contains(fmt.Sprint(m["problem"]), ":53") {
		t.Errorf("a check on loopback: %v", m)
	}
	if n := sessions.Load(); n != 0 {
		t.Errorf("the server on loopback had %d sessions", n)
	}
}
