package server_test

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	bookv1 "github.com/proserun/prose/gen/prose/book/v1"
	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/server/testenv"
)

// conceptNames returns the noun phrases of each concept of a list answer.
func conceptNames(m map[string]any) []string {
	var out []string
	for _, c := range asList(m["concepts"]) {
		var words []string
		for _, np := range asList(testenv.Field(c, "noun_phrases.noun_phrases")) {
			for _, w := range asList(testenv.Field(np, "modifiers")) {
				words = append(words, fmt.Sprint(w))
			}
			words = append(words, fmt.Sprint(testenv.Field(np, "head")))
		}
		out = append(out, strings.Join(words, " "))
	}
	return out
}

// TestBookVersionsAndConcepts: the reference's book version and concept
// reads, over HTTP and gRPC: the versions of a built-in book, the concepts
// of a built-in book and of a workspace's book (configurations, then
// procedure inputs and outputs, each once), NOT_FOUND for unknown books.
func TestBookVersionsAndConcepts(t *testing.T) {
	e := newTestEnv(t)
	send := searchProc("send", "send an invoice", "Sends it")
	recipient := &bookv1.Concept{
		NounPhrases: &bookv1.NounPhrases{NounPhrases: []*platformv1.NounPhrase{{Modifiers: []string{"billing"}, Head: "recipient"}}},
		Description: "Who receives the invoice",
	}
	send.Inputs = []*bookv1.Concept{recipient}
	send.Outputs = []*bookv1.Concept{recipient} // the same name: listed once
	raw, err := protojson.Marshal(searchBook("mailer", "Sends invoices", send))
	if err != nil {
		t.Fatal(err)
	}
	e.API(t, "POST", e.booksPath(), string(raw), 200)
	org, ws := e.Init.OrganizationID, e.Init.WorkspaceID

	forEachTransport(t, func(t *testing.T, tr apiTransport) {
		m := e.mustCall(t, tr, "/prose.book.v1.BookService/ListBookVersions", &bookv1.ListBookVersionsRequest{Name: "http"})
		if got := fmt.Sprint(m["versions"]); got != "[1.0.0]" {
			t.Errorf("versions of http = %s", got)
		}
		if _, err := e.call(t, tr, "/prose.book.v1.BookService/ListBookVersions", &bookv1.ListBookVersionsRequest{Name: "mailer"}); status.Code(err) != codes.NotFound {
			t.Errorf("versions of a workspace's book in the global catalog: %v", err)
		}
		m = e.mustCall(t, tr, "/prose.book.v1.BookService/ListBookConcepts", &bookv1.ListBookConceptsRequest{Name: "http", Version: "1.0.0"})
		names := conceptNames(m)
		if len(names) < 3 || names[0] != "base url" || names[len(names)-1] != "response" || !strings.Contains(strings.Join(names, ","), ",url,method,") {
			t.Errorf("concepts of http: %q", names)
		}
		m = e.mustCall(t, tr, "/prose.book.v1.BookService/ListWorkspaceBookConcepts",
			&bookv1.ListWorkspaceBookConceptsRequest{OrganizationId: org, WorkspaceId: ws, Name: "mailer", Version: "1.0.0"})
		if got := conceptNames(m); len(got) != 1 || got[0] != "billing recipient" || testenv.Field(asList(m["concepts"])[0], "description") != "Who receives the invoice" {
			t.Errorf("concepts of mailer: %v", m)
		}
		// A workspace sees the built-in books' concepts too.
		m = e.mustCall(t, tr, "/prose.book.v1.BookService/ListWorkspaceBookConcepts",
			&bookv1.ListWorkspaceBookConceptsRequest{OrganizationId: org, WorkspaceId: ws, Name: "http", Version: "1.0.0"})
		if len(conceptNames(m)) != len(names) {
			t.Errorf("http's concepts in the workspace: %v", m)
		}
		for _, c := range []struct {
			rpc  string
			req  proto.Message
			want codes.Code
		}{
			{"ListBookConcepts", &bookv1.ListBookConceptsRequest{Name: "mailer", Version: "1.0.0"}, codes.NotFound},
			{"ListBookConcepts", &bookv1.ListBookConceptsRequest{Name: "http", Version: "9.9.9"}, codes.NotFound},
			{"ListWorkspaceBookConcepts", &bookv1.ListWorkspaceBookConceptsRequest{OrganizationId: org, WorkspaceId: ws, Name: "nope", Version: "1"}, codes.NotFound},
			{"ListBookVersions", &bookv1.ListBookVersionsRequest{Name: "nope"}, codes.NotFound},
		} {
			_, err := e.call(t, tr, "/prose.book.v1.BookService/"+c.rpc, c.req)
			if status.Code(err) != c.want {
				t.Errorf("%s %v: %v, want %v", c.rpc, c.req, err, c.want)
			}
		}
	})
}

// TestBookReadsFitTheReference: every book read of the reference answers
// with its JSON (each field declared by the schema, of its type and enum).
func TestBookReadsFitTheReference(t *testing.T) {
	ref := loadReference(t)
	e := newTestEnv(t)
	send := searchProc("send", "send an invoice", "Sends it")
	send.Inputs = []*bookv1.Concept{{
		NounPhrases: &bookv1.NounPhrases{NounPhrases: []*platformv1.NounPhrase{{Modifiers: []string{"billing"}, Head: "recipient"}}},
		Description: "Who receives the invoice",
	}}
	raw, _ := protojson.Marshal(searchBook("mailer", "Sends invoices", send))
	e.API(t, "POST", e.booksPath(), string(raw), 200)
	const base = "/api/v1/organizations/{organization_id}/workspaces/{workspace_id}"
	wsBase := strings.TrimSuffix(e.booksPath(), "/books")
	for _, c := range []struct{ path, refPath string }{
		{"/api/v1/books?page_size=3", "/api/v1/books"},
		{"/api/v1/books:latest", "/api/v1/books:latest"},
		{"/api/v1/books/http/1.0.0", "/api/v1/books/{name}/{version}"},
		{"/api/v1/books/http/1.0.0/procedures", "/api/v1/books/{name}/{version}/procedures"},
		{"/api/v1/tags", "/api/v1/tags"},
		{"/api/v1/books/http/versions", "/api/v1/books/{name}/versions"},
		{"/api/v1/books/http/1.0.0/concepts", "/api/v1/books/{name}/{version}/concepts"},
		{"/api/v1/books/tables/1.0.0/concepts", "/api/v1/books/{name}/{version}/concepts"},
		{wsBase + "/books", base + "/books"},
		{wsBase + "/books/mailer/1.0.0/procedures", base + "/books/{name}/{version}/procedures"},
		{wsBase + "/books/mailer/1.0.0/concepts", base + "/books/{name}/{version}/concepts"},
		{wsBase + "/books/email/1.0.0/concepts", base + "/books/{name}/{version}/concepts"},
	} {
		code, raw := e.APIRaw(t, "GET", c.path, "")
		if code != 200 || len(raw) < 20 {
			t.Fatalf("GET %s: %d %s", c.path, code, raw)
		}
		ref.checkAnswer(t, c.refPath, "GET", raw)
	}
}

// TestSearchMaxDistance: max_distance keeps the results within that
// distance of the best (1 - score/best), over HTTP and gRPC; outside [0, 1]
// it is INVALID_ARGUMENT.
func TestSearchMaxDistance(t *testing.T) {
	e := newTestEnv(t)
	raw, _ := protojson.Marshal(searchBook("mailer", "Sends email",
		searchProc("send", "send an invoice", "Sends a message"),
		searchProc("archive", "archive a message", "Moves an invoice to the archive")))
	e.API(t, "POST", e.booksPath(), string(raw), 200)
	org, ws := e.Init.OrganizationID, e.Init.WorkspaceID
	forEachTransport(t, func(t *testing.T, tr apiTransport) {
		scores := func(d float32) []float64 {
			t.Helper()
			m := e.mustCall(t, tr, "/prose.book.v1.BookService/SearchWorkspaceBookProcedures",
				&bookv1.SearchWorkspaceBookProceduresRequest{OrganizationId: org, WorkspaceId: ws, Query: "invoice", MaxDistance: d})
			var out []float64
			for _, r := range asList(m["results"]) {
				s, _ := testenv.Field(r, "score").(float64)
				out = append(out, s)
			}
			return out
		}
		all := scores(0)
		if len(all) < 2 || all[1] >= all[0] {
			t.Fatalf("a name match and a description match: %v", all)
		}
		if got := scores(1); len(got) != len(all) {
			t.Errorf("max_distance 1 keeps every result: %v of %v", got, all)
		}
		d := float32(1-all[1]/all[0]) / 2 // between the best and the second
		near := scores(d)
		if len(near) == 0 || len(near) >= len(all) {
			t.Errorf("max_distance %v: %v of %v", d, near, all)
		}
		for _, s := range near {
			if 1-s/near[0] > float64(d) {
				t.Errorf("a result beyond max_distance %v: %v", d, near)
			}
		}
		for _, bad := range []float32{-0.1, 1.5, float32(math.NaN())} {
			if tr.name == "http" && math.IsNaN(float64(bad)) {
				continue // JSON has no NaN number
			}
			for _, req := range []proto.Message{
				&bookv1.SearchWorkspaceBookProceduresRequest{OrganizationId: org, WorkspaceId: ws, Query: "x", MaxDistance: bad},
				&bookv1.SearchBooksRequest{Query: "x", MaxDistance: bad},
				&bookv1.SearchBookConceptsRequest{Query: "x", MaxDistance: bad},
			} {
				name := string(req.ProtoReflect().Descriptor().Name())
				rpc := "/prose.book.v1.BookService/" + strings.TrimSuffix(name, "Request")
				_, err := e.call(t, tr, rpc, req)
				if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "max_distance") {
					t.Errorf("%s max_distance %v: %v, want INVALID_ARGUMENT naming max_distance", rpc, bad, err)
				}
			}
		}
	})
}

// TestCatalogAndConnectionMethodsImplemented: no method of the book and
// connection services answers UNIMPLEMENTED (each is called with an empty
// request: an answer or a client error, never "not implemented").
func TestCatalogAndConnectionMethodsImplemented(t *testing.T) {
	e := newTestEnv(t)
	for _, sd := range []protoreflect.ServiceDescriptor{
		bookv1.File_prose_book_v1_book_service_proto.Services().ByName("BookService"),
		bookv1.File_prose_book_v1_connection_proto.Services().ByName("ConnectionService"),
	} {
		for i := range sd.Methods().Len() {
			md := sd.Methods().Get(i)
			rpc := "/" + string(sd.FullName()) + "/" + string(md.Name())
			_, err := e.call(t, overGRPC, rpc, dynamicpb.NewMessage(md.Input()))
			if status.Code(err) == codes.Unimplemented {
				t.Errorf("%s answers UNIMPLEMENTED: %v", rpc, err)
			}
		}
	}
}
