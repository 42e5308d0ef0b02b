package server_test

import (
	"context"
	"testing"

	"github.com/pressly/goose/v3"

	"github.com/proserun/prose/internal/books"
	"github.com/proserun/prose/server/app"
	"github.com/proserun/prose/server/testenv"
	"github.com/proserun/prose/store"
	"github.com/proserun/prose/store/migratetest"
)

// TestCatalogBackfillOfBooksBeforeSearch: a book registered before
// migration 00029 (the catalog index) has no index rows after the upgrade;
// the server indexes it at start, so search finds it, and a second start
// indexes nothing again.
func TestCatalogBackfillOfBooksBeforeSearch(t *testing.T) {
	migratetest.ForEachBackend(t, func(t *testing.T, b migratetest.Backend) {
		ctx := context.Background()
		if err := b.MigrateTo(ctx, goose.MaxVersion); err != nil {
			t.Fatal(err)
		}
		st, err := b.Open(ctx)
		if err != nil {
			t.Fatal(err)
		}
		email := "owner-" + store.NewID() + "@example.test"
		init, err := app.Bootstrap(ctx, st, app.InitOptions{Organization: "Acme", Email: email, Workspace: "Ops"})
		if err != nil {
			t.Fatal(err)
		}
		ws := books.Workspace{OrganizationID: init.OrganizationID, WorkspaceID: init.WorkspaceID}
		row, err := app.EncodeBook(ws, searchBook("aquarium", "Feeds the zebrafish",
			searchProc("feed", "feed the fish", "Drops flakes into the tank", "pellets")), "")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.CreateWorkspaceBook(ctx, row); err != nil {
			t.Fatal(err)
		}
		st.Close()
		// The database as a server before 00029 left it, upgraded: the
		// book's row without index rows.
		if err := b.Apply(ctx, 29, false); err != nil {
			t.Fatal(err)
		}
		if err := b.Apply(ctx, 29, true); err != nil {
			t.Fatal(err)
		}
		st, err = b.Open(ctx)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		if left, err := st.ListUnindexedWorkspaceBooks(ctx, store.WorkspaceBookKey{}, 10); err != nil || len(left) != 1 {
			t.Fatalf("before the start: %d unindexed, %v", len(left), err)
		}

		cfg := testenv.Config(t)
		cfg.Store = st
		e, stop := startApp(t, cfg, init, email)
		m := e.API(t, "POST", e.WsPath()+"/books:search", `{"query": "zebrafish"}`, 200)
		if res := asList(m["results"]); len(res) != 1 || testenv.Field(testenv.Field(res[0], "book"), "name") != "aquarium" {
			t.Errorf("search for the old book: %v", m)
		}
		m = e.API(t, "POST", e.WsPath()+"/procedures:search", `{"query": "pellets"}`, 200)
		if res := asList(m["results"]); len(res) != 1 || testenv.Field(testenv.Field(res[0], "procedure"), "id") != "feed" {
			t.Errorf("search for the old book's procedure: %v", m)
		}
		stop()

		// Indexed once: another start (or replica) finds nothing to do, and
		// the book is found once.
		n, err := app.NewDBBooks(st).BackfillCatalog(ctx, func(store.WorkspaceBook, error) { t.Error("a descriptor did not decode") })
		if err != nil || n != 0 {
			t.Errorf("second backfill: %d, %v", n, err)
		}
		e, _ = startApp(t, cfg, init, email)
		m = e.API(t, "POST", e.WsPath()+"/books:search", `{"query": "zebrafish tank"}`, 200)
		if res := asList(m["results"]); len(res) != 1 {
			t.Errorf("after a second start: %v", m)
		}
	})
}
