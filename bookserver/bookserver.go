// Package bookserver serves a Prose book over the external book protocol
// (version 1, books/README.md): one POST {endpoint}/procedures/{id}:call per
// procedure call, inputs and outputs in the plain JSON form of values.
//
//	b := bookserver.New("acme.vat", "1.0.0")
//	b.Procedure("get the vat rate of a country (the vat rate)",
//		[]bookserver.Input{{Name: "country", Type: bookserver.Text}},
//		func(ctx context.Context, c *bookserver.Call) (bookserver.Outputs, error) {
//			return bookserver.Outputs{"vat rate": lang.Num(lang.MustNumber("0.21"))}, nil
//		})
//	http.ListenAndServe(":8081", b)
//
// Book.Descriptor(endpoint) is the body to register the book in a workspace
// (POST /api/v1/organizations/{org}/workspaces/{ws}/books).
package bookserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"

	"google.golang.org/protobuf/proto"

	"github.com/proserun/prose/books"
	bookv1 "github.com/proserun/prose/gen/prose/book/v1"
	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/lang"
)

// MaxRequestBytes bounds the body of a call; a larger one is answered 413.
const MaxRequestBytes = 16 << 20

// DefaultRememberedCalls is how many answers of mutation procedures a Book
// keeps by call id (to answer a repeated call id with its first answer).
const DefaultRememberedCalls = 1000

// Type is the type of an input or output concept.
type Type = bookv1.ConceptScalarType

// The scalar types.
const (
	Text     = bookv1.ConceptScalarType_ConceptScalarTypeText
	Number   = bookv1.ConceptScalarType_ConceptScalarTypeNumber
	Boolean  = bookv1.ConceptScalarType_ConceptScalarTypeBoolean
	Date     = bookv1.ConceptScalarType_ConceptScalarTypeDate
	DateTime = bookv1.ConceptScalarType_ConceptScalarTypeDatetime
	Time     = bookv1.ConceptScalarType_ConceptScalarTypeTime
)

// Input describes an input concept of a procedure. Name is its noun phrase
// as words ("decimal places"); inputs arrive keyed by it.
type Input struct {
	Name        string
	Type        Type
	Description string
	// Optional inputs may be missing from a call; required ones missing are
	// answered with a book error.
	Optional bool
}

// Outputs are a procedure's results keyed by output concept name (the words
// in the parentheses of the procedure's English form).
type Outputs map[string]lang.Value

// Call is one procedure call.
type Call struct {
	// ID is the run's step (call_id); empty when the caller has none.
	ID     string
	Inputs map[string]lang.Value
}

// Text returns input name as text ("" if missing or not text).
func (c *Call) Text(name string) string {
	v, ok := c.Inputs[name]
	if !ok || v.Kind() != lang.KindText {
		return ""
	}
	return v.AsText()
}

// Number returns input name as a number (false if missing or not a number).
func (c *Call) Number(name string) (lang.Number, bool) {
	v, ok := c.Inputs[name]
	if !ok || v.Kind() != lang.KindNumber {
		return lang.Number{}, false
	}
	return v.AsNumber(), true
}

// Func runs a procedure. An *Error (see Errorf) is the book's refusal, a
// user error of the run; any other error is answered as HTTP 500 (the
// platform's CallError: it could not use the book).
type Func func(ctx context.Context, c *Call) (Outputs, error)

// Error is the book's refusal of a call: the run sees Message.
type Error struct{ Message string }

func (e *Error) Error() string { return e.Message }

// Errorf makes an *Error.
func Errorf(format string, args ...any) error { return &Error{Message: fmt.Sprintf(format, args...)} }

type procedure struct {
	desc *bookv1.Procedure
	fn   Func
}

// Book is a book served over HTTP: an http.Handler.
type Book struct {
	desc  *bookv1.Book
	procs map[string]*procedure

	// RememberedCalls bounds the answers of mutation procedures kept by call
	// id; zero means DefaultRememberedCalls, negative none.
	RememberedCalls int

	mu      sync.Mutex
	answers map[string][]byte
	order   []string
}

// New returns an empty book with a name ("acme.vat") and a version ("1.0.0").
func New(name, version string) *Book {
	return &Book{desc: &bookv1.Book{Name: name, Version: version}, procs: map[string]*procedure{}}
}

// Describe sets the book's display name and description.
func (b *Book) Describe(displayName, description string) *Book {
	b.desc.DisplayName, b.desc.ShortDescription = displayName, description
	return b
}

// Procedure adds a procedure that does not change anything. english is its
// call form, with outputs in parentheses: "get the vat rate of a country
// (the vat rate)". Its id is the english form's words before the
// parenthesis joined by "_" ("get_the_vat_rate_of_a_country").
func (b *Book) Procedure(english string, inputs []Input, fn Func) *bookv1.Procedure {
	return b.add(english, inputs, fn, false)
}

// Mutation adds a procedure that changes things: a repeated call id is
// answered with its first answer.
func (b *Book) Mutation(english string, inputs []Input, fn Func) *bookv1.Procedure {
	return b.add(english, inputs, fn, true)
}

func (b *Book) add(english string, inputs []Input, fn Func, mutation bool) *bookv1.Procedure {
	head, _, _ := strings.Cut(english, "(")
	id := strings.ToLower(strings.Join(strings.Fields(head), "_"))
	if _, dup := b.procs[id]; dup || id == "" || fn == nil {
		panic(fmt.Sprintf("bookserver: procedure %q: empty, duplicate or without a function", english))
	}
	p := &bookv1.Procedure{Id: id, Signature: books.Signature(english), IsMutation: mutation}
	for _, in := range inputs {
		c := &bookv1.Concept{
			NounPhrases: &bookv1.NounPhrases{NounPhrases: []*platformv1.NounPhrase{books.Phrase(strings.Fields(strings.ToLower(in.Name))...)}},
			Type:        &bookv1.ConceptType{Kind: &bookv1.ConceptType_ScalarType{ScalarType: in.Type}},
			Description: in.Description,
		}
		if in.Optional {
			c.Type = &bookv1.ConceptType{Kind: &bookv1.ConceptType_OptionalType{OptionalType: &bookv1.ConceptOptionalType{Inner: c.Type}}}
		}
		p.Inputs = append(p.Inputs, c)
	}
	b.procs[id] = &procedure{desc: p, fn: fn}
	b.desc.Procedures = append(b.desc.Procedures, p)
	return p
}

// Descriptor is the book as registered in a workspace, served at endpoint
// (the body of POST …/workspaces/{ws}/books).
func (b *Book) Descriptor(endpoint string) *bookv1.Book {
	d := proto.Clone(b.desc).(*bookv1.Book)
	d.Endpoint = endpoint
	return d
}

type callRequest struct {
	CallID string          `json:"call_id"`
	Inputs json.RawMessage `json:"inputs"`
}

// ServeHTTP answers POST /procedures/{id}:call.
func (b *Book) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rest, ok := strings.CutPrefix(r.URL.EscapedPath(), "/procedures/")
	rest, ok2 := strings.CutSuffix(rest, ":call")
	if !ok || !ok2 {
		writeError(w, http.StatusNotFound, "no such path: procedures are called at /procedures/{id}:call")
		return
	}
	id, err := url.PathUnescape(rest)
	p := b.procs[id]
	if err != nil || p == nil {
		writeError(w, http.StatusNotFound, fmt.Sprintf("this book has no procedure %q", rest))
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		writeError(w, http.StatusMethodNotAllowed, "procedures are called with POST")
		return
	}
	raw, err := io.ReadAll(io.LimitReader(r.Body, MaxRequestBytes+1))
	if err != nil {
		writeError(w, http.StatusBadRequest, "reading the request: "+err.Error())
		return
	}
	if len(raw) > MaxRequestBytes {
		writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("request larger than %d bytes", MaxRequestBytes))
		return
	}
	var req callRequest
	if err := json.Unmarshal(raw, &req); err != nil {
		writeError(w, http.StatusBadRequest, "malformed request: "+err.Error())
		return
	}
	if req.CallID == "" {
		req.CallID = r.Header.Get("Idempotency-Key")
	}
	inputs := map[string]lang.Value{}
	if len(req.Inputs) > 0 && string(req.Inputs) != "null" {
		if inputs, err = lang.DecodePlainObject(req.Inputs); err != nil {
			writeError(w, http.StatusBadRequest, "malformed inputs: "+err.Error())
			return
		}
	}
	key := id + "\x00" + req.CallID
	if p.desc.IsMutation && req.CallID != "" {
		if ans, ok := b.remembered(key); ok {
			writeJSON(w, http.StatusOK, ans)
			return
		}
	}
	if msg := checkInputs(p.desc, inputs); msg != "" {
		writeError(w, http.StatusBadRequest, msg)
		return
	}
	out, err := p.fn(r.Context(), &Call{ID: req.CallID, Inputs: inputs})
	var be *Error
	switch {
	case errors.As(err, &be):
		writeError(w, http.StatusUnprocessableEntity, be.Message)
		return
	case err != nil:
		// Not the book's answer: the run sees a failure to use the book, not
		// this text (it may hold internals).
		writeJSON(w, http.StatusInternalServerError, []byte(`{}`))
		return
	}
	if out == nil {
		out = Outputs{}
	}
	ans, err := json.Marshal(map[string]Outputs{"outputs": out})
	if err != nil {
		writeJSON(w, http.StatusInternalServerError, []byte(`{}`))
		return
	}
	if p.desc.IsMutation && req.CallID != "" {
		b.remember(key, ans)
	}
	writeJSON(w, http.StatusOK, ans)
}

// checkInputs checks that every required input is given with its type.
func checkInputs(p *bookv1.Procedure, inputs map[string]lang.Value) string {
	for _, c := range p.GetInputs() {
		name := books.ConceptName(c)
		t := c.GetType()
		optional := t.GetOptionalType() != nil
		if optional {
			t = t.GetOptionalType().GetInner()
		}
		v, ok := inputs[name]
		if !ok || v.Kind() == lang.KindNull {
			if optional {
				continue
			}
			return fmt.Sprintf("the input %q is missing", name)
		}
		if want, ok := kinds[t.GetScalarType()]; ok && v.Kind() != want {
			return fmt.Sprintf("the input %q must be a %s value, not %s", name, want, v.Kind())
		}
	}
	return ""
}

// kinds are the value kinds of the scalar types checked on input (text
// also carries dates and times in plain JSON, so those are not checked).
var kinds = map[Type]lang.Kind{Text: lang.KindText, Number: lang.KindNumber, Boolean: lang.KindBool}

func (b *Book) remembered(key string) ([]byte, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	ans, ok := b.answers[key]
	return ans, ok
}

func (b *Book) remember(key string, ans []byte) {
	limit := b.RememberedCalls
	if limit == 0 {
		limit = DefaultRememberedCalls
	}
	if limit < 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.answers == nil {
		b.answers = map[string][]byte{}
	}
	if _, ok := b.answers[key]; ok {
		return
	}
	b.answers[key] = ans
	b.order = append(b.order, key)
	for len(b.order) > limit {
		delete(b.answers, b.order[0])
		b.order = b.order[1:]
	}
}

func writeError(w http.ResponseWriter, status int, msg string) {
	raw, _ := json.Marshal(map[string]any{"error": map[string]string{"message": msg}})
	writeJSON(w, status, raw)
}

func writeJSON(w http.ResponseWriter, status int, raw []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(raw)
}
