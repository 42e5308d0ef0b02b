package storetest

import (
	"context"
	"testing"

	"github.com/proserun/prose/store"
	"github.com/proserun/prose/store/sqlfilter"
)

// BenchWorkspaces is the number of workspaces the list benchmarks seed.
const BenchWorkspaces = 100_000

// BenchTitleWords are cycled through the seeded titles ("Workspace 000042
// sales"); the filter title:"sales" matches one row in five.
var BenchTitleWords = []string{"sales", "marketing", "finance", "support", "operations"}

// BenchPageSize is the page size of the list benchmarks.
const BenchPageSize = 50

// BenchListWorkspaces runs the ListWorkspaces benchmarks on a store whose
// organization org holds BenchWorkspaces seeded workspaces: the first page
// and page 200, without and with a title filter. explain, when not nil, is
// called with each request once (to log its query plan).
func BenchListWorkspaces(b *testing.B, st store.Store, org string, explain func(req store.ListWorkspacesRequest)) {
	ctx := context.Background()
	title, err := sqlfilter.Workspaces.Parse(`title:"sales"`)
	if err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name   string
		filter store.Filter
		page   int
	}{
		{"first_page", nil, 1},
		{"page_200", nil, 200},
		{"first_page_title_filter", title, 1},
		{"page_200_title_filter", title, 200},
	} {
		req := store.ListWorkspacesRequest{OrganizationID: org, Filter: bc.filter, PageSize: BenchPageSize}
		// Walk to the wanted page once (not timed).
		for range bc.page - 1 {
			p, err := st.ListWorkspaces(ctx, req)
			if err != nil {
				b.Fatal(err)
			}
			if p.NextPageToken == "" {
				b.Fatalf("%s: ran out of pages", bc.name)
			}
			req.PageToken = p.NextPageToken
		}
		if explain != nil {
			explain(req)
		}
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				p, err := st.ListWorkspaces(ctx, req)
				if err != nil {
					b.Fatal(err)
				}
				if len(p.Items) != BenchPageSize {
					b.Fatalf("page has %d items", len(p.Items))
				}
			}
		})
	}
}
