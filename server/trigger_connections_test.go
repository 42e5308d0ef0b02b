package server_test

import (
	"fmt"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

	bookv1 "github.com/proserun/prose/gen/prose/book/v1"
	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/server/testenv"
)

// TestTriggerInstancesAreMadeOnAConnection: a trigger instance is made on
// a stored connection of a built-in trigger book, over HTTP and gRPC. An
// unknown book or version is BOOK_NOT_FOUND, a book without a trigger
// Prose runs is TRIGGER_BOOK_UNKNOWN, and an unknown connection, one of
// another book or one of another workspace is CONNECTION_NOT_FOUND; none
// of them creates an instance. A connection with instances is not deleted
// (CONNECTION_IN_USE) until they are.
func TestTriggerInstancesAreMadeOnAConnection(t *testing.T) {
	e := newTestEnv(t)
	org, ws := e.Init.OrganizationID, e.Init.WorkspaceID
	_, webhook := e.TriggersPath(t, e.WsPath(), "webhook", "orders")
	_, nats := e.TriggersPath(t, e.WsPath(), "nats", "bus")
	other := e.NewWorkspace(t, "Other")
	_, elsewhere := e.TriggersPath(t, "/api/v1/organizations/"+org+"/workspaces/"+other, "webhook", "orders")
	crm := e.API(t, "POST", e.WsPath()+"/books/http/1.0.0/connections", `{"connection_name": "crm"}`, 200)
	httpConn := fmt.Sprint(testenv.Field(crm, "book_connection_descriptor.connection_id"))
	const add = "/prose.platform.v1.TriggerService/AddWorkspaceBookConnectionTriggerInstance"
	req := func(book, version, conn string) *platformv1.AddWorkspaceBookConnectionTriggerInstanceRequest {
		return &platformv1.AddWorkspaceBookConnectionTriggerInstanceRequest{OrganizationId: org, WorkspaceId: ws,
			BookName: book, BookVersion: version, ConnectionId: conn, Name: "Orders"}
	}
	forEachTransport(t, func(t *testing.T, tr apiTransport) {
		for _, c := range []struct {
			what   string
			req    *platformv1.AddWorkspaceBookConnectionTriggerInstanceRequest
			code   codes.Code
			reason string
		}{
			{"an unknown book", req("no-such-book", "1.0.0", webhook), codes.NotFound, "BOOK_NOT_FOUND"},
			{"an unknown version", req("webhook", "9.9.9", webhook), codes.NotFound, "BOOK_NOT_FOUND"},
			{"a book without triggers", req("http", "1.0.0", httpConn), codes.InvalidArgument, "TRIGGER_BOOK_UNKNOWN"},
			{"an unknown connection", req("webhook", "1.0.0", "no-such-connection"), codes.NotFound, "CONNECTION_NOT_FOUND"},
			{"a connection of another book", req("webhook", "1.0.0", nats), codes.NotFound, "CONNECTION_NOT_FOUND"},
			{"an http connection", req("webhook", "1.0.0", httpConn), codes.NotFound, "CONNECTION_NOT_FOUND"},
			{"another workspace's connection", req("webhook", "1.0.0", elsewhere), codes.NotFound, "CONNECTION_NOT_FOUND"},
		} {
			wantResult(t, c.what, e.callResult(t, tr, add, c.req), c.code, c.reason)
		}
		if l := e.mustCall(t, tr, "/prose.platform.v1.TriggerService/ListWorkspaceTriggerInstances",
			&platformv1.ListWorkspaceTriggerInstancesRequest{OrganizationId: org, WorkspaceId: ws}); l["trigger_instances"] != nil {
			t.Fatalf("refused requests made instances: %v", l)
		}

		m := e.mustCall(t, tr, add, req("webhook", "1.0.0", webhook))
		checkSchema(t, "v2AddWorkspaceBookConnectionTriggerInstanceResponse", m)
		id := fmt.Sprint(testenv.Field(m, "trigger_instance.id"))
		if testenv.Field(m, "trigger_instance.connection_id") != webhook || testenv.Field(m, "trigger_instance.book_name") != "webhook" {
			t.Errorf("instance: %v", m)
		}
		del := &bookv1.DeleteWorkspaceConnectionRequest{OrganizationId: org, WorkspaceId: ws, ConnectionId: webhook}
		r := e.callResult(t, tr, "/prose.book.v1.ConnectionService/DeleteWorkspaceConnection", del)
		wantResult(t, "deleting a connection with an instance", r, codes.FailedPrecondition, "CONNECTION_IN_USE")
		if !strings.Contains(r.raw, id) {
			t.Errorf("the refusal does not name the instance %s: %s", id, r.raw)
		}
		e.mustCall(t, tr, "/prose.platform.v1.TriggerService/RemoveWorkspaceBookConnectionTriggerInstance",
			&platformv1.RemoveWorkspaceBookConnectionTriggerInstanceRequest{OrganizationId: org, WorkspaceId: ws, ConnectionId: webhook, TriggerInstanceId: id})
		e.mustCall(t, tr, "/prose.book.v1.ConnectionService/DeleteWorkspaceConnection", del)
		wantResult(t, "the deleted connection", e.callResult(t, tr, add, req("webhook", "1.0.0", webhook)), codes.NotFound, "CONNECTION_NOT_FOUND")
		_, webhook = e.TriggersPath(t, e.WsPath(), "webhook", "orders "+tr.name)
	})
}

// TestTriggerBooksDescribeTheirTriggers: the trigger books are in the
// catalog, each with one trigger whose configuration is what an instance
// takes: an instance made with every declared parameter (the secret, the
// subject, queue or topic, the broker's default URL) is accepted.
func TestTriggerBooksDescribeTheirTriggers(t *testing.T) {
	e := newTestEnv(t)
	for _, book := range []string{"webhook", "nats", "rabbitmq", "mqtt"} {
		b := e.API(t, "GET", "/api/v1/books/"+book+"/1.0.0", "", 200)
		checkSchema(t, "v2RetrieveBookResponse", b)
		trig, _ := testenv.Field(b, "book.triggers.0").(map[string]any)
		conf, _ := trig["configuration"].(map[string]any)
		if trig == nil || testenv.Field(b, "book.triggers.1") != nil || len(conf) == 0 || testenv.Field(b, "book.procedures") != nil {
			t.Errorf("%s: %v", book, b)
			continue
		}
		var params []string
		for k, c := range conf {
			v := `{"text_value":"a-value-of-24-characters"}`
			if def := testenv.Field(c, "default_value.text_value"); def != nil {
				v = fmt.Sprintf(`{"text_value":%q}`, def)
			}
			params = append(params, fmt.Sprintf("%q:%s", k, v))
		}
		path, conn := e.TriggersPath(t, e.WsPath(), book, book)
		m := e.API(t, "POST", path, `{"configuration":{`+strings.Join(params, ",")+`}}`, 200)
		if testenv.Field(m, "trigger_instance.trigger_id") != trig["id"] || testenv.Field(m, "trigger_instance.connection_id") != conn {
			t.Errorf("%s instance: %v (trigger %v)", book, m, trig["id"])
		}
	}
}
