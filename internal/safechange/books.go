package safechange

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/proserun/prose/internal/lang"
)

// A test's run never calls a book. Its books (the program's, as a server
// or `prose run` sees them) are only looked up, so that a sentence means
// what it means in production; every call is answered by the test's
// stubs, and a call no stub answers fails the test.

// stubBook is the book of the procedures a test's stubs declare (a
// procedure no book offers, written as its signature).
const stubBook = "test"

// ProcedureName is how a person names a book procedure: its signature
// without the outputs and without the inputs that follow the first
// preposition ("send an email to a recipient (the message id)" is "send
// an email").
func ProcedureName(p lang.BookProcedure) string {
	full := signatureText(p.Signature)
	words := strings.Fields(full)
	for i := 1; i+1 < len(words); i++ {
		if prepositions[strings.ToLower(words[i])] && (words[i+1] == "a" || words[i+1] == "an") {
			return strings.Join(words[:i], " ")
		}
	}
	if full == "" {
		return p.Name
	}
	return full
}

var prepositions = map[string]bool{"to": true, "of": true, "for": true, "from": true, "with": true, "in": true, "on": true,
	"at": true, "by": true, "as": true, "into": true, "onto": true, "about": true, "per": true, "over": true,
	"under": true, "between": true, "within": true, "through": true, "against": true}

// signatureText is a signature without its outputs, on one line.
func signatureText(sig string) string {
	if i := strings.LastIndexByte(sig, '('); i >= 0 {
		sig = sig[:i]
	}
	return strings.Join(strings.Fields(strings.TrimPrefix(strings.TrimSpace(sig), "to ")), " ")
}

// outputNames are the outputs a signature declares ("(the message id)").
func outputNames(sig string) []string {
	i, j := strings.LastIndexByte(sig, '('), strings.LastIndexByte(sig, ')')
	if i < 0 || j < i {
		return nil
	}
	var out []string
	for _, o := range strings.Split(sig[i+1:j], ",") {
		if n := lang.FactName(o); n != "" {
			out = append(out, n)
		}
	}
	return out
}

func norm(s string) string {
	return strings.Join(strings.Fields(strings.ToLower(strings.TrimSuffix(strings.TrimSpace(s), "."))), " ")
}

// bookName is a procedure's book without its version.
func bookName(p lang.BookProcedure) string {
	name, _, _ := strings.Cut(p.Book, "@")
	return name
}

// names are the ways a stub's call may name p.
func names(p lang.BookProcedure) []string {
	if p.Book == stubBook {
		return []string{norm(p.Name)}
	}
	return []string{norm(ProcedureName(p)), norm(signatureText(p.Signature)), norm(p.Name),
		norm(bookName(p) + "/" + p.Name), norm(p.Book + "/" + p.Name)}
}

// Unstubbed is the error of a book call a test gives no result for.
type Unstubbed struct {
	Procedure string
	// Why, when set, says why no stub answered ("gives 2 results for it
	// and the run calls it a third time").
	Why string
}

func (u *Unstubbed) Error() string {
	if u.Why != "" {
		return fmt.Sprintf("this test calls `%s` %s", u.Procedure, u.Why)
	}
	return fmt.Sprintf("this test calls `%s` and gives no result for it", u.Procedure)
}

// stubBooks answers a test's book calls from its stubs.
type stubBooks struct {
	inner lang.Books
	stubs []Stub
	used  []int
	// unstubbed is the first call no stub answered.
	unstubbed *Unstubbed
	calls     int
}

func newStubBooks(inner lang.Books, stubs []Stub) *stubBooks {
	return &stubBooks{inner: inner, stubs: stubs, used: make([]int, len(stubs))}
}

// Lookup offers the real books' procedures, then those the stubs declare.
func (b *stubBooks) Lookup(ctx context.Context, sentence string) ([]lang.BookProcedure, error) {
	var out []lang.BookProcedure
	if b.inner != nil {
		procs, err := b.inner.Lookup(ctx, sentence)
		if err != nil {
			return nil, err
		}
		out = append(out, procs...)
	}
	for _, st := range b.stubs {
		out = append(out, lang.BookProcedure{Book: stubBook, Name: st.Call, Signature: st.Call})
	}
	return out, nil
}

// Call answers from the first stub that names the procedure and whose
// inputs, if it has any, the call has.
func (b *stubBooks) Call(_ context.Context, proc lang.BookProcedure, inputs map[string]lang.Value) (map[string]lang.Value, error) {
	b.calls++
	ns := names(proc)
	named := false
	for i, st := range b.stubs {
		call := norm(st.Call)
		if !containsName(ns, call) {
			continue
		}
		named = true
		if !inputsMatch(st.Inputs, inputs) {
			continue
		}
		if st.Error != "" {
			return nil, errors.New(st.Error)
		}
		n := b.used[i]
		b.used[i]++
		if !st.Repeat && n >= len(st.Results) {
			return nil, b.refuse(&Unstubbed{Procedure: ProcedureName(proc),
				Why: fmt.Sprintf("%d times, and gives %d results for it", n+1, len(st.Results))})
		}
		res := st.Results[0]
		if !st.Repeat {
			res = st.Results[n]
		}
		return resultOutputs(proc, res), nil
	}
	u := &Unstubbed{Procedure: ProcedureName(proc)}
	if named {
		u.Why = "with inputs no stub of it gives a result for (" + showInputs(inputs) + ")"
	}
	return nil, b.refuse(u)
}

func (b *stubBooks) refuse(u *Unstubbed) error {
	if b.unstubbed == nil {
		b.unstubbed = u
	}
	return u
}

func containsName(ns []string, n string) bool {
	for _, x := range ns {
		if x == n {
			return true
		}
	}
	return false
}

// inputsMatch reports whether the call's inputs have every input want
// names, with the same value.
func inputsMatch(want, got map[string]lang.Value) bool {
	for k, v := range want {
		g, ok := got[lang.FactName(k)]
		if !ok {
			g, ok = got[k]
		}
		if !ok || !sameValue(v, g) {
			return false
		}
	}
	return true
}

func showInputs(in map[string]lang.Value) string {
	if len(in) == 0 {
		return "no inputs"
	}
	var parts []string
	for _, k := range sortedKeys(in) {
		parts = append(parts, k+": "+show(in[k]))
	}
	return strings.Join(parts, ", ")
}

// resultOutputs makes a stub's result the outputs of a call: a
// dictionary whose keys are all outputs the procedure declares gives them
// by name; any other value is the procedure's one output.
func resultOutputs(proc lang.BookProcedure, res lang.Value) map[string]lang.Value {
	outs := outputNames(proc.Signature)
	if res.Kind() == lang.KindDictionary && res.AsDictionary().Len() > 0 {
		d := res.AsDictionary()
		m := make(map[string]lang.Value, d.Len())
		all := true
		for i := range d.Len() {
			k, v := d.Entry(i)
			name := lang.FactName(k.String())
			m[name] = v
			if len(outs) > 0 && !containsName(outs, name) {
				all = false
			}
		}
		if all && (len(outs) > 0 || d.Len() > 1) {
			return m
		}
	}
	if len(outs) == 1 {
		return map[string]lang.Value{outs[0]: res}
	}
	return map[string]lang.Value{"result": res}
}

// LookupOnce wraps books so that each sentence is looked up once: the
// books do not change while a suite or a replay runs, and a replay of
// thousands of runs would otherwise read the workspace's books for every
// call of every run. Safe for concurrent use.
func LookupOnce(books lang.Books) lang.Books {
	if books == nil {
		return nil
	}
	if _, ok := books.(*onceBooks); ok {
		return books
	}
	return &onceBooks{inner: books, seen: map[string][]lang.BookProcedure{}}
}

type onceBooks struct {
	inner lang.Books
	mu    sync.Mutex
	seen  map[string][]lang.BookProcedure
}

func (b *onceBooks) Lookup(ctx context.Context, sentence string) ([]lang.BookProcedure, error) {
	b.mu.Lock()
	procs, ok := b.seen[sentence]
	b.mu.Unlock()
	if ok {
		return procs, nil
	}
	procs, err := b.inner.Lookup(ctx, sentence)
	if err != nil {
		return nil, err // not kept: a failed read may succeed later
	}
	b.mu.Lock()
	b.seen[sentence] = procs
	b.mu.Unlock()
	return procs, nil
}

func (b *onceBooks) Call(ctx context.Context, p lang.BookProcedure, in map[string]lang.Value) (map[string]lang.Value, error) {
	return b.inner.Call(ctx, p, in)
}
