package storetest

import (
	"bytes"
	"slices"
	"sync"
	"testing"

	"github.com/proserun/prose/store"
)

// testWorkspaceBooks runs the workspace book cases.
func testWorkspaceBooks(t *testing.T, open Opener) {
	for _, tc := range []struct {
		name string
		fn   func(t *testing.T, s *suite)
	}{
		{"WorkspaceBookCRUD", testWorkspaceBookCRUD},
		{"WorkspaceBookRequestID", testWorkspaceBookRequestID},
		{"WorkspaceBookCascade", testWorkspaceBookCascade},
		{"CatalogSearch", testCatalogSearch},
		{"CatalogSearchTransient", testCatalogSearchTransient},
		{"CatalogSearchInStep", testCatalogSearchInStep},
		{"CatalogSearchBuiltins", testCatalogSearchBuiltins},
		{"CatalogSearchOneBook", testCatalogSearchOneBook},
		{"CatalogBackfill", testCatalogBackfill},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, setup(t, open)) })
	}
}

func wbook(org, ws, name, version string, data []byte) store.WorkspaceBook {
	return store.WorkspaceBook{OrganizationID: org, WorkspaceID: ws, Name: name, Version: version, Book: data}
}

func sameBook(t *testing.T, what string, got, want store.WorkspaceBook) {
	t.Helper()
	if got.OrganizationID != want.OrganizationID || got.WorkspaceID != want.WorkspaceID || got.Name != want.Name ||
		got.Version != want.Version || !bytes.Equal(got.Book, want.Book) || got.RequestID != want.RequestID ||
		!got.CreateTime.Equal(want.CreateTime) || !got.UpdateTime.Equal(want.UpdateTime) {
		t.Errorf("%s = %+v, want %+v", what, got, want)
	}
}

func testWorkspaceBookCRUD(t *testing.T, s *suite) {
	s.org(t, "acme")
	s.ws(t, "acme", "w1", "One")
	s.ws(t, "acme", "w2", "Two")
	data := []byte{0x0a, 0, 0xff, 1, 2} // binary
	a := of(s.st.CreateWorkspaceBook(s.ctx, wbook("acme", "w1", "crm", "1.10.0", data))).must(t)
	if a.CreateTime.IsZero() || !a.CreateTime.Equal(a.UpdateTime) || !bytes.Equal(a.Book, data) {
		t.Fatalf("created: %+v", a)
	}
	sameBook(t, "GetWorkspaceBook", of(s.st.GetWorkspaceBook(s.ctx, "acme", "w1", "crm", "1.10.0")).must(t), a)
	b := of(s.st.CreateWorkspaceBook(s.ctx, wbook("acme", "w1", "crm", "1.9.0", []byte("b")))).must(t)
	c := of(s.st.CreateWorkspaceBook(s.ctx, wbook("acme", "w1", "billing", "1", nil))).must(t)
	if c.Book == nil || len(c.Book) != 0 {
		t.Errorf("empty descriptor: %+v", c)
	}
	of(s.st.CreateWorkspaceBook(s.ctx, wbook("acme", "w2", "crm", "1.10.0", []byte("other")))).must(t)

	// Errors.
	_, err := s.st.CreateWorkspaceBook(s.ctx, wbook("acme", "w1", "crm", "1.10.0", []byte("dup")))
	wantErr(t, err, store.ErrAlreadyExists, "duplicate name and version")
	_, err = s.st.CreateWorkspaceBook(s.ctx, wbook("acme", "nope", "crm", "1", nil))
	wantErr(t, err, store.ErrNotFound, "unknown workspace")
	_, err = s.st.CreateWorkspaceBook(s.ctx, wbook("nope", "w1", "crm", "1", nil))
	wantErr(t, err, store.ErrNotFound, "unknown organization")
	_, err = s.st.GetWorkspaceBook(s.ctx, "acme", "w1", "crm", "2")
	wantErr(t, err, store.ErrNotFound, "get unknown version")
	_, err = s.st.GetWorkspaceBook(s.ctx, "acme", "w3", "crm", "1.10.0")
	wantErr(t, err, store.ErrNotFound, "get from another workspace")

	// List: one workspace, ordered by name then version (bytewise).
	list := of(s.st.ListWorkspaceBooks(s.ctx, "acme", "w1")).must(t)
	if len(list) != 3 {
		t.Fatalf("list = %+v", list)
	}
	sameBook(t, "list[0]", list[0], c)
	sameBook(t, "list[1]", list[1], a)
	sameBook(t, "list[2]", list[2], b)
	if l := of(s.st.ListWorkspaceBooks(s.ctx, "acme", "nope")).must(t); len(l) != 0 {
		t.Errorf("list of an unknown workspace = %+v", l)
	}

	// Update replaces the descriptor and the update time only.
	up := a
	up.Book = []byte("v2")
	up.RequestID = "ignored"
	got := of(s.st.UpdateWorkspaceBook(s.ctx, up)).must(t)
	if !bytes.Equal(got.Book, []byte("v2")) || got.RequestID != "" || !got.CreateTime.Equal(a.CreateTime) || !got.UpdateTime.After(a.UpdateTime) {
		t.Errorf("updated: %+v (was %+v)", got, a)
	}
	sameBook(t, "get after update", of(s.st.GetWorkspaceBook(s.ctx, "acme", "w1", "crm", "1.10.0")).must(t), got)
	if o := of(s.st.GetWorkspaceBook(s.ctx, "acme", "w2", "crm", "1.10.0")).must(t); string(o.Book) != "other" {
		t.Errorf("another workspace's book changed: %+v", o)
	}
	_, err = s.st.UpdateWorkspaceBook(s.ctx, wbook("acme", "w1", "crm", "9", nil))
	wantErr(t, err, store.ErrNotFound, "update unknown")

	// Delete.
	noErr(t, s.st.DeleteWorkspaceBook(s.ctx, "acme", "w1", "crm", "1.10.0"))
	wantErr(t, s.st.DeleteWorkspaceBook(s.ctx, "acme", "w1", "crm", "1.10.0"), store.ErrNotFound, "delete twice")
	_, err = s.st.GetWorkspaceBook(s.ctx, "acme", "w1", "crm", "1.10.0")
	wantErr(t, err, store.ErrNotFound, "get deleted")
	of(s.st.GetWorkspaceBook(s.ctx, "acme", "w2", "crm", "1.10.0")).must(t)
	names := func(l []store.WorkspaceBook) []string {
		return ids(l, func(b store.WorkspaceBook) string { return b.Name + "@" + b.Version })
	}
	if l := names(of(s.st.ListWorkspaceBooks(s.ctx, "acme", "w1")).must(t)); !slices.Equal(l, []string{"billing@1", "crm@1.9.0"}) {
		t.Errorf("list after delete = %v", l)
	}
	// The name and version are free again.
	of(s.st.CreateWorkspaceBook(s.ctx, wbook("acme", "w1", "crm", "1.10.0", []byte("again")))).must(t)
}

func testWorkspaceBookRequestID(t *testing.T, s *suite) {
	s.org(t, "acme")
	s.ws(t, "acme", "w1", "One")
	s.ws(t, "acme", "w2", "Two")
	req := func(name, id string, data string) store.WorkspaceBook {
		b := wbook("acme", "w1", name, "1", []byte(data))
		b.RequestID = id
		return b
	}
	first := of(s.st.CreateWorkspaceBook(s.ctx, req("crm", "r1", "first"))).must(t)
	if first.RequestID != "r1" {
		t.Errorf("created: %+v", first)
	}
	// A retry returns the first book, whatever it carries.
	sameBook(t, "retry", of(s.st.CreateWorkspaceBook(s.ctx, req("other", "r1", "second"))).must(t), first)
	if l := of(s.st.ListWorkspaceBooks(s.ctx, "acme", "w1")).must(t); len(l) != 1 {
		t.Errorf("retry stored a book: %+v", l)
	}
	// The same request id in another workspace is another request.
	b2 := req("crm", "r1", "w2")
	b2.WorkspaceID = "w2"
	of(s.st.CreateWorkspaceBook(s.ctx, b2)).must(t)
	// Another request id for the same name and version conflicts.
	_, err := s.st.CreateWorkspaceBook(s.ctx, req("crm", "r2", "x"))
	wantErr(t, err, store.ErrAlreadyExists, "same book, another request")
	// Books without a request id do not collide with each other.
	of(s.st.CreateWorkspaceBook(s.ctx, req("a", "", ""))).must(t)
	of(s.st.CreateWorkspaceBook(s.ctx, req("b", "", ""))).must(t)
	// Once deleted, the request id creates anew.
	noErr(t, s.st.DeleteWorkspaceBook(s.ctx, "acme", "w1", "crm", "1"))
	again := of(s.st.CreateWorkspaceBook(s.ctx, req("crm2", "r1", "new"))).must(t)
	if again.Name != "crm2" || string(again.Book) != "new" {
		t.Errorf("after delete: %+v", again)
	}

	// Concurrent creates with one request id: one book, every caller gets it.
	const n = 8
	var wg sync.WaitGroup
	got := make([]result[store.WorkspaceBook], n)
	for i := range n {
		wg.Go(func() { got[i] = of(s.st.CreateWorkspaceBook(s.ctx, req("race", "r-race", "x"))) })
	}
	wg.Wait()
	for i, r := range got {
		if r.err != nil || r.v.Name != "race" || r.v.RequestID != "r-race" || !r.v.CreateTime.Equal(got[0].v.CreateTime) {
			t.Errorf("concurrent create %d: %+v, %v", i, r.v, r.err)
		}
	}
}

func testWorkspaceBookCascade(t *testing.T, s *suite) {
	s.org(t, "acme")
	s.org(t, "gone")
	s.ws(t, "acme", "w1", "One")
	s.ws(t, "acme", "w2", "Two")
	s.ws(t, "gone", "w1", "One")
	of(s.st.CreateWorkspaceBook(s.ctx, wbook("acme", "w1", "crm", "1", nil))).must(t)
	of(s.st.CreateWorkspaceBook(s.ctx, wbook("acme", "w2", "crm", "1", nil))).must(t)
	of(s.st.CreateWorkspaceBook(s.ctx, wbook("gone", "w1", "crm", "1", nil))).must(t)
	noErr(t, s.st.DeleteWorkspace(s.ctx, "acme", "w1"))
	noErr(t, s.st.DeleteOrganization(s.ctx, "gone"))
	if l := of(s.st.ListWorkspaceBooks(s.ctx, "acme", "w1")).must(t); len(l) != 0 {
		t.Errorf("books of a deleted workspace: %+v", l)
	}
	if l := of(s.st.ListWorkspaceBooks(s.ctx, "gone", "w1")).must(t); len(l) != 0 {
		t.Errorf("books of a deleted organization: %+v", l)
	}
	// A workspace made again with the same id starts with no books.
	s.ws(t, "acme", "w1", "One again")
	if l := of(s.st.ListWorkspaceBooks(s.ctx, "acme", "w1")).must(t); len(l) != 0 {
		t.Errorf("books of a recreated workspace: %+v", l)
	}
	of(s.st.GetWorkspaceBook(s.ctx, "acme", "w2", "crm", "1")).must(t)
}
