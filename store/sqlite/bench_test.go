package sqlite_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/proserun/prose/store"
	"github.com/proserun/prose/store/sqlite"
	"github.com/proserun/prose/store/storetest"
)

// seedWorkspaces bulk-inserts n workspaces into org with one statement.
func seedWorkspaces(tb testing.TB, s *sqlite.Store, org string, n int) {
	tb.Helper()
	ctx := context.Background()
	if _, err := s.CreateOrganization(ctx, store.Organization{ID: org}); err != nil {
		tb.Fatal(err)
	}
	words := make([]string, len(storetest.BenchTitleWords))
	for i, w := range storetest.BenchTitleWords {
		words[i] = fmt.Sprintf("WHEN %d THEN '%s'", i, w)
	}
	start := storetest.Epoch.UnixMicro()
	q := fmt.Sprintf(`WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < ?)
		INSERT INTO workspaces (organization_id, id, title, title_key, create_time, update_time)
		SELECT ?, printf('w%%06d', i), printf('Workspace %%06d %%s', i, CASE i %% %d %s END), '', ? + i * 1000000, ? + i * 1000000 FROM n`,
		len(words), strings.Join(words, " "))
	if _, err := s.WriteDB().ExecContext(ctx, q, n-1, org, start, start); err != nil {
		tb.Fatal(err)
	}
	if _, err := s.WriteDB().ExecContext(ctx, `UPDATE workspaces SET title_key = lower(title) WHERE organization_id = ?`, org); err != nil {
		tb.Fatal(err)
	}
	if _, err := s.WriteDB().ExecContext(ctx, `ANALYZE`); err != nil {
		tb.Fatal(err)
	}
}

func queryPlan(tb testing.TB, s *sqlite.Store, req store.ListWorkspacesRequest) string {
	tb.Helper()
	q, args, err := s.ListWorkspacesSQL(req)
	if err != nil {
		tb.Fatal(err)
	}
	rows, err := s.ReadDB().Query("EXPLAIN QUERY PLAN "+q, args...)
	if err != nil {
		tb.Fatal(err)
	}
	defer rows.Close()
	var lines []string
	for rows.Next() {
		var id, parent, notused int
		var detail string
		if err := rows.Scan(&id, &parent, &notused, &detail); err != nil {
			tb.Fatal(err)
		}
		lines = append(lines, detail)
	}
	return strings.Join(lines, "\n")
}

// TestListWorkspacesUsesIndexes checks the list queries are index range
// scans in the requested order (no temporary B-tree sort).
func TestListWorkspacesUsesIndexes(t *testing.T) {
	s, err := sqlite.Open(t.Context(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	seedWorkspaces(t, s, "bench", 2000)
	for _, tc := range []struct {
		orderBy, index string
	}{
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
		// The page after the token is a range of the index, not a scan
		// from its start.
		if !strings.Contains(plan, "USING INDEX "+tc.index+" (organization_id=? AND (") || strings.Contains(plan, "TEMP B-TREE") {
			t.Errorf("order_by %q: plan does not use %s in order:\n%s", tc.orderBy, tc.index, plan)
		}
	}
}

// go test -run '^$' -bench ListWorkspaces -benchtime 2s ./store/sqlite/
func BenchmarkListWorkspaces(b *testing.B) {
	s, err := sqlite.Open(context.Background(), b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	seedWorkspaces(b, s, "bench", storetest.BenchWorkspaces)
	storetest.BenchListWorkspaces(b, s, "bench", func(req store.ListWorkspacesRequest) {
		b.Logf("filter=%q token=%v\n%s", store.FilterKey(req.Filter), req.PageToken != "", queryPlan(b, s, req))
	})
}
