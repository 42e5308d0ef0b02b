package storetest

import (
	"testing"

	"github.com/proserun/prose/store"
)

func catalogBook(org, ws, name, version string, entries ...store.CatalogEntry) store.WorkspaceBook {
	b := wbook(org, ws, name, version, []byte(name))
	b.Catalog = entries
	return b
}

func proc(item, name, text string) store.CatalogEntry {
	return store.CatalogEntry{Kind: store.CatalogProcedure, Item: item, Name: name, Text: text}
}

// items returns "book/version/item" of each match, in order.
func items(ms []store.CatalogMatch) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.BookName + "/" + m.BookVersion + "/" + m.Item
	}
	return out
}

func wantItems(t *testing.T, what string, got []store.CatalogMatch, want ...string) {
	t.Helper()
	g := items(got)
	if len(g) != len(want) {
		t.Errorf("%s = %q, want %q", what, g, want)
		return
	}
	for i := range g {
		if g[i] != want[i] {
			t.Errorf("%s = %q, want %q", what, g, want)
			return
		}
	}
	for i := 1; i < len(got); i++ {
		if got[i].Score > got[i-1].Score {
			t.Errorf("%s: scores not descending: %+v", what, got)
		}
	}
}

func testCatalogSearch(t *testing.T, s *suite) {
	s.org(t, "acme")
	s.ws(t, "acme", "w1", "One")
	s.ws(t, "acme", "w2", "Two")
	of(s.st.CreateWorkspaceBook(s.ctx, catalogBook("acme", "w1", "mail", "1",
		store.CatalogEntry{Kind: store.CatalogBook, Name: "Mail", Text: "Send and read email messages"},
		proc("p1", "send an email", "Sends a message through SMTP"),
		proc("p2", "archive a message", "Moves the email to the archive folder"),
		proc("p3", "list folders", "Lists the mailbox folders"),
		store.CatalogEntry{Kind: store.CatalogConcept, Item: "email", Name: "email", Text: "An email message"},
	))).must(t)
	of(s.st.CreateWorkspaceBook(s.ctx, catalogBook("acme", "w2", "mail", "1",
		proc("p1", "send an email", "Sends a message"),
	))).must(t)

	ctx := s.ctx
	// A name match ranks above a description match; words stem ("emails").
	got := of(s.st.SearchWorkspaceCatalog(ctx, "acme", "w1", store.CatalogQuery{Kind: store.CatalogProcedure, Text: "emails", Limit: 10})).must(t)
	wantItems(t, "search emails", got, "mail/1/p1", "mail/1/p2")
	if got[0].Score <= got[1].Score || got[0].Kind != store.CatalogProcedure {
		t.Errorf("name match not ranked strictly above description match: %+v", got)
	}
	// Any word matches; a match on more words ranks higher.
	got = of(s.st.SearchWorkspaceCatalog(ctx, "acme", "w1", store.CatalogQuery{Kind: store.CatalogProcedure, Text: "Folders, archive!", Limit: 10})).must(t)
	wantItems(t, "search folders archive", got, "mail/1/p2", "mail/1/p3")
	// The limit.
	got = of(s.st.SearchWorkspaceCatalog(ctx, "acme", "w1", store.CatalogQuery{Kind: store.CatalogProcedure, Text: "email folders", Limit: 1})).must(t)
	if len(got) != 1 {
		t.Errorf("limit 1: %+v", got)
	}
	// Kinds are separate.
	wantItems(t, "books", of(s.st.SearchWorkspaceCatalog(ctx, "acme", "w1", store.CatalogQuery{Kind: store.CatalogBook, Text: "email", Limit: 10})).must(t), "mail/1/")
	wantItems(t, "concepts", of(s.st.SearchWorkspaceCatalog(ctx, "acme", "w1", store.CatalogQuery{Kind: store.CatalogConcept, Text: "email", Limit: 10})).must(t), "mail/1/email")
	// Workspaces are separate; unknown ones have nothing.
	wantItems(t, "w2", of(s.st.SearchWorkspaceCatalog(ctx, "acme", "w2", store.CatalogQuery{Kind: store.CatalogProcedure, Text: "archive", Limit: 10})).must(t))
	wantItems(t, "unknown", of(s.st.SearchWorkspaceCatalog(ctx, "acme", "nope", store.CatalogQuery{Kind: store.CatalogProcedure, Text: "email", Limit: 10})).must(t))
	// Queries without words, or with query syntax, are words only.
	wantItems(t, "punctuation", of(s.st.SearchWorkspaceCatalog(ctx, "acme", "w1", store.CatalogQuery{Kind: store.CatalogProcedure, Text: `" * () :`, Limit: 10})).must(t))
	wantItems(t, "operators", of(s.st.SearchWorkspaceCatalog(ctx, "acme", "w1", store.CatalogQuery{Kind: store.CatalogProcedure, Text: `NOT list AND "folders*" | !`, Limit: 10})).must(t), "mail/1/p3", "mail/1/p2")
	wantItems(t, "no match", of(s.st.SearchWorkspaceCatalog(ctx, "acme", "w1", store.CatalogQuery{Kind: store.CatalogProcedure, Text: "zebra", Limit: 10})).must(t))
	// Words joined by dots, @ or slashes (a host, an e-mail, a path) are
	// found by each of their words, on both backends.
	of(s.st.CreateWorkspaceBook(s.ctx, catalogBook("acme", "w2", "acme.crm", "1",
		store.CatalogEntry{Kind: store.CatalogBook, Name: "acme.crm", Text: "Write to sales@acme.test, see /docs/customers"}))).must(t)
	for _, q := range []string{"crm", "sales", "customers"} {
		wantItems(t, "dotted "+q, of(s.st.SearchWorkspaceCatalog(ctx, "acme", "w2", store.CatalogQuery{Kind: store.CatalogBook, Text: q, Limit: 10})).must(t), "acme.crm/1/")
	}
}

func testCatalogSearchInStep(t *testing.T, s *suite) {
	s.org(t, "acme")
	s.ws(t, "acme", "w1", "One")
	s.ws(t, "acme", "w2", "Two")
	of(s.st.CreateWorkspaceBook(s.ctx, catalogBook("acme", "w1", "crm", "1", proc("a", "find a customer", "")))).must(t)
	of(s.st.CreateWorkspaceBook(s.ctx, catalogBook("acme", "w1", "crm", "2", proc("a", "find a customer", "")))).must(t)
	search := func(ws, q string) []store.CatalogMatch {
		return of(s.st.SearchWorkspaceCatalog(s.ctx, "acme", ws, store.CatalogQuery{Kind: store.CatalogProcedure, Text: q, Limit: 10})).must(t)
	}
	wantItems(t, "created", search("w1", "customer"), "crm/1/a", "crm/2/a")

	// An update replaces the book's entries (and only its own).
	of(s.st.UpdateWorkspaceBook(s.ctx, catalogBook("acme", "w1", "crm", "1", proc("b", "create an invoice", "")))).must(t)
	wantItems(t, "old words after update", search("w1", "customer"), "crm/2/a")
	wantItems(t, "new words after update", search("w1", "invoice"), "crm/1/b")
	// A failed update changes nothing.
	_, err := s.st.UpdateWorkspaceBook(s.ctx, catalogBook("acme", "w1", "crm", "9", proc("c", "delete an invoice", "")))
	wantErr(t, err, store.ErrNotFound, "update of a missing book")
	wantItems(t, "after failed update", search("w1", "invoice"), "crm/1/b")
	// A failed create (duplicate) changes nothing.
	_, err = s.st.CreateWorkspaceBook(s.ctx, catalogBook("acme", "w1", "crm", "2", proc("z", "find a zebra", "")))
	wantErr(t, err, store.ErrAlreadyExists, "duplicate")
	wantItems(t, "after failed create", search("w1", "zebra"))

	// Deleting the book removes its entries; a new book of that name starts clean.
	noErr(t, s.st.DeleteWorkspaceBook(s.ctx, "acme", "w1", "crm", "1"))
	wantItems(t, "after delete", search("w1", "invoice"))
	of(s.st.CreateWorkspaceBook(s.ctx, catalogBook("acme", "w1", "crm", "1"))).must(t)
	wantItems(t, "recreated", search("w1", "invoice"))

	// Deleting the workspace removes them too.
	of(s.st.CreateWorkspaceBook(s.ctx, catalogBook("acme", "w2", "crm", "1", proc("a", "find a customer", "")))).must(t)
	noErr(t, s.st.DeleteWorkspace(s.ctx, "acme", "w1"))
	s.ws(t, "acme", "w1", "One again")
	wantItems(t, "after workspace delete", search("w1", "customer"))
	wantItems(t, "other workspace", search("w2", "customer"), "crm/1/a")
}

func testCatalogSearchBuiltins(t *testing.T, s *suite) {
	s.org(t, "acme")
	s.ws(t, "acme", "w1", "One")
	of(s.st.CreateWorkspaceBook(s.ctx, catalogBook("acme", "w1", "crm", "1", proc("a", "find a customer", "")))).must(t)
	noErr(t, s.st.ReplaceBuiltinCatalog(s.ctx, []store.BuiltinCatalog{
		{Name: "http", Version: "1", Entries: []store.CatalogEntry{proc("get", "get a page", "Reads a customer record over HTTP")}},
		{Name: "old", Version: "1", Entries: []store.CatalogEntry{proc("x", "find a customer", "")}},
	}))
	noErr(t, s.st.ReplaceBuiltinCatalog(s.ctx, []store.BuiltinCatalog{
		{Name: "http", Version: "1", Entries: []store.CatalogEntry{proc("get", "get a page", "Reads a customer record over HTTP")}},
	}))
	search := func(org, ws, q string) []store.CatalogMatch {
		return of(s.st.SearchWorkspaceCatalog(s.ctx, org, ws, store.CatalogQuery{Kind: store.CatalogProcedure, Text: q, Limit: 10})).must(t)
	}
	// A workspace sees its books and the built-in ones (the replaced ones are gone).
	wantItems(t, "workspace", search("acme", "w1", "customer"), "crm/1/a", "http/1/get")
	// Both IDs empty: the built-in ones alone.
	wantItems(t, "global", search("", "", "customer"), "http/1/get")
	// Deleting a workspace leaves the built-in entries.
	noErr(t, s.st.DeleteWorkspace(s.ctx, "acme", "w1"))
	wantItems(t, "after workspace delete", search("", "", "customer"), "http/1/get")
}

func testCatalogSearchOneBook(t *testing.T, s *suite) {
	s.org(t, "acme")
	s.ws(t, "acme", "w1", "One")
	of(s.st.CreateWorkspaceBook(s.ctx, catalogBook("acme", "w1", "crm", "1", proc("a", "find a customer", "")))).must(t)
	of(s.st.CreateWorkspaceBook(s.ctx, catalogBook("acme", "w1", "crm", "2", proc("b", "find a customer", "")))).must(t)
	noErr(t, s.st.ReplaceBuiltinCatalog(s.ctx, []store.BuiltinCatalog{
		{Name: "http", Version: "1", Entries: []store.CatalogEntry{proc("get", "get a customer", "")}},
	}))
	search := func(book, version string) []store.CatalogMatch {
		return of(s.st.SearchWorkspaceCatalog(s.ctx, "acme", "w1", store.CatalogQuery{
			Kind: store.CatalogProcedure, Text: "customer", Limit: 10, BookName: book, BookVersion: version})).must(t)
	}
	wantItems(t, "every book", search("", ""), "crm/1/a", "crm/2/b", "http/1/get")
	wantItems(t, "crm 2", search("crm", "2"), "crm/2/b")
	wantItems(t, "a built-in book", search("http", "1"), "http/1/get")
	wantItems(t, "an unknown book", search("crm", "9"))
}

// testCatalogBackfill: the books without catalog entries are listed in
// pages, and indexing one writes its entries once, only while the book is
// unchanged.
func testCatalogBackfill(t *testing.T, s *suite) {
	s.org(t, "acme")
	s.ws(t, "acme", "w1", "One")
	s.ws(t, "acme", "w2", "Two")
	for _, b := range []store.WorkspaceBook{
		catalogBook("acme", "w1", "b", "1"), // no entries: as before the catalog
		catalogBook("acme", "w1", "a", "1"),
		catalogBook("acme", "w2", "a", "1"),
		catalogBook("acme", "w1", "c", "1", store.CatalogEntry{Kind: store.CatalogBook, Name: "c"}),
	} {
		of(s.st.CreateWorkspaceBook(s.ctx, b)).must(t)
	}
	keys := func(bs []store.WorkspaceBook) []string {
		out := make([]string, len(bs))
		for i, b := range bs {
			out[i] = b.WorkspaceID + "/" + b.Name
		}
		return out
	}
	page := of(s.st.ListUnindexedWorkspaceBooks(s.ctx, store.WorkspaceBookKey{}, 2)).must(t)
	if got := keys(page); len(got) != 2 || got[0] != "w1/a" || got[1] != "w1/b" || string(page[0].Book) != "a" {
		t.Fatalf("first page = %q", got)
	}
	last := page[1]
	rest := of(s.st.ListUnindexedWorkspaceBooks(s.ctx, store.WorkspaceBookKey{OrganizationID: "acme", WorkspaceID: "w1", Name: last.Name, Version: last.Version}, 2)).must(t)
	if got := keys(rest); len(got) != 1 || got[0] != "w2/a" {
		t.Fatalf("second page = %q", got)
	}

	entry := store.CatalogEntry{Kind: store.CatalogBook, Name: "backfilled zebra"}
	b := page[0]
	b.Catalog = []store.CatalogEntry{entry}
	if !of(s.st.IndexWorkspaceBook(s.ctx, b)).must(t) {
		t.Fatal("an unindexed book was not indexed")
	}
	// Again (another replica): nothing is written twice.
	if of(s.st.IndexWorkspaceBook(s.ctx, b)).must(t) {
		t.Error("an indexed book was indexed again")
	}
	found := of(s.st.SearchWorkspaceCatalog(s.ctx, "acme", "w1", store.CatalogQuery{Kind: store.CatalogBook, Text: "zebra", Limit: 10})).must(t)
	wantItems(t, "backfilled", found, "a/1/")

	// A book updated since it was listed keeps the update's entries.
	stale := page[1]
	upd := catalogBook("acme", "w1", "b", "1", store.CatalogEntry{Kind: store.CatalogBook, Name: "updated okapi"})
	upd.Book = []byte("b2")
	of(s.st.UpdateWorkspaceBook(s.ctx, upd)).must(t)
	stale.Catalog = []store.CatalogEntry{{Kind: store.CatalogBook, Name: "stale yak"}}
	if of(s.st.IndexWorkspaceBook(s.ctx, stale)).must(t) {
		t.Error("a book changed since it was listed was indexed with its old entries")
	}
	wantItems(t, "stale", of(s.st.SearchWorkspaceCatalog(s.ctx, "acme", "w1", store.CatalogQuery{Kind: store.CatalogBook, Text: "yak", Limit: 10})).must(t))
	// A deleted one is skipped.
	gone := rest[0]
	noErr(t, s.st.DeleteWorkspaceBook(s.ctx, "acme", "w2", "a", "1"))
	gone.Catalog = []store.CatalogEntry{entry}
	if of(s.st.IndexWorkspaceBook(s.ctx, gone)).must(t) {
		t.Error("a deleted book was indexed")
	}
	if left := of(s.st.ListUnindexedWorkspaceBooks(s.ctx, store.WorkspaceBookKey{}, 10)).must(t); len(left) != 0 {
		t.Errorf("still unindexed: %q", keys(left))
	}
}

// testCatalogSearchTransient: books given as Transient are found and
// ranked with the stored ones of the workspace, hide a stored book of the
// same name and version, and leave nothing behind; a search of the
// built-in books ignores them.
func testCatalogSearchTransient(t *testing.T, s *suite) {
	s.org(t, "acme")
	s.ws(t, "acme", "w1", "One")
	of(s.st.CreateWorkspaceBook(s.ctx, catalogBook("acme", "w1", "mail", "1",
		proc("p1", "send an email", "Sends a message through SMTP")))).must(t)
	of(s.st.CreateWorkspaceBook(s.ctx, catalogBook("acme", "w1", "weather", "1",
		proc("f1", "get the forecast", "Sunshine from the stored book")))).must(t)
	transient := []store.BuiltinCatalog{
		{Name: "sailing", Version: "1", Entries: []store.CatalogEntry{proc("t1", "get the tide", "High water of a harbour")}},
		{Name: "weather", Version: "1", Entries: []store.CatalogEntry{proc("f2", "get the rainfall", "Rain by the hour")}},
	}
	search := func(text string, tr []store.BuiltinCatalog) []store.CatalogMatch {
		t.Helper()
		return of(s.st.SearchWorkspaceCatalog(s.ctx, "acme", "w1", store.CatalogQuery{
			Kind: store.CatalogProcedure, Text: text, Limit: 10, Transient: tr})).must(t)
	}
	wantItems(t, "tide with the transient books", search("tide harbour", transient), "sailing/1/t1")
	got := search("email rainfall", transient)
	if len(got) != 2 {
		t.Errorf("email or rainfall = %q, want the stored and the transient procedure", items(got))
	}
	wantItems(t, "a hidden stored book", search("sunshine forecast", transient))
	wantItems(t, "one book of them", of(s.st.SearchWorkspaceCatalog(s.ctx, "acme", "w1", store.CatalogQuery{
		Kind: store.CatalogProcedure, Text: "rainfall tide", Limit: 10, BookName: "weather", BookVersion: "1", Transient: transient})).must(t),
		"weather/1/f2")
	// Nothing stays: without them the stored books are what is found.
	wantItems(t, "tide without them", search("tide harbour", nil))
	wantItems(t, "the stored weather again", search("sunshine", nil), "weather/1/f1")
	if ms := of(s.st.SearchWorkspaceCatalog(s.ctx, "", "", store.CatalogQuery{
		Kind: store.CatalogProcedure, Text: "tide", Limit: 10, Transient: transient})).must(t); len(ms) != 0 {
		t.Errorf("the built-in search found transient books: %q", items(ms))
	}
}
