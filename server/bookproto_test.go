package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"

	"github.com/proserun/prose/bookserver"
	"github.com/proserun/prose/examples/vatbook"
	"github.com/proserun/prose/server/testenv"
)

const vatKey = "vat-key-Jw7-very-secret"

// recorder keeps the bodies an external book was sent.
type recorder struct {
	mu     sync.Mutex
	bodies []string
	h      http.Handler
}

func (r *recorder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	var b strings.Builder
	if req.Body != nil {
		buf := make([]byte, 4096)
		for {
			n, err := req.Body.Read(buf)
			b.Write(buf[:n])
			if err != nil {
				break
			}
		}
	}
	r.mu.Lock()
	r.bodies = append(r.bodies, b.String())
	r.mu.Unlock()
	req.Body = http.NoBody
	if b.Len() > 0 {
		req.Body = readCloser{strings.NewReader(b.String())}
	}
	r.h.ServeHTTP(w, req)
}

type readCloser struct{ *strings.Reader }

func (readCloser) Close() error { return nil }

// TestExternalBookQuestionAndConnectionEndToEnd serves the example VAT
// book (protocol version 2) on loopback, registers it in a workspace over
// HTTP, adds a workspace connection to it with its api key through the
// connection operations, and runs the automation a person would write: the
// book asks which country's VAT applies, the run waits with that question,
// a wrong answer is refused, the answer given through :resolve is passed to
// the book, which is called again and the run completes. The api key
// reaches the book with each call and appears in no answer, event or log
// line.
func TestExternalBookQuestionAndConnectionEndToEnd(t *testing.T) {
	e, logs := newLoggedEnv(t)
	rec := &recorder{h: vatbook.New(vatKey)}
	srv := httptest.NewServer(rec)
	t.Cleanup(srv.Close)
	book := vatbook.New()
	raw, err := protojson.Marshal(book.Descriptor(srv.URL))
	if err != nil {
		t.Fatal(err)
	}
	var bodies []string
	call := func(method, path, body string, want int) map[string]any {
		t.Helper()
		code, raw := e.APIRaw(t, method, path, body)
		bodies = append(bodies, string(raw))
		if code != want {
			t.Fatalf("%s %s: HTTP %d, want %d: %s", method, path, code, want, raw)
		}
		m := map[string]any{}
		_ = json.Unmarshal(raw, &m)
		return m
	}
	call("POST", e.booksPath(), string(raw), 200)
	// The connection: the book's "api key" authentication, its one secret
	// field. A connection without it is refused.
	call("POST", e.WsPath()+"/books/example.vat/1.1.0/connections", `{"connection_name": "vat service", "authentication": {"authentication_id": "api key"}}`, 400)
	m := call("POST", e.WsPath()+"/books/example.vat/1.1.0/connections",
		`{"connection_name": "vat service", "authentication": {"authentication_id": "api key", "authentication_credentials": [{"id": "api key", "value": {"text_value": "`+vatKey+`"}}]}}`, 200)
	if testenv.Field(m, "book_connection_descriptor.authentication.authentication_credentials.0.value") != nil {
		t.Fatalf("the connection was returned with its secret: %v", m)
	}
	call("POST", e.WsPath()+"/books/example.vat/1.1.0/connections",
		`{"connection_name": "old key", "authentication": {"authentication_id": "api key", "authentication_credentials": [{"id": "api key", "value": {"text_value": "revoked-key-1"}}]}}`, 200)

	code := "get the vat on the amount with\n  the connection is \"vat service\"\nthe output vat is the above\n"
	a := e.MkAutomation(t, "VAT on an invoice", code, true)
	invoke := func(a testenv.Automation, amount string) string {
		m := call("POST", e.AutomationsPath()+"/"+a.ID+":invoke",
			`{"stage":"AUTOMATION_STAGE_PUBLISHED","inputs":{"amount":`+amount+`}}`, 200)
		return fmt.Sprint(m["run_id"])
	}
	run := invoke(a, `{"number":{"lo":100}}`)
	r := e.WaitRun(t, a.ID, run, "awaiting_guidance")
	x := fmt.Sprint(testenv.Field(r, "state.awaiting_guidance.exception"))
	exc := call("GET", e.WsPath()+"/exceptions/"+x, "", 200)
	if q := testenv.Field(exc, "guidance_request.question"); q != "Which country's VAT applies to the amount 100?" {
		t.Fatalf("the run asks %v, want the book's question: %v", q, exc)
	}
	if ch, _ := testenv.Field(exc, "guidance_request.choices").([]any); len(ch) != 5 || testenv.Field(ch[1], "text") != "DE" {
		t.Errorf("choices: %v", testenv.Field(exc, "guidance_request.choices"))
	}
	// An answer that is not one of the choices, or not a text, is refused.
	for body, want := range map[string]string{
		`{"answer": {"value": {"text": "US"}}}`:        `the answer must be one of "BE", "DE"`,
		`{"answer": {"value": {"number": {"lo": 3}}}}`: "the answer must be a text, not a number",
	} {
		m := call("POST", e.WsPath()+"/exceptions/"+x+":resolve", body, 400)
		if testenv.HTTPReason(m) != "GUIDANCE_DOES_NOT_FIT" || !strings.Contains(fmt.Sprint(m["message"]), want) {
			t.Errorf("%s: %v, want GUIDANCE_DOES_NOT_FIT %q", body, m, want)
		}
	}
	call("POST", e.WsPath()+"/exceptions/"+x+":resolve", `{"answer": {"value": {"text": "DE"}}}`, 200)
	r = e.WaitRun(t, a.ID, run, "completed")
	// 19.00: 1900 with scale 2 (flags bits 16-23).
	if lo, flags := testenv.Field(r, "state.completed.outputs.output vat.number.lo"), testenv.Field(r, "state.completed.outputs.output vat.number.flags"); fmt.Sprint(lo, " ", flags) != "1900 131072" {
		t.Errorf("output vat = %v %v, want 19.00: %v", lo, flags, r)
	}
	bodies = append(bodies, fmt.Sprint(r))

	// The book was called twice for the step, with the same call id, the
	// api key each time, and the answer the second time.
	rec.mu.Lock()
	calls := append([]string(nil), rec.bodies...)
	rec.mu.Unlock()
	if len(calls) != 2 {
		t.Fatalf("the book got %d calls, want 2: %v", len(calls), calls)
	}
	id := func(s string) string {
		_, rest, _ := strings.Cut(s, `"call_id":"`)
		v, _, _ := strings.Cut(rest, `"`)
		return v
	}
	for i, c := range calls {
		if !strings.Contains(c, `"protocol":2`) || !strings.Contains(c, `"api key":"`+vatKey+`"`) || !strings.Contains(c, `"name":"vat service"`) ||
			strings.Contains(c, `"connection":"vat service"`) {
			t.Errorf("call %d: %s, want protocol 2 and the connection (not as an input)", i, c)
		}
	}
	if id(calls[0]) == "" || id(calls[0]) != id(calls[1]) || strings.Contains(calls[0], `"answers"`) || !strings.Contains(calls[1], `"answers":{"country":"DE"}`) {
		t.Errorf("calls: %v, want the same call id and the answer the second time", calls)
	}

	// The book's refusal of a revoked key, and a connection the workspace
	// does not have, stop the run with a clear message.
	b := e.MkAutomation(t, "Old key", strings.Replace(code, "vat service", "old key", 1), true)
	r = e.WaitRun(t, b.ID, invoke(b, `{"number":{"lo":100}}`), "awaiting_guidance")
	if d := fmt.Sprint(testenv.Field(r, "state.awaiting_guidance.description")); !strings.Contains(d, `the VAT service does not know the api key of the connection "old key"`) {
		t.Errorf("revoked key: %s", d)
	}
	c := e.MkAutomation(t, "No such connection", strings.Replace(code, "vat service", "nope", 1), true)
	r = e.WaitRun(t, c.ID, invoke(c, `{"number":{"lo":100}}`), "awaiting_guidance")
	if d := fmt.Sprint(testenv.Field(r, "state.awaiting_guidance.description")); !strings.Contains(d, `this workspace has no connection named "nope"`) {
		t.Errorf("unknown connection: %s", d)
	}
	bodies = append(bodies, fmt.Sprint(r))

	// A book that quotes the secret it was sent in its refusal: the run
	// shows the message without it.
	leaky := bookserver.New("test.leaky", "1.0.0").Connection(bookserver.ConnectionSpec{Required: true,
		Fields: []bookserver.Field{{Name: "password", Secret: true}}})
	leaky.Procedure("check the password (the result)", nil, func(_ context.Context, c *bookserver.Call) (bookserver.Outputs, error) {
		return nil, bookserver.Errorf("the password %s is refused", c.Connection.Secret("password"))
	})
	lsrv := httptest.NewServer(leaky)
	t.Cleanup(lsrv.Close)
	raw, err = protojson.Marshal(leaky.Descriptor(lsrv.URL))
	if err != nil {
		t.Fatal(err)
	}
	call("POST", e.booksPath(), string(raw), 200)
	call("POST", e.WsPath()+"/books/test.leaky/1.0.0/connections",
		`{"connection_name": "leaky", "authentication": {"authentication_id": "credentials", "authentication_credentials": [{"id": "password", "value": {"text_value": "`+vatKey+`"}}]}}`, 200)
	l := e.MkAutomation(t, "Leaky", "check the password with\n  the connection is \"leaky\"\n", true)
	r = e.WaitRun(t, l.ID, invoke(l, `{"number":{"lo":1}}`), "awaiting_guidance")
	if d := fmt.Sprint(testenv.Field(r, "state.awaiting_guidance.description")); !strings.Contains(d, "the password [redacted] is refused") {
		t.Errorf("leaky book: %s", d)
	}
	bodies = append(bodies, fmt.Sprint(r), fmt.Sprint(call("GET", e.WsPath()+"/exceptions/"+fmt.Sprint(testenv.Field(r, "state.awaiting_guidance.exception")), "", 200)))
	// A book that requires a connection, called without one.
	n := e.MkAutomation(t, "No connection", "check the password\n", true)
	r = e.WaitRun(t, n.ID, invoke(n, `{"number":{"lo":1}}`), "awaiting_guidance")
	if d := fmt.Sprint(testenv.Field(r, "state.awaiting_guidance.description")); !strings.Contains(d, `the book test.leaky needs a connection`) {
		t.Errorf("no connection: %s", d)
	}

	// The history of the run that asked: its events carry no secret.
	bodies = append(bodies, fmt.Sprint(call("GET", e.RunPath(a.ID, run)+"/events?page_size=1000", "", 200)))

	for _, body := range bodies {
		if strings.Contains(body, vatKey) {
			t.Fatalf("an answer carries the api key: %s", body)
		}
	}
	if strings.Contains(logs.String(), vatKey) {
		t.Fatal("a log line carries the api key")
	}
}
