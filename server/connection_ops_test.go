package server_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	bookv1 "github.com/proserun/prose/gen/prose/book/v1"
	"github.com/proserun/prose/internal/books"
	"github.com/proserun/prose/server/testenv"
)

const connOpsSecret = "ops-secret-Vb39x"

// TestConnectionOperations runs the reference's other connection
// operations (upgrade, procedures, user info) and the automation ones
// (count, trace, extract) over HTTP and gRPC, checks each answer against the
// reference's schema, and greps every answer and the log for the secret.
func TestConnectionOperations(t *testing.T) {
	e, logs := newLoggedEnv(t)
	book := stampServer(t)
	e.registerStampBook(t, book.URL, "1.0.0")
	e.registerStampBook(t, book.URL, "2.0.0")
	// Version 3 lists one authentication: the connection's does not fit.
	b3 := testenv.StampBook(book.URL)
	b3.Version = "3.0.0"
	b3.Authentications = []*bookv1.Authentication{{Custom: &bookv1.CustomAuthentication{Id: "basic",
		Credentials: []*bookv1.Credential{{Id: "user"}}}}}
	raw, err := protojson.Marshal(b3)
	if err != nil {
		t.Fatal(err)
	}
	e.API(t, "POST", e.booksPath(), string(raw), 200)

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
		sfx := tr.name
		add := func(book, version, body string) string {
			m := e.API(t, "POST", e.WsPath()+"/books/"+book+"/"+version+"/connections", body, 200)
			return fmt.Sprint(testenv.Field(m, "book_connection_descriptor.connection_id"))
		}
		stamps := add("test.stamps", "1.0.0", `{"connection_name": "stamps-`+sfx+`", "authentication": {"authentication_id": "token",
			"authentication_credentials": [{"id": "key", "value": {"text_value": "`+connOpsSecret+`"}}]}, "config_map": {"region": {"text_value": "eu"}}}`)
		crm := add("http", "1.0.0", `{"connection_name": "crm-`+sfx+`", "authentication": {"authentication_id": "bearer",
			"authentication_credentials": [{"id": "token", "value": {"text_value": "`+connOpsSecret+`"}}]}}`)
		mail := add("email", "1.0.0", `{"connection_name": "mail-`+sfx+`", "config_map": {"host": {"text_value": "smtp.acme.test"}, "from": {"text_value": "robot@acme.test"}}}`)

		t.Run("upgrade", func(t *testing.T) {
			up := func(from, to string, want codes.Code) map[string]any {
				return call("UpgradeWorkspaceBookConnection", &bookv1.UpgradeWorkspaceBookConnectionRequest{OrganizationId: org, WorkspaceId: ws,
					BookName: "test.stamps", BookVersion: from, ConnectionId: stamps, NewBookVersion: to}, want)
			}
			m := up("1.0.0", "2.0.0", codes.OK)
			if tr.name == "http" {
				checkSchema(t, "v2BookConnectionResponse", m)
			}
			d, _ := m["book_connection_descriptor"].(map[string]any)
			if d["book_version"] != "2.0.0" || d["connection_id"] != stamps || d["connection_name"] != "stamps-"+sfx ||
				testenv.Field(d, "config_map.region.text_value") != "eu" || testenv.Field(d, "authentication.authentication_credentials.0.value") != nil {
				t.Fatalf("upgraded: %v", m)
			}
			up("1.0.0", "2.0.0", codes.NotFound) // no longer of 1.0.0
			if _, err := e.call(t, tr, "/prose.book.v1.ConnectionService/UpgradeWorkspaceBookConnection", &bookv1.UpgradeWorkspaceBookConnectionRequest{
				OrganizationId: org, WorkspaceId: ws, BookName: "test.stamps", BookVersion: "2.0.0", ConnectionId: stamps, NewBookVersion: "9.9.9"}); status.Code(err) != codes.NotFound ||
				!strings.Contains(err.Error(), "versions/9.9.9") {
				t.Errorf("upgrade to an unknown version: %v", err)
			}
			if _, err := e.call(t, tr, "/prose.book.v1.ConnectionService/UpgradeWorkspaceBookConnection", &bookv1.UpgradeWorkspaceBookConnectionRequest{
				OrganizationId: org, WorkspaceId: ws, BookName: "test.stamps", BookVersion: "2.0.0", ConnectionId: "nope", NewBookVersion: "2.0.0"}); status.Code(err) != codes.NotFound ||
				!strings.Contains(err.Error(), "connections/nope") {
				t.Errorf("upgrade of an unknown connection: %v", err)
			}
			up("2.0.0", "3.0.0", codes.InvalidArgument) // does not fit version 3
			up("2.0.0", "", codes.InvalidArgument)      // new_book_version required
			got := call("GetWorkspaceBookConnection", &bookv1.GetWorkspaceBookConnectionRequest{OrganizationId: org, WorkspaceId: ws, ConnectionId: stamps}, codes.OK)
			if testenv.Field(got, "book_connection.book_version") != "2.0.0" {
				t.Errorf("after the refused upgrade: %v", got)
			}
			c, err := e.App.Conns.Resolve(t.Context(), books.Workspace{OrganizationID: org, WorkspaceID: ws}, "test.stamps", "stamps-"+sfx)
			if err != nil || c.Credentials["key"] != connOpsSecret || c.BookVersion != "2.0.0" {
				t.Errorf("the upgraded connection as a book sees it: %+v %v", c, err)
			}
		})

		t.Run("procedures", func(t *testing.T) {
			procs := func(id string, want codes.Code) map[string]any {
				return call("ListWorkspaceBookConnectionProcedures", &bookv1.ListWorkspaceBookConnectionProceduresRequest{OrganizationId: org, WorkspaceId: ws, ConnectionId: id}, want)
			}
			m := procs(crm, codes.OK)
			if tr.name == "http" {
				checkSchema(t, "v2RetrieveBookProceduresResponse", m)
			}
			l, _ := m["procedures"].([]any)
			if len(l) == 0 || !strings.Contains(fmt.Sprint(testenv.Field(l[0], "signature.english")), "call") {
				t.Errorf("http connection's procedures: %v", m)
			}
			m = procs(stamps, codes.OK)
			if l, _ := m["procedures"].([]any); len(l) != 1 || testenv.Field(l[0], "id") != "stamp" {
				t.Errorf("stamps connection's procedures: %v", m)
			}
			procs("nope", codes.NotFound)
		})

		t.Run("user info", func(t *testing.T) {
			info := func(id string, want codes.Code) map[string]any {
				return call("GetWorkspaceBookConnectionUserInfo", &bookv1.GetWorkspaceBookConnectionUserInfoRequest{OrganizationId: org, WorkspaceId: ws, ConnectionId: id}, want)
			}
			m := info(mail, codes.OK)
			if tr.name == "http" {
				checkSchema(t, "v2RetrieveUserInfoResponse", m)
			}
			if testenv.Field(m, "user_info.email") != "robot@acme.test" || testenv.Field(m, "user_info.other_attributes.host") != "smtp.acme.test" {
				t.Errorf("mail user info: %v", m)
			}
			if m := info(crm, codes.OK); testenv.Field(m, "user_info.email") != nil || testenv.Field(m, "user_info.username") != nil {
				t.Errorf("http user info tells nothing: %v", m)
			}
			info("nope", codes.NotFound)
		})

		t.Run("automation connections", func(t *testing.T) {
			crm2 := add("http", "1.0.0", `{"connection_name": "crm2-`+sfx+`"}`)
			oldStamps := add("test.stamps", "1.0.0", `{"connection_name": "stamps-old-`+sfx+`"}`)
			code := "call the api at \"/x\" with\n  the connection is \"crm-" + sfx + "\"\nstamp \"T1\" with\n  the connection is \"" + oldStamps + "\"\n"
			a := e.MkAutomation(t, "Bound "+sfx, code, false)
			id := a.ID
			version := func(m map[string]any) string { return fmt.Sprint(testenv.Field(m, "automation.version")) }
			m := call("AddAutomationConnections", &bookv1.AddAutomationConnectionsRequest{OrganizationId: org, WorkspaceId: ws, AutomationId: id,
				Connections: []*bookv1.CredentialInfo{
					{Book: "http", BookVersion: "1.0.0", ConnectionAlias: "crm", ConnectionId: crm},
					{Book: "test.stamps", BookVersion: "1.0.0", ConnectionAlias: "stamps", ConnectionId: oldStamps},
				}}, codes.OK)
			if tr.name == "http" {
				checkSchema(t, "v1AddAutomationConnectionsResponse", withoutAutomationExtensions(m))
			}
			if testenv.Field(m, "automation.connections.crm.connection_id") != crm || testenv.Field(m, "automation.connections.stamps.connection_id") != oldStamps ||
				testenv.Field(m, "automation.english_code") != code {
				t.Fatalf("added: %v", m)
			}
			v1 := version(m)
			addOne := func(c *bookv1.CredentialInfo, want codes.Code) {
				call("AddAutomationConnections", &bookv1.AddAutomationConnectionsRequest{OrganizationId: org, WorkspaceId: ws, AutomationId: id,
					Connections: []*bookv1.CredentialInfo{c}}, want)
			}
			addOne(&bookv1.CredentialInfo{Book: "http", BookVersion: "1.0.0", ConnectionAlias: "crm", ConnectionId: crm2}, codes.AlreadyExists)
			addOne(&bookv1.CredentialInfo{Book: "email", BookVersion: "1.0.0", ConnectionAlias: "x", ConnectionId: crm2}, codes.InvalidArgument)
			addOne(&bookv1.CredentialInfo{Book: "http", BookVersion: "1.0.0", ConnectionAlias: "x", ConnectionId: "nope"}, codes.NotFound)
			addOne(&bookv1.CredentialInfo{Book: "http", BookVersion: "1.0.0", ConnectionId: crm2}, codes.InvalidArgument)
			call("AddAutomationConnections", &bookv1.AddAutomationConnectionsRequest{OrganizationId: org, WorkspaceId: ws, AutomationId: "nope",
				Connections: []*bookv1.CredentialInfo{{Book: "http", BookVersion: "1.0.0", ConnectionAlias: "y", ConnectionId: crm2}}}, codes.NotFound)

			sw := func(rs []*bookv1.ConnectionReplacement, want codes.Code) map[string]any {
				return call("SwitchAutomationConnections", &bookv1.SwitchAutomationConnectionsRequest{OrganizationId: org, WorkspaceId: ws, AutomationId: id, Switches: rs}, want)
			}
			m = sw([]*bookv1.ConnectionReplacement{{OldConnectionId: crm, NewConnectionId: crm2, ConnectionAlias: "crm"}}, codes.OK)
			if tr.name == "http" {
				checkSchema(t, "v1SwitchAutomationConnectionsResponse", withoutAutomationExtensions(m))
			}
			wantCode := strings.Replace(code, `"crm-`+sfx+`"`, `"crm2-`+sfx+`"`, 1)
			if testenv.Field(m, "automation.connections.crm.connection_id") != crm2 || testenv.Field(m, "automation.english_code") != wantCode || version(m) == v1 {
				t.Fatalf("switched: %v", m)
			}
			sw([]*bookv1.ConnectionReplacement{{OldConnectionId: crm, NewConnectionId: crm2, ConnectionAlias: "crm"}}, codes.InvalidArgument)            // no longer bound
			sw([]*bookv1.ConnectionReplacement{{OldConnectionId: crm2, NewConnectionId: mail, ConnectionAlias: "crm"}}, codes.InvalidArgument)           // another book
			sw([]*bookv1.ConnectionReplacement{{OldConnectionId: oldStamps, NewConnectionId: stamps, ConnectionAlias: "stamps"}}, codes.InvalidArgument) // another version
			sw(nil, codes.InvalidArgument)

			up := func(rs []*bookv1.ConnectionReplacement, want codes.Code) map[string]any {
				return call("UpgradeAutomationConnections", &bookv1.UpgradeAutomationConnectionsRequest{OrganizationId: org, WorkspaceId: ws, AutomationId: id, Upgrades: rs}, want)
			}
			m = up([]*bookv1.ConnectionReplacement{{OldConnectionId: oldStamps, NewConnectionId: stamps, ConnectionAlias: "stamps"}}, codes.OK)
			if tr.name == "http" {
				checkSchema(t, "v1UpgradeAutomationConnectionsResponse", withoutAutomationExtensions(m))
			}
			wantCode = strings.Replace(wantCode, `"`+oldStamps+`"`, `"stamps-`+sfx+`"`, 1)
			if testenv.Field(m, "automation.connections.stamps.connection_id") != stamps || testenv.Field(m, "automation.english_code") != wantCode {
				t.Fatalf("upgraded: %v", m)
			}
			up([]*bookv1.ConnectionReplacement{{OldConnectionId: crm2, NewConnectionId: crm, ConnectionAlias: "crm"}}, codes.InvalidArgument) // same version

			rm := func(rs []*bookv1.ConnectionRemoval, want codes.Code) map[string]any {
				return call("RemoveAutomationConnections", &bookv1.RemoveAutomationConnectionsRequest{OrganizationId: org, WorkspaceId: ws, AutomationId: id, Removals: rs}, want)
			}
			m = rm([]*bookv1.ConnectionRemoval{{ConnectionId: crm2, ConnectionAlias: "crm"}}, codes.OK)
			if tr.name == "http" {
				checkSchema(t, "v1RemoveAutomationConnectionsResponse", withoutAutomationExtensions(m))
			}
			wantCode = strings.Replace(wantCode, `"crm2-`+sfx+`"`, `"prose.connection_name.http"`, 1)
			if testenv.Field(m, "automation.connections.crm") != nil || testenv.Field(m, "automation.connections.stamps.connection_id") != stamps || testenv.Field(m, "automation.english_code") != wantCode {
				t.Fatalf("removed: %v", m)
			}
			rm([]*bookv1.ConnectionRemoval{{ConnectionId: crm2, ConnectionAlias: "crm"}}, codes.InvalidArgument)
			// The placeholder is listed as a connection to make, of the http book.
			m = call("ExtractAutomationCodeConnections", &bookv1.ExtractAutomationCodeConnectionsRequest{OrganizationId: org, WorkspaceId: ws, AutomationId: id}, codes.OK)
			if testenv.Field(m, "connections.0.connection_alias") != "prose.connection_name.http" || testenv.Field(m, "connections.0.book") != "http" || testenv.Field(m, "connections.0.connection_id") != nil {
				t.Errorf("extract after remove: %v", m)
			}
			// A connection may not take the placeholder's name.
			e.API(t, "POST", e.WsPath()+"/books/http/1.0.0/connections", `{"connection_name": "prose.connection_name.http"}`, 400)
		})

		t.Run("usage", func(t *testing.T) {
			both := e.MkAutomation(t, "Uses crm "+sfx, "call the api at \"/x\" with\n  the connection is \"crm-"+sfx+"\"\n", true)
			draft := e.MkAutomation(t, "Drafts crm "+sfx, "send an email to \"a@b.test\" with\n  the subject is \"hi\"\n  the connection is \"nobody-"+sfx+"\"\n"+
				"call the api at \"/y\" with\n  the connection is \""+crm+"\"\n", false)
			count := func(ids []string, want codes.Code) map[string]any {
				return call("CountConnectionUsage", &bookv1.CountConnectionUsageRequest{OrganizationId: org, WorkspaceId: ws, ConnectionIds: ids}, want)
			}
			m := count([]string{mail, crm}, codes.OK)
			if tr.name == "http" {
				checkSchema(t, "v1CountConnectionUsageResponse", m)
			}
			l, _ := m["connection_counts"].([]any)
			if len(l) != 2 || testenv.Field(l[0], "connection_id") != mail || testenv.Field(l[0], "count") != nil && testenv.Field(l[0], "count") != float64(0) ||
				testenv.Field(l[1], "connection_id") != crm || testenv.Field(l[1], "count") != float64(2) {
				t.Errorf("counts: %v", m)
			}
			count(nil, codes.InvalidArgument)
			count([]string{crm, "nope"}, codes.NotFound)
			count(slices.Repeat([]string{crm}, 101), codes.InvalidArgument)

			m = call("TraceConnectionUsage", &bookv1.TraceConnectionUsageRequest{OrganizationId: org, WorkspaceId: ws, ConnectionId: crm}, codes.OK)
			if tr.name == "http" {
				checkSchema(t, "v1TraceConnectionUsageResponse", m)
			}
			want := map[string]string{both.ID: "[AUTOMATION_STAGE_DRAFT AUTOMATION_STAGE_PUBLISHED]", draft.ID: "[AUTOMATION_STAGE_DRAFT]"}
			l, _ = m["automations"].([]any)
			if len(l) != 2 {
				t.Fatalf("trace: %v", m)
			}
			for _, a := range l {
				if id := fmt.Sprint(testenv.Field(a, "automation_id")); want[id] != fmt.Sprint(testenv.Field(a, "stages")) {
					t.Errorf("trace of %s: %v", id, a)
				}
			}
			call("TraceConnectionUsage", &bookv1.TraceConnectionUsageRequest{OrganizationId: org, WorkspaceId: ws, ConnectionId: "nope"}, codes.NotFound)

			ex := func(id, filter string, want codes.Code) map[string]any {
				return call("ExtractAutomationCodeConnections", &bookv1.ExtractAutomationCodeConnectionsRequest{OrganizationId: org, WorkspaceId: ws, AutomationId: id, Filter: filter}, want)
			}
			m = ex(draft.ID, "", codes.OK)
			if tr.name == "http" {
				checkSchema(t, "v1ExtractAutomationCodeConnectionsResponse", m)
			}
			l, _ = m["connections"].([]any)
			if len(l) != 2 ||
				testenv.Field(l[0], "connection_alias") != "nobody-"+sfx || testenv.Field(l[0], "book") != "email" || testenv.Field(l[0], "book_version") != "1.0.0" || testenv.Field(l[0], "connection_id") != nil ||
				testenv.Field(l[1], "connection_alias") != crm || testenv.Field(l[1], "book") != "http" || testenv.Field(l[1], "connection_id") != crm || testenv.Field(l[1], "phase_type") != "PHASE_TYPE_MAIN" {
				t.Errorf("extract: %v", m)
			}
			ex("nope", "", codes.NotFound)
			ex(draft.ID, `book = "http"`, codes.InvalidArgument)
			ex(draft.ID, `stage = "PUBLISHED"`, codes.FailedPrecondition)
			if m := ex(both.ID, `stage = "PUBLISHED"`, codes.OK); testenv.Field(m, "connections.0.connection_id") != crm {
				t.Errorf("extract published: %v", m)
			}
			if m := ex(draft.ID, `stage = "DRAFT"`, codes.OK); len(m["connections"].([]any)) != 2 {
				t.Errorf("extract draft: %v", m)
			}
		})
	})
	for _, a := range answers {
		if strings.Contains(a, connOpsSecret) {
			t.Fatalf("an answer carries the secret: %s", a)
		}
	}
	if strings.Contains(logs.String(), connOpsSecret) {
		t.Fatal("a log line carries the secret")
	}
}

// withoutAutomationExtensions is an automation answer without the fields
// this project adds to the reference's Automation (README: share ids for
// /v1/invoke, the stage shown and its version), for the schema check.
func withoutAutomationExtensions(m map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		out[k] = v
	}
	if a, ok := m["automation"].(map[string]any); ok {
		b := map[string]any{}
		for k, v := range a {
			if !slices.Contains([]string{"draft_share_id", "published_share_id", "stage", "stage_version"}, k) {
				b[k] = v
			}
		}
		out["automation"] = b
	}
	return out
}
