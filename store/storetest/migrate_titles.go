package storetest

import (
	"context"
	"slices"
	"testing"

	"github.com/proserun/prose/store"
)

// TitleKeyMigration checks migration 00013 on a backend: old is a store at
// migration 12; makeOld writes title_key as 00010 left it (lower(title))
// for every workspace; migrate applies the remaining migrations and returns
// the store to read with. The workspaces written before must then sort as
// order_by=title sorts new ones (Unicode folding), page by page.
func TitleKeyMigration(t *testing.T, old store.Store, makeOld func(context.Context) error, migrate func(context.Context) store.Store) {
	t.Helper()
	ctx := t.Context()
	if _, err := old.CreateOrganization(ctx, store.Organization{ID: "acme", DisplayName: "Acme"}); err != nil {
		t.Fatal(err)
	}
	titles := map[string]string{"w1": "Zebra", "w2": "straße", "w3": "ÉCOLE", "w4": "Éclair", "w5": "apac", "w6": "STRASSE"}
	for id, title := range titles {
		if _, err := old.CreateWorkspace(ctx, store.Workspace{OrganizationID: "acme", ID: id, Title: title}); err != nil {
			t.Fatal(err)
		}
	}
	if err := makeOld(ctx); err != nil {
		t.Fatal(err)
	}
	list := func(st store.Store, size int) []string {
		var got []string
		tok := ""
		for {
			p, err := st.ListWorkspaces(ctx, store.ListWorkspacesRequest{OrganizationID: "acme", PageSize: size, PageToken: tok,
				OrderBy: store.OrderBy{{Field: "title"}}})
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range p.Items {
				got = append(got, w.ID)
			}
			if tok = p.NextPageToken; tok == "" {
				return got
			}
		}
	}
	// Before 00013: ASCII folding only, É after every ASCII letter.
	if got, want := list(old, 100), []string{"w5", "w6", "w2", "w1", "w4", "w3"}; !slices.Equal(got, want) {
		t.Fatalf("before the migration: %v, want %v (the keys of 00010)", got, want)
	}
	st := migrate(ctx)
	want := []string{"w5", "w4", "w3", "w2", "w6", "w1"} // apac, Éclair, ÉCOLE, straße, STRASSE, Zebra
	for _, size := range []int{100, 1, 2} {
		if got := list(st, size); !slices.Equal(got, want) {
			t.Errorf("after the migration, pages of %d: %v, want %v", size, got, want)
		}
	}
}
