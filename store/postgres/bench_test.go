package postgres_test

import (
	"context"
	"strings"
	"testing"

	"github.com/proserun/prose/store"
	"github.com/proserun/prose/store/postgres"
	"github.com/proserun/prose/store/storetest"
)

func seedWorkspaces(tb testing.TB, s *postgres.Store, org string, n int) {
	tb.Helper()
	ctx := context.Background()
	if _, err := s.CreateOrganization(ctx, store.Organization{ID: org}); err != nil {
		tb.Fatal(err)
	}
	if _, err := s.Pool().Exec(ctx, `INSERT INTO workspaces (organization_id, id, title, title_key, create_time, update_time)
		SELECT $1, 'w' || lpad(i::text, 6, '0'), 'Workspace ' || lpad(i::text, 6, '0') || ' ' || ($2::text[])[i % cardinality($2::text[]) + 1], '',
			$3::timestamptz + i * interval '1 second', $3::timestamptz + i * interval '1 second'
		FROM generate_series(0, $4 - 1) AS i`, org, storetest.BenchTitleWords, storetest.Epoch, n); err != nil {
		tb.Fatal(err)
	}
	if _, err := s.Pool().Exec(ctx, `UPDATE workspaces SET title_key = lower(title) WHERE organization_id = $1`, org); err != nil {
		tb.Fatal(err)
	}
	if _, err := s.Pool().Exec(ctx, `ANALYZE`); err != nil {
		tb.Fatal(err)
	}
}

func queryPlan(tb testing.TB, s *postgres.Store, req store.ListWorkspacesRequest) string {
	tb.Helper()
	q, args, err := s.ListWorkspacesSQL(req)
	if err != nil {
		tb.Fatal(err)
	}
	rows, err := s.SQLDB().Query("EXPLAIN ANALYZE "+q, args...)
	if err != nil {
		tb.Fatal(err)
	}
	defer rows.Close()
	var lines []string
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			tb.Fatal(err)
		}
		lines = append(lines, line)
	}
	return strings.Join(lines, "\n")
}

// TestListWorkspacesUsesIndexes checks that with enough rows the planner
// serves each order_by from its index without a sort.
func TestListWorkspacesUsesIndexes(t *testing.T) {
	skipWithoutServer(t)
	s, err := postgres.Open(t.Context(), tempDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	seedWorkspaces(t, s, "bench", 20000)
	for _, tc := range []struct{ orderBy, index string }{
		{"", "workspaces_create_time"},
		{"update_time", "workspaces_update_time"},
		{"title desc", "workspaces_title_key"},
	} {
		ob, err := store.ParseOrderBy(tc.orderBy, store.WorkspaceOrdering)
		if err != nil {
			t.Fatal(err)
		}
		req := store.ListWorkspacesRequest{OrganizationID: "bench", OrderBy: ob, PageSize: 10}
		p, err := s.ListWorkspaces(t.Context(), req)
		if err != nil {
			t.Fatal(err)
		}
		req.PageToken = p.NextPageToken
		plan := queryPlan(t, s, req)
		if !strings.Contains(plan, "using "+tc.index) || strings.Contains(plan, "Sort") {
			t.Errorf("order_by %q: plan does not use %s in order:\n%s", tc.orderBy, tc.index, plan)
		}
	}
}

// PROSE_TEST_POSTGRES_URL=postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable \
// go test -run '^$' -bench ListWorkspaces -benchtime 2s ./store/postgres/
func BenchmarkListWorkspaces(b *testing.B) {
	if testingURL() == "" {
		b.Skip("PROSE_TEST_POSTGRES_URL not set: skipping the PostgreSQL store benchmarks")
	}
	s, err := postgres.Open(context.Background(), tempDatabase(b))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	seedWorkspaces(b, s, "bench", storetest.BenchWorkspaces)
	storetest.BenchListWorkspaces(b, s, "bench", func(req store.ListWorkspacesRequest) {
		b.Logf("filter=%q token=%v\n%s", store.FilterKey(req.Filter), req.PageToken != "", queryPlan(b, s, req))
	})
}
