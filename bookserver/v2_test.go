package bookserver_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/proserun/prose/bookserver"
	"github.com/proserun/prose/bookserver/booktest"
	bookv1 "github.com/proserun/prose/gen/prose/book/v1"
	"github.com/proserun/prose/internal/books"
	"github.com/proserun/prose/internal/lang"
)

const token = "tok-9hX-secret"

// ticketBook requires a connection (a secret token and a project setting)
// and files tickets: a mutation that asks for the priority when the call
// does not give it.
func ticketBook(filed *atomic.Int64) *bookserver.Book {
	b := bookserver.New("test.tickets", "2.0.0").Connection(bookserver.ConnectionSpec{
		Authentication: "token", Required: true,
		Fields: []bookserver.Field{{Name: "token", Secret: true}, {Name: "project"}, {Name: "region", Optional: true}},
	})
	b.Mutation("file a ticket (the ticket number)", []bookserver.Input{{Name: "title", Type: bookserver.Text}},
		func(_ context.Context, c *bookserver.Call) (bookserver.Outputs, error) {
			if c.Connection.Secret("token") != token {
				return nil, bookserver.Errorf("the token of %q is wrong", c.Connection.Name)
			}
			p, ok := c.Answer("priority")
			if !ok {
				return nil, c.Ask(bookserver.Question{ID: "priority", Prompt: "How urgent is " + c.Text("title") + "?",
					Choices: []lang.Value{lang.Text("low"), lang.Text("high")}, Type: "text"})
			}
			n := filed.Add(1)
			return bookserver.Outputs{"ticket number": lang.Text(c.Connection.Setting("project") + "-" + p.AsText() + "-" + lang.Int(n).String())}, nil
		})
	return b
}

func ticketConn() *books.Connection {
	return &books.Connection{ID: "c1", Name: "jira", AuthID: "token", Credentials: map[string]string{"token": token},
		Config: map[string]lang.Value{"project": lang.Text("OPS")}}
}

// TestDescriptorDeclaresConnection: the connection's secret fields are
// the credentials of one authentication (sensitive), the others are
// configurations.
func TestDescriptorDeclaresConnection(t *testing.T) {
	d := ticketBook(new(atomic.Int64)).Descriptor("http://127.0.0.1:1")
	auth := d.GetAuthentications()
	if !d.GetConnectionRequired() || len(auth) != 1 || auth[0].GetCustom().GetId() != "token" ||
		len(auth[0].GetCustom().GetCredentials()) != 1 || auth[0].GetCustom().GetCredentials()[0].GetType() != bookv1.CredentialType_CredentialTypeSensitiveText {
		t.Fatalf("descriptor: %v", d)
	}
	if len(d.GetConfigurations()) != 2 || books.ConceptName(d.GetConfigurations()[0]) != "project" ||
		d.GetConfigurations()[1].GetType().GetOptionalType() == nil {
		t.Errorf("configurations: %v", d.GetConfigurations())
	}
}

// TestQuestionsAndConnection calls a version 2 book with the platform's
// client: the question, the call again with the answer under the same call
// id (filed once; a repetition gets the first answer), the connection's
// values, and the refusals.
func TestQuestionsAndConnection(t *testing.T) {
	var filed atomic.Int64
	srv := httptest.NewServer(ticketBook(&filed))
	defer srv.Close()
	c, ctx := books.NewClient(), context.Background()
	in := map[string]lang.Value{"title": lang.Text("disk full")}

	_, err := c.Do(ctx, srv.URL, "file_a_ticket", books.CallRequest{CallID: "run/1/0", Inputs: in, Connection: ticketConn()})
	var q *lang.BookQuestion
	if !errors.As(err, &q) || q.ID != "priority" || q.Prompt != "How urgent is disk full?" || len(q.Choices) != 2 || q.Type != "text" {
		t.Fatalf("want the question, got %v", err)
	}
	req := books.CallRequest{CallID: "run/1/0", Inputs: in, Connection: ticketConn(), Answers: map[string]lang.Value{"priority": lang.Text("high")}}
	out, err := c.Do(ctx, srv.URL, "file_a_ticket", req)
	if err != nil || out["ticket number"].AsText() != "OPS-high-1" {
		t.Fatalf("answered: %v %v", out, err)
	}
	again, err := c.Do(ctx, srv.URL, "file_a_ticket", req)
	if err != nil || again["ticket number"].AsText() != "OPS-high-1" || filed.Load() != 1 {
		t.Errorf("repeated: %v %v, filed %d times", again, err, filed.Load())
	}

	var be *books.BookError
	for name, r := range map[string]books.CallRequest{
		"no connection":     {Inputs: in},
		"no project":        {Inputs: in, Connection: &books.Connection{Name: "jira", Credentials: map[string]string{"token": token}}},
		"no token":          {Inputs: in, Connection: &books.Connection{Name: "jira", Config: map[string]lang.Value{"project": lang.Text("OPS")}}},
		"wrong token value": {Inputs: in, Connection: &books.Connection{Name: "jira", Credentials: map[string]string{"token": "x"}, Config: map[string]lang.Value{"project": lang.Text("OPS")}}},
	} {
		if _, err := c.Do(ctx, srv.URL, "file_a_ticket", r); !errors.As(err, &be) {
			t.Errorf("%s: %v, want a book error", name, err)
		}
	}

	// A version 1 call (no protocol) cannot carry the question: a book
	// error that says so, and the answer says it is version 1.
	post := func(body string) (int, string, string) {
		resp, err := http.Post(srv.URL+"/procedures/file_a_ticket:call", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header.Get(books.ProtocolHeader), string(raw)
	}
	if code, v, body := post(`{"inputs": {"title": "x"}}`); code != 422 || v != "1" || !strings.Contains(body, "needs a connection") {
		t.Errorf("v1 without connection: %d %s %s", code, v, body)
	}
	noBook := bookserver.New("test.plain", "1.0.0")
	noBook.Procedure("ask a thing (the thing)", nil, func(_ context.Context, c *bookserver.Call) (bookserver.Outputs, error) {
		return nil, c.Ask(bookserver.Question{ID: "thing", Prompt: "Which thing?"})
	})
	plain := httptest.NewServer(noBook)
	defer plain.Close()
	resp, err := http.Post(plain.URL+"/procedures/ask_a_thing:call", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != 422 || !strings.Contains(string(raw), "version 1 cannot carry a question") {
		t.Errorf("v1 question: %d %s", resp.StatusCode, raw)
	}
	resp, err = http.Post(plain.URL+"/procedures/ask_a_thing:call", "application/json", strings.NewReader(`{"protocol": 2}`))
	if err != nil {
		t.Fatal(err)
	}
	raw, _ = io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get(books.ProtocolHeader) != "2" || string(raw) != `{"question":{"id":"thing","prompt":"Which thing?"}}` {
		t.Errorf("v2 question: %d %s", resp.StatusCode, raw)
	}

	// The versions, and malformed v2 parts.
	if vs, err := c.Versions(ctx, srv.URL); err != nil || len(vs) != 2 || vs[0] != 1 || vs[1] != 2 {
		t.Errorf("versions: %v %v", vs, err)
	}
	if code, _, _ := post(`{"protocol": 2, "inputs": {"title": "x"}, "answers": [1]}`); code != 400 {
		t.Errorf("malformed answers: %d", code)
	}
	if code, _, _ := post(`{"protocol": 2, "inputs": {"title": "x"}, "connection": {"name": "j", "configuration": 3}}`); code != 400 {
		t.Errorf("malformed configuration: %d", code)
	}
}

// TestClientQuestionChecks: the client refuses malformed questions as a
// failure to use the book, and a book of version 1 (no /protocol) speaks 1.
func TestClientQuestionChecks(t *testing.T) {
	var answer atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/protocol" {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write([]byte(answer.Load().(string)))
	}))
	defer srv.Close()
	c, ctx := books.NewClient(), context.Background()
	for _, body := range []string{
		`{"question": {"prompt": "no id"}}`,
		`{"question": {"id": "x"}}`,
		`{"question": {"id": "x", "prompt": "p", "type": "colour"}}`,
		`{"question": {"id": "x", "prompt": "p", "type": "number", "choices": ["one"]}}`,
		`{"question": {"id": "x", "prompt": "` + strings.Repeat("p", books.MaxQuestionPromptBytes+1) + `"}}`,
		`{"question": {"id": "x", "prompt": "p", "choices": [` + strings.TrimSuffix(strings.Repeat("1,", books.MaxQuestionChoices+1), ",") + `]}}`,
	} {
		answer.Store(body)
		var ce *books.CallError
		if _, err := c.Call(ctx, srv.URL, "p", "", nil); !errors.As(err, &ce) || !strings.Contains(err.Error(), "malformed question") {
			t.Errorf("%.60s: %v, want a call error", body, err)
		}
	}
	if vs, err := c.Versions(ctx, srv.URL); err != nil || len(vs) != 1 || vs[0] != 1 {
		t.Errorf("versions of a v1 book: %v %v", vs, err)
	}
}

// TestConformanceV2 and the broken books booktest finds.
func TestConformanceV2(t *testing.T) {
	var filed atomic.Int64
	good := ticketBook(&filed)
	desc := good.Descriptor("")
	cases := []booktest.Case{
		{Procedure: "file_a_ticket", Inputs: map[string]lang.Value{"title": lang.Text("a")}, Connection: ticketConn(), WantQuestion: "priority"},
		{Procedure: "file_a_ticket", Inputs: map[string]lang.Value{"title": lang.Text("a")}, Connection: ticketConn(), Answers: map[string]lang.Value{"priority": lang.Text("low")}},
	}
	if errs := booktest.Check(desc, good, cases...); len(errs) != 0 {
		t.Fatalf("the good book: %v", errs)
	}
	rewrite := func(f func(w http.ResponseWriter, r *http.Request, body map[string]any) bool) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			raw, _ := io.ReadAll(r.Body)
			var body map[string]any
			_ = json.Unmarshal(raw, &body)
			if f(w, r, body) {
				return
			}
			r.Body = io.NopCloser(strings.NewReader(string(raw)))
			good.ServeHTTP(w, r)
		})
	}
	broken := map[string]http.Handler{
		"says it speaks only v1": rewrite(func(w http.ResponseWriter, r *http.Request, _ map[string]any) bool {
			if r.URL.Path == "/protocol" {
				_, _ = w.Write([]byte(`{"versions": [1]}`))
				return true
			}
			return false
		}),
		"asks v1 callers too": rewrite(func(w http.ResponseWriter, r *http.Request, body map[string]any) bool {
			if body != nil && body["protocol"] == nil {
				_, _ = w.Write([]byte(`{"question": {"id": "priority", "prompt": "?"}}`))
				return true
			}
			return false
		}),
		"echoes the secret": rewrite(func(w http.ResponseWriter, r *http.Request, body map[string]any) bool {
			if body != nil && body["answers"] != nil {
				_, _ = w.Write([]byte(`{"error": {"message": "token ` + token + ` refused"}}`))
				return true
			}
			return false
		}),
		"works without a connection": rewrite(func(w http.ResponseWriter, r *http.Request, body map[string]any) bool {
			if body != nil && body["connection"] == nil && body["answers"] != nil {
				_, _ = w.Write([]byte(`{"outputs": {"ticket number": "x"}}`))
				return true
			}
			return false
		}),
	}
	for name, h := range broken {
		if errs := booktest.Check(desc, h, cases...); len(errs) == 0 {
			t.Errorf("%s: Check found no problem", name)
		}
	}
}
