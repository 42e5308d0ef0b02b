// Package booktest checks that an external book keeps the book protocol
// (docs/book-protocol.md) by calling it the way Prose does, with the platform's
// own client (books.Client). A book that declares a connection, or whose
// cases send a connection or answers or expect a question, is checked for
// version 2 as well. Any book, written with bookserver or
// by hand, can run it against itself:
//
//	func TestConformance(t *testing.T) {
//		booktest.Run(t, book.Descriptor(""), book, booktest.Case{
//			Procedure: "get_the_vat_rate_of_a_country",
//			Inputs:    map[string]lang.Value{"country": lang.Text("NL")},
//			Want:      map[string]lang.Value{"vat rate": lang.Num(lang.MustNumber("0.21"))},
//		})
//	}
package booktest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sort"
	"strings"
	"testing"

	bookv1 "github.com/proserun/prose/gen/prose/book/v1"
	"github.com/proserun/prose/internal/books"
	"github.com/proserun/prose/internal/lang"
)

// Case is one call to make and its expected answer.
type Case struct {
	Procedure string                // the procedure id
	Inputs    map[string]lang.Value // keyed by input concept name
	// Want are the expected outputs (compared by their plain JSON); nil
	// checks only that every output of the signature is answered.
	Want map[string]lang.Value
	// WantError, when set, expects the book to refuse the call (a book
	// error) with a message containing it.
	WantError string

	// Version 2:

	// Connection is sent with the call: the workspace connection a run
	// would name.
	Connection *books.Connection
	// Answers are sent as the answers to the book's questions, by
	// question id.
	Answers map[string]lang.Value
	// WantQuestion, when set, expects the book to ask the question with
	// this id (and a version 1 call of the same to be refused).
	WantQuestion string
}

func (c Case) v2() bool { return c.Connection != nil || c.Answers != nil || c.WantQuestion != "" }

// Run reports every problem Check finds as a test error.
func Run(t *testing.T, desc *bookv1.Book, h http.Handler, cases ...Case) {
	t.Helper()
	for _, err := range Check(desc, h, cases...) {
		t.Error(err)
	}
}

// Check serves h on loopback and checks the descriptor, the given cases, and
// the answers to mistakes (an unknown procedure, a malformed body, a
// missing input); with a mutation, that a repeated call id is answered with
// the first answer. It returns the problems found.
func Check(desc *bookv1.Book, h http.Handler, cases ...Case) []error {
	var errs []error
	fail := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	procs := checkDescriptor(desc, fail)
	srv := httptest.NewServer(h)
	defer srv.Close()
	client := books.NewClient()
	ctx := context.Background()

	v2 := desc.GetConnectionRequired() || len(desc.GetAuthentications()) > 0 || len(desc.GetConfigurations()) > 0
	for _, c := range cases {
		v2 = v2 || c.v2()
	}
	checkVersions(ctx, client, srv.URL, v2, fail)

	for i, c := range cases {
		p := procs[c.Procedure]
		if p == nil {
			fail("case %d: the descriptor has no procedure %q", i, c.Procedure)
			continue
		}
		callID := fmt.Sprintf("booktest-%d", i)
		req := books.CallRequest{CallID: callID, Inputs: c.Inputs, Answers: c.Answers, Connection: c.Connection}
		out, err := client.Do(ctx, srv.URL, c.Procedure, req)
		leak(c.Connection, out, err, func(what string) {
			fail("case %d (%s): the answer shows the connection's secret %s", i, c.Procedure, what)
		})
		if c.Connection != nil {
			checkConnectionUse(ctx, client, srv.URL, desc, c, i, fail)
		}
		if c.WantQuestion != "" {
			checkQuestion(srv.URL, c, i, err, fail)
			continue
		}
		if c.WantError != "" {
			var be *books.BookError
			if !errors.As(err, &be) || !strings.Contains(be.Message, c.WantError) {
				fail("case %d (%s): want a book error containing %q, got %v", i, c.Procedure, c.WantError, err)
			}
			continue
		}
		if err != nil {
			fail("case %d (%s): %v", i, c.Procedure, err)
			continue
		}
		for _, name := range outputNames(p) {
			if _, ok := out[name]; !ok {
				fail("case %d (%s): output %q of the signature is not answered (got %s)", i, c.Procedure, name, keys(out))
			}
		}
		if c.Want != nil && !sameValues(out, c.Want) {
			fail("case %d (%s): outputs %s, want %s", i, c.Procedure, plain(out), plain(c.Want))
		}
		if p.GetIsMutation() {
			again, err := client.Do(ctx, srv.URL, c.Procedure, req)
			if err != nil || !sameValues(again, out) {
				fail("case %d (%s): a repeated call id must get the first answer %s, got %s (%v)", i, c.Procedure, plain(out), plain(again), err)
			}
		}
	}

	if _, err := client.Call(ctx, srv.URL, "booktest-no-such-procedure", "", nil); err == nil {
		fail("an unknown procedure must be refused")
	}
	for id, p := range procs {
		resp, err := http.Post(srv.URL+"/procedures/"+id+":call", "application/json", bytes.NewReader([]byte(`{"inputs": [`)))
		if err != nil {
			fail("procedure %s: %v", id, err)
			continue
		}
		_ = resp.Body.Close()
		if resp.StatusCode >= 200 && resp.StatusCode <= 299 {
			fail("procedure %s: a malformed body must not be answered with %d", id, resp.StatusCode)
		}
		if len(p.GetInputs()) > 0 && p.GetInputs()[0].GetType().GetOptionalType() == nil {
			name := books.ConceptName(p.GetInputs()[0])
			if _, err := client.Call(ctx, srv.URL, id, "", map[string]lang.Value{}); err == nil {
				fail("procedure %s: a call without its input %q must be refused", id, name)
			}
		}
	}
	return errs
}

// checkVersions checks GET /protocol: version 1 always, version 2 when the
// book uses it.
func checkVersions(ctx context.Context, client *books.Client, url string, v2 bool, fail func(string, ...any)) {
	vs, err := client.Versions(ctx, url)
	if err != nil {
		fail("GET /protocol: %v", err)
		return
	}
	if !slices.Contains(vs, 1) {
		fail("GET /protocol: the versions %v do not include 1 (every book speaks it)", vs)
	}
	if v2 && !slices.Contains(vs, 2) {
		fail("GET /protocol: the book uses questions or a connection, but its versions %v do not include 2", vs)
	}
}

// checkQuestion checks a case that expects a question: asked with its id
// and a prompt, and a version 1 call of the same refused (it cannot carry
// the question).
func checkQuestion(url string, c Case, i int, err error, fail func(string, ...any)) {
	var q *lang.BookQuestion
	if !errors.As(err, &q) || q.ID != c.WantQuestion {
		fail("case %d (%s): want the question %q, got %v", i, c.Procedure, c.WantQuestion, err)
		return
	}
	body, _ := json.Marshal(map[string]any{"inputs": c.Inputs})
	resp, err := http.Post(url+"/procedures/"+c.Procedure+":call", "application/json", bytes.NewReader(body))
	if err != nil {
		fail("case %d (%s): %v", i, c.Procedure, err)
		return
	}
	defer resp.Body.Close()
	var ans struct {
		Question any `json:"question"`
		Error    *struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&ans)
	if ans.Question != nil || ans.Error == nil || ans.Error.Message == "" {
		fail("case %d (%s): a version 1 call that would need a question must be refused with a book error (HTTP %d)", i, c.Procedure, resp.StatusCode)
	}
}

// checkConnectionUse checks that a book which declares secrets refuses a
// connection without them, and one that requires a connection a call
// without one.
func checkConnectionUse(ctx context.Context, client *books.Client, url string, desc *bookv1.Book, c Case, i int, fail func(string, ...any)) {
	var be *books.BookError
	if desc.GetConnectionRequired() {
		_, err := client.Do(ctx, url, c.Procedure, books.CallRequest{Inputs: c.Inputs, Answers: c.Answers})
		if !errors.As(err, &be) {
			fail("case %d (%s): the book requires a connection, but a call without one got %v, want a book error", i, c.Procedure, err)
		}
	}
	if len(desc.GetAuthentications()) > 0 && len(c.Connection.Credentials) > 0 {
		stripped := *c.Connection
		stripped.Credentials = map[string]string{}
		_, err := client.Do(ctx, url, c.Procedure, books.CallRequest{Inputs: c.Inputs, Answers: c.Answers, Connection: &stripped})
		if !errors.As(err, &be) {
			fail("case %d (%s): a connection without its credentials got %v, want a book error", i, c.Procedure, err)
		}
	}
}

// leak reports each secret of conn that an answer (outputs, a book's
// message, a question) shows.
func leak(conn *books.Connection, out map[string]lang.Value, err error, report func(string)) {
	if conn == nil {
		return
	}
	text := plain(out)
	if err != nil {
		text += err.Error()
	}
	var q *lang.BookQuestion
	if errors.As(err, &q) {
		for _, ch := range q.Choices {
			text += ch.String()
		}
	}
	for name, v := range conn.Credentials {
		if len(v) >= 3 && strings.Contains(text, v) {
			report(name)
		}
	}
}

// checkDescriptor checks what Prose needs to match and call the procedures.
func checkDescriptor(desc *bookv1.Book, fail func(string, ...any)) map[string]*bookv1.Procedure {
	if desc.GetName() == "" || desc.GetVersion() == "" {
		fail("the book needs a name and a version, got %q %q", desc.GetName(), desc.GetVersion())
	}
	if len(desc.GetProcedures()) == 0 {
		fail("the book has no procedures")
	}
	procs := map[string]*bookv1.Procedure{}
	for _, p := range desc.GetProcedures() {
		id := p.GetId()
		if id == "" || procs[id] != nil {
			fail("procedure ids must be unique and not empty: %q", id)
			continue
		}
		procs[id] = p
		sig := p.GetSignature()
		if sig.GetEnglish() == "" || len(sig.GetVerbs()) == 0 {
			fail("procedure %s: the signature needs its English form and verbs", id)
		}
		seen := map[string]bool{}
		for _, c := range p.GetInputs() {
			name := books.ConceptName(c)
			if name == "" || seen[name] {
				fail("procedure %s: input concepts need a unique noun phrase, got %q", id, name)
			}
			seen[name] = true
			if c.GetType() == nil {
				fail("procedure %s: input %q has no type", id, name)
			}
		}
	}
	return procs
}

func outputNames(p *bookv1.Procedure) []string {
	var names []string
	for _, nps := range p.GetSignature().GetOutputs() {
		if l := nps.GetNounPhrases(); len(l) > 0 {
			names = append(names, books.PhraseText(l[0]))
		}
	}
	return names
}

func sameValues(a, b map[string]lang.Value) bool {
	return plain(a) == plain(b)
}

// plain renders values in their plain JSON, keys sorted.
func plain(m map[string]lang.Value) string {
	var parts []string
	for _, k := range keys(m) {
		raw, err := m[k].MarshalJSON()
		if err != nil {
			raw = []byte("?")
		}
		parts = append(parts, fmt.Sprintf("%q: %s", k, raw))
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

func keys(m map[string]lang.Value) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
