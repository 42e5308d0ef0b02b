// Package books is the book registry of Prose: the built-in books implemented
// in Go, the books a workspace registers at an external endpoint, the lookup
// of a procedure by the English sentence that calls it, and the client that
// calls external books over HTTP (see README.md for the protocol).
//
// It holds no gRPC handler code; server/book_service.go serves it.
package books

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	bookv1 "github.com/proserun/prose/gen/prose/book/v1"
	"github.com/proserun/prose/internal/lang"
	"github.com/proserun/prose/internal/names"
	"google.golang.org/protobuf/proto"
)

// Errors of the registry. Callers test them with errors.Is.
var (
	// ErrNotFound: no such book, version or procedure.
	ErrNotFound = errors.New("not found")
	// ErrAlreadyExists: a workspace already has a book of that name and version.
	ErrAlreadyExists = errors.New("already exists")
	// ErrInvalidArgument: the book or the call is malformed.
	ErrInvalidArgument = errors.New("invalid argument")
	// ErrNoMatch: no procedure matches the sentence ("I don't know how to …").
	ErrNoMatch = errors.New("no procedure matches")
	// ErrAmbiguous: several procedures match the sentence equally well.
	ErrAmbiguous = errors.New("several procedures match")
)

// Workspace identifies the workspace whose registered books are in scope.
// The zero Workspace sees only the built-in books.
type Workspace struct {
	OrganizationID string
	WorkspaceID    string
}

func (w Workspace) String() string {
	return names.Workspace(w.OrganizationID, w.WorkspaceID)
}

// Store keeps the books registered in workspaces. MemoryStore implements it;
// the persistent store can implement it later. Implementations must be safe
// for concurrent use and must not keep or change the books they are given or
// return (the registry clones them).
type Store interface {
	// ListWorkspaceBooks returns the books registered in ws, in any order.
	ListWorkspaceBooks(ctx context.Context, ws Workspace) ([]*bookv1.Book, error)
	// GetWorkspaceBook returns one registered book or ErrNotFound.
	GetWorkspaceBook(ctx context.Context, ws Workspace, name, version string) (*bookv1.Book, error)
	// CreateWorkspaceBook stores b. When requestID is not empty and a book was
	// created in ws with that requestID before, it returns that book and stores
	// nothing; otherwise ErrAlreadyExists if ws has b's name and version.
	CreateWorkspaceBook(ctx context.Context, ws Workspace, b *bookv1.Book, requestID string) (*bookv1.Book, error)
	// UpdateWorkspaceBook replaces the book of b's name and version, or returns
	// ErrNotFound.
	UpdateWorkspaceBook(ctx context.Context, ws Workspace, b *bookv1.Book) error
	// DeleteWorkspaceBook removes a registered book or returns ErrNotFound.
	DeleteWorkspaceBook(ctx context.Context, ws Workspace, name, version string) error
}

type bookKey struct{ name, version string }

// MemoryStore is a Store in memory.
type MemoryStore struct {
	mu       sync.Mutex
	books    map[Workspace]map[bookKey]*bookv1.Book
	requests map[Workspace]map[string]bookKey
}

// NewMemoryStore returns an empty MemoryStore.
func NewMemoryStore() *MemoryStore {
	return &MemoryStore{books: map[Workspace]map[bookKey]*bookv1.Book{}, requests: map[Workspace]map[string]bookKey{}}
}

// ListWorkspaceBooks implements Store.
func (m *MemoryStore) ListWorkspaceBooks(_ context.Context, ws Workspace) ([]*bookv1.Book, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]*bookv1.Book, 0, len(m.books[ws]))
	for _, b := range m.books[ws] {
		out = append(out, proto.CloneOf(b))
	}
	return out, nil
}

// GetWorkspaceBook implements Store.
func (m *MemoryStore) GetWorkspaceBook(_ context.Context, ws Workspace, name, version string) (*bookv1.Book, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	b, ok := m.books[ws][bookKey{name, version}]
	if !ok {
		return nil, ErrNotFound
	}
	return proto.CloneOf(b), nil
}

// CreateWorkspaceBook implements Store.
func (m *MemoryStore) CreateWorkspaceBook(_ context.Context, ws Workspace, b *bookv1.Book, requestID string) (*bookv1.Book, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if requestID != "" {
		if k, ok := m.requests[ws][requestID]; ok {
			if prev, ok := m.books[ws][k]; ok {
				return proto.CloneOf(prev), nil
			}
		}
	}
	k := bookKey{b.GetName(), b.GetVersion()}
	if _, ok := m.books[ws][k]; ok {
		return nil, ErrAlreadyExists
	}
	if m.books[ws] == nil {
		m.books[ws] = map[bookKey]*bookv1.Book{}
		m.requests[ws] = map[string]bookKey{}
	}
	m.books[ws][k] = proto.CloneOf(b)
	if requestID != "" {
		m.requests[ws][requestID] = k
	}
	return proto.CloneOf(b), nil
}

// UpdateWorkspaceBook implements Store.
func (m *MemoryStore) UpdateWorkspaceBook(_ context.Context, ws Workspace, b *bookv1.Book) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := bookKey{b.GetName(), b.GetVersion()}
	if _, ok := m.books[ws][k]; !ok {
		return ErrNotFound
	}
	m.books[ws][k] = proto.CloneOf(b)
	return nil
}

// DeleteWorkspaceBook implements Store.
func (m *MemoryStore) DeleteWorkspaceBook(_ context.Context, ws Workspace, name, version string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := bookKey{name, version}
	if _, ok := m.books[ws][k]; !ok {
		return ErrNotFound
	}
	delete(m.books[ws], k)
	for id, rk := range m.requests[ws] {
		if rk == k {
			delete(m.requests[ws], id)
		}
	}
	return nil
}

// Func implements one procedure of a built-in book. Inputs are keyed by the
// concept names of the procedure's inputs (ConceptName), outputs likewise.
// Missing inputs with a default_value are filled in before the call.
type Func func(ctx context.Context, inputs map[string]lang.Value) (map[string]lang.Value, error)

// Builtin is a book implemented in Go.
type Builtin struct {
	// Book describes the book; Endpoint stays empty.
	Book *bookv1.Book
	// Funcs holds the implementation of each procedure, by procedure id.
	Funcs map[string]Func
	// Check, when set, checks a connection against its system without
	// doing anything there, and tells what it learnt (Connections.Check).
	Check func(ctx context.Context, c *Connection) (map[string]string, error)
}

// Registry is the catalog of books: the built-in books, which every workspace
// sees, and the books registered in each workspace. It is safe for concurrent
// use.
type Registry struct {
	builtins []*Builtin // sorted by name, then version
	store    Store
	client   *Client
	// conns resolves the connections built-in books use (NewConnections
	// sets it); nil: no connections.
	conns interface {
		Resolve(ctx context.Context, ws Workspace, bookName, name string) (*Connection, error)
		RefreshOAuth(ctx context.Context, ws Workspace, id, stale string) (*Connection, error)
	}
}

// Option configures a Registry.
type Option func(*Registry)

// WithStore keeps the workspace books in s (default: a MemoryStore).
func WithStore(s Store) Option { return func(r *Registry) { r.store = s } }

// WithClient calls external books with c (default: NewClient()).
func WithClient(c *Client) Option { return func(r *Registry) { r.client = c } }

// WithBuiltins replaces the built-in books (default: Standard()).
func WithBuiltins(b ...*Builtin) Option { return func(r *Registry) { r.builtins = b } }

// NewRegistry returns a registry with the standard built-in book, a memory
// store and a default client unless options say otherwise.
func NewRegistry(opts ...Option) *Registry {
	r := &Registry{}
	r.builtins = []*Builtin{Standard(nil)}
	for _, o := range opts {
		o(r)
	}
	if r.store == nil {
		r.store = NewMemoryStore()
	}
	if r.client == nil {
		r.client = NewClient()
	}
	r.builtins = slices.Clone(r.builtins)
	slices.SortFunc(r.builtins, func(a, b *Builtin) int { return compareBooks(a.Book, b.Book) })
	return r
}

// Compare orders books by name, then by version (dotted numeric parts
// compared as numbers): the order of Books and WorkspaceBooks.
func Compare(a, b *bookv1.Book) int { return compareBooks(a, b) }

func compareBooks(a, b *bookv1.Book) int {
	return cmp.Or(strings.Compare(a.GetName(), b.GetName()), compareVersions(a.GetVersion(), b.GetVersion()))
}

// compareVersions orders dotted versions numerically where both parts are
// numbers ("1.10.0" after "1.9.0"), textually otherwise.
func compareVersions(a, b string) int {
	as, bs := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < len(as) && i < len(bs); i++ {
		if c := compareVersionPart(as[i], bs[i]); c != 0 {
			return c
		}
	}
	return cmp.Compare(len(as), len(bs))
}

func compareVersionPart(a, b string) int {
	if isDigits(a) && isDigits(b) {
		a, b = strings.TrimLeft(a, "0"), strings.TrimLeft(b, "0")
		return cmp.Or(cmp.Compare(len(a), len(b)), strings.Compare(a, b))
	}
	return strings.Compare(a, b)
}

func isDigits(s string) bool {
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return s != ""
}

// Books returns the built-in books (every version), ordered by name then
// version. The books are copies.
func (r *Registry) Books() []*bookv1.Book {
	out := make([]*bookv1.Book, len(r.builtins))
	for i, b := range r.builtins {
		out[i] = proto.CloneOf(b.Book)
	}
	return out
}

// WorkspaceBooks returns the built-in books and the books registered in ws,
// ordered by name then version. A registered book never shadows a built-in
// one of the same name and version (registration refuses it).
func (r *Registry) WorkspaceBooks(ctx context.Context, ws Workspace) ([]*bookv1.Book, error) {
	reg, err := r.store.ListWorkspaceBooks(ctx, ws)
	if err != nil {
		return nil, err
	}
	out := append(r.Books(), reg...)
	slices.SortStableFunc(out, compareBooks)
	return out, nil
}

// Latest keeps the latest version of each book of books (ordered by name
// then version, as Books and WorkspaceBooks return them).
func Latest(books []*bookv1.Book) []*bookv1.Book {
	var out []*bookv1.Book
	for i, b := range books {
		if i+1 < len(books) && books[i+1].GetName() == b.GetName() {
			continue
		}
		out = append(out, b)
	}
	return out
}

// Tags returns the tags used across the built-in books, sorted and unique.
func (r *Registry) Tags() []string {
	var tags []string
	for _, b := range r.builtins {
		tags = append(tags, b.Book.GetTags()...)
	}
	slices.Sort(tags)
	return slices.Compact(tags)
}

func (r *Registry) builtin(name, version string) *Builtin {
	for _, b := range r.builtins {
		if b.Book.GetName() == name && b.Book.GetVersion() == version {
			return b
		}
	}
	return nil
}

// Book returns one version of a book visible in ws (a built-in book, or one
// registered in ws), or an error wrapping ErrNotFound.
func (r *Registry) Book(ctx context.Context, ws Workspace, name, version string) (*bookv1.Book, error) {
	if b := r.builtin(name, version); b != nil {
		return proto.CloneOf(b.Book), nil
	}
	if ws == (Workspace{}) {
		return nil, fmt.Errorf("book %s version %s: %w", name, version, ErrNotFound)
	}
	b, err := r.store.GetWorkspaceBook(ctx, ws, name, version)
	if errors.Is(err, ErrNotFound) {
		return nil, fmt.Errorf("book %s version %s: %w", name, version, ErrNotFound)
	}
	return b, err
}

// IsBuiltin reports whether name and version are a built-in book.
func (r *Registry) IsBuiltin(name, version string) bool { return r.builtin(name, version) != nil }

// Validate checks a book to be registered: name, version and an http(s)
// endpoint are required; a name must not contain '/' or ':' (it is one path
// segment); procedure ids must be unique and not empty.
func Validate(b *bookv1.Book) error {
	var problems []string
	if b.GetName() == "" {
		problems = append(problems, "book.name is required")
	} else if strings.ContainsAny(b.GetName(), "/:") {
		problems = append(problems, "book.name must not contain '/' or ':'")
	}
	if b.GetVersion() == "" {
		problems = append(problems, "book.version is required")
	} else if strings.ContainsAny(b.GetVersion(), "/:") {
		problems = append(problems, "book.version must not contain '/' or ':'")
	}
	if err := checkEndpoint(b.GetEndpoint()); err != nil {
		problems = append(problems, "book.endpoint "+err.Error())
	}
	seen := map[string]bool{}
	for i, p := range b.GetProcedures() {
		switch {
		case p.GetId() == "":
			problems = append(problems, fmt.Sprintf("book.procedures[%d].id is required", i))
		case seen[p.GetId()]:
			problems = append(problems, fmt.Sprintf("book.procedures[%d].id %q is not unique", i, p.GetId()))
		}
		seen[p.GetId()] = true
	}
	if len(problems) > 0 {
		return fmt.Errorf("%w: %s", ErrInvalidArgument, strings.Join(problems, "; "))
	}
	return nil
}

// Register adds an external book to ws. It validates b (see Validate) and
// refuses the name and version of a built-in book. With a requestID, a retry
// returns the book the first request registered.
func (r *Registry) Register(ctx context.Context, ws Workspace, b *bookv1.Book, requestID string) (*bookv1.Book, error) {
	if err := Validate(b); err != nil {
		return nil, err
	}
	if r.IsBuiltin(b.GetName(), b.GetVersion()) {
		return nil, fmt.Errorf("book %s version %s is built in: %w", b.GetName(), b.GetVersion(), ErrAlreadyExists)
	}
	b = proto.CloneOf(b)
	if b.GetId() == "" {
		b.Id = b.GetName()
	}
	return r.store.CreateWorkspaceBook(ctx, ws, b, requestID)
}

// Update replaces a book registered in ws (the whole descriptor; the caller
// applies field masks). It validates b.
func (r *Registry) Update(ctx context.Context, ws Workspace, b *bookv1.Book) error {
	if err := Validate(b); err != nil {
		return err
	}
	if r.IsBuiltin(b.GetName(), b.GetVersion()) {
		return fmt.Errorf("book %s version %s is built in and cannot be changed: %w", b.GetName(), b.GetVersion(), ErrInvalidArgument)
	}
	return r.store.UpdateWorkspaceBook(ctx, ws, b)
}

// Unregister removes a book registered in ws.
func (r *Registry) Unregister(ctx context.Context, ws Workspace, name, version string) error {
	if r.IsBuiltin(name, version) {
		return fmt.Errorf("book %s version %s is built in and cannot be deleted: %w", name, version, ErrInvalidArgument)
	}
	return r.store.DeleteWorkspaceBook(ctx, ws, name, version)
}

// ProcedureRef names one procedure of one book version.
type ProcedureRef struct {
	Book      string
	Version   string
	Procedure string // the procedure id
}

// Match is the procedure a sentence calls.
type Match struct {
	Ref       ProcedureRef
	Procedure *bookv1.Procedure
	// Endpoint is the external book's endpoint; empty for a built-in book.
	Endpoint string
}

// Match finds the procedure that an English call sentence calls among the
// books visible in ws, by its verbs, object, preposition and target (see
// LANGUAGE.md, "Procedures and books"). Of several books with the same name,
// only the latest version takes part. It returns ErrNoMatch when nothing
// matches and ErrAmbiguous when the best matches tie.
func (r *Registry) Match(ctx context.Context, ws Workspace, s Sentence) (*Match, error) {
	all, err := r.WorkspaceBooks(ctx, ws)
	if err != nil {
		return nil, err
	}
	var best []*Match
	bestScore := scoreNoMatch
	for _, b := range Latest(all) {
		for _, p := range b.GetProcedures() {
			sc := matchScore(s, p)
			if sc < 0 || sc < bestScore {
				continue
			}
			m := &Match{Ref: ProcedureRef{b.GetName(), b.GetVersion(), p.GetId()}, Procedure: p, Endpoint: b.GetEndpoint()}
			if sc > bestScore {
				best, bestScore = nil, sc
			}
			best = append(best, m)
		}
	}
	switch len(best) {
	case 0:
		return nil, ErrNoMatch
	case 1:
		return best[0], nil
	}
	var names []string
	for _, m := range best {
		names = append(names, m.Ref.Book+"/"+m.Ref.Procedure)
	}
	return nil, fmt.Errorf("%w: %s", ErrAmbiguous, strings.Join(names, ", "))
}

// Call calls a procedure of a book visible in ws with inputs keyed by concept
// name, filling missing inputs from their default values. A built-in book runs
// in process; an external book is called at its endpoint. callID identifies
// the call (e.g. the run and step) so an external book can deduplicate
// retries; it may be empty. Errors a book reports are *BookError.
func (r *Registry) Call(ctx context.Context, ws Workspace, ref ProcedureRef, callID string, inputs map[string]lang.Value) (map[string]lang.Value, error) {
	b, err := r.Book(ctx, ws, ref.Book, ref.Version)
	if err != nil {
		return nil, err
	}
	var proc *bookv1.Procedure
	for _, p := range b.GetProcedures() {
		if p.GetId() == ref.Procedure {
			proc = p
		}
	}
	if proc == nil {
		return nil, fmt.Errorf("procedure %s of book %s version %s: %w", ref.Procedure, ref.Book, ref.Version, ErrNotFound)
	}
	in, err := withDefaults(proc, inputs)
	if err != nil {
		return nil, err
	}
	if bi := r.builtin(ref.Book, ref.Version); bi != nil {
		f := bi.Funcs[ref.Procedure]
		if f == nil {
			return nil, fmt.Errorf("procedure %s of book %s has no implementation: %w", ref.Procedure, ref.Book, ErrNotFound)
		}
		return f(context.WithValue(ctx, callKey{}, callInfo{reg: r, ws: ws, callID: callID}), in)
	}
	conn, err := r.externalConnection(ctx, ws, b, proc, in)
	if err != nil {
		return nil, err
	}
	out, err := r.client.Do(ctx, b.GetEndpoint(), ref.Procedure, CallRequest{CallID: callID, Inputs: in, Answers: lang.BookAnswers(ctx), Connection: conn})
	var be *BookError
	var q *lang.BookQuestion
	switch {
	case conn == nil:
	case errors.As(err, &be):
		// a book that quotes the credentials it was given does not show them
		be.Message = redact(be.Message, conn)
	case errors.As(err, &q):
		q.Prompt = redact(q.Prompt, conn)
	}
	return out, err
}

// declaresConnection reports whether an external book declares a
// connection: an authentication, configuration, or connection_required.
func declaresConnection(b *bookv1.Book) bool {
	return len(b.GetAuthentications()) > 0 || len(b.GetConfigurations()) > 0 || b.GetConnectionRequired()
}

// externalConnection resolves the connection a call of an external book
// uses (protocol version 2): the call's `connection` input (which is then
// not sent as an input, unless the procedure has an input of that name)
// names a connection of ws to the book. nil when the book declares no
// connection or the call names none and the book does not require one.
func (r *Registry) externalConnection(ctx context.Context, ws Workspace, b *bookv1.Book, p *bookv1.Procedure, in map[string]lang.Value) (*Connection, error) {
	if !declaresConnection(b) {
		return nil, nil
	}
	for _, c := range p.GetInputs() {
		if ConceptName(c) == "connection" {
			return nil, nil
		}
	}
	name, err := optionalText(in, "connection")
	if err != nil {
		return nil, err
	}
	delete(in, "connection")
	if name == "" {
		if b.GetConnectionRequired() {
			return nil, &InputError{Message: fmt.Sprintf("the book %s needs a connection: name one of the workspace's in the call's block (the connection is \"NAME\")", b.GetName())}
		}
		return nil, nil
	}
	if r.conns == nil {
		return nil, &InputError{Message: fmt.Sprintf("connections are not available here, so the connection %q cannot be used", name)}
	}
	c, err := r.conns.Resolve(ctx, ws, b.GetName(), name)
	if errors.Is(err, ErrNotFound) {
		return nil, &InputError{Message: err.Error()}
	}
	return c, err
}

// withDefaults copies inputs and adds the default value of every input
// concept that is missing and has one.
func withDefaults(p *bookv1.Procedure, inputs map[string]lang.Value) (map[string]lang.Value, error) {
	out := make(map[string]lang.Value, len(inputs))
	for k, v := range inputs {
		out[k] = v
	}
	for _, c := range p.GetInputs() {
		name := ConceptName(c)
		if _, ok := out[name]; ok || c.GetDefaultValue() == nil {
			continue
		}
		v, err := FromBdkValue(c.GetDefaultValue())
		if err != nil {
			return nil, fmt.Errorf("default of input %q: %w", name, err)
		}
		out[name] = v
	}
	return out, nil
}
