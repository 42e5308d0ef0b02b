package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/test/bufconn"
	"google.golang.org/protobuf/encoding/protojson"

	bookv1 "github.com/proserun/prose/gen/prose/book/v1"
	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/internal/names"
	"github.com/proserun/prose/server/app"
	"github.com/proserun/prose/server/testenv"
	"github.com/proserun/prose/store"
	"github.com/proserun/prose/store/backend"
)

// withGRPC serves e's app over gRPC on an in-memory listener (startApp
// serves HTTP only).
func withGRPC(t *testing.T, e *testEnv) {
	t.Helper()
	lis := bufconn.Listen(1 << 20)
	go func() { _ = e.App.GRPC.Serve(lis) }()
	t.Cleanup(e.App.GRPC.Stop)
	var err error
	e.Conn, err = grpc.NewClient("passthrough:///prose",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Conn.Close() })
}

// TestCatalogSearchFindsFileBooks: the books of a `serve --books` file are
// searched as the registered ones are, over HTTP and gRPC: books,
// procedures and concepts, ranked together with the registered books; a
// file book hides a registered book of the same name and version (its
// words are found, the registered one's are not); a file book's concepts
// read as a registered book's; and nothing of the file is stored (another
// process on the database does not find it). On PostgreSQL when
// PROSE_TEST_POSTGRES_URL is set.
func TestCatalogSearchFindsFileBooks(t *testing.T) {
	var st store.Store
	if url := os.Getenv("PROSE_TEST_POSTGRES_URL"); url != "" {
		var err error
		if st, err = backend.Open(context.Background(), url); err != nil {
			t.Fatal(err)
		}
	} else {
		var err error
		if st, err = backend.Open(context.Background(), t.TempDir()); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { st.Close() })
	cfg := func(file string) app.Config {
		return app.Config{Addr: "127.0.0.1:0", Data: t.TempDir(), LogLevel: "error", Store: st, AllowPrivateNetworks: true, Books: file}
	}
	// The first process registers two books through the API.
	first, stopFirst := startApp(t, cfg(""), app.InitResult{}, "")
	first.Email = "owner-" + store.NewID() + "@example.test"
	var err error
	first.Init, err = app.Bootstrap(context.Background(), st, app.InitOptions{Organization: "File books org", Email: first.Email, Workspace: "Ops"})
	if err != nil {
		t.Fatal(err)
	}
	register := func(e *testEnv, b *bookv1.Book) {
		t.Helper()
		raw, err := protojson.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		e.API(t, "POST", e.booksPath(), string(raw), 200)
	}
	register(first, searchBook("ledger", "Keeps the accounts",
		searchProc("post", "post an entry", "Posts a journal entry to the ledger")))
	register(first, searchBook("weather", "Forecasts from the registered service",
		searchProc("forecast", "get the forecast", "Tomorrow's sky, registered")))
	stopFirst()

	// The second reads a file: a book of its own, and one that hides the
	// registered "weather" 1.0.0.
	wsName := names.Workspace(first.Init.OrganizationID, first.Init.WorkspaceID)
	sailing := searchBook("sailing", "Tides and harbours for sailors",
		searchProc("tide", "get the tide of a harbour", "High and low water of a harbour", "marina"))
	sailing.Configurations = []*bookv1.Concept{{
		NounPhrases: &bookv1.NounPhrases{NounPhrases: []*platformv1.NounPhrase{{Head: "harbourmaster"}}},
		Description: "Who to call at the harbour",
	}}
	weather := searchBook("weather", "Forecasts from the file",
		searchProc("forecast", "get the forecast", "Rainfall by the hour from the file"))
	var entries []map[string]json.RawMessage
	for _, b := range []*bookv1.Book{sailing, weather} {
		raw, err := protojson.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		entries = append(entries, map[string]json.RawMessage{"workspace": json.RawMessage(fmt.Sprintf("%q", wsName)), "book": raw})
	}
	data, _ := json.Marshal(entries)
	file := filepath.Join(t.TempDir(), "books.json")
	if err := os.WriteFile(file, data, 0o600); err != nil {
		t.Fatal(err)
	}
	e, _ := startApp(t, cfg(file), first.Init, first.Email)
	withGRPC(t, e)
	org, ws := e.Init.OrganizationID, e.Init.WorkspaceID

	forEachTransport(t, func(t *testing.T, tr apiTransport) {
		bookNames := func(q string) []string {
			t.Helper()
			m := e.mustCall(t, tr, "/prose.book.v1.BookService/SearchWorkspaceBooks",
				&bookv1.SearchWorkspaceBooksRequest{OrganizationId: org, WorkspaceId: ws, Query: q})
			var out []string
			for _, r := range asList(m["results"]) {
				out = append(out, fmt.Sprint(testenv.Field(r, "book.name"), ": ", testenv.Field(r, "book.short_description")))
			}
			return out
		}
		if got := bookNames("sailors harbours"); len(got) != 1 || got[0] != "sailing: Tides and harbours for sailors" {
			t.Errorf("books for sailors: %q, want the file's book", got)
		}
		// Ranked with the registered books: both are found by one query.
		if got := strings.Join(bookNames("accounts sailors"), " | "); !strings.Contains(got, "ledger: ") || !strings.Contains(got, "sailing: ") {
			t.Errorf("books for accounts or sailors: %q, want the registered and the file's", got)
		}
		// The file's weather hides the registered one, in search as in reads.
		if got := bookNames("forecasts"); len(got) != 1 || got[0] != "weather: Forecasts from the file" {
			t.Errorf("books for forecasts: %q, want only the file's weather", got)
		}
		if got := bookNames("registered service"); len(got) != 0 {
			t.Errorf("the hidden registered book's words found %q", got)
		}

		m := e.mustCall(t, tr, "/prose.book.v1.BookService/SearchWorkspaceBookProcedures",
			&bookv1.SearchWorkspaceBookProceduresRequest{OrganizationId: org, WorkspaceId: ws, Query: "marina rainfall"})
		var procs []string
		for _, r := range asList(m["results"]) {
			procs = append(procs, fmt.Sprint(testenv.Field(r, "book_name"), "/", testenv.Field(r, "procedure.id")))
		}
		if got := strings.Join(procs, " "); !strings.Contains(got, "sailing/tide") || !strings.Contains(got, "weather/forecast") || len(procs) != 2 {
			t.Errorf("procedures for marina rainfall: %q", got)
		}
		m = e.mustCall(t, tr, "/prose.book.v1.BookService/SearchWorkspaceBookConcepts",
			&bookv1.SearchWorkspaceBookConceptsRequest{OrganizationId: org, WorkspaceId: ws, Query: "harbourmaster"})
		if res := asList(m["results"]); len(res) != 1 || testenv.Field(res[0], "book_name") != "sailing" {
			t.Errorf("concepts for harbourmaster: %v", m)
		}
		// The catalog read of a file book.
		m = e.mustCall(t, tr, "/prose.book.v1.BookService/ListWorkspaceBookConcepts",
			&bookv1.ListWorkspaceBookConceptsRequest{OrganizationId: org, WorkspaceId: ws, Name: "sailing", Version: "1.0.0"})
		if b, _ := json.Marshal(m); !strings.Contains(string(b), "harbourmaster") {
			t.Errorf("concepts of the file's book: %s", b)
		}
	})

	// Nothing of the file is stored: a process without it finds the
	// registered books only.
	third, _ := startApp(t, cfg(""), first.Init, first.Email)
	withGRPC(t, third)
	m := third.mustCall(t, overGRPC, "/prose.book.v1.BookService/SearchWorkspaceBooks",
		&bookv1.SearchWorkspaceBooksRequest{OrganizationId: org, WorkspaceId: ws, Query: "sailors forecasts"})
	var got []string
	for _, r := range asList(m["results"]) {
		got = append(got, fmt.Sprint(testenv.Field(r, "book.name"), ": ", testenv.Field(r, "book.short_description")))
	}
	if len(got) != 1 || got[0] != "weather: Forecasts from the registered service" {
		t.Errorf("a process without the file found %q, want the registered weather only", got)
	}
}
