package books

import (
	"context"
	"errors"
	"fmt"
	"strings"

	bookv1 "github.com/proserun/prose/gen/prose/book/v1"
)

// CatalogKind is the kind of a searchable catalog item.
type CatalogKind string

// The kinds of catalog items.
const (
	CatalogBook      CatalogKind = "book"
	CatalogProcedure CatalogKind = "procedure"
	CatalogConcept   CatalogKind = "concept"
)

// CatalogEntry is one searchable item of a book: the book itself (Item
// empty) or one procedure (Item is its id). Words of Name rank above words of
// Text.
type CatalogEntry struct {
	Kind       CatalogKind
	Item       string
	Name, Text string
}

// CatalogHit is one ranked search result: an item of a book registered in
// the workspace.
type CatalogHit struct {
	BookName, BookVersion string
	Kind                  CatalogKind
	Item                  string
	// Score: higher is better; comparable within one answer only.
	Score float64
}

// Searcher is a Store that ranks the items of the books registered in a
// workspace against a free-text query (in the database: see store).
type Searcher interface {
	SearchCatalog(ctx context.Context, ws Workspace, q CatalogQuery) ([]CatalogHit, error)
}

// CatalogQuery is a catalog search: Limit items of Kind that best match
// Text, of one book when BookName is set.
type CatalogQuery struct {
	Kind                  CatalogKind
	Text                  string
	Limit                 int
	BookName, BookVersion string
	// Transient are books of the workspace this process alone knows
	// (Overlay's Top): ranked with the registered ones, and hiding a
	// registered book of the same name and version.
	Transient []BuiltinCatalog
}

// BuiltinIndexer is a Searcher that also indexes the built-in books (found
// by every workspace's search and by the global one).
type BuiltinIndexer interface {
	IndexBuiltins(ctx context.Context, books []BuiltinCatalog) error
}

// BuiltinCatalog is the catalog of one built-in book.
type BuiltinCatalog struct {
	Name, Version string
	Entries       []CatalogEntry
}

// IndexBuiltins writes the catalog of the registry's built-in books to its
// store's search index (ErrSearchUnavailable if the store has none).
func (r *Registry) IndexBuiltins(ctx context.Context) error {
	ix, ok := r.store.(BuiltinIndexer)
	if !ok {
		return ErrSearchUnavailable
	}
	all := r.Books()
	out := make([]BuiltinCatalog, len(all))
	for i, b := range all {
		out[i] = BuiltinCatalog{Name: b.GetName(), Version: b.GetVersion(), Entries: CatalogEntries(b)}
	}
	return ix.IndexBuiltins(ctx, out)
}

// ErrSearchUnavailable is returned when the registry's store cannot search.
var ErrSearchUnavailable = errors.New("catalog search needs a store that can search")

// CatalogEntries returns the searchable items of b: the book (name and
// display name; descriptions, author, tags) and each procedure (its English
// signature and id; descriptions and search hints).
func CatalogEntries(b *bookv1.Book) []CatalogEntry {
	out := []CatalogEntry{{
		Kind: CatalogBook,
		Name: join(b.GetName(), b.GetDisplayName()),
		Text: join(append([]string{b.GetShortDescription(), b.GetLongDescription(), b.GetAuthor()}, b.GetTags()...)...),
	}}
	for _, c := range bookConcepts(b) {
		out = append(out, CatalogEntry{Kind: CatalogConcept, Item: conceptName(c), Name: conceptName(c), Text: c.GetDescription()})
	}
	for _, p := range b.GetProcedures() {
		out = append(out, CatalogEntry{
			Kind: CatalogProcedure,
			Item: p.GetId(),
			Name: join(p.GetSignature().GetEnglish(), p.GetId()),
			Text: join(append([]string{p.GetShortDescription(), p.GetLongDescription()}, p.GetSearchHints()...)...),
		})
	}
	return out
}

func join(parts ...string) string {
	var b strings.Builder
	for _, p := range parts {
		if p = strings.TrimSpace(p); p != "" {
			if b.Len() > 0 {
				b.WriteString("\n")
			}
			b.WriteString(p)
		}
	}
	return b.String()
}

// ProcedureHit is a procedure found by SearchProcedures.
type ProcedureHit struct {
	BookName, BookVersion string
	Procedure             *bookv1.Procedure
	Score                 float64
}

// BookHit is a book found by SearchBooks.
type BookHit struct {
	Book  *bookv1.Book
	Score float64
}

func (r *Registry) searcher() (Searcher, error) {
	s, ok := r.store.(Searcher)
	if !ok {
		return nil, ErrSearchUnavailable
	}
	return s, nil
}

// SearchBooks ranks the built-in books and those registered in ws (none
// for the zero Workspace) against query and returns at
// most limit of them, best first.
func (r *Registry) SearchBooks(ctx context.Context, ws Workspace, query string, limit int) ([]BookHit, error) {
	s, err := r.searcher()
	if err != nil {
		return nil, err
	}
	hits, err := s.SearchCatalog(ctx, ws, CatalogQuery{Kind: CatalogBook, Text: query, Limit: limit})
	if err != nil {
		return nil, err
	}
	out := make([]BookHit, 0, len(hits))
	for _, h := range hits {
		b, err := r.Book(ctx, ws, h.BookName, h.BookVersion)
		if errors.Is(err, ErrNotFound) {
			continue // deleted since the search
		}
		if err != nil {
			return nil, err
		}
		out = append(out, BookHit{Book: b, Score: h.Score})
	}
	return out, nil
}

// SearchProcedures ranks the procedures of the built-in books and of those
// registered in ws (none for the zero Workspace) against query and returns at most limit of them, best first.
func (r *Registry) SearchProcedures(ctx context.Context, ws Workspace, query string, limit int) ([]ProcedureHit, error) {
	return r.searchProcedures(ctx, ws, CatalogQuery{Kind: CatalogProcedure, Text: query, Limit: limit})
}

// SearchBookProcedures is SearchProcedures restricted to one book.
func (r *Registry) SearchBookProcedures(ctx context.Context, ws Workspace, name, version, query string, limit int) ([]ProcedureHit, error) {
	return r.searchProcedures(ctx, ws, CatalogQuery{Kind: CatalogProcedure, Text: query, Limit: limit, BookName: name, BookVersion: version})
}

func (r *Registry) searchProcedures(ctx context.Context, ws Workspace, q CatalogQuery) ([]ProcedureHit, error) {
	s, err := r.searcher()
	if err != nil {
		return nil, err
	}
	hits, err := s.SearchCatalog(ctx, ws, q)
	if err != nil {
		return nil, err
	}
	out := make([]ProcedureHit, 0, len(hits))
	cache := map[bookKey]*bookv1.Book{}
	for _, h := range hits {
		k := bookKey{h.BookName, h.BookVersion}
		b, ok := cache[k]
		if !ok {
			b, err = r.Book(ctx, ws, h.BookName, h.BookVersion)
			if err != nil && !errors.Is(err, ErrNotFound) {
				return nil, fmt.Errorf("book %s version %s: %w", h.BookName, h.BookVersion, err)
			}
			cache[k] = b
		}
		for _, p := range b.GetProcedures() {
			if p.GetId() == h.Item {
				out = append(out, ProcedureHit{BookName: h.BookName, BookVersion: h.BookVersion, Procedure: p, Score: h.Score})
				break
			}
		}
	}
	return out, nil
}

// SearchProcedures ranks the procedures of the book of connection id (its
// procedures as the catalog has them; discovered ones are not indexed).
func (c *Connections) SearchProcedures(ctx context.Context, ws Workspace, id, query string, limit int) ([]ProcedureHit, error) {
	row, err := c.st.GetConnection(ctx, ws, id)
	if err != nil {
		return nil, connStoreError(err, id)
	}
	return c.reg.SearchBookProcedures(ctx, ws, row.BookName, row.BookVersion, query, limit)
}

// conceptName is a concept's noun phrases in words ("customer id; client id").
func conceptName(c *bookv1.Concept) string {
	var names []string
	for _, np := range c.GetNounPhrases().GetNounPhrases() {
		names = append(names, strings.Join(append(append([]string{}, np.GetModifiers()...), np.GetHead()), " "))
	}
	return strings.Join(names, "; ")
}

// bookConcepts returns the concepts of b, each name once: its
// configurations, then its procedures' inputs and outputs.
func bookConcepts(b *bookv1.Book) []*bookv1.Concept {
	var out []*bookv1.Concept
	seen := map[string]bool{}
	add := func(cs []*bookv1.Concept) {
		for _, c := range cs {
			if n := conceptName(c); n != "" && !seen[n] {
				seen[n] = true
				out = append(out, c)
			}
		}
	}
	add(b.GetConfigurations())
	for _, p := range b.GetProcedures() {
		add(p.GetInputs())
		add(p.GetOutputs())
	}
	return out
}

// ConceptHit is a concept found by SearchConcepts.
type ConceptHit struct {
	BookName, BookVersion string
	Concept               *bookv1.Concept
	Score                 float64
}

// SearchConcepts ranks the concepts (configurations, procedure inputs and
// outputs) of the built-in books and of those registered in ws (none for
// the zero Workspace) against query.
func (r *Registry) SearchConcepts(ctx context.Context, ws Workspace, query string, limit int) ([]ConceptHit, error) {
	s, err := r.searcher()
	if err != nil {
		return nil, err
	}
	hits, err := s.SearchCatalog(ctx, ws, CatalogQuery{Kind: CatalogConcept, Text: query, Limit: limit})
	if err != nil {
		return nil, err
	}
	out := make([]ConceptHit, 0, len(hits))
	for _, h := range hits {
		b, err := r.Book(ctx, ws, h.BookName, h.BookVersion)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		for _, c := range bookConcepts(b) {
			if conceptName(c) == h.Item {
				out = append(out, ConceptHit{BookName: h.BookName, BookVersion: h.BookVersion, Concept: c, Score: h.Score})
				break
			}
		}
	}
	return out, nil
}

// Concepts returns the concepts of b: its configurations, then its
// procedures' inputs and outputs, each name once (the concepts its search
// finds).
func Concepts(b *bookv1.Book) []*bookv1.Concept { return bookConcepts(b) }

// Versions returns the versions of the built-in book name, oldest first, or
// an error wrapping ErrNotFound if there is no built-in book of that name.
func (r *Registry) Versions(name string) ([]string, error) {
	var out []string
	for _, b := range r.Books() {
		if b.GetName() == name {
			out = append(out, b.GetVersion())
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("book %s: %w", name, ErrNotFound)
	}
	return out, nil
}
