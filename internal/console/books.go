package console

import (
	"net/http"
	"sort"
	"strings"

	bookv1 "github.com/proserun/prose/gen/prose/book/v1"
)

// The book catalog: the books a workspace's code can call, with their
// procedures, and a search over the procedures ("send an email").

// maxSearchResults bounds a catalog search.
const maxSearchResults = 20

type bookRow struct {
	B     *bookv1.Book
	Name  string
	Procs int
}

type procMatch struct {
	Book, Version, Signature, Description string
	Score                                 string
}

type booksData struct {
	pageData
	Books   []bookRow
	Query   string
	Matches []procMatch
}

func bookName(b *bookv1.Book) string {
	if b.GetDisplayName() != "" {
		return b.GetDisplayName()
	}
	return b.GetName()
}

func (c *Console) bookList(w http.ResponseWriter, r *http.Request, s *sess) {
	base, err := c.basics(r, s, "Books")
	if err != nil {
		c.grpcFail(w, r, s, err)
		return
	}
	d := &booksData{pageData: base, Query: strings.TrimSpace(r.URL.Query().Get("q"))}
	res, err := c.books.ListWorkspaceBooks(s.ctx, &bookv1.ListWorkspaceBooksRequest{OrganizationId: s.OrganizationID, WorkspaceId: base.WS, PageSize: maxListed})
	if err != nil {
		c.grpcFail(w, r, s, err)
		return
	}
	for _, b := range res.GetBooks() {
		if b.GetHidden() {
			continue
		}
		d.Books = append(d.Books, bookRow{B: b, Name: bookName(b), Procs: len(b.GetProcedures())})
	}
	sort.Slice(d.Books, func(i, j int) bool { return strings.ToLower(d.Books[i].Name) < strings.ToLower(d.Books[j].Name) })
	if d.Query != "" {
		m, err := c.books.SearchWorkspaceBookProcedures(s.ctx, &bookv1.SearchWorkspaceBookProceduresRequest{OrganizationId: s.OrganizationID, WorkspaceId: base.WS, Query: d.Query, TopK: maxSearchResults})
		if err != nil {
			c.grpcFail(w, r, s, err)
			return
		}
		for _, x := range m.GetResults() {
			d.Matches = append(d.Matches, procMatch{Book: x.GetBookName(), Version: x.GetBookVersion(), Signature: procSignature(x.GetProcedure()),
				Description: x.GetProcedure().GetShortDescription()})
		}
	}
	c.render(w, r, http.StatusOK, "books", d)
}

func procSignature(p *bookv1.Procedure) string {
	if e := p.GetSignature().GetEnglish(); e != "" {
		return e
	}
	return p.GetId()
}

type procView struct {
	Signature, Description string
	Examples               []string
	Mutation               bool
}

type bookData struct {
	pageData
	B     *bookv1.Book
	Name  string
	Procs []procView
}

// book shows one book of the workspace (its latest version) with its
// procedures and examples.
func (c *Console) book(w http.ResponseWriter, r *http.Request, s *sess) {
	base, err := c.basics(r, s, "Book")
	if err != nil {
		c.grpcFail(w, r, s, err)
		return
	}
	name := r.PathValue("name")
	res, err := c.books.ListWorkspaceBooks(s.ctx, &bookv1.ListWorkspaceBooksRequest{OrganizationId: s.OrganizationID, WorkspaceId: base.WS, PageSize: maxListed})
	if err != nil {
		c.grpcFail(w, r, s, err)
		return
	}
	var b *bookv1.Book
	for _, x := range res.GetBooks() {
		if x.GetName() == name && (b == nil || x.GetVersion() > b.GetVersion()) {
			b = x
		}
	}
	if b == nil {
		c.fail(w, r, s, http.StatusNotFound, "This workspace has no book "+name+".")
		return
	}
	d := &bookData{pageData: base, B: b, Name: bookName(b)}
	d.Title = "Book " + d.Name
	for _, p := range b.GetProcedures() {
		v := procView{Signature: procSignature(p), Description: p.GetShortDescription(), Mutation: p.GetIsMutation()}
		for _, e := range p.GetExamples() {
			if e.GetSnippet() != "" {
				v.Examples = append(v.Examples, e.GetSnippet())
			}
		}
		d.Procs = append(d.Procs, v)
	}
	c.render(w, r, http.StatusOK, "book", d)
}
