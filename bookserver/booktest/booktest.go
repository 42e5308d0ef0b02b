// Package booktest checks that an external book keeps the book protocol
// (version 1, books/README.md) by calling it the way Prose does, with the
// platform's own client (books.Client). Any book, written with bookserver or
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
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"

	"github.com/proserun/prose/books"
	bookv1 "github.com/proserun/prose/gen/prose/book/v1"
	"github.com/proserun/prose/lang"
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
}

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

	for i, c := range cases {
		p := procs[c.Procedure]
		if p == nil {
			fail("case %d: the descriptor has no procedure %q", i, c.Procedure)
			continue
		}
		callID := fmt.Sprintf("booktest-%d", i)
		out, err := client.Call(ctx, srv.URL, c.Procedure, callID, c.Inputs)
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
			again, err := client.Call(ctx, srv.URL, c.Procedure, callID, c.Inputs)
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
