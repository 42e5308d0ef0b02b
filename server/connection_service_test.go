package server_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
	"github.com/xuri/excelize/v2"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	bookv1 "github.com/proserun/prose/gen/prose/book/v1"
	"github.com/proserun/prose/internal/books"
	"github.com/proserun/prose/server/testenv"
	"github.com/proserun/prose/store"
)

// newLoggedEnv is a test env whose server logs at debug level into the
// returned buffer (tests grep it for secrets).
func newLoggedEnv(t *testing.T) (*testEnv, *testenv.SyncBuffer) {
	t.Helper()
	logs := &testenv.SyncBuffer{}
	e := newTestEnvLogged(t, nil, slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	return e, logs
}

const connSecret = "tok-Zq81-very-secret"

func TestConnectionsOverHTTPAndGRPC(t *testing.T) {
	e, logs := newLoggedEnv(t)
	var bodies []string
	call := func(method, path, body string, want int) map[string]any {
		t.Helper()
		code, raw := e.APIRaw(t, method, path, body)
		bodies = append(bodies, string(raw))
		if code != want {
			t.Fatalf("%s %s: HTTP %d, want %d: %s", method, path, code, want, raw)
		}
		var m map[string]any
		_ = json.Unmarshal(raw, &m)
		return m
	}
	add := `{"connection_name": "crm", "authentication": {"authentication_id": "bearer", "authentication_credentials": [{"id": "token", "value": {"text_value": "` + connSecret + `"}}]},
		"config_map": {"base url": {"text_value": "https://crm.example.test/api"}, "timeout seconds": {"number_value": 10}}, "labels": [{"key": "team", "value": "sales"}]}`
	m := call("POST", e.WsPath()+"/books/http/1.0.0/connections", add, 200)
	d, _ := m["book_connection_descriptor"].(map[string]any)
	id, _ := d["connection_id"].(string)
	if id == "" || d["connection_name"] != "crm" || d["book_name"] != "http" || d["book_version"] != "1.0.0" ||
		testenv.Field(d, "authentication.authentication_id") != "bearer" || testenv.Field(d, "authentication.authentication_credentials.0.id") != "token" ||
		testenv.Field(d, "authentication.authentication_credentials.0.value") != nil || testenv.Field(d, "status.state") != "BOOK_CONNECTION_STATE_READY" ||
		testenv.Field(d, "config_map.base url.text_value") != "https://crm.example.test/api" || testenv.Field(d, "labels.0.key") != "team" {
		t.Fatalf("added: %v", m)
	}
	call("POST", e.WsPath()+"/books/email/1.0.0/connections", `{"connection_name": "mail", "config_map": {"host": {"text_value": "127.0.0.1"}}}`, 200)

	got := call("GET", e.WsPath()+"/connections/"+id, "", 200)
	if testenv.Field(got, "book_connection.connection_id") != id || testenv.Field(got, "book_connection.authentication.authentication_credentials.0.value") != nil {
		t.Errorf("get: %v", got)
	}
	all := call("GET", e.WsPath()+"/connections", "", 200)
	if l, _ := all["book_connections"].([]any); len(l) != 2 {
		t.Errorf("list all: %v", all)
	}
	filtered := call("GET", e.WsPath()+"/connections?filter="+urlQuery(`book_name = "email"`), "", 200)
	if l, _ := filtered["book_connections"].([]any); len(l) != 1 || testenv.Field(l[0], "connection_name") != "mail" {
		t.Errorf("filtered: %v", filtered)
	}
	page := call("GET", e.WsPath()+"/connections?page_size=1", "", 200)
	if tok, _ := page["next_page_token"].(string); tok == "" {
		t.Errorf("page 1 has no next token: %v", page)
	} else {
		p2 := call("GET", e.WsPath()+"/connections?page_size=1&page_token="+urlQuery(tok), "", 200)
		if l, _ := p2["book_connections"].([]any); len(l) != 1 || p2["next_page_token"] != nil && p2["next_page_token"] != "" {
			t.Errorf("page 2: %v", p2)
		}
		call("GET", e.WsPath()+"/connections?page_size=1&page_token="+urlQuery(tok)+"&filter="+urlQuery(`book_name = "http"`), "", 400)
	}
	byBook := call("GET", e.WsPath()+"/books/http/1.0.0/connections", "", 200)
	if l, _ := byBook["book_connections"].([]any); len(l) != 1 {
		t.Errorf("book's connections: %v", byBook)
	}
	// Rename; the credential sent back without a value stays.
	up := call("PUT", e.WsPath()+"/books/http/1.0.0/connections/"+id,
		`{"connection_name": "crm main", "authentication": {"authentication_id": "bearer", "authentication_credentials": [{"id": "token"}]}, "config_map": {"base url": {"text_value": "https://crm.example.test/v2"}}}`, 200)
	if testenv.Field(up, "book_connection_descriptor.connection_name") != "crm main" || testenv.Field(up, "book_connection_descriptor.config_map.timeout seconds") != nil {
		t.Errorf("update: %v", up)
	}
	conn, err := e.App.Conns.Resolve(t.Context(), books.Workspace{OrganizationID: e.Init.OrganizationID, WorkspaceID: e.Init.WorkspaceID}, "http", "crm main")
	if err != nil || conn.Credentials["token"] != connSecret {
		t.Errorf("the stored token after update: %v", err)
	}

	// Errors: the documented statuses, none a 500.
	for _, c := range []struct {
		method, path, body string
		want               int
	}{
		{"POST", e.WsPath() + "/books/nope/1.0.0/connections", `{"connection_name": "x"}`, 404},
		{"POST", e.WsPath() + "/books/http/1.0.0/connections", `{"connection_name": ""}`, 400},
		{"POST", e.WsPath() + "/books/http/1.0.0/connections", `{"connection_name": "crm main"}`, 409},
		{"POST", e.WsPath() + "/books/http/1.0.0/connections", `{"connection_name": "x", "authentication": {"authentication_id": "oauth"}}`, 400},
		{"POST", e.WsPath() + "/books/http/1.0.0/connections", `{"connection_name": "x", "unknown": 1}`, 400},
		{"GET", e.WsPath() + "/connections/nope", "", 404},
		{"GET", e.WsPath() + "/connections?filter=" + urlQuery("token = 1"), "", 400},
		{"PUT", e.WsPath() + "/books/email/1.0.0/connections/" + id, `{}`, 404},
		{"DELETE", e.WsPath() + "/automations:deleteConnection?connection_id=nope", "", 404},
	} {
		call(c.method, c.path, c.body, c.want)
	}

	// gRPC: the same answers, no credential values.
	ctx := metadata.AppendToOutgoingContext(t.Context(), "authorization", "Bearer "+e.Init.APIKey)
	client := bookv1.NewConnectionServiceClient(e.Conn)
	g, err := client.GetWorkspaceBookConnection(ctx, &bookv1.GetWorkspaceBookConnectionRequest{OrganizationId: e.Init.OrganizationID, WorkspaceId: e.Init.WorkspaceID, ConnectionId: id})
	if err != nil || g.GetBookConnection().GetConnectionName() != "crm main" || g.GetBookConnection().GetAuthentication().GetAuthenticationCredentials()[0].GetValue() != nil {
		t.Errorf("gRPC get: %v %v", g, err)
	}
	bodies = append(bodies, g.String())
	_, err = client.GetWorkspaceBookConnection(ctx, &bookv1.GetWorkspaceBookConnectionRequest{OrganizationId: e.Init.OrganizationID, WorkspaceId: e.Init.WorkspaceID, ConnectionId: "nope"})
	if status.Code(err) != codes.NotFound {
		t.Errorf("gRPC get unknown: %v", err)
	}
	l, err := client.ListAllWorkspaceBookConnections(ctx, &bookv1.ListAllWorkspaceBookConnectionsRequest{OrganizationId: e.Init.OrganizationID, WorkspaceId: e.Init.WorkspaceID})
	if err != nil || len(l.GetBookConnections()) != 2 {
		t.Errorf("gRPC list: %v %v", l, err)
	}
	bodies = append(bodies, l.String())
	// A read-only key reads but cannot add.
	ro := e.NewKey(t, testenv.KeySpec{Level: "read_only"})
	if code, _, raw := e.DoHTTP(t, "POST", e.WsPath()+"/books/http/1.0.0/connections", `{"connection_name": "ro"}`, map[string]string{"Authorization": "Bearer " + ro}); code != 403 {
		t.Errorf("read-only add: %d %s", code, raw)
	}

	// Delete: refused while a published automation names the connection,
	// drafts that name it are listed.
	code := "call the api at \"/x\" with\n  the connection is \"crm main\"\n"
	pub := e.MkAutomation(t, "Published user", code, true)
	draft := e.MkAutomation(t, "Draft user", code, false)
	call("DELETE", e.WsPath()+"/automations:deleteConnection?connection_id="+id, "", 400)
	call("DELETE", e.AutomationsPath()+"/"+pub.ID, "", 200)
	del := call("DELETE", e.WsPath()+"/automations:deleteConnection?connection_id="+id, "", 200)
	if l, _ := del["affected_automations"].([]any); len(l) != 1 || testenv.Field(l[0], "automation_id") != draft.ID || testenv.Field(l[0], "display_name") != "Draft user" {
		t.Errorf("delete: %v", del)
	}
	call("GET", e.WsPath()+"/connections/"+id, "", 404)

	// The secret was in no answer and no log line; the raw row of a stored
	// connection has no plain text.
	for _, b := range bodies {
		if strings.Contains(b, connSecret) {
			t.Fatalf("an answer carries the secret: %s", b)
		}
	}
	if strings.Contains(logs.String(), connSecret) {
		t.Fatal("a log line carries the secret")
	}
	m = call("POST", e.WsPath()+"/books/http/1.0.0/connections", add, 200)
	row, err := e.Store.GetBookConnection(t.Context(), e.Init.OrganizationID, e.Init.WorkspaceID, testenv.Field(m, "book_connection_descriptor.connection_id").(string))
	if err != nil || bytes.Contains(row.Secret, []byte(connSecret)) || bytes.Contains(row.Descriptor, []byte(connSecret)) || len(row.Secret) < len(connSecret) {
		t.Errorf("raw row: %v %q %x", err, row.Descriptor, row.Secret)
	}
}

func urlQuery(s string) string {
	r := strings.NewReplacer(" ", "%20", `"`, "%22", "=", "%3D", "&", "%26", "+", "%2B", "/", "%2F")
	return r.Replace(s)
}

// mailSink is an SMTP server on loopback (no TLS; PLAIN auth allowed over
// the plain connection, as a connection with security "none" uses it).
type mailSink struct {
	mu       sync.Mutex
	msgs     [][]byte
	user     string
	pw       string
	sessions *atomic.Int64 // counts the sessions when set
}

type sinkSession struct {
	s    *mailSink
	auth bool
}

func (m *mailSink) NewSession(*smtp.Conn) (smtp.Session, error) {
	if m.sessions != nil {
		m.sessions.Add(1)
	}
	return &sinkSession{s: m}, nil
}
func (s *sinkSession) AuthMechanisms() []string { return []string{sasl.Plain} }
func (s *sinkSession) Auth(string) (sasl.Server, error) {
	return sasl.NewPlainServer(func(_, u, p string) error {
		if u != s.s.user || p != s.s.pw {
			return errors.New("bad credentials")
		}
		s.auth = true
		return nil
	}), nil
}
func (s *sinkSession) Mail(string, *smtp.MailOptions) error {
	if !s.auth {
		return smtp.ErrAuthRequired
	}
	return nil
}
func (s *sinkSession) Rcpt(string, *smtp.RcptOptions) error { return nil }
func (s *sinkSession) Data(r io.Reader) error {
	b, err := io.ReadAll(r)
	s.s.mu.Lock()
	s.s.msgs = append(s.s.msgs, b)
	s.s.mu.Unlock()
	return err
}
func (s *sinkSession) Reset()        {}
func (s *sinkSession) Logout() error { return nil }

func startSink(t *testing.T, m *mailSink) int {
	t.Helper()
	srv := smtp.NewServer(m)
	srv.Domain, srv.AllowInsecureAuth = "127.0.0.1", true
	srv.ReadTimeout, srv.WriteTimeout = 10*time.Second, 10*time.Second
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	return l.Addr().(*net.TCPAddr).Port
}

// The README's automation: read an Excel file, call an HTTP API for each
// row, email a summary — over the API, against real peers on loopback.
const readmeCode = `read the table from the orders file
the orders are the above
the summary is ""
process each order in the orders as follows
  call the api at "/customers" with
    the method is "POST"
    the body is the order
    the connection is "crm"
  the summary is the summary + the order's customer + ": " + the above's status + "\n"
send an email to "ops@acme.test" with
  the subject is "Orders synced"
  the body is the summary
  the connection is "mail"
the output summary is the summary
`

func TestReadmeAutomationExcelHTTPEmail(t *testing.T) {
	e, logs := newLoggedEnv(t)
	var mu sync.Mutex
	var got []string
	failing := true
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		defer mu.Unlock()
		if r.Header.Get("Authorization") != "Bearer "+connSecret || r.URL.Path != "/v1/customers" {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		if failing {
			failing = false
			http.Error(w, "try later (you sent "+r.Header.Get("Authorization")+")", http.StatusServiceUnavailable)
			return
		}
		got = append(got, string(body))
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"status": "created", "id": %d}`, len(got))
	}))
	defer api.Close()
	sink := &mailSink{user: "robot", pw: "mail-pw-Q72"}
	port := startSink(t, sink)

	e.API(t, "POST", e.WsPath()+"/books/http/1.0.0/connections", `{"connection_name": "crm",
		"authentication": {"authentication_id": "bearer", "authentication_credentials": [{"id": "token", "value": {"text_value": "`+connSecret+`"}}]},
		"config_map": {"base url": {"text_value": "`+api.URL+`/v1"}}}`, 200)
	e.API(t, "POST", e.WsPath()+"/books/email/1.0.0/connections", fmt.Sprintf(`{"connection_name": "mail",
		"authentication": {"authentication_id": "password", "authentication_credentials": [{"id": "username", "value": {"text_value": "robot"}}, {"id": "password", "value": {"text_value": "mail-pw-Q72"}}]},
		"config_map": {"host": {"text_value": "127.0.0.1"}, "port": {"number_value": %d}, "security": {"text_value": "none"}, "from": {"text_value": "robot@acme.test"}}}`, port), 200)

	x := excelize.NewFile()
	_ = x.SetSheetRow("Sheet1", "A1", &[]any{"customer", "amount"})
	_ = x.SetSheetRow("Sheet1", "A2", &[]any{"Ana", 12.5})
	_ = x.SetSheetRow("Sheet1", "A3", &[]any{"Bo", 3})
	var xb bytes.Buffer
	if _, err := x.WriteTo(&xb); err != nil {
		t.Fatal(err)
	}
	a := e.MkAutomation(t, "Sync orders", readmeCode, true)
	inv := e.API(t, "POST", e.AutomationsPath()+"/"+a.ID+":invoke", `{"stage": "AUTOMATION_STAGE_PUBLISHED", "inputs": {"orders file": {"file": {"inline": {"file_name": "orders.xlsx", "content": "`+base64.StdEncoding.EncodeToString(xb.Bytes())+`"}}}}}`, 200)
	run := fmt.Sprint(inv["run_id"])

	// The API fails once: the run waits with an exception a person can
	// retry; its message names the failure, never the token.
	r := e.WaitRun(t, a.ID, run, "awaiting_guidance")
	xid := store.LastSegment(fmt.Sprint(testenv.Field(r, "state.awaiting_guidance.exception")))
	x1 := e.API(t, "GET", e.WsPath()+"/exceptions/"+xid, "", 200)
	msg := fmt.Sprint(x1["message"])
	if !strings.Contains(msg, "503") || strings.Contains(msg, connSecret) || x1["group"] != e.excGroup("user_system_error") {
		t.Fatalf("exception: %v", x1)
	}
	e.API(t, "POST", e.WsPath()+"/exceptions/"+xid+":resolve", `{"retry": {}}`, 200)
	done := e.WaitRun(t, a.ID, run, "completed")

	mu.Lock()
	if len(got) != 2 || got[0] != `{"customer":"Ana","amount":12.5}` || got[1] != `{"customer":"Bo","amount":3}` {
		t.Errorf("API got %q", got)
	}
	mu.Unlock()
	sink.mu.Lock()
	if len(sink.msgs) != 1 || !bytes.Contains(sink.msgs[0], []byte("Subject: Orders synced")) {
		t.Errorf("mail: %q", sink.msgs)
	}
	sink.mu.Unlock()
	out, _ := json.Marshal(done)
	if !strings.Contains(string(out), `Ana: created\nBo: created\n`) {
		t.Errorf("run outputs: %s", out)
	}
	for _, secret := range []string{connSecret, "mail-pw-Q72"} {
		if strings.Contains(logs.String(), secret) || strings.Contains(string(out), secret) {
			t.Errorf("the secret %q leaked into logs or answers", secret)
		}
	}
}
