package server_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"

	bookv1 "github.com/proserun/prose/gen/prose/book/v1"
	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/server/testenv"
)

func searchBook(name, short string, procs ...*bookv1.Procedure) *bookv1.Book {
	return &bookv1.Book{Name: name, Version: "1.0.0", Endpoint: "http://127.0.0.1:1/book", ShortDescription: short, Procedures: procs}
}

func searchProc(id, english, short string, hints ...string) *bookv1.Procedure {
	return &bookv1.Procedure{Id: id, Signature: &bookv1.ProcedureSignature{English: english}, ShortDescription: short, SearchHints: hints}
}

// TestCatalogSearch: the workspace's books and procedures are found by
// ranked text search, over HTTP and gRPC, with the reference's JSON; the
// index follows registration, update and removal.
func TestCatalogSearch(t *testing.T) {
	e := newTestEnv(t)
	register := func(b *bookv1.Book) {
		t.Helper()
		raw, err := protojson.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		e.API(t, "POST", e.booksPath(), string(raw), 200)
	}
	send := searchProc("send", "send an invoice to a customer", "Sends a message", "postage")
	send.Inputs = []*bookv1.Concept{{
		NounPhrases: &bookv1.NounPhrases{NounPhrases: []*platformv1.NounPhrase{{Modifiers: []string{"billing"}, Head: "recipient"}}},
		Description: "Who receives the invoice",
	}}
	register(searchBook("mailer", "Sends email through SMTP",
		send,
		searchProc("archive", "archive a message", "Moves an invoice to the archive")))
	register(searchBook("invoices", "Creates and pays invoices",
		searchProc("create", "create a bill", "Makes an invoice for a customer")))
	ws := func() (string, string) { return e.Init.OrganizationID, e.Init.WorkspaceID }
	org, wsID := ws()

	procs := func(t *testing.T, tr apiTransport, q string, k int64) []string {
		t.Helper()
		m := e.mustCall(t, tr, "/prose.book.v1.BookService/SearchWorkspaceBookProcedures",
			&bookv1.SearchWorkspaceBookProceduresRequest{OrganizationId: org, WorkspaceId: wsID, Query: q, TopK: k})
		var out []string
		last := 1e300
		for _, r := range asList(m["results"]) {
			rm, _ := r.(map[string]any)
			if rm["organization_id"] != org || rm["workspace_id"] != wsID {
				t.Errorf("match without its workspace: %v", rm)
			}
			score, _ := rm["score"].(float64)
			if score > last || score <= 0 {
				t.Errorf("scores not positive and descending: %v", m)
			}
			last = score
			out = append(out, fmt.Sprint(rm["book_name"], "/", testenv.Field(rm["procedure"], "id")))
		}
		return out
	}
	forEachTransport(t, func(t *testing.T, tr apiTransport) {
		// A signature (name) match ranks above a description match.
		if got := strings.Join(procs(t, tr, "invoices", 0), " "); got != "mailer/send invoices/create mailer/archive" &&
			got != "mailer/send mailer/archive invoices/create" {
			// Both description matches score alike; their order is by book then id.
			t.Errorf("procedures for invoices = %q", got)
		}
		if got := procs(t, tr, "invoices", 0); len(got) != 3 || got[0] != "mailer/send" {
			t.Errorf("name match first: %q", got)
		}
		if got := procs(t, tr, "postage", 1); len(got) != 1 || got[0] != "mailer/send" {
			t.Errorf("search hint, top_k 1: %q", got)
		}
		if got := procs(t, tr, "zebra", 0); len(got) != 0 {
			t.Errorf("no match: %q", got)
		}
		m := e.mustCall(t, tr, "/prose.book.v1.BookService/SearchWorkspaceBooks",
			&bookv1.SearchWorkspaceBooksRequest{OrganizationId: org, WorkspaceId: wsID, Query: "invoices"})
		res := asList(m["results"])
		if len(res) != 1 || testenv.Field(testenv.Field(res[0], "book"), "name") != "invoices" {
			t.Errorf("books for invoices: %v", m)
		}
		// The built-in books are found too, in the workspace and globally;
		// the global search has no workspace's books.
		if got := procs(t, tr, "spreadsheet excel", 1); len(got) != 1 || got[0] != "tables/write_excel" {
			t.Errorf("built-in procedure in the workspace: %q", got)
		}
		g := e.mustCall(t, tr, "/prose.book.v1.BookService/SearchBookProcedures", &bookv1.SearchBookProceduresRequest{Query: "excel invoices"})
		if res := asList(g["results"]); len(res) == 0 || testenv.Field(res[0], "book_name") != "tables" || testenv.Field(testenv.Field(res[0], "procedure"), "id") != "write_excel" {
			t.Errorf("global procedures: %v", g)
		} else {
			for _, r := range res {
				if testenv.Field(r, "book_name") == "mailer" || testenv.Field(r, "book_name") == "invoices" {
					t.Errorf("a workspace's book in the global search: %v", r)
				}
			}
		}
		g = e.mustCall(t, tr, "/prose.book.v1.BookService/SearchBooks", &bookv1.SearchBooksRequest{Query: "http", TopK: 1})
		if res := asList(g["results"]); len(res) != 1 || testenv.Field(testenv.Field(res[0], "book"), "name") != "http" {
			t.Errorf("global books: %v", g)
		}
		if _, err := e.call(t, tr, "/prose.book.v1.BookService/SearchBooks", &bookv1.SearchBooksRequest{}); status.Code(err) != codes.InvalidArgument {
			t.Errorf("global search without a query: %v", err)
		}
		// Concepts: in the workspace, and (built-in only) globally.
		m = e.mustCall(t, tr, "/prose.book.v1.BookService/SearchWorkspaceBookConcepts",
			&bookv1.SearchWorkspaceBookConceptsRequest{OrganizationId: org, WorkspaceId: wsID, Query: "billing recipients"})
		if res := asList(m["results"]); len(res) == 0 || testenv.Field(res[0], "book_name") != "mailer" ||
			testenv.Field(testenv.Field(res[0], "concept"), "description") != "Who receives the invoice" {
			t.Errorf("workspace concepts: %v", m)
		}
		m = e.mustCall(t, tr, "/prose.book.v1.BookService/SearchBookConcepts", &bookv1.SearchBookConceptsRequest{Query: "billing recipients url"})
		res = asList(m["results"])
		if len(res) == 0 {
			t.Errorf("global concepts: none")
		}
		for _, r := range res {
			if testenv.Field(r, "book_name") == "mailer" {
				t.Errorf("a workspace's concept in the global search: %v", r)
			}
		}
		// Client mistakes.
		for _, req := range []*bookv1.SearchWorkspaceBookProceduresRequest{
			{OrganizationId: org, WorkspaceId: wsID, Query: "  "},
			{OrganizationId: org, WorkspaceId: wsID, Query: "x", TopK: -1},
			{OrganizationId: org, WorkspaceId: wsID, Query: strings.Repeat("x", 1025)},
		} {
			_, err := e.call(t, tr, "/prose.book.v1.BookService/SearchWorkspaceBookProcedures", req)
			if status.Code(err) != codes.InvalidArgument {
				t.Errorf("%v: %v, want INVALID_ARGUMENT", req, err)
			}
		}
	})

	// A connection's search is of its book version alone.
	code, raw := e.APIRaw(t, "POST", e.WsPath()+"/books/http/1.0.0/connections", `{"connection_name": "crm",
		"authentication": {"authentication_id": "bearer", "authentication_credentials": [{"id": "token", "value": {"text_value": "t"}}]},
		"config_map": {"base url": {"text_value": "https://x.example"}}}`)
	if code != 200 {
		t.Fatalf("add connection: %d %s", code, raw)
	}
	var added struct {
		D struct {
			ID string `json:"connection_id"`
		} `json:"book_connection_descriptor"`
	}
	_ = json.Unmarshal(raw, &added)
	connID := added.D.ID
	forEachTransport(t, func(t *testing.T, tr apiTransport) {
		m := e.mustCall(t, tr, "/prose.book.v1.ConnectionService/SearchWorkspaceBookConnectionProcedures",
			&bookv1.SearchWorkspaceBookConnectionProceduresRequest{OrganizationId: org, WorkspaceId: wsID, ConnectionId: connID, Query: "call an api, or excel"})
		res := asList(m["results"])
		if len(res) != 1 || testenv.Field(res[0], "book_name") != "http" || testenv.Field(testenv.Field(res[0], "procedure"), "id") != "call_api" ||
			testenv.Field(res[0], "connection_id") != connID {
			t.Errorf("connection search: %v", m)
		}
		_, err := e.call(t, tr, "/prose.book.v1.ConnectionService/SearchWorkspaceBookConnectionProcedures",
			&bookv1.SearchWorkspaceBookConnectionProceduresRequest{OrganizationId: org, WorkspaceId: wsID, ConnectionId: "nope", Query: "api"})
		if status.Code(err) != codes.NotFound {
			t.Errorf("unknown connection: %v", err)
		}
	})

	// The index follows updates and removal.
	upd, _ := protojson.Marshal(searchBook("invoices", "Pays", searchProc("pay", "pay a supplier", "")))
	e.API(t, "PATCH", e.booksPath()+"/invoices/1.0.0", string(upd), 200)
	if got := procs(t, overHTTP, "supplier bill", 0); len(got) != 1 || got[0] != "invoices/pay" {
		t.Errorf("after update: %q", got)
	}
	e.API(t, "DELETE", e.booksPath()+"/mailer/1.0.0", "", 200)
	if got := procs(t, overHTTP, "archive", 0); len(got) != 0 {
		t.Errorf("after delete: %q", got)
	}

	// The reference's JSON, field by field.
	ref := loadReference(t)
	const base = "/api/v1/organizations/{organization_id}/workspaces/{workspace_id}"
	for _, c := range []struct{ path, body, schema string }{
		{base + "/procedures:search", `{"query": "supplier", "top_k": 5, "max_distance": 0.5}`, "SearchWorkspaceBookProceduresBody"},
		{base + "/books:search", `{"query": "pays", "top_k": 5, "max_distance": 0.5}`, "SearchWorkspaceBooksBody"},
		{"/api/v1/procedures:search", `{"query": "excel", "top_k": 5, "max_distance": 0.5}`, "v2SearchBookProceduresRequest"},
		{"/api/v1/books:search", `{"query": "http", "top_k": 5, "max_distance": 0.5}`, "v2SearchBooksRequest"},
		{"/api/v1/concepts:search", `{"query": "url", "top_k": 5, "max_distance": 0.5}`, "v2SearchBookConceptsRequest"},
		{base + "/concepts:search", `{"query": "recipient", "top_k": 5, "max_distance": 0.5}`, "SearchWorkspaceBookConceptsBody"},
		{base + "/connections/{connection_id}/procedures:search", `{"query": "api", "top_k": 5, "max_distance": 0.5}`, "SearchWorkspaceBookConnectionProceduresBody"},
	} {
		var bv any
		_ = json.Unmarshal([]byte(c.body), &bv)
		if errs := ref.check(bv, ref.schema(c.schema), "body"); len(errs) > 0 {
			t.Fatalf("the test's body is not the reference's: %v", errs)
		}
		path := strings.Replace(c.path, base, strings.TrimSuffix(e.booksPath(), "/books"), 1)
		path = strings.Replace(path, "{connection_id}", connID, 1)
		code, raw := e.APIRaw(t, "POST", path, c.body)
		if code != 200 || !strings.Contains(string(raw), `"score"`) {
			t.Fatalf("POST %s: %d %s", c.path, code, raw)
		}
		ref.checkAnswer(t, c.path, "POST", raw)
	}
}

func asList(v any) []any { l, _ := v.([]any); return l }
