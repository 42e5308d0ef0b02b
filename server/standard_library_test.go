package server_test

import (
	"slices"
	"testing"

	bookv1 "github.com/proserun/prose/gen/prose/book/v1"
	"github.com/proserun/prose/server/testenv"
)

// TestStandardLibraryInCatalog: the language's standard library (split,
// trim, join, sort, …) is listed by the catalog search as procedures of
// the built-in `standard` book, in a workspace and globally, over HTTP and
// gRPC.
func TestStandardLibraryInCatalog(t *testing.T) {
	e := newTestEnv(t)
	org, ws := e.Init.OrganizationID, e.Init.WorkspaceID
	ids := func(m map[string]any) []string {
		var out []string
		for _, r := range asList(m["results"]) {
			if testenv.Field(r, "book_name") == "standard" {
				out = append(out, testenv.Field(testenv.Field(r, "procedure"), "id").(string))
			}
		}
		return out
	}
	forEachTransport(t, func(t *testing.T, tr apiTransport) {
		for q, want := range map[string]string{
			"split a text by a separator":  "split_text_by",
			"trim spaces":                  "trim_text",
			"join a list with a separator": "join_list_with",
			"sort a list":                  "sort_list",
			"unique duplicates":            "deduplicate_list",
		} {
			m := e.mustCall(t, tr, "/prose.book.v1.BookService/SearchWorkspaceBookProcedures",
				&bookv1.SearchWorkspaceBookProceduresRequest{OrganizationId: org, WorkspaceId: ws, Query: q, TopK: 5})
			if got := ids(m); !slices.Contains(got, want) {
				t.Errorf("workspace search %q: standard procedures %q, want %s among them", q, got, want)
			}
			g := e.mustCall(t, tr, "/prose.book.v1.BookService/SearchBookProcedures", &bookv1.SearchBookProceduresRequest{Query: q, TopK: 5})
			if got := ids(g); !slices.Contains(got, want) {
				t.Errorf("global search %q: standard procedures %q, want %s among them", q, got, want)
			}
		}
	})
}
