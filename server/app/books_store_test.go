package app_test

import (
	"errors"
	"testing"

	bookv1 "github.com/proserun/prose/gen/prose/book/v1"
	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/internal/books"
	"github.com/proserun/prose/server/app"
	"github.com/proserun/prose/store"
	"github.com/proserun/prose/store/sqlite"
	"google.golang.org/protobuf/proto"
)

// bookWS is the workspace the book tests register in.
var bookWS = books.Workspace{OrganizationID: "o1", WorkspaceID: "w1"}

// externalBook is an external book offering one procedure.
func externalBook(endpoint string) *bookv1.Book {
	text := &bookv1.ConceptType{Kind: &bookv1.ConceptType_ScalarType{ScalarType: bookv1.ConceptScalarType_ConceptScalarTypeText}}
	return &bookv1.Book{
		Name:     "acme.mail",
		Version:  "1.2.0",
		Endpoint: endpoint,
		Tags:     []string{"email"},
		Procedures: []*bookv1.Procedure{{
			Id:        "send_email",
			Signature: books.Signature("send an email to a recipient"),
			Inputs: []*bookv1.Concept{
				{NounPhrases: &bookv1.NounPhrases{NounPhrases: []*platformv1.NounPhrase{books.Phrase("recipient")}}, Type: text},
				{NounPhrases: &bookv1.NounPhrases{NounPhrases: []*platformv1.NounPhrase{books.Phrase("subject")}}, Type: text},
			},
			IsMutation: true,
		}},
	}
}

func openBookStore(t *testing.T, dir string) store.Store {
	t.Helper()
	st, err := sqlite.Open(t.Context(), dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st
}

func TestDBBooksRegistry(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	st := openBookStore(t, dir)
	if _, err := st.CreateOrganization(ctx, store.Organization{ID: bookWS.OrganizationID, DisplayName: "O"}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreateWorkspace(ctx, store.Workspace{OrganizationID: bookWS.OrganizationID, ID: bookWS.WorkspaceID, Title: "W"}); err != nil {
		t.Fatal(err)
	}
	reg := books.NewRegistry(books.WithStore(app.NewDBBooks(st)))
	b := externalBook("https://books.example.test/mail")
	got, err := reg.Register(ctx, bookWS, b, "req-1")
	if err != nil {
		t.Fatal(err)
	}
	if got.GetId() != "acme.mail" || got.GetEndpoint() != b.GetEndpoint() {
		t.Fatalf("registered %v", got)
	}
	// A retry returns the first book; another request conflicts.
	if again, err := reg.Register(ctx, bookWS, externalBook("https://other.example.test"), "req-1"); err != nil || !proto.Equal(again, got) {
		t.Errorf("retry = %v, %v", again, err)
	}
	if _, err := reg.Register(ctx, bookWS, b, "req-2"); !errors.Is(err, books.ErrAlreadyExists) {
		t.Errorf("duplicate: %v, want ErrAlreadyExists", err)
	}
	if _, err := reg.Register(ctx, books.Workspace{OrganizationID: "o1", WorkspaceID: "nope"}, b, ""); !errors.Is(err, books.ErrNotFound) {
		t.Errorf("unknown workspace: %v, want ErrNotFound", err)
	}

	// A new registry on a reopened database still has it.
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	reg = books.NewRegistry(books.WithStore(app.NewDBBooks(openBookStore(t, dir))))
	one, err := reg.Book(ctx, bookWS, "acme.mail", "1.2.0")
	if err != nil || !proto.Equal(one, got) {
		t.Fatalf("after reopening: %v, %v", one, err)
	}
	all, err := reg.WorkspaceBooks(ctx, bookWS)
	if err != nil || !containsBook(all, "acme.mail", "1.2.0") {
		t.Fatalf("WorkspaceBooks after reopening: %v, %v", all, err)
	}
	up := proto.CloneOf(got)
	up.Tags = []string{"changed"}
	if err := reg.Update(ctx, bookWS, up); err != nil {
		t.Fatal(err)
	}
	if one, _ := reg.Book(ctx, bookWS, "acme.mail", "1.2.0"); len(one.GetTags()) != 1 || one.GetTags()[0] != "changed" {
		t.Errorf("after update: %v", one)
	}
	if err := reg.Update(ctx, bookWS, externalBook("https://x.example.test")); err != nil {
		t.Errorf("update with the same name and version: %v", err)
	}
	if err := reg.Unregister(ctx, bookWS, "acme.mail", "1.2.0"); err != nil {
		t.Fatal(err)
	}
	if err := reg.Unregister(ctx, bookWS, "acme.mail", "1.2.0"); !errors.Is(err, books.ErrNotFound) {
		t.Errorf("delete twice: %v, want ErrNotFound", err)
	}
	if _, err := reg.Book(ctx, bookWS, "acme.mail", "1.2.0"); !errors.Is(err, books.ErrNotFound) {
		t.Errorf("after delete: %v, want ErrNotFound", err)
	}
}

func containsBook(bs []*bookv1.Book, name, version string) bool {
	for _, b := range bs {
		if b.GetName() == name && b.GetVersion() == version {
			return true
		}
	}
	return false
}

func TestOverlay(t *testing.T) {
	ctx := t.Context()
	top, base := books.NewMemoryStore(), books.NewMemoryStore()
	reg := books.NewRegistry(books.WithStore(books.Overlay{Top: top, Base: base}))
	file := externalBook("https://file.example.test")
	if _, err := books.NewRegistry(books.WithStore(top)).Register(ctx, bookWS, file, ""); err != nil {
		t.Fatal(err)
	}
	// The file's book cannot be registered again; others go to Base.
	if _, err := reg.Register(ctx, bookWS, externalBook("https://api.example.test"), ""); !errors.Is(err, books.ErrAlreadyExists) {
		t.Errorf("register over a file book: %v, want ErrAlreadyExists", err)
	}
	other := externalBook("https://api.example.test")
	other.Version = "2.0.0"
	if _, err := reg.Register(ctx, bookWS, other, ""); err != nil {
		t.Fatal(err)
	}
	if l, _ := base.ListWorkspaceBooks(ctx, bookWS); len(l) != 1 || l[0].GetVersion() != "2.0.0" {
		t.Errorf("base = %v", l)
	}
	all, err := reg.WorkspaceBooks(ctx, bookWS)
	if err != nil || !containsBook(all, "acme.mail", "1.2.0") || !containsBook(all, "acme.mail", "2.0.0") {
		t.Errorf("WorkspaceBooks = %v, %v", all, err)
	}
	// Updates and deletes of the file's book stay in Top.
	up := externalBook("https://file2.example.test")
	if err := reg.Update(ctx, bookWS, up); err != nil {
		t.Fatal(err)
	}
	if b, _ := top.GetWorkspaceBook(ctx, bookWS, "acme.mail", "1.2.0"); b.GetEndpoint() != "https://file2.example.test" {
		t.Errorf("top after update: %v", b)
	}
	if err := reg.Unregister(ctx, bookWS, "acme.mail", "1.2.0"); err != nil {
		t.Fatal(err)
	}
	if err := reg.Unregister(ctx, bookWS, "acme.mail", "2.0.0"); err != nil {
		t.Fatal(err)
	}
	if all, _ := reg.WorkspaceBooks(ctx, bookWS); containsBook(all, "acme.mail", "1.2.0") || containsBook(all, "acme.mail", "2.0.0") {
		t.Errorf("after deletes: %v", all)
	}
}
