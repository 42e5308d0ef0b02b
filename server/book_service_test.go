package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/fieldmaskpb"

	bookv1 "github.com/proserun/prose/gen/prose/book/v1"
	"github.com/proserun/prose/internal/books"
	"github.com/proserun/prose/server"
	"github.com/proserun/prose/server/transport"
)

// bookClient starts a gRPC server with the book service over reg on an
// in-memory listener and returns a client connected to it.
func bookClient(t *testing.T, reg *books.Registry) (bookv1.BookServiceClient, *grpc.ClientConn) {
	t.Helper()
	lis := bufconn.Listen(1 << 20)
	s := grpc.NewServer()
	bookv1.RegisterBookServiceServer(s, server.NewBookService(reg))
	go func() { _ = s.Serve(lis) }()
	t.Cleanup(s.Stop)
	conn, err := grpc.NewClient("passthrough:///bufnet",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return bookv1.NewBookServiceClient(conn), conn
}

func wantCode(t *testing.T, what string, err error, code codes.Code, reason transport.ErrorReason) {
	t.Helper()
	st, _ := status.FromError(err)
	if st.Code() != code {
		t.Errorf("%s: code = %v (%v), want %v", what, st.Code(), err, code)
		return
	}
	if reason != 0 && transport.ReasonOf(err) != reason {
		t.Errorf("%s: reason = %q, want %q", what, transport.Reason(err), transport.ReasonName(reason))
	}
}

// manyBooks returns n built-in books named b000 … with two versions each.
func manyBooks(n int) []*books.Builtin {
	var out []*books.Builtin
	for i := range n {
		for _, v := range []string{"1.9.0", "1.10.0"} {
			out = append(out, &books.Builtin{Book: &bookv1.Book{
				Name: fmt.Sprintf("b%03d", i), Version: v, Tags: []string{fmt.Sprintf("t%d", i%3)}, Hidden: i%2 == 1,
			}})
		}
	}
	return out
}

func TestBookServiceList(t *testing.T) {
	ctx := context.Background()
	c, _ := bookClient(t, books.NewRegistry(books.WithBuiltins(manyBooks(60)...)))

	// Default page size 50; the pages together are everything, in order.
	var got []string
	token := ""
	pages := 0
	for {
		resp, err := c.ListBooks(ctx, &bookv1.ListBooksRequest{PageToken: token})
		if err != nil {
			t.Fatal(err)
		}
		pages++
		if pages == 1 && len(resp.GetBooks()) != 50 {
			t.Errorf("first page has %d books, want 50", len(resp.GetBooks()))
		}
		for _, b := range resp.GetBooks() {
			got = append(got, b.GetName()+"@"+b.GetVersion())
		}
		if token = resp.GetNextPageToken(); token == "" {
			break
		}
	}
	if len(got) != 120 || pages != 3 || got[0] != "b000@1.9.0" || got[1] != "b000@1.10.0" || got[119] != "b059@1.10.0" {
		t.Errorf("listed %d books in %d pages: first %v, last %v", len(got), pages, got[:2], got[len(got)-1])
	}

	// Above 1000 is coerced; negative is rejected.
	resp, err := c.ListBooks(ctx, &bookv1.ListBooksRequest{PageSize: 5000})
	if err != nil || len(resp.GetBooks()) != 120 || resp.GetNextPageToken() != "" {
		t.Errorf("page_size 5000: %d books, token %q, err %v", len(resp.GetBooks()), resp.GetNextPageToken(), err)
	}
	_, err = c.ListBooks(ctx, &bookv1.ListBooksRequest{PageSize: -1})
	wantCode(t, "negative page_size", err, codes.InvalidArgument, server.ReasonInvalidPageSize)

	// Latest: one per name.
	latest, err := c.ListLatestBooks(ctx, &bookv1.ListLatestBooksRequest{PageSize: 1000})
	if err != nil || len(latest.GetBooks()) != 60 || latest.GetBooks()[0].GetVersion() != "1.10.0" {
		t.Errorf("latest: %d books, err %v", len(latest.GetBooks()), err)
	}

	// Filter, and a token bound to its filter.
	f, err := c.ListLatestBooks(ctx, &bookv1.ListLatestBooksRequest{Filter: `tags:"t0" AND hidden = false`, PageSize: 3})
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range f.GetBooks() {
		if b.GetHidden() || b.GetTags()[0] != "t0" {
			t.Errorf("filtered book %v", b)
		}
	}
	if len(f.GetBooks()) != 3 || f.GetNextPageToken() == "" {
		t.Fatalf("filtered page: %d books, token %q", len(f.GetBooks()), f.GetNextPageToken())
	}
	_, err = c.ListLatestBooks(ctx, &bookv1.ListLatestBooksRequest{Filter: `tags:"t1"`, PageToken: f.GetNextPageToken()})
	wantCode(t, "token reused with another filter", err, codes.InvalidArgument, server.ReasonInvalidPageToken)
	_, err = c.ListBooks(ctx, &bookv1.ListBooksRequest{PageToken: f.GetNextPageToken()})
	wantCode(t, "token reused with another method", err, codes.InvalidArgument, server.ReasonInvalidPageToken)
	_, err = c.ListBooks(ctx, &bookv1.ListBooksRequest{PageToken: "garbage!"})
	wantCode(t, "garbage token", err, codes.InvalidArgument, server.ReasonInvalidPageToken)
	_, err = c.ListBooks(ctx, &bookv1.ListBooksRequest{Filter: `colour = "red"`})
	wantCode(t, "unknown filter field", err, codes.InvalidArgument, server.ReasonInvalidFilter)
}

func TestBookServiceGet(t *testing.T) {
	ctx := context.Background()
	c, _ := bookClient(t, books.NewRegistry())

	resp, err := c.GetBook(ctx, &bookv1.GetBookRequest{Name: books.StandardName, Version: books.StandardVersion})
	if err != nil {
		t.Fatal(err)
	}
	// the standard book's own four and the language's standard library
	nStandard := len(books.Standard(nil).Book.GetProcedures())
	if resp.GetBook().GetName() != "standard" || len(resp.GetBook().GetProcedures()) != nStandard || nStandard < 5 {
		t.Errorf("book = %v", resp.GetBook())
	}
	procs, err := c.ListBookProcedures(ctx, &bookv1.ListBookProceduresRequest{Name: "standard", Version: "1.0.0"})
	if err != nil || len(procs.GetProcedures()) != nStandard {
		t.Errorf("procedures: %d, %v", len(procs.GetProcedures()), err)
	}
	_, err = c.GetBook(ctx, &bookv1.GetBookRequest{Name: "standard", Version: "9.9.9"})
	wantCode(t, "unknown version", err, codes.NotFound, server.ReasonBookNotFound)
	_, err = c.ListBookProcedures(ctx, &bookv1.ListBookProceduresRequest{Name: "nope", Version: "1"})
	wantCode(t, "unknown book procedures", err, codes.NotFound, server.ReasonBookNotFound)
	_, err = c.GetBook(ctx, &bookv1.GetBookRequest{Name: "standard"})
	wantCode(t, "missing version", err, codes.InvalidArgument, transport.ReasonRequiredFieldMissing)
	st, _ := status.FromError(err)
	for _, d := range st.Details() {
		if br, ok := d.(*errdetails.BadRequest); ok {
			if len(br.GetFieldViolations()) != 1 || br.GetFieldViolations()[0].GetField() != "version" {
				t.Errorf("violations = %v", br.GetFieldViolations())
			}
		}
	}
	tags, err := c.ListTags(ctx, &bookv1.ListTagsRequest{})
	if err != nil || len(tags.GetTags()) != 2 || tags.GetTags()[0] != "built-in" {
		t.Errorf("tags = %v, %v", tags.GetTags(), err)
	}
}

func mailBook() *bookv1.Book {
	return &bookv1.Book{
		Name:     "acme.mail",
		Version:  "1.2.0",
		Endpoint: "https://books.example.com/mail",
		Author:   "Acme",
		Authentications: []*bookv1.Authentication{{Custom: &bookv1.CustomAuthentication{
			Id: "key", Credentials: []*bookv1.Credential{{Id: "api_key", Type: bookv1.CredentialType_CredentialTypeSensitiveText}},
		}}},
		Procedures: []*bookv1.Procedure{{
			Id:                 "send_email",
			Signature:          books.Signature("send an email to a recipient"),
			ConnectionRequired: bookv1.ConnectionRequired_Always,
		}},
	}
}

func TestBookServiceWorkspaceBooks(t *testing.T) {
	ctx := context.Background()
	c, _ := bookClient(t, books.NewRegistry())
	const org, ws = "org1", "ws1"

	created, err := c.CreateWorkspaceBook(ctx, &bookv1.CreateWorkspaceBookRequest{OrganizationId: org, WorkspaceId: ws, Book: mailBook(), RequestId: "r-1"})
	if err != nil {
		t.Fatal(err)
	}
	if created.GetName() != "acme.mail" || created.GetEndpoint() != "https://books.example.com/mail" {
		t.Errorf("created = %v", created)
	}
	// Idempotent retry; a second registration without the id conflicts.
	if _, err := c.CreateWorkspaceBook(ctx, &bookv1.CreateWorkspaceBookRequest{OrganizationId: org, WorkspaceId: ws, Book: mailBook(), RequestId: "r-1"}); err != nil {
		t.Errorf("retry with same request_id: %v", err)
	}
	_, err = c.CreateWorkspaceBook(ctx, &bookv1.CreateWorkspaceBookRequest{OrganizationId: org, WorkspaceId: ws, Book: mailBook()})
	wantCode(t, "duplicate", err, codes.AlreadyExists, server.ReasonBookAlreadyExists)
	_, err = c.CreateWorkspaceBook(ctx, &bookv1.CreateWorkspaceBookRequest{OrganizationId: org, WorkspaceId: ws, Book: &bookv1.Book{Name: "x"}})
	wantCode(t, "missing version and endpoint", err, codes.InvalidArgument, transport.ReasonRequiredFieldMissing)
	bad := mailBook()
	bad.Name, bad.Endpoint = "other", "ftp://x"
	_, err = c.CreateWorkspaceBook(ctx, &bookv1.CreateWorkspaceBookRequest{OrganizationId: org, WorkspaceId: ws, Book: bad})
	wantCode(t, "bad endpoint", err, codes.InvalidArgument, server.ReasonInvalidBook)

	list, err := c.ListWorkspaceBooks(ctx, &bookv1.ListWorkspaceBooksRequest{OrganizationId: org, WorkspaceId: ws})
	if err != nil || len(list.GetBooks()) != 2 || list.GetBooks()[0].GetName() != "acme.mail" || list.GetBooks()[1].GetName() != "standard" {
		t.Errorf("workspace books = %v, %v", list.GetBooks(), err)
	}
	other, err := c.ListWorkspaceBooks(ctx, &bookv1.ListWorkspaceBooksRequest{OrganizationId: org, WorkspaceId: "ws2"})
	if err != nil || len(other.GetBooks()) != 1 {
		t.Errorf("other workspace sees %d books, %v", len(other.GetBooks()), err)
	}
	// The global catalog does not show workspace books.
	_, err = c.GetBook(ctx, &bookv1.GetBookRequest{Name: "acme.mail", Version: "1.2.0"})
	wantCode(t, "workspace book in global catalog", err, codes.NotFound, server.ReasonBookNotFound)

	procs, err := c.ListWorkspaceBookProcedures(ctx, &bookv1.ListWorkspaceBookProceduresRequest{OrganizationId: org, WorkspaceId: ws, Name: "acme.mail", Version: "1.2.0"})
	if err != nil || len(procs.GetProcedures()) != 1 {
		t.Errorf("workspace procedures: %v, %v", procs.GetProcedures(), err)
	}
	procs, err = c.ListWorkspaceBookProcedures(ctx, &bookv1.ListWorkspaceBookProceduresRequest{OrganizationId: org, WorkspaceId: ws, Name: "standard", Version: "1.0.0"})
	if n := len(books.Standard(nil).Book.GetProcedures()); err != nil || len(procs.GetProcedures()) != n {
		t.Errorf("built-in procedures in workspace: %d, want %d, %v", len(procs.GetProcedures()), n, err)
	}
	_, err = c.ListWorkspaceBookProcedures(ctx, &bookv1.ListWorkspaceBookProceduresRequest{OrganizationId: org, WorkspaceId: "ws2", Name: "acme.mail", Version: "1.2.0"})
	wantCode(t, "procedures from another workspace", err, codes.NotFound, server.ReasonBookNotFound)

	// Update with a mask: only the masked fields change.
	upd, err := c.UpdateWorkspaceBook(ctx, &bookv1.UpdateWorkspaceBookRequest{
		OrganizationId: org, WorkspaceId: ws, Name: "acme.mail", Version: "1.2.0",
		Book:       &bookv1.Book{Endpoint: "https://new.example.com/mail", Author: "ignored", Tags: []string{"email"}},
		UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"endpoint", "tags"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if upd.GetEndpoint() != "https://new.example.com/mail" || upd.GetAuthor() != "Acme" || len(upd.GetTags()) != 1 || len(upd.GetProcedures()) != 1 {
		t.Errorf("updated = %v", upd)
	}
	// Without a mask: the fields set.
	upd, err = c.UpdateWorkspaceBook(ctx, &bookv1.UpdateWorkspaceBookRequest{
		OrganizationId: org, WorkspaceId: ws, Name: "acme.mail", Version: "1.2.0", Book: &bookv1.Book{DisplayName: "Acme Mail"},
	})
	if err != nil || upd.GetDisplayName() != "Acme Mail" || upd.GetEndpoint() != "https://new.example.com/mail" {
		t.Errorf("updated without mask = %v, %v", upd, err)
	}
	_, err = c.UpdateWorkspaceBook(ctx, &bookv1.UpdateWorkspaceBookRequest{
		OrganizationId: org, WorkspaceId: ws, Name: "acme.mail", Version: "1.2.0", Book: &bookv1.Book{},
		UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"colour"}},
	})
	wantCode(t, "bad mask", err, codes.InvalidArgument, server.ReasonInvalidUpdateMask)
	_, err = c.UpdateWorkspaceBook(ctx, &bookv1.UpdateWorkspaceBookRequest{
		OrganizationId: org, WorkspaceId: ws, Name: "acme.mail", Version: "1.2.0", Book: &bookv1.Book{Version: "2.0.0"},
	})
	wantCode(t, "version change", err, codes.InvalidArgument, server.ReasonInvalidBook)
	_, err = c.UpdateWorkspaceBook(ctx, &bookv1.UpdateWorkspaceBookRequest{
		OrganizationId: org, WorkspaceId: ws, Name: "nope", Version: "1", Book: &bookv1.Book{Author: "x"},
	})
	wantCode(t, "update unknown", err, codes.NotFound, server.ReasonBookNotFound)
	_, err = c.UpdateWorkspaceBook(ctx, &bookv1.UpdateWorkspaceBookRequest{
		OrganizationId: org, WorkspaceId: ws, Name: "standard", Version: "1.0.0", Book: &bookv1.Book{Author: "x"},
	})
	wantCode(t, "update built-in", err, codes.FailedPrecondition, server.ReasonBuiltinBookChanged)

	// Delete.
	if _, err := c.DeleteWorkspaceBook(ctx, &bookv1.DeleteWorkspaceBookRequest{OrganizationId: org, WorkspaceId: ws, Name: "acme.mail", Version: "1.2.0"}); err != nil {
		t.Fatal(err)
	}
	_, err = c.DeleteWorkspaceBook(ctx, &bookv1.DeleteWorkspaceBookRequest{OrganizationId: org, WorkspaceId: ws, Name: "acme.mail", Version: "1.2.0"})
	wantCode(t, "delete again", err, codes.NotFound, server.ReasonBookNotFound)
	if _, err := c.DeleteWorkspaceBook(ctx, &bookv1.DeleteWorkspaceBookRequest{OrganizationId: org, WorkspaceId: ws, Name: "acme.mail", Version: "1.2.0", AllowMissing: true}); err != nil {
		t.Errorf("delete again with allow_missing: %v", err)
	}
	_, err = c.DeleteWorkspaceBook(ctx, &bookv1.DeleteWorkspaceBookRequest{OrganizationId: org, WorkspaceId: ws, Name: "standard", Version: "1.0.0"})
	wantCode(t, "delete built-in", err, codes.FailedPrecondition, server.ReasonBuiltinBookChanged)
	_, err = c.ListWorkspaceBooks(ctx, &bookv1.ListWorkspaceBooksRequest{WorkspaceId: ws})
	wantCode(t, "missing organization", err, codes.InvalidArgument, transport.ReasonRequiredFieldMissing)
}

// TestBookServiceHTTP goes through a grpc-gateway mux over the gRPC client
// connection: the documented paths, a dotted book name and version in the
// path, and the enum names in JSON.
func TestBookServiceHTTP(t *testing.T) {
	ctx := context.Background()
	_, conn := bookClient(t, books.NewRegistry())
	mux := runtime.NewServeMux(runtime.WithMarshalerOption(runtime.MIMEWildcard, &runtime.JSONPb{
		MarshalOptions:   protojson.MarshalOptions{UseProtoNames: true},
		UnmarshalOptions: protojson.UnmarshalOptions{DiscardUnknown: false},
	}))
	if err := bookv1.RegisterBookServiceHandler(ctx, mux, conn); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(mux)
	defer srv.Close()

	do := func(method, path, body string) (int, map[string]any) {
		t.Helper()
		var rd io.Reader
		if body != "" {
			rd = strings.NewReader(body)
		}
		req, _ := http.NewRequestWithContext(ctx, method, srv.URL+path, rd)
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var m map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&m)
		return resp.StatusCode, m
	}

	const ws = "/api/v1/organizations/o1/workspaces/w1/books"
	code, m := do("POST", ws, `{"name": "acme.mail", "version": "1.2.0", "endpoint": "https://books.example.com/mail",
		"authentications": [{"oauth": {"provider": "OAuthProviderGoogle", "flows": ["OAuthFlowAuthorizationCode"]}}],
		"procedures": [{"id": "send_email", "connection_required": "Always",
		  "inputs": [{"noun_phrases": {"noun_phrases": [{"head": "recipient"}]}, "type": {"scalar_type": "ConceptScalarTypeText"}}]}]}`)
	if code != http.StatusOK {
		t.Fatalf("POST: %d %v", code, m)
	}

	code, m = do("GET", ws+"/acme.mail/1.2.0/procedures", "")
	procs, _ := m["procedures"].([]any)
	if code != http.StatusOK || len(procs) != 1 {
		t.Fatalf("GET procedures: %d %v", code, m)
	}
	p := procs[0].(map[string]any)
	typ := p["inputs"].([]any)[0].(map[string]any)["type"].(map[string]any)
	if p["connection_required"] != "Always" || typ["scalar_type"] != "ConceptScalarTypeText" {
		t.Errorf("procedure JSON = %v", p)
	}

	code, m = do("GET", ws, "")
	list, _ := m["books"].([]any)
	if code != http.StatusOK || len(list) != 2 {
		t.Fatalf("GET workspace books: %d %v", code, m)
	}
	oauth := list[0].(map[string]any)["authentications"].([]any)[0].(map[string]any)["oauth"].(map[string]any)
	if oauth["provider"] != "OAuthProviderGoogle" || oauth["flows"].([]any)[0] != "OAuthFlowAuthorizationCode" {
		t.Errorf("oauth JSON = %v", oauth)
	}

	code, m = do("PATCH", ws+"/acme.mail/1.2.0?update_mask=author", `{"author": "Acme"}`)
	if code != http.StatusOK || m["author"] != "Acme" || m["endpoint"] != "https://books.example.com/mail" {
		t.Errorf("PATCH: %d %v", code, m)
	}

	for _, path := range []string{"/api/v1/books", "/api/v1/books:latest", "/api/v1/tags", "/api/v1/books/standard/1.0.0", "/api/v1/books/standard/1.0.0/procedures"} {
		if code, m := do("GET", path, ""); code != http.StatusOK {
			t.Errorf("GET %s: %d %v", path, code, m)
		}
	}
	if code, _ := do("GET", "/api/v1/books/standard/1.0.0", ""); code != http.StatusOK {
		t.Errorf("GET book: %d", code)
	}
	if code, _ := do("GET", "/api/v1/books/acme.mail/1.2.0", ""); code != http.StatusNotFound {
		t.Errorf("GET workspace book globally: %d, want 404", code)
	}
	if code, _ := do("GET", "/api/v1/books?page_size=-1", ""); code != http.StatusBadRequest {
		t.Errorf("negative page_size: %d, want 400", code)
	}

	code, _ = do("DELETE", ws+"/acme.mail/1.2.0", "")
	if code != http.StatusOK {
		t.Errorf("DELETE: %d", code)
	}
	if code, _ := do("GET", ws+"/acme.mail/1.2.0/procedures", ""); code != http.StatusNotFound {
		t.Errorf("after DELETE: %d, want 404", code)
	}
}
