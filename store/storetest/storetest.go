// Package storetest is the conformance suite every store backend passes.
// Backends call Run from their tests with a function that opens a fresh,
// empty, migrated store.
package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/proserun/prose/store"
	"github.com/proserun/prose/store/pagination"
	"github.com/proserun/prose/store/sqlfilter"
)

// Opener opens a fresh, empty, migrated store with the given options; the
// backend closes it and removes its data in t.Cleanup.
type Opener func(t *testing.T, opts ...store.Option) store.Store

// Clock is a deterministic clock: every call advances it by one second.
type Clock struct{ n atomic.Int64 }

// Epoch is the first time a Clock returns.
var Epoch = time.Date(2024, 1, 1, 0, 0, 0, 123456000, time.UTC)

// Now returns the next instant.
func (c *Clock) Now() time.Time { return Epoch.Add(time.Duration(c.n.Add(1)) * time.Second) }

// Peek returns the last instant returned (without advancing).
func (c *Clock) Peek() time.Time { return Epoch.Add(time.Duration(c.n.Load()) * time.Second) }

type suite struct {
	st    store.Store
	clock *Clock
	ctx   context.Context
}

func setup(t *testing.T, open Opener) *suite {
	t.Helper()
	c := &Clock{}
	return &suite{st: open(t, store.WithClock(c.Now)), clock: c, ctx: t.Context()}
}

// Run runs the whole suite.
func Run(t *testing.T, open Opener) {
	for _, tc := range []struct {
		name string
		fn   func(t *testing.T, s *suite)
	}{
		{"Organizations", testOrganizations},
		{"Users", testUsers},
		{"Workspaces", testWorkspaces},
		{"WorkspaceReadAfterWrite", testWorkspaceReadAfterWrite},
		{"ListWorkspaces", testListWorkspaces},
		{"ListWorkspacesPaging", testListWorkspacesPaging},
		{"ListWorkspacesTitleOrder", testListWorkspacesTitleOrder},
		{"Roles", testRoles},
		{"Members", testMembers},
		{"ListWorkspaceUsers", testListWorkspaceUsers},
		{"Invitations", testInvitations},
		{"Preferences", testPreferences},
		{"APIKeys", testAPIKeys},
		{"Idempotency", testIdempotency},
		{"ConsoleSessions", testConsoleSessions},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, setup(t, open)) })
	}
	testAutomationsAndRuns(t, open)
	testRunBudgets(t, open)
	testChildRuns(t, open)
	testStateMachine(t, open)
	testRunHistory(t, open)
	testEvents(t, open)
	testFiles(t, open)
	testExceptions(t, open)
	testExceptionCounts(t, open)
	testRevisions(t, open)
	testRunAggregates(t, open)
	testWorkspaceBooks(t, open)
	testBookConnections(t, open)
	testCapabilities(t, open)
	testSchedules(t, open)
	testTriggers(t, open)
	testWebhooks(t, open)
	t.Run("SecretSealing", func(t *testing.T) { testSecretSealing(t, open) })
	testGuideEntries(t, open)
	testSafeChange(t, open)
}

// ---------------------------------------------------------------------------
// helpers

type result[T any] struct {
	v   T
	err error
}

func of[T any](v T, err error) result[T] { return result[T]{v, err} }

func (r result[T]) must(t *testing.T) T {
	t.Helper()
	if r.err != nil {
		t.Fatalf("unexpected error: %v", r.err)
	}
	return r.v
}

func noErr(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("unexpected error: %v", err)
	}
}

func wantErr(t *testing.T, err, target error, what string) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Errorf("%s: error = %v, want %v", what, err, target)
	}
}

func (s *suite) org(t *testing.T, id string) store.Organization {
	t.Helper()
	return of(s.st.CreateOrganization(s.ctx, store.Organization{ID: id, DisplayName: "Org " + id})).must(t)
}

func (s *suite) user(t *testing.T, id, name, email string) store.User {
	t.Helper()
	return of(s.st.CreateUser(s.ctx, store.User{ID: id, DisplayName: name, Email: email})).must(t)
}

func (s *suite) ws(t *testing.T, org, id, title string) store.Workspace {
	t.Helper()
	return of(s.st.CreateWorkspace(s.ctx, store.Workspace{OrganizationID: org, ID: id, Title: title})).must(t)
}

// all pages through a list, checking every page is at most size long.
func all[T any](t *testing.T, size int, list func(token string) (store.Page[T], error)) ([]T, int) {
	t.Helper()
	var out []T
	token := ""
	pages := 0
	for {
		p, err := list(token)
		if err != nil {
			t.Fatalf("list page %d: %v", pages+1, err)
		}
		pages++
		if len(p.Items) > pagination.Normalize(size) {
			t.Fatalf("page %d has %d items, page size %d", pages, len(p.Items), size)
		}
		out = append(out, p.Items...)
		if p.NextPageToken == "" {
			return out, pages
		}
		if pages > 10000 {
			t.Fatal("too many pages")
		}
		token = p.NextPageToken
	}
}

func ids[T any](xs []T, id func(T) string) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = id(x)
	}
	return out
}

func wsID(w store.Workspace) string { return w.ID }

// ---------------------------------------------------------------------------

func testOrganizations(t *testing.T, s *suite) {
	o := s.org(t, "acme")
	if o.CreateTime.IsZero() || o.CreateTime != o.UpdateTime || o.CreateTime.Location() != time.UTC {
		t.Errorf("create times = %v / %v", o.CreateTime, o.UpdateTime)
	}
	got := of(s.st.GetOrganization(s.ctx, "acme")).must(t)
	if got != o {
		t.Errorf("Get = %+v, want %+v", got, o)
	}
	_, err := s.st.CreateOrganization(s.ctx, store.Organization{ID: "acme"})
	wantErr(t, err, store.ErrAlreadyExists, "create duplicate")
	_, err = s.st.GetOrganization(s.ctx, "nope")
	wantErr(t, err, store.ErrNotFound, "get missing")

	gen := of(s.st.CreateOrganization(s.ctx, store.Organization{DisplayName: "generated"})).must(t)
	if len(gen.ID) != 20 {
		t.Errorf("generated id %q is not 20 characters", gen.ID)
	}
	s.org(t, "aaa") // newer, though first by id
	every, everyPages := all(t, 1, func(tok string) (store.Page[store.Organization], error) {
		return s.st.ListOrganizations(s.ctx, 1, tok)
	})
	if got, want := ids(every, func(o store.Organization) string { return o.ID }), []string{"acme", gen.ID, "aaa"}; !slices.Equal(got, want) || everyPages != 3 {
		t.Errorf("ListOrganizations oldest first = %v in %d pages, want %v in 3", got, everyPages, want)
	}

	o.DisplayName = "Acme Inc."
	up := of(s.st.UpdateOrganization(s.ctx, o)).must(t)
	if up.DisplayName != "Acme Inc." || !up.UpdateTime.After(o.UpdateTime) || up.CreateTime != o.CreateTime {
		t.Errorf("Update = %+v", up)
	}
	_, err = s.st.UpdateOrganization(s.ctx, store.Organization{ID: "nope"})
	wantErr(t, err, store.ErrNotFound, "update missing")

	// Built-in roles are seeded.
	roles, _ := all(t, 0, func(tok string) (store.Page[store.Role], error) {
		return s.st.ListRoles(s.ctx, "acme", "", 0, tok)
	})
	if len(roles) != len(store.BuiltinRoles) {
		t.Errorf("seeded %d roles, want %d", len(roles), len(store.BuiltinRoles))
	}

	// ListUserOrganizations.
	u := s.user(t, "ann", "Ann", "ann@example.com")
	for _, id := range []string{"o3", "o1", "o2"} {
		s.org(t, id)
		of(s.st.AddOrganizationMember(s.ctx, id, u.ID, nil)).must(t)
	}
	orgs, pages := all(t, 2, func(tok string) (store.Page[store.Organization], error) {
		return s.st.ListUserOrganizations(s.ctx, u.ID, 2, tok)
	})
	if got := ids(orgs, func(o store.Organization) string { return o.ID }); !slices.Equal(got, []string{"o1", "o2", "o3"}) || pages != 2 {
		t.Errorf("ListUserOrganizations = %v in %d pages", got, pages)
	}

	noErr(t, s.st.DeleteOrganization(s.ctx, "o1"))
	_, err = s.st.GetOrganization(s.ctx, "o1")
	wantErr(t, err, store.ErrNotFound, "get deleted")
	wantErr(t, s.st.DeleteOrganization(s.ctx, "o1"), store.ErrNotFound, "delete twice")
	if _, err := s.st.GetOrganizationMember(s.ctx, "o1", u.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("membership survived its organization: %v", err)
	}
}

func testUsers(t *testing.T, s *suite) {
	u := s.user(t, "ann", "Ann", "Ann@Example.com")
	got := of(s.st.GetUser(s.ctx, "ann")).must(t)
	if got != u {
		t.Errorf("Get = %+v, want %+v", got, u)
	}
	byEmail := of(s.st.GetUserByEmail(s.ctx, "ann@example.COM")).must(t)
	if byEmail.ID != "ann" {
		t.Errorf("GetUserByEmail = %+v", byEmail)
	}
	for name, tc := range map[string]store.User{
		"same id":         {ID: "ann", Email: "other@example.com"},
		"same email case": {ID: "bob", Email: "ANN@example.com"},
	} {
		_, err := s.st.CreateUser(s.ctx, tc)
		wantErr(t, err, store.ErrAlreadyExists, name)
	}
	_, err := s.st.GetUser(s.ctx, "nope")
	wantErr(t, err, store.ErrNotFound, "get missing")
	_, err = s.st.GetUserByEmail(s.ctx, "nope@example.com")
	wantErr(t, err, store.ErrNotFound, "get missing email")

	s.user(t, "bob", "Bob", "bob@example.com")
	u.DisplayName, u.Email = "Ann B.", "ann.b@example.com"
	up := of(s.st.UpdateUser(s.ctx, u)).must(t)
	if up.DisplayName != "Ann B." || up.Email != "ann.b@example.com" || !up.UpdateTime.After(u.UpdateTime) {
		t.Errorf("Update = %+v", up)
	}
	u.Email = "BOB@example.com"
	_, err = s.st.UpdateUser(s.ctx, u)
	wantErr(t, err, store.ErrAlreadyExists, "update to taken email")
	_, err = s.st.UpdateUser(s.ctx, store.User{ID: "nope", Email: "x@example.com"})
	wantErr(t, err, store.ErrNotFound, "update missing")

	// Deleting a creator keeps the workspace without creator.
	s.org(t, "acme")
	of(s.st.CreateWorkspace(s.ctx, store.Workspace{OrganizationID: "acme", ID: "w", Title: "W", CreatorID: "bob"})).must(t)
	noErr(t, s.st.DeleteUser(s.ctx, "bob"))
	wantErr(t, s.st.DeleteUser(s.ctx, "bob"), store.ErrNotFound, "delete twice")
	w := of(s.st.GetWorkspace(s.ctx, "acme", "w")).must(t)
	if w.CreatorID != "" || w.CreatorEmail != "" {
		t.Errorf("workspace of deleted creator = %+v", w)
	}
}

// GetWorkspace answers what the last write through the same store left,
// however often the workspace was read before it (GetWorkspace may be
// answered from memory): after an update of the workspace, of its
// creator, the deletion of its creator, of the workspace and of its
// organization.
func testWorkspaceReadAfterWrite(t *testing.T, s *suite) {
	s.org(t, "acme")
	s.user(t, "ann", "Ann", "ann@example.com")
	of(s.st.CreateWorkspace(s.ctx, store.Workspace{OrganizationID: "acme", ID: "w", Title: "W", CreatorID: "ann"})).must(t)
	s.ws(t, "acme", "v", "V")
	get := func() store.Workspace {
		t.Helper()
		of(s.st.GetWorkspace(s.ctx, "acme", "w")).must(t) // read twice: the second may be remembered
		return of(s.st.GetWorkspace(s.ctx, "acme", "w")).must(t)
	}
	if w := get(); w.Title != "W" || w.CreatorDisplayName != "Ann" {
		t.Fatalf("Get = %+v", w)
	}
	up := of(s.st.UpdateWorkspace(s.ctx, store.Workspace{OrganizationID: "acme", ID: "w", Title: "W2", Icon: "i"}, []string{"title", "icon"})).must(t)
	if w := get(); w != up || w.Title != "W2" || w.Icon != "i" {
		t.Errorf("Get after UpdateWorkspace = %+v, want %+v", w, up)
	}
	of(s.st.UpdateUser(s.ctx, store.User{ID: "ann", DisplayName: "Ann B", Email: "annb@example.com"})).must(t)
	if w := get(); w.CreatorDisplayName != "Ann B" || w.CreatorEmail != "annb@example.com" {
		t.Errorf("Get after UpdateUser = %+v", w)
	}
	noErr(t, s.st.DeleteUser(s.ctx, "ann"))
	if w := get(); w.CreatorID != "" || w.CreatorDisplayName != "" {
		t.Errorf("Get after DeleteUser = %+v", w)
	}
	noErr(t, s.st.DeleteWorkspace(s.ctx, "acme", "w"))
	_, err := s.st.GetWorkspace(s.ctx, "acme", "w")
	wantErr(t, err, store.ErrNotFound, "get after DeleteWorkspace")
	of(s.st.GetWorkspace(s.ctx, "acme", "v")).must(t)
	noErr(t, s.st.DeleteOrganization(s.ctx, "acme"))
	_, err = s.st.GetWorkspace(s.ctx, "acme", "v")
	wantErr(t, err, store.ErrNotFound, "get after DeleteOrganization")
}

func testWorkspaces(t *testing.T, s *suite) {
	s.org(t, "acme")
	s.org(t, "other")
	s.user(t, "ann", "Ann", "ann@example.com")
	w := of(s.st.CreateWorkspace(s.ctx, store.Workspace{
		OrganizationID: "acme", ID: "sales", Title: "Sales", Icon: "briefcase", IconColor: "#ff0000", CreatorID: "ann",
	})).must(t)
	if w.CreatorDisplayName != "Ann" || w.CreatorEmail != "ann@example.com" || w.CreateTime.IsZero() || w.UpdateTime != w.CreateTime {
		t.Errorf("Create = %+v", w)
	}
	if got := of(s.st.GetWorkspace(s.ctx, "acme", "sales")).must(t); got != w {
		t.Errorf("Get = %+v, want %+v", got, w)
	}
	for name, tc := range map[string]struct {
		w    store.Workspace
		want error
	}{
		"duplicate":       {store.Workspace{OrganizationID: "acme", ID: "sales", Title: "x"}, store.ErrAlreadyExists},
		"missing org":     {store.Workspace{OrganizationID: "nope", ID: "x", Title: "x"}, store.ErrNotFound},
		"missing creator": {store.Workspace{OrganizationID: "acme", ID: "x", Title: "x", CreatorID: "nope"}, store.ErrNotFound},
	} {
		_, err := s.st.CreateWorkspace(s.ctx, tc.w)
		wantErr(t, err, tc.want, name)
	}
	// Same id in another organization is another workspace.
	s.ws(t, "other", "sales", "Other sales")
	_, err := s.st.GetWorkspace(s.ctx, "other", "nope")
	wantErr(t, err, store.ErrNotFound, "get missing")

	up := of(s.st.UpdateWorkspace(s.ctx, store.Workspace{OrganizationID: "acme", ID: "sales", Title: "Sales EU", Icon: "ignored"}, []string{"title"})).must(t)
	if up.Title != "Sales EU" || up.Icon != "briefcase" || !up.UpdateTime.After(w.UpdateTime) || up.CreateTime != w.CreateTime {
		t.Errorf("Update(title) = %+v", up)
	}
	up = of(s.st.UpdateWorkspace(s.ctx, store.Workspace{OrganizationID: "acme", ID: "sales", Title: "T", Icon: "i", IconColor: "c"}, nil)).must(t)
	if up.Title != "T" || up.Icon != "i" || up.IconColor != "c" {
		t.Errorf("Update(all) = %+v", up)
	}
	_, err = s.st.UpdateWorkspace(s.ctx, store.Workspace{OrganizationID: "acme", ID: "sales"}, []string{"create_time"})
	wantErr(t, err, store.ErrInvalidArgument, "update read-only field")
	_, err = s.st.UpdateWorkspace(s.ctx, store.Workspace{OrganizationID: "acme", ID: "nope", Title: "x"}, nil)
	wantErr(t, err, store.ErrNotFound, "update missing")

	// CountWorkspaceUsers.
	s.user(t, "bob", "Bob", "bob@example.com")
	s.ws(t, "acme", "empty", "Empty")
	for _, u := range []string{"ann", "bob"} {
		of(s.st.AddOrganizationMember(s.ctx, "acme", u, []string{"member"})).must(t)
		of(s.st.AddWorkspaceMember(s.ctx, "acme", "sales", u, []string{"workspace_member"})).must(t)
	}
	counts := of(s.st.CountWorkspaceUsers(s.ctx, "acme", []string{"sales", "empty", "nope", "sales"})).must(t)
	if len(counts) != 2 || counts["sales"] != 2 || counts["empty"] != 0 {
		t.Errorf("CountWorkspaceUsers = %v", counts)
	}

	// Delete cascades.
	of(s.st.CreateInvitation(s.ctx, store.Invitation{OrganizationID: "acme", WorkspaceID: "sales", Email: "x@example.com"})).must(t)
	noErr(t, s.st.DeleteWorkspace(s.ctx, "acme", "sales"))
	_, err = s.st.GetWorkspace(s.ctx, "acme", "sales")
	wantErr(t, err, store.ErrNotFound, "get deleted")
	_, err = s.st.GetWorkspacePreferences(s.ctx, "acme", "sales")
	wantErr(t, err, store.ErrNotFound, "preferences of deleted workspace")
	_, err = s.st.GetWorkspaceUser(s.ctx, "acme", "sales", "ann")
	wantErr(t, err, store.ErrNotFound, "member of deleted workspace")
	invs := of(s.st.ListInvitations(s.ctx, "acme", "sales", 0, "")).must(t)
	if len(invs.Items) != 0 {
		t.Errorf("invitations of deleted workspace: %v", invs.Items)
	}
	wantErr(t, s.st.DeleteWorkspace(s.ctx, "acme", "sales"), store.ErrNotFound, "delete twice")
	if _, err := s.st.GetWorkspace(s.ctx, "other", "sales"); err != nil {
		t.Errorf("deleting acme/sales touched other/sales: %v", err)
	}
}

func (s *suite) listWS(t *testing.T, req store.ListWorkspacesRequest) []string {
	t.Helper()
	got, _ := all(t, req.PageSize, func(tok string) (store.Page[store.Workspace], error) {
		req.PageToken = tok
		return s.st.ListWorkspaces(s.ctx, req)
	})
	return ids(got, wsID)
}

func testListWorkspaces(t *testing.T, s *suite) {
	s.org(t, "acme")
	s.org(t, "other")
	// Created in this order, one second apart.
	titles := map[string]string{
		"w1": "Sales EU", "w2": "sales us", "w3": "Marketing", "w4": "50% off_deals", "w5": "500 offers", "w6": "Back\\slash",
	}
	for _, id := range []string{"w1", "w2", "w3", "w4", "w5", "w6"} {
		s.ws(t, "acme", id, titles[id])
	}
	s.ws(t, "other", "x1", "Sales elsewhere")
	// w3 updated last.
	of(s.st.UpdateWorkspace(s.ctx, store.Workspace{OrganizationID: "acme", ID: "w3", Title: "Marketing"}, []string{"title"})).must(t)

	ob := func(s string) store.OrderBy {
		o, err := store.ParseOrderBy(s, store.WorkspaceOrdering)
		if err != nil {
			t.Fatalf("ParseOrderBy(%q): %v", s, err)
		}
		return o
	}
	flt := func(s string) store.Filter {
		f, err := sqlfilter.Workspaces.Parse(s)
		if err != nil {
			t.Fatalf("Parse(%q): %v", s, err)
		}
		return f
	}
	for _, tc := range []struct {
		name, filter, orderBy string
		want                  []string
	}{
		{"default order is create_time desc", "", "", []string{"w6", "w5", "w4", "w3", "w2", "w1"}},
		{"create_time asc", "", "create_time", []string{"w1", "w2", "w3", "w4", "w5", "w6"}},
		{"update_time desc", "", "update_time desc", []string{"w3", "w6", "w5", "w4", "w2", "w1"}},
		{"title", "", "title", []string{"w4", "w5", "w6", "w3", "w1", "w2"}},
		{"title desc", "", "title desc", []string{"w2", "w1", "w3", "w6", "w5", "w4"}},
		{"title exact", `title = "Sales EU"`, "", []string{"w1"}},
		{"title exact is case-sensitive", `title = "sales eu"`, "", nil},
		{"title not", `title != "Sales EU"`, "create_time", []string{"w2", "w3", "w4", "w5", "w6"}},
		{"title contains, any case", `title:"SALES"`, "create_time", []string{"w1", "w2"}},
		{"percent is literal", `title:"50%"`, "", []string{"w4"}},
		{"underscore is literal", `title:"f_d"`, "", []string{"w4"}},
		{"backslash is literal", `title:"k\\s"`, "", []string{"w6"}},
		{"or", `title = "Marketing" OR title:"us"`, "title", []string{"w3", "w2"}},
		{"not", `NOT title:"s"`, "create_time", []string{"w3"}},
		{"and with parens", `(title:"sales" OR title:"50") AND NOT title:"EU"`, "create_time", []string{"w2", "w4", "w5"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, size := range []int{1, 2, 0} {
				got := s.listWS(t, store.ListWorkspacesRequest{OrganizationID: "acme", Filter: flt(tc.filter), OrderBy: ob(tc.orderBy), PageSize: size})
				if !slices.Equal(got, tc.want) {
					t.Errorf("page size %d: got %v, want %v", size, got, tc.want)
				}
			}
		})
	}

	// Member-only listing (/me/...).
	s.user(t, "ann", "Ann", "ann@example.com")
	of(s.st.AddOrganizationMember(s.ctx, "acme", "ann", nil)).must(t)
	for _, w := range []string{"w2", "w5"} {
		of(s.st.AddWorkspaceMember(s.ctx, "acme", w, "ann", nil)).must(t)
	}
	if got := s.listWS(t, store.ListWorkspacesRequest{OrganizationID: "acme", MemberUserID: "ann", PageSize: 1}); !slices.Equal(got, []string{"w5", "w2"}) {
		t.Errorf("member listing = %v", got)
	}
	if got := s.listWS(t, store.ListWorkspacesRequest{OrganizationID: "nope"}); len(got) != 0 {
		t.Errorf("unknown organization listing = %v", got)
	}
}

// testListWorkspacesTitleOrder: order_by=title sorts as a person reads,
// without regard to case or accents (Unicode case folding: "straße" is
// "strasse", "ÉCOLE" is "ecole"), then by id, the same on every backend,
// and keyset paging in either direction returns the one-shot order.
func testListWorkspacesTitleOrder(t *testing.T, s *suite) {
	s.org(t, "acme")
	for id, title := range map[string]string{
		"w1": "Sales Ops", "w2": "ops-east", "w3": "Ops-East", "w4": "apac", "w5": "Zeta",
		"w6": "ÉMILE", "w7": "émile", "w8": "_under", "w9": "OPS-EAST",
		"wa": "Éclair", "wb": "ÉCOLE", "wc": "straße", "wd": "Zebra", "we": "STRASSE",
	} {
		s.ws(t, "acme", id, title)
	}
	// Folded keys compared byte by byte: "_" (0x5f) sorts before letters,
	// "Éclair" and "ÉCOLE" among the e's, "straße" as "strasse", equal keys
	// by id.
	want := []string{"w8", "w4", "wa", "wb", "w6", "w7", "w2", "w3", "w9", "w1", "wc", "we", "wd", "w5"}
	// A rename moves the workspace: the key follows the title.
	if _, err := s.st.UpdateWorkspace(s.ctx, store.Workspace{OrganizationID: "acme", ID: "w5", Title: "Ärger"}, []string{"title"}); err != nil {
		t.Fatal(err)
	}
	want = slices.Insert(slices.DeleteFunc(want, func(id string) bool { return id == "w5" }), 2, "w5")
	for _, desc := range []bool{false, true} {
		ob := store.OrderBy{{Field: "title", Desc: desc}}
		w := slices.Clone(want)
		if desc {
			slices.Reverse(w)
		}
		oneShot := ids(of(s.st.ListWorkspaces(s.ctx, store.ListWorkspacesRequest{OrganizationID: "acme", PageSize: 100, OrderBy: ob})).must(t).Items, wsID)
		if !slices.Equal(oneShot, w) {
			t.Errorf("title desc=%v: %v, want %v", desc, oneShot, w)
		}
		for _, size := range []int{1, 2, 4} {
			if got := s.listWS(t, store.ListWorkspacesRequest{OrganizationID: "acme", PageSize: size, OrderBy: ob}); !slices.Equal(got, w) {
				t.Errorf("title desc=%v, pages of %d: %v, want %v", desc, size, got, w)
			}
		}
	}
}

func testListWorkspacesPaging(t *testing.T, s *suite) {
	s.org(t, "acme")
	s.org(t, "other")
	const n = 25
	var want []string
	for i := range n {
		id := fmt.Sprintf("w%02d", i)
		// Titles repeat so the id tiebreaker matters.
		s.ws(t, "acme", id, fmt.Sprintf("title %d", i%3))
		want = append(want, id)
	}
	slices.Reverse(want)
	req := store.ListWorkspacesRequest{OrganizationID: "acme", PageSize: 4}
	got := s.listWS(t, req)
	if !slices.Equal(got, want) {
		t.Fatalf("paged = %v, want %v", got, want)
	}
	// Repeated titles: title order then id order, no row lost or repeated.
	ob, _ := store.ParseOrderBy("title desc", store.WorkspaceOrdering)
	got = s.listWS(t, store.ListWorkspacesRequest{OrganizationID: "acme", PageSize: 3, OrderBy: ob})
	if len(got) != n || len(slices.Compact(slices.Sorted(slices.Values(got)))) != n {
		t.Fatalf("title paging = %v", got)
	}
	ob2, _ := store.ParseOrderBy("title, create_time desc", store.WorkspaceOrdering)
	mixed := s.listWS(t, store.ListWorkspacesRequest{OrganizationID: "acme", PageSize: 2, OrderBy: ob2})
	oneShot := of(s.st.ListWorkspaces(s.ctx, store.ListWorkspacesRequest{OrganizationID: "acme", PageSize: 100, OrderBy: ob2})).must(t)
	if !slices.Equal(mixed, ids(oneShot.Items, wsID)) || len(mixed) != n {
		t.Fatalf("mixed-direction paging = %v, want %v", mixed, ids(oneShot.Items, wsID))
	}
	if oneShot.NextPageToken != "" {
		t.Errorf("last page has a token")
	}

	// Exactly one full page: no token.
	p := of(s.st.ListWorkspaces(s.ctx, store.ListWorkspacesRequest{OrganizationID: "acme", PageSize: n})).must(t)
	if len(p.Items) != n || p.NextPageToken != "" {
		t.Errorf("exact page: %d items, token %q", len(p.Items), p.NextPageToken)
	}

	// A token is bound to the request's other parameters.
	first := of(s.st.ListWorkspaces(s.ctx, req)).must(t)
	if first.NextPageToken == "" {
		t.Fatal("no token")
	}
	title, _ := sqlfilter.Workspaces.Parse(`title:"title"`)
	byTitle, _ := store.ParseOrderBy("title", store.WorkspaceOrdering)
	for name, other := range map[string]store.ListWorkspacesRequest{
		"other filter":       {OrganizationID: "acme", Filter: title},
		"other order_by":     {OrganizationID: "acme", OrderBy: byTitle},
		"other organization": {OrganizationID: "other"},
		"other member":       {OrganizationID: "acme", MemberUserID: "ann"},
	} {
		other.PageToken = first.NextPageToken
		other.PageSize = 4
		_, err := s.st.ListWorkspaces(s.ctx, other)
		wantErr(t, err, store.ErrInvalidArgument, name)
	}
	// The same parameters with another page size are fine (AIP-158).
	again := req
	again.PageToken, again.PageSize = first.NextPageToken, 10
	p = of(s.st.ListWorkspaces(s.ctx, again)).must(t)
	if len(p.Items) != 10 || p.Items[0].ID != want[4] {
		t.Errorf("changed page size: %v", ids(p.Items, wsID))
	}
	// The default order given explicitly is the same request.
	def, _ := store.ParseOrderBy("create_time desc", store.WorkspaceOrdering)
	again = store.ListWorkspacesRequest{OrganizationID: "acme", OrderBy: def, PageToken: first.NextPageToken, PageSize: 4}
	if _, err := s.st.ListWorkspaces(s.ctx, again); err != nil {
		t.Errorf("explicit default order rejected the token: %v", err)
	}
	for _, bad := range []string{"garbage!", "e30", first.NextPageToken + "x"} {
		_, err := s.st.ListWorkspaces(s.ctx, store.ListWorkspacesRequest{OrganizationID: "acme", PageToken: bad})
		wantErr(t, err, store.ErrInvalidArgument, "bad token "+bad)
	}

	// Keyset: a row inserted before the cursor does not shift the next page.
	s.ws(t, "acme", "newest", "title new")
	p = of(s.st.ListWorkspaces(s.ctx, store.ListWorkspacesRequest{OrganizationID: "acme", PageSize: 4, PageToken: first.NextPageToken})).must(t)
	if got := ids(p.Items, wsID); !slices.Equal(got, want[4:8]) {
		t.Errorf("page 2 after insert = %v, want %v", got, want[4:8])
	}
}

func testRoles(t *testing.T, s *suite) {
	s.org(t, "acme")
	owner := of(s.st.GetRole(s.ctx, "acme", "owner")).must(t)
	if !owner.Builtin || owner.Scope != store.ScopeOrganization || !slices.Contains(owner.Permissions, store.PermOrganizationsUpdate) {
		t.Errorf("owner = %+v", owner)
	}
	r := of(s.st.CreateRole(s.ctx, store.Role{OrganizationID: "acme", ID: "auditor", Scope: store.ScopeWorkspace,
		Title: "Auditor", Description: "Reads runs", Permissions: []string{"runs.get", "exceptions.get"}})).must(t)
	if got := of(s.st.GetRole(s.ctx, "acme", "auditor")).must(t); got.Title != "Auditor" || !slices.Equal(got.Permissions, r.Permissions) || got.Builtin {
		t.Errorf("Get = %+v", got)
	}
	for name, tc := range map[string]struct {
		r    store.Role
		want error
	}{
		"duplicate":   {store.Role{OrganizationID: "acme", ID: "auditor", Scope: store.ScopeWorkspace}, store.ErrAlreadyExists},
		"missing org": {store.Role{OrganizationID: "nope", ID: "x", Scope: store.ScopeWorkspace}, store.ErrNotFound},
		"bad scope":   {store.Role{OrganizationID: "acme", ID: "x", Scope: "team"}, store.ErrInvalidArgument},
	} {
		_, err := s.st.CreateRole(s.ctx, tc.r)
		wantErr(t, err, tc.want, name)
	}
	r.Title, r.Permissions = "Auditor 2", []string{"runs.get"}
	up := of(s.st.UpdateRole(s.ctx, r)).must(t)
	if up.Title != "Auditor 2" || !slices.Equal(up.Permissions, []string{"runs.get"}) || up.Scope != store.ScopeWorkspace {
		t.Errorf("Update = %+v", up)
	}
	_, err := s.st.UpdateRole(s.ctx, store.Role{OrganizationID: "acme", ID: "owner", Title: "x"})
	wantErr(t, err, store.ErrFailedPrecondition, "update built-in")
	_, err = s.st.UpdateRole(s.ctx, store.Role{OrganizationID: "acme", ID: "nope"})
	wantErr(t, err, store.ErrNotFound, "update missing")
	wantErr(t, s.st.DeleteRole(s.ctx, "acme", "owner"), store.ErrFailedPrecondition, "delete built-in")
	wantErr(t, s.st.DeleteRole(s.ctx, "acme", "nope"), store.ErrNotFound, "delete missing")

	// A bound role cannot be deleted.
	s.user(t, "ann", "Ann", "ann@example.com")
	s.ws(t, "acme", "w", "W")
	of(s.st.AddOrganizationMember(s.ctx, "acme", "ann", nil)).must(t)
	of(s.st.AddWorkspaceMember(s.ctx, "acme", "w", "ann", []string{"auditor"})).must(t)
	wantErr(t, s.st.DeleteRole(s.ctx, "acme", "auditor"), store.ErrFailedPrecondition, "delete bound role")
	of(s.st.SetWorkspaceRoles(s.ctx, "acme", "w", "ann", nil)).must(t)
	noErr(t, s.st.DeleteRole(s.ctx, "acme", "auditor"))
	_, err = s.st.GetRole(s.ctx, "acme", "auditor")
	wantErr(t, err, store.ErrNotFound, "get deleted")

	// Lists by scope, ordered by id, paged.
	wsRoles, _ := all(t, 2, func(tok string) (store.Page[store.Role], error) {
		return s.st.ListRoles(s.ctx, "acme", store.ScopeWorkspace, 2, tok)
	})
	if got := ids(wsRoles, func(r store.Role) string { return r.ID }); !slices.Equal(got, []string{"workspace_admin", "workspace_member", "workspace_viewer"}) {
		t.Errorf("workspace roles = %v", got)
	}
	_, err = s.st.ListRoles(s.ctx, "acme", "team", 0, "")
	wantErr(t, err, store.ErrInvalidArgument, "list bad scope")
	p := of(s.st.ListRoles(s.ctx, "acme", "", 2, "")).must(t)
	_, err = s.st.ListRoles(s.ctx, "acme", store.ScopeWorkspace, 2, p.NextPageToken)
	wantErr(t, err, store.ErrInvalidArgument, "token reused with another scope")
}

func testMembers(t *testing.T, s *suite) {
	s.org(t, "acme")
	s.org(t, "other")
	s.user(t, "ann", "Ann", "ann@example.com")
	s.user(t, "bob", "Bob", "bob@example.com")
	s.ws(t, "acme", "w1", "W1")
	s.ws(t, "acme", "w2", "W2")

	m := of(s.st.AddOrganizationMember(s.ctx, "acme", "ann", []string{"member", "admin", "member"})).must(t)
	if !slices.Equal(m.Roles, []string{"admin", "member"}) || m.User.Email != "ann@example.com" {
		t.Errorf("AddOrganizationMember = %+v", m)
	}
	for name, tc := range map[string]struct {
		org, user string
		roles     []string
		want      error
	}{
		"again":           {"acme", "ann", nil, store.ErrAlreadyExists},
		"missing org":     {"nope", "bob", nil, store.ErrNotFound},
		"missing user":    {"acme", "nope", nil, store.ErrNotFound},
		"missing role":    {"acme", "bob", []string{"nope"}, store.ErrNotFound},
		"workspace scope": {"acme", "bob", []string{"workspace_admin"}, store.ErrFailedPrecondition},
	} {
		_, err := s.st.AddOrganizationMember(s.ctx, tc.org, tc.user, tc.roles)
		wantErr(t, err, tc.want, "AddOrganizationMember "+name)
	}
	m = of(s.st.SetOrganizationRoles(s.ctx, "acme", "ann", []string{"owner"})).must(t)
	if !slices.Equal(m.Roles, []string{"owner"}) {
		t.Errorf("SetOrganizationRoles = %v", m.Roles)
	}
	_, err := s.st.SetOrganizationRoles(s.ctx, "acme", "bob", nil)
	wantErr(t, err, store.ErrNotFound, "SetOrganizationRoles of non-member")
	_, err = s.st.SetOrganizationRoles(s.ctx, "acme", "ann", []string{"workspace_viewer"})
	wantErr(t, err, store.ErrFailedPrecondition, "SetOrganizationRoles wrong scope")
	if got := of(s.st.GetOrganizationMember(s.ctx, "acme", "ann")).must(t); !slices.Equal(got.Roles, []string{"owner"}) {
		t.Errorf("failed SetOrganizationRoles changed roles: %v", got.Roles)
	}
	_, err = s.st.GetOrganizationMember(s.ctx, "acme", "bob")
	wantErr(t, err, store.ErrNotFound, "GetOrganizationMember non-member")

	// Workspace membership.
	_, err = s.st.AddWorkspaceMember(s.ctx, "acme", "w1", "bob", nil)
	wantErr(t, err, store.ErrFailedPrecondition, "AddWorkspaceMember of non-member of organization")
	of(s.st.AddOrganizationMember(s.ctx, "acme", "bob", []string{"member"})).must(t)
	wu := of(s.st.AddWorkspaceMember(s.ctx, "acme", "w1", "bob", []string{"workspace_viewer"})).must(t)
	wantRoles := []store.RoleBinding{{RoleID: "member", Scope: store.ScopeOrganization}, {RoleID: "workspace_viewer", Scope: store.ScopeWorkspace}}
	if !slices.Equal(wu.Roles, wantRoles) || wu.User.ID != "bob" {
		t.Errorf("AddWorkspaceMember = %+v", wu)
	}
	for name, tc := range map[string]struct {
		ws, user string
		roles    []string
		want     error
	}{
		"again":              {"w1", "bob", nil, store.ErrAlreadyExists},
		"missing workspace":  {"nope", "bob", nil, store.ErrNotFound},
		"missing user":       {"w2", "nope", nil, store.ErrNotFound},
		"missing role":       {"w2", "bob", []string{"nope"}, store.ErrNotFound},
		"organization scope": {"w2", "bob", []string{"admin"}, store.ErrFailedPrecondition},
	} {
		_, err := s.st.AddWorkspaceMember(s.ctx, "acme", tc.ws, tc.user, tc.roles)
		wantErr(t, err, tc.want, "AddWorkspaceMember "+name)
	}
	if got := of(s.st.GetWorkspaceUser(s.ctx, "acme", "w1", "bob")).must(t); !slices.Equal(got.Roles, wantRoles) {
		t.Errorf("GetWorkspaceUser = %+v", got)
	}
	_, err = s.st.GetWorkspaceUser(s.ctx, "acme", "w2", "bob")
	wantErr(t, err, store.ErrNotFound, "GetWorkspaceUser non-member")

	// Effective permissions: union of organization and workspace roles.
	perms := of(s.st.EffectivePermissions(s.ctx, "acme", "w1", "bob")).must(t)
	if !slices.Contains(perms, store.PermRunsGet) || !slices.Contains(perms, store.PermOrganizationsGet) || slices.Contains(perms, store.PermRunsCreate) {
		t.Errorf("viewer permissions = %v", perms)
	}
	if !slices.IsSorted(perms) || len(slices.Compact(slices.Clone(perms))) != len(perms) {
		t.Errorf("permissions not a sorted set: %v", perms)
	}
	wu = of(s.st.SetWorkspaceRoles(s.ctx, "acme", "w1", "bob", []string{"workspace_member", "workspace_viewer"})).must(t)
	if len(wu.Roles) != 3 || !wu.UpdateTime.After(wu.CreateTime) {
		t.Errorf("SetWorkspaceRoles = %+v", wu)
	}
	perms = of(s.st.EffectivePermissions(s.ctx, "acme", "w1", "bob")).must(t)
	if !slices.Contains(perms, store.PermRunsCreate) {
		t.Errorf("member permissions = %v", perms)
	}
	if p := of(s.st.EffectivePermissions(s.ctx, "acme", "w2", "bob")).must(t); slices.Contains(p, store.PermRunsGet) {
		t.Errorf("permissions leak into another workspace: %v", p)
	}
	if p := of(s.st.EffectivePermissions(s.ctx, "other", "w1", "bob")).must(t); len(p) != 0 {
		t.Errorf("non-member has permissions %v", p)
	}
	_, err = s.st.SetWorkspaceRoles(s.ctx, "acme", "w2", "bob", nil)
	wantErr(t, err, store.ErrNotFound, "SetWorkspaceRoles non-member")

	wantErr(t, s.st.RemoveWorkspaceMember(s.ctx, "acme", "w2", "bob"), store.ErrNotFound, "RemoveWorkspaceMember non-member")
	noErr(t, s.st.RemoveWorkspaceMember(s.ctx, "acme", "w1", "bob"))
	_, err = s.st.GetWorkspaceUser(s.ctx, "acme", "w1", "bob")
	wantErr(t, err, store.ErrNotFound, "removed workspace member")

	// Removing from the organization removes workspace memberships too.
	of(s.st.AddWorkspaceMember(s.ctx, "acme", "w2", "bob", nil)).must(t)
	noErr(t, s.st.RemoveOrganizationMember(s.ctx, "acme", "bob"))
	_, err = s.st.GetWorkspaceUser(s.ctx, "acme", "w2", "bob")
	wantErr(t, err, store.ErrNotFound, "workspace membership after leaving the organization")
	wantErr(t, s.st.RemoveOrganizationMember(s.ctx, "acme", "bob"), store.ErrNotFound, "RemoveOrganizationMember twice")
}

func testListWorkspaceUsers(t *testing.T, s *suite) {
	s.org(t, "acme")
	s.ws(t, "acme", "w", "W")
	s.ws(t, "acme", "v", "V")
	people := []struct{ id, name, email, org, ws string }{
		{"u1", "Carol", "carol@example.com", "member", "workspace_admin"},
		{"u2", "alice", "zed@example.com", "admin", "workspace_member"},
		{"u3", "Bob", "bob@corp.test", "member", "workspace_viewer"},
		{"u4", "Dan_Smith", "dan@example.com", "member", ""},
		{"u5", "Eve", "eve@example.com", "member", "workspace_member"},
	}
	for _, p := range people {
		s.user(t, p.id, p.name, p.email)
		of(s.st.AddOrganizationMember(s.ctx, "acme", p.id, []string{p.org})).must(t)
		var roles []string
		if p.ws != "" {
			roles = []string{p.ws}
		}
		of(s.st.AddWorkspaceMember(s.ctx, "acme", "w", p.id, roles)).must(t)
	}
	s.user(t, "u6", "Frank", "frank@example.com")
	of(s.st.AddOrganizationMember(s.ctx, "acme", "u6", []string{"admin"})).must(t)
	of(s.st.AddWorkspaceMember(s.ctx, "acme", "v", "u6", nil)).must(t) // another workspace
	// u1 changes roles last.
	of(s.st.SetWorkspaceRoles(s.ctx, "acme", "w", "u1", []string{"workspace_admin"})).must(t)

	for _, tc := range []struct {
		name, filter, orderBy string
		want                  []string
	}{
		{"default created_time desc", "", "", []string{"u5", "u4", "u3", "u2", "u1"}},
		{"created_time", "", "created_time", []string{"u1", "u2", "u3", "u4", "u5"}},
		{"updated_time desc", "", "updated_time desc", []string{"u1", "u5", "u4", "u3", "u2"}},
		{"display_name", "", "display_name", []string{"u3", "u1", "u4", "u5", "u2"}},
		{"email desc", "", "email desc", []string{"u2", "u5", "u4", "u1", "u3"}},
		{"role any case", `role = "WORKSPACE_MEMBER"`, "created_time", []string{"u2", "u5"}},
		{"organization role", `role = "admin"`, "", []string{"u2"}},
		{"not role", `role != "member"`, "created_time", []string{"u2"}},
		{"scope workspace", `role_scope = workspace`, "created_time", []string{"u1", "u2", "u3", "u5"}},
		{"scope workspace quoted", `role_scope = "workspace"`, "created_time", []string{"u1", "u2", "u3", "u5"}},
		{"scope not workspace", `role_scope != workspace`, "", []string{"u4"}},
		{"scope organization", `role_scope = organization`, "created_time", []string{"u1", "u2", "u3", "u4", "u5"}},
		{"search name", `search:"AL"`, "", []string{"u2"}},
		{"search email", `search:"corp"`, "", []string{"u3"}},
		{"search matches either", `search:"e"`, "created_time", []string{"u1", "u2", "u3", "u4", "u5"}},
		{"search underscore literal", `search:"n_s"`, "", []string{"u4"}},
		{"combined", `search:"example" AND (role = "workspace_member" OR role = "workspace_admin")`, "display_name", []string{"u1", "u5", "u2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := sqlfilter.WorkspaceUsers.Parse(tc.filter)
			if err != nil {
				t.Fatal(err)
			}
			ob, err := store.ParseOrderBy(tc.orderBy, store.WorkspaceUserOrdering)
			if err != nil {
				t.Fatal(err)
			}
			for _, size := range []int{2, 0} {
				got, _ := all(t, size, func(tok string) (store.Page[store.WorkspaceUser], error) {
					return s.st.ListWorkspaceUsers(s.ctx, store.ListWorkspaceUsersRequest{
						OrganizationID: "acme", WorkspaceID: "w", Filter: f, OrderBy: ob, PageSize: size, PageToken: tok})
				})
				if ids := ids(got, func(w store.WorkspaceUser) string { return w.User.ID }); !slices.Equal(ids, tc.want) {
					t.Errorf("size %d: got %v, want %v", size, ids, tc.want)
				}
			}
		})
	}
	p := of(s.st.ListWorkspaceUsers(s.ctx, store.ListWorkspaceUsersRequest{OrganizationID: "acme", WorkspaceID: "w", PageSize: 1})).must(t)
	if len(p.Items) != 1 || p.Items[0].User.Email != "eve@example.com" ||
		!slices.Equal(p.Items[0].Roles, []store.RoleBinding{{RoleID: "member", Scope: store.ScopeOrganization}, {RoleID: "workspace_member", Scope: store.ScopeWorkspace}}) {
		t.Errorf("first item = %+v", p.Items)
	}
	_, err := s.st.ListWorkspaceUsers(s.ctx, store.ListWorkspaceUsersRequest{OrganizationID: "acme", WorkspaceID: "v", PageToken: p.NextPageToken})
	wantErr(t, err, store.ErrInvalidArgument, "token reused for another workspace")
	f, _ := sqlfilter.WorkspaceUsers.Parse(`search:"x"`)
	_, err = s.st.ListWorkspaceUsers(s.ctx, store.ListWorkspaceUsersRequest{OrganizationID: "acme", WorkspaceID: "w", Filter: f, PageToken: p.NextPageToken})
	wantErr(t, err, store.ErrInvalidArgument, "token reused with another filter")
}

func testInvitations(t *testing.T, s *suite) {
	s.org(t, "acme")
	s.ws(t, "acme", "w", "W")
	s.user(t, "ann", "Ann", "ann@example.com")
	inv := of(s.st.CreateInvitation(s.ctx, store.Invitation{OrganizationID: "acme", WorkspaceID: "w", Email: "new@example.com",
		RoleIDs: []string{"workspace_member"}, InviterID: "ann", ExpireTime: time.Date(2030, 1, 1, 0, 0, 0, 999, time.UTC)})).must(t)
	got := of(s.st.GetInvitation(s.ctx, "acme", inv.ID)).must(t)
	if got.Email != "new@example.com" || got.WorkspaceID != "w" || !slices.Equal(got.RoleIDs, []string{"workspace_member"}) ||
		got.InviterID != "ann" || !got.ExpireTime.Equal(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)) || !got.CreateTime.Equal(inv.CreateTime) {
		t.Errorf("Get = %+v", got)
	}
	for name, tc := range map[string]struct {
		inv  store.Invitation
		want error
	}{
		"same email other case": {store.Invitation{OrganizationID: "acme", WorkspaceID: "w", Email: "NEW@example.com"}, store.ErrAlreadyExists},
		"same id":               {store.Invitation{OrganizationID: "acme", ID: inv.ID, Email: "x@example.com"}, store.ErrAlreadyExists},
		"missing workspace":     {store.Invitation{OrganizationID: "acme", WorkspaceID: "nope", Email: "x@example.com"}, store.ErrNotFound},
		"missing org":           {store.Invitation{OrganizationID: "nope", Email: "x@example.com"}, store.ErrNotFound},
	} {
		_, err := s.st.CreateInvitation(s.ctx, tc.inv)
		wantErr(t, err, tc.want, name)
	}
	// The same e-mail may be invited to the organization itself.
	orgInv := of(s.st.CreateInvitation(s.ctx, store.Invitation{OrganizationID: "acme", Email: "new@example.com"})).must(t)
	for i := range 3 {
		of(s.st.CreateInvitation(s.ctx, store.Invitation{OrganizationID: "acme", WorkspaceID: "w", Email: fmt.Sprintf("p%d@example.com", i)})).must(t)
	}
	list, pages := all(t, 2, func(tok string) (store.Page[store.Invitation], error) {
		return s.st.ListInvitations(s.ctx, "acme", "w", 2, tok)
	})
	if got := ids(list, func(i store.Invitation) string { return i.Email }); !slices.Equal(got, []string{"p2@example.com", "p1@example.com", "p0@example.com", "new@example.com"}) || pages != 2 {
		t.Errorf("ListInvitations = %v in %d pages", got, pages)
	}
	orgList := of(s.st.ListInvitations(s.ctx, "acme", "", 0, "")).must(t)
	if len(orgList.Items) != 1 || orgList.Items[0].ID != orgInv.ID {
		t.Errorf("organization invitations = %+v", orgList.Items)
	}
	everyList, pages := all(t, 2, func(tok string) (store.Page[store.Invitation], error) {
		return s.st.ListOrganizationInvitations(s.ctx, "acme", 2, tok)
	})
	if got := ids(everyList, func(i store.Invitation) string { return i.Email + "/" + i.WorkspaceID }); !slices.Equal(got,
		[]string{"p2@example.com/w", "p1@example.com/w", "p0@example.com/w", "new@example.com/", "new@example.com/w"}) || pages != 3 {
		t.Errorf("ListOrganizationInvitations = %v in %d pages", got, pages)
	}
	if other := of(s.st.ListOrganizationInvitations(s.ctx, "nope", 0, "")).must(t); len(other.Items) != 0 {
		t.Errorf("another organization's invitations = %+v", other.Items)
	}
	noErr(t, s.st.DeleteInvitation(s.ctx, "acme", inv.ID))
	_, err := s.st.GetInvitation(s.ctx, "acme", inv.ID)
	wantErr(t, err, store.ErrNotFound, "get deleted")
	wantErr(t, s.st.DeleteInvitation(s.ctx, "acme", inv.ID), store.ErrNotFound, "delete twice")
}

func testPreferences(t *testing.T, s *suite) {
	s.org(t, "acme")
	s.ws(t, "acme", "w", "W")
	p := of(s.st.GetWorkspacePreferences(s.ctx, "acme", "w")).must(t)
	if p.SupportTeamAccess || p.TimeFormat != "TIME_FORMAT_UNSPECIFIED" || p.MeasurementSystem != "MEASUREMENT_SYSTEM_UNSPECIFIED" || p.DecimalPlaces != 0 {
		t.Errorf("defaults = %+v", p)
	}
	_, err := s.st.GetWorkspacePreferences(s.ctx, "acme", "nope")
	wantErr(t, err, store.ErrNotFound, "get missing")

	in := store.WorkspacePreferences{OrganizationID: "acme", WorkspaceID: "w", SupportTeamAccess: true, TimeZone: "Europe/Paris",
		TimeFormat: "TIME_FORMAT_24H", DateFormat: "DATE_FORMAT_DMY", DecimalSymbol: "DECIMAL_SYMBOL_COMMA", DecimalPlaces: 3,
		MeasurementSystem: "MEASUREMENT_SYSTEM_METRIC"}
	up := of(s.st.UpdateWorkspacePreferences(s.ctx, in, []string{"general.time_zone", "support_team_access"})).must(t)
	if !up.SupportTeamAccess || up.TimeZone != "Europe/Paris" || up.TimeFormat != "TIME_FORMAT_UNSPECIFIED" || !up.UpdateTime.After(p.UpdateTime) {
		t.Errorf("partial update = %+v", up)
	}
	up = of(s.st.UpdateWorkspacePreferences(s.ctx, in, []string{"general"})).must(t)
	in.UpdateTime = up.UpdateTime
	if up != in {
		t.Errorf("update general = %+v, want %+v", up, in)
	}
	in.SupportTeamAccess, in.DecimalPlaces = false, 1
	up = of(s.st.UpdateWorkspacePreferences(s.ctx, in, nil)).must(t)
	if up.SupportTeamAccess || up.DecimalPlaces != 1 {
		t.Errorf("update all = %+v", up)
	}
	if got := of(s.st.GetWorkspacePreferences(s.ctx, "acme", "w")).must(t); got != up {
		t.Errorf("Get = %+v, want %+v", got, up)
	}
	_, err = s.st.UpdateWorkspacePreferences(s.ctx, in, []string{"colour"})
	wantErr(t, err, store.ErrInvalidArgument, "unknown path")
	in.WorkspaceID = "nope"
	_, err = s.st.UpdateWorkspacePreferences(s.ctx, in, nil)
	wantErr(t, err, store.ErrNotFound, "update missing")
}

func testAPIKeys(t *testing.T, s *suite) {
	s.org(t, "acme")
	s.org(t, "other")
	s.user(t, "ann", "Ann", "ann@example.com")
	s.user(t, "bob", "Bob", "bob@example.com")
	of(s.st.AddOrganizationMember(s.ctx, "acme", "ann", []string{"admin"})).must(t)
	of(s.st.AddOrganizationMember(s.ctx, "acme", "bob", []string{"member"})).must(t)
	now := s.clock.Peek()
	k := of(s.st.CreateAPIKey(s.ctx, store.APIKey{
		OrganizationID: "acme", UserID: "ann", Name: "ci", Prefix: "prose_abc123", SecretHash: []byte{1, 2, 3, 0, 255},
		WorkspaceIDs: []string{"w2", "w1", "w2"}, PermissionLevel: store.PermissionRestricted,
		Permissions: map[string]bool{"runs.archive": false, "runs.create": true},
		ExpireTime:  now.Add(30 * 24 * time.Hour),
	}, 10)).must(t)
	if k.ID == "" || !slices.Equal(k.WorkspaceIDs, []string{"w1", "w2"}) || !k.LastUsedTime.IsZero() {
		t.Errorf("Create = %+v", k)
	}
	for name, get := range map[string]func() (store.APIKey, error){
		"by id":     func() (store.APIKey, error) { return s.st.GetAPIKey(s.ctx, "acme", k.ID) },
		"by prefix": func() (store.APIKey, error) { return s.st.GetAPIKeyByPrefix(s.ctx, "prose_abc123") },
	} {
		got := of(get()).must(t)
		if got.Name != "ci" || string(got.SecretHash) != string(k.SecretHash) || got.PermissionLevel != store.PermissionRestricted ||
			!got.Permissions["runs.create"] || len(got.Permissions) != 2 || !slices.Equal(got.WorkspaceIDs, []string{"w1", "w2"}) ||
			!got.ExpireTime.Equal(k.ExpireTime) || got.AllWorkspaces {
			t.Errorf("get %s = %+v", name, got)
		}
	}
	_, err := s.st.GetAPIKey(s.ctx, "other", k.ID)
	wantErr(t, err, store.ErrNotFound, "get from another organization")
	_, err = s.st.GetAPIKeyByPrefix(s.ctx, "prose_nope")
	wantErr(t, err, store.ErrNotFound, "get missing prefix")

	base := store.APIKey{OrganizationID: "acme", UserID: "bob", PermissionLevel: store.PermissionAll, AllWorkspaces: true, SecretHash: []byte{1}}
	for name, tc := range map[string]struct {
		mod  func(*store.APIKey)
		want error
	}{
		"same prefix":  {func(k *store.APIKey) { k.Prefix = "prose_abc123" }, store.ErrAlreadyExists},
		"non-member":   {func(k *store.APIKey) { k.Prefix = "p1"; k.OrganizationID = "other" }, store.ErrFailedPrecondition},
		"missing org":  {func(k *store.APIKey) { k.Prefix = "p2"; k.OrganizationID = "nope" }, store.ErrNotFound},
		"bad level":    {func(k *store.APIKey) { k.Prefix = "p3"; k.PermissionLevel = "admin" }, store.ErrInvalidArgument},
		"empty prefix": {func(k *store.APIKey) {}, store.ErrInvalidArgument},
	} {
		k2 := base
		tc.mod(&k2)
		_, err := s.st.CreateAPIKey(s.ctx, k2, 10)
		wantErr(t, err, tc.want, name)
	}

	// The limit counts unexpired keys of the organization.
	expired := base
	expired.Prefix, expired.ExpireTime = "expired", now.Add(-time.Hour)
	of(s.st.CreateAPIKey(s.ctx, expired, 0)).must(t)
	for i := range 8 {
		k2 := base
		k2.Prefix = fmt.Sprintf("bob%d", i)
		of(s.st.CreateAPIKey(s.ctx, k2, 10)).must(t)
	}
	if n := of(s.st.CountAPIKeys(s.ctx, "acme")).must(t); n != 9 {
		t.Errorf("CountAPIKeys = %d, want 9", n)
	}
	k2 := base
	k2.Prefix = "tenth"
	of(s.st.CreateAPIKey(s.ctx, k2, 10)).must(t)
	k2.Prefix = "eleventh"
	_, err = s.st.CreateAPIKey(s.ctx, k2, 10)
	wantErr(t, err, store.ErrResourceExhausted, "eleventh key")

	// Update with masks.
	up := of(s.st.UpdateAPIKey(s.ctx, store.APIKey{OrganizationID: "acme", ID: k.ID, Name: "renamed", PermissionLevel: "bogus"}, []string{"name"})).must(t)
	if up.Name != "renamed" || up.PermissionLevel != store.PermissionRestricted || !up.UpdateTime.After(k.UpdateTime) {
		t.Errorf("update name = %+v", up)
	}
	up = of(s.st.UpdateAPIKey(s.ctx, store.APIKey{OrganizationID: "acme", ID: k.ID, AllWorkspaces: true, PermissionLevel: store.PermissionReadOnly}, []string{"scope", "permissions"})).must(t)
	if !up.AllWorkspaces || len(up.WorkspaceIDs) != 0 || up.PermissionLevel != store.PermissionReadOnly || len(up.Permissions) != 0 || up.Name != "renamed" {
		t.Errorf("update scope/permissions = %+v", up)
	}
	_, err = s.st.UpdateAPIKey(s.ctx, store.APIKey{OrganizationID: "acme", ID: k.ID}, []string{"prefix"})
	wantErr(t, err, store.ErrInvalidArgument, "update read-only field")
	_, err = s.st.UpdateAPIKey(s.ctx, store.APIKey{OrganizationID: "acme", ID: k.ID, PermissionLevel: "bogus"}, []string{"permissions"})
	wantErr(t, err, store.ErrInvalidArgument, "update bad level")
	_, err = s.st.UpdateAPIKey(s.ctx, store.APIKey{OrganizationID: "other", ID: k.ID, Name: "x"}, []string{"name"})
	wantErr(t, err, store.ErrNotFound, "update in another organization")

	used := time.Date(2024, 6, 1, 12, 0, 0, 1500, time.UTC)
	noErr(t, s.st.TouchAPIKey(s.ctx, k.ID, used))
	if got := of(s.st.GetAPIKey(s.ctx, "acme", k.ID)).must(t); !got.LastUsedTime.Equal(used.Truncate(time.Microsecond)) {
		t.Errorf("LastUsedTime = %v", got.LastUsedTime)
	}
	wantErr(t, s.st.TouchAPIKey(s.ctx, "nope", used), store.ErrNotFound, "touch missing")

	// Lists.
	mine, _ := all(t, 1, func(tok string) (store.Page[store.APIKey], error) {
		return s.st.ListAPIKeys(s.ctx, "acme", "ann", 1, tok)
	})
	if len(mine) != 1 || mine[0].ID != k.ID {
		t.Errorf("ann's keys = %v", mine)
	}
	everyone, _ := all(t, 3, func(tok string) (store.Page[store.APIKey], error) { return s.st.ListAPIKeys(s.ctx, "acme", "", 3, tok) })
	if len(everyone) != 11 || everyone[0].Prefix != "tenth" || everyone[10].ID != k.ID {
		t.Errorf("all keys = %d, first %q", len(everyone), everyone[0].Prefix)
	}
	p := of(s.st.ListAPIKeys(s.ctx, "acme", "", 3, "")).must(t)
	_, err = s.st.ListAPIKeys(s.ctx, "acme", "bob", 3, p.NextPageToken)
	wantErr(t, err, store.ErrInvalidArgument, "token reused for another user")

	noErr(t, s.st.DeleteAPIKey(s.ctx, "acme", k.ID))
	_, err = s.st.GetAPIKeyByPrefix(s.ctx, "prose_abc123")
	wantErr(t, err, store.ErrNotFound, "get deleted")
	wantErr(t, s.st.DeleteAPIKey(s.ctx, "acme", k.ID), store.ErrNotFound, "delete twice")

	// Leaving the organization deletes the member's keys.
	noErr(t, s.st.RemoveOrganizationMember(s.ctx, "acme", "bob"))
	if n := of(s.st.CountAPIKeys(s.ctx, "acme")).must(t); n != 0 {
		t.Errorf("keys after bob left = %d", n)
	}
}

func testIdempotency(t *testing.T, s *suite) {
	_, err := s.st.LookupRequest(s.ctx, "acme", "CreateWorkspace", "r1")
	wantErr(t, err, store.ErrNotFound, "lookup unknown")
	name := of(s.st.RecordRequest(s.ctx, "acme", "CreateWorkspace", "r1", "organizations/acme/workspaces/a")).must(t)
	if name != "organizations/acme/workspaces/a" {
		t.Errorf("first record = %q", name)
	}
	name = of(s.st.RecordRequest(s.ctx, "acme", "CreateWorkspace", "r1", "organizations/acme/workspaces/b")).must(t)
	if name != "organizations/acme/workspaces/a" {
		t.Errorf("second record returned %q, want the first", name)
	}
	if got := of(s.st.LookupRequest(s.ctx, "acme", "CreateWorkspace", "r1")).must(t); got != "organizations/acme/workspaces/a" {
		t.Errorf("lookup = %q", got)
	}
	// Scoped by organization and method.
	for _, k := range [][2]string{{"other", "CreateWorkspace"}, {"acme", "CreateRun"}} {
		_, err := s.st.LookupRequest(s.ctx, k[0], k[1], "r1")
		wantErr(t, err, store.ErrNotFound, "lookup in "+k[0]+"/"+k[1])
	}
	of(s.st.RecordRequest(s.ctx, "acme", "CreateRun", "r2", "runs/x")).must(t)
	n := of(s.st.PurgeRequests(s.ctx, s.clock.Now())).must(t)
	if n != 2 {
		t.Errorf("purged %d, want 2", n)
	}
	_, err = s.st.LookupRequest(s.ctx, "acme", "CreateWorkspace", "r1")
	wantErr(t, err, store.ErrNotFound, "lookup purged")
}
