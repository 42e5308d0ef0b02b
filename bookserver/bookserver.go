// Package bookserver serves a Prose book over the external book protocol
// (versions 1 and 2, docs/book-protocol.md): one POST
// {endpoint}/procedures/{id}:call per procedure call, inputs and outputs in
// the plain JSON form of values; GET {endpoint}/protocol says the versions
// it speaks. Version 2 adds questions back to the run (Call.Ask) and the
// workspace connection a book declares (Book.Connection, Call.Connection).
//
//	b := bookserver.New("acme.vat", "1.0.0")
//	b.Procedure("get the vat rate of a country (the vat rate)",
//		[]bookserver.Input{{Name: "country", Type: bookserver.Text}},
//		func(ctx context.Context, c *bookserver.Call) (bookserver.Outputs, error) {
//			return bookserver.Outputs{"vat rate": lang.Num(lang.MustNumber("0.21"))}, nil
//		})
//	http.ListenAndServe(":8081", b)
//
// A procedure that needs something only a person can tell asks for it, and
// is called again with the answer:
//
//	country, ok := c.Answer("country")
//	if !ok {
//		return nil, c.Ask(bookserver.Question{ID: "country", Prompt: "Which country?", Choices: []lang.Value{lang.Text("NL")}})
//	}
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
	"strconv"
	"strings"
	"sync"

	"google.golang.org/protobuf/proto"

	bookv1 "github.com/proserun/prose/gen/prose/book/v1"
	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/internal/books"
	"github.com/proserun/prose/internal/lang"
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

// ProtocolVersions are the versions of the book protocol a Book speaks
// (the answer of GET {endpoint}/protocol).
var ProtocolVersions = []int{1, 2}

// Call is one procedure call.
type Call struct {
	// ID is the run's step (call_id); empty when the caller has none.
	ID     string
	Inputs map[string]lang.Value
	// Protocol is the version of the call: 1 (no questions, no
	// connection) or 2.
	Protocol int
	// Answers are the answers to the questions this procedure asked for
	// this call (Ask), by question id.
	Answers map[string]lang.Value
	// Connection is the workspace connection the run uses (version 2);
	// nil when the call has none. Its secrets are for reaching the
	// service: never log them or put them in an answer.
	Connection *Connection
}

// Question is what a procedure asks the run (Call.Ask): a person or an
// agent answers it, and the procedure is called again with the answer in
// Call.Answers[ID].
type Question struct {
	// ID names the question among those of the procedure; Prompt is what
	// the person reads.
	ID     string
	Prompt string
	// Choices, when given, are the only answers the run accepts.
	Choices []lang.Value
	// Type, when set, is the type the answer must have: "text", "number",
	// "boolean", "date", "datetime" or "time".
	Type string
}

func (q *Question) Error() string { return "the procedure asks: " + q.Prompt }

// Answer returns the answer to question id, if the run gave one.
func (c *Call) Answer(id string) (lang.Value, bool) {
	v, ok := c.Answers[id]
	return v, ok
}

// Ask returns the error that asks the run question q: return it from the
// procedure. A version 1 call cannot carry a question: it is answered with
// a book error that says so.
func (c *Call) Ask(q Question) error { return &q }

// Connection is the workspace connection of a call: its secrets (the
// credentials of the book's authentication) and its settings (the book's
// configuration).
type Connection struct {
	ID, Name string
	// Authentication is the authentication's id (ConnectionSpec.Authentication).
	Authentication string
	Secrets        map[string]string
	Settings       map[string]lang.Value
}

// Secret returns the secret field name ("" if absent).
func (c *Connection) Secret(name string) string {
	if c == nil {
		return ""
	}
	return c.Secrets[name]
}

// Setting returns the setting name as text ("" if absent or not text).
func (c *Connection) Setting(name string) string {
	if c == nil {
		return ""
	}
	v, ok := c.Settings[name]
	if !ok || v.Kind() != lang.KindText {
		return ""
	}
	return v.AsText()
}

// ConnectionSpec declares the connection a book needs (Book.Connection):
// its fields, of which the secret ones are the credentials of one
// authentication and the others settings (configuration).
type ConnectionSpec struct {
	// Authentication is the id of the authentication the secret fields
	// belong to; "credentials" when empty.
	Authentication string
	// Description tells what the connection is for.
	Description string
	Fields      []Field
	// Required: every call needs a connection (connection_required).
	Required bool
}

// Field is one field of a connection.
type Field struct {
	Name string
	// Secret fields are credentials: stored encrypted, never shown; a
	// connection must give every one of them.
	Secret bool
	// Type of a setting (Text when zero); secrets are text.
	Type        Type
	Description string
	// Optional settings may be missing from a connection.
	Optional bool
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
	conn  *ConnectionSpec

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

// Connection declares the connection the book needs. Its fields become
// the descriptor's authentication (the secret ones, as sensitive
// credentials) and configurations (the others); a workspace then adds a
// connection to the book with the connection operations, and code names it
// in a call's block (`the connection is "NAME"`).
func (b *Book) Connection(spec ConnectionSpec) *Book {
	if spec.Authentication == "" {
		spec.Authentication = "credentials"
	}
	b.conn = &spec
	b.desc.ConnectionRequired = spec.Required
	b.desc.Authentications, b.desc.Configurations = nil, nil
	var auth *bookv1.CustomAuthentication
	for _, f := range spec.Fields {
		if f.Secret {
			if auth == nil {
				auth = &bookv1.CustomAuthentication{Id: spec.Authentication, Name: spec.Description}
				b.desc.Authentications = append(b.desc.Authentications, &bookv1.Authentication{Custom: auth})
			}
			auth.Credentials = append(auth.Credentials, &bookv1.Credential{Id: f.Name, Label: f.Name, Description: f.Description,
				Type: bookv1.CredentialType_CredentialTypeSensitiveText})
			continue
		}
		t := f.Type
		if t == 0 {
			t = Text
		}
		b.desc.Configurations = append(b.desc.Configurations, concept(Input{Name: f.Name, Type: t, Description: f.Description, Optional: f.Optional}))
	}
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
		p.Inputs = append(p.Inputs, concept(in))
	}
	b.procs[id] = &procedure{desc: p, fn: fn}
	b.desc.Procedures = append(b.desc.Procedures, p)
	return p
}

func concept(in Input) *bookv1.Concept {
	c := &bookv1.Concept{
		NounPhrases: &bookv1.NounPhrases{NounPhrases: []*platformv1.NounPhrase{books.Phrase(strings.Fields(strings.ToLower(in.Name))...)}},
		Type:        &bookv1.ConceptType{Kind: &bookv1.ConceptType_ScalarType{ScalarType: in.Type}},
		Description: in.Description,
	}
	if in.Optional {
		c.Type = &bookv1.ConceptType{Kind: &bookv1.ConceptType_OptionalType{OptionalType: &bookv1.ConceptOptionalType{Inner: c.Type}}}
	}
	return c
}

// Descriptor is the book as registered in a workspace, served at endpoint
// (the body of POST …/workspaces/{ws}/books).
func (b *Book) Descriptor(endpoint string) *bookv1.Book {
	d := proto.Clone(b.desc).(*bookv1.Book)
	d.Endpoint = endpoint
	return d
}

type callRequest struct {
	Protocol   int             `json:"protocol"`
	CallID     string          `json:"call_id"`
	Inputs     json.RawMessage `json:"inputs"`
	Answers    json.RawMessage `json:"answers"`
	Connection *struct {
		ID             string            `json:"id"`
		Name           string            `json:"name"`
		Authentication string            `json:"authentication"`
		Credentials    map[string]string `json:"credentials"`
		Configuration  json.RawMessage   `json:"configuration"`
	} `json:"connection"`
}

// ServeHTTP answers POST /procedures/{id}:call and GET /protocol.
func (b *Book) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.EscapedPath() == "/protocol" {
		if r.Method != http.MethodGet {
			w.Header().Set("Allow", http.MethodGet)
			writeError(w, http.StatusMethodNotAllowed, "the protocol versions are read with GET")
			return
		}
		raw, _ := json.Marshal(map[string][]int{"versions": ProtocolVersions})
		writeJSON(w, http.StatusOK, raw)
		return
	}
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
	call, msg := b.readCall(r, &req)
	if msg != "" {
		writeError(w, http.StatusBadRequest, msg)
		return
	}
	w.Header().Set(books.ProtocolHeader, strconv.Itoa(call.Protocol))
	key := id + "\x00" + call.ID
	if p.desc.IsMutation && call.ID != "" {
		if ans, ok := b.remembered(key); ok {
			writeJSON(w, http.StatusOK, ans)
			return
		}
	}
	if msg := checkInputs(p.desc, call.Inputs); msg != "" {
		writeError(w, http.StatusBadRequest, msg)
		return
	}
	if msg := b.checkConnection(call); msg != "" {
		writeError(w, http.StatusUnprocessableEntity, msg)
		return
	}
	out, err := p.fn(r.Context(), call)
	var be *Error
	var q *Question
	switch {
	case errors.As(err, &q):
		if call.Protocol < 2 {
			writeError(w, http.StatusUnprocessableEntity, fmt.Sprintf("this procedure needs an answer to %q, and a call of protocol version 1 cannot carry a question", q.Prompt))
			return
		}
		ans, err := questionJSON(q)
		if err != nil {
			writeJSON(w, http.StatusInternalServerError, []byte(`{}`))
			return
		}
		// A question is not remembered: the call is made again with the
		// answer, under the same call id.
		writeJSON(w, http.StatusOK, ans)
		return
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
	if p.desc.IsMutation && call.ID != "" {
		b.remember(key, ans)
	}
	writeJSON(w, http.StatusOK, ans)
}

// readCall makes the Call of a request; a message says what is malformed.
func (b *Book) readCall(r *http.Request, req *callRequest) (*Call, string) {
	c := &Call{ID: req.CallID, Protocol: req.Protocol, Inputs: map[string]lang.Value{}}
	if c.ID == "" {
		c.ID = r.Header.Get("Idempotency-Key")
	}
	if c.Protocol == 0 {
		// version 1 sends no version
		c.Protocol = 1
	}
	if c.Protocol > 2 {
		// a newer caller gets the answers of the newest version we speak
		c.Protocol = 2
	}
	var err error
	if len(req.Inputs) > 0 && string(req.Inputs) != "null" {
		if c.Inputs, err = lang.DecodePlainObject(req.Inputs); err != nil {
			return nil, "malformed inputs: " + err.Error()
		}
	}
	if c.Protocol < 2 {
		return c, ""
	}
	if len(req.Answers) > 0 && string(req.Answers) != "null" {
		if c.Answers, err = lang.DecodePlainObject(req.Answers); err != nil {
			return nil, "malformed answers: " + err.Error()
		}
	}
	if cn := req.Connection; cn != nil {
		c.Connection = &Connection{ID: cn.ID, Name: cn.Name, Authentication: cn.Authentication, Secrets: cn.Credentials, Settings: map[string]lang.Value{}}
		if len(cn.Configuration) > 0 && string(cn.Configuration) != "null" {
			if c.Connection.Settings, err = lang.DecodePlainObject(cn.Configuration); err != nil {
				return nil, "malformed connection configuration: " + err.Error()
			}
		}
	}
	return c, ""
}

// checkConnection checks the call's connection against the book's
// declaration; a message is the book's refusal.
func (b *Book) checkConnection(c *Call) string {
	spec := b.conn
	if spec == nil {
		return ""
	}
	cn := c.Connection
	if cn == nil {
		if spec.Required {
			return fmt.Sprintf("this book needs a connection (%s): add one to the book in the workspace and name it in the call's block (the connection is \"NAME\")", b.desc.GetName())
		}
		return ""
	}
	for _, f := range spec.Fields {
		v, set := cn.Settings[f.Name]
		missing := !set || v.Kind() == lang.KindNull
		if f.Secret {
			missing = cn.Secrets[f.Name] == ""
		}
		if missing && (f.Secret || !f.Optional) {
			return fmt.Sprintf("the connection %q has no %s", cn.Name, f.Name)
		}
	}
	return ""
}

func questionJSON(q *Question) ([]byte, error) {
	type wire struct {
		ID      string       `json:"id"`
		Prompt  string       `json:"prompt"`
		Choices []lang.Value `json:"choices,omitempty"`
		Type    string       `json:"type,omitempty"`
	}
	return json.Marshal(map[string]wire{"question": {q.ID, q.Prompt, q.Choices, q.Type}})
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
