package storetest

import (
	"testing"
	"time"

	"github.com/proserun/prose/store"
	"github.com/proserun/prose/store/sqlfilter"
)

// testGuideEntries runs the guide entry cases.
func testGuideEntries(t *testing.T, open Opener) {
	t.Run("GuideEntries", func(t *testing.T) { testGuideEntryCRUD(t, setup(t, open)) })
	t.Run("GuideEntriesList", func(t *testing.T) { testGuideEntryList(t, setup(t, open)) })
	t.Run("GuideEntriesMatch", func(t *testing.T) { testGuideEntryMatch(t, setup(t, open)) })
	t.Run("GuidedExceptions", func(t *testing.T) { testGuidedExceptions(t, setup(t, open)) })
}

func (s *suite) guideEntry(t *testing.T, a store.Automation, title, hash string, state store.GuideEntryState) store.GuideEntry {
	t.Helper()
	return of(s.st.CreateGuideEntry(s.ctx, store.GuideEntry{
		OrganizationID: "acme", WorkspaceID: "ops", AutomationID: a.ID, Title: title, State: state,
		Statement: "the output total is the grand total", StatementHash: hash, Group: "missing_values", Fact: "grand total",
		Guidance: []byte{1, 2, 3}, ResolutionCode: "skip", ResolutionSteps: "Skip the " + title, VersionMinor: 1,
		SourceException: "x1", SourceRun: "r1",
	})).must(t)
}

// testGuideEntryCRUD: create reads back every field; update changes what
// the change function sets (in its transaction), and nothing when it
// fails; purge removes; unknown ids and workspaces are ErrNotFound.
func testGuideEntryCRUD(t *testing.T, s *suite) {
	a := s.automation(t, "a1")
	g := s.guideEntry(t, a, "Grand total", "h1", "")
	if g.ID == "" || g.State != store.GuidePendingApproval || g.Title != "Grand total" || g.StatementHash != "h1" || g.Fact != "grand total" ||
		string(g.Guidance) != "\x01\x02\x03" || g.VersionMajor != 0 || g.VersionMinor != 1 || g.SourceException != "x1" || g.SourceRun != "r1" ||
		g.CreateTime.IsZero() || !g.UpdateTime.Equal(g.CreateTime) || !g.DeleteTime.IsZero() || g.ResolutionCode != "skip" {
		t.Fatalf("created: %+v", g)
	}
	got := of(s.st.GetGuideEntry(s.ctx, "acme", "ops", a.ID, g.ID)).must(t)
	if got.Title != g.Title || got.Statement != g.Statement || !got.CreateTime.Equal(g.CreateTime) {
		t.Errorf("get: %+v", got)
	}
	_, err := s.st.GetGuideEntry(s.ctx, "acme", "ops", "other", g.ID)
	wantErr(t, err, store.ErrNotFound, "entry of another automation")
	_, err = s.st.CreateGuideEntry(s.ctx, store.GuideEntry{OrganizationID: "acme", WorkspaceID: "nope", AutomationID: a.ID, Statement: "x", StatementHash: "h"})
	wantErr(t, err, store.ErrNotFound, "entry of an unknown workspace")

	del := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	up := of(s.st.UpdateGuideEntry(s.ctx, "acme", "ops", a.ID, g.ID, func(e *store.GuideEntry) error {
		e.Title, e.RootCause, e.ResolutionNotes, e.ResolutionSteps = "T2", "why", "notes", "steps"
		e.State, e.DeletedState, e.DeleteTime = store.GuideArchived, store.GuideApproved, del
		e.VersionMajor, e.VersionMinor = 2, 3
		return nil
	})).must(t)
	if up.Title != "T2" || up.RootCause != "why" || up.ResolutionNotes != "notes" || up.ResolutionSteps != "steps" || up.State != store.GuideArchived ||
		up.DeletedState != store.GuideApproved || !up.DeleteTime.Equal(del) || up.VersionMajor != 2 || up.VersionMinor != 3 || !up.UpdateTime.After(g.UpdateTime) {
		t.Fatalf("updated: %+v", up)
	}
	_, err = s.st.UpdateGuideEntry(s.ctx, "acme", "ops", a.ID, g.ID, func(e *store.GuideEntry) error {
		e.Title = "lost"
		return store.ErrFailedPrecondition
	})
	wantErr(t, err, store.ErrFailedPrecondition, "a refused change")
	if cur := of(s.st.GetGuideEntry(s.ctx, "acme", "ops", a.ID, g.ID)).must(t); cur.Title != "T2" {
		t.Errorf("a refused change was written: %+v", cur)
	}
	back := of(s.st.UpdateGuideEntry(s.ctx, "acme", "ops", a.ID, g.ID, func(e *store.GuideEntry) error {
		e.State, e.DeletedState, e.DeleteTime = e.DeletedState, "", time.Time{}
		return nil
	})).must(t)
	if back.State != store.GuideApproved || !back.DeleteTime.IsZero() {
		t.Errorf("undeleted: %+v", back)
	}
	_, err = s.st.UpdateGuideEntry(s.ctx, "acme", "ops", a.ID, "nope", func(*store.GuideEntry) error { return nil })
	wantErr(t, err, store.ErrNotFound, "update of an unknown entry")
	noErr(t, s.st.PurgeGuideEntry(s.ctx, "acme", "ops", a.ID, g.ID))
	wantErr(t, s.st.PurgeGuideEntry(s.ctx, "acme", "ops", a.ID, g.ID), store.ErrNotFound, "purge twice")
	_, err = s.st.GetGuideEntry(s.ctx, "acme", "ops", a.ID, g.ID)
	wantErr(t, err, store.ErrNotFound, "purged entry")
}

// testGuideEntryList: newest first, pages with tokens bound to the
// request, totals, show_deleted, "-" for every automation, and the filter
// fields of sqlfilter.GuideEntries.
func testGuideEntryList(t *testing.T, s *suite) {
	a := s.automation(t, "a1")
	b := s.automation(t, "b1")
	var made []store.GuideEntry
	for i, title := range []string{"Grand total", "Tax rate", "Grand child", "Other"} {
		aut := a
		if i == 3 {
			aut = b
		}
		made = append(made, s.guideEntry(t, aut, title, "h", store.GuidePendingApproval))
	}
	of(s.st.UpdateGuideEntry(s.ctx, "acme", "ops", a.ID, made[1].ID, func(e *store.GuideEntry) error {
		e.State, e.DeleteTime = store.GuideArchived, s.clock.Now()
		return nil
	})).must(t)
	of(s.st.UpdateGuideEntry(s.ctx, "acme", "ops", a.ID, made[2].ID, func(e *store.GuideEntry) error {
		e.State = store.GuideApproved
		return nil
	})).must(t)
	list := func(aut, filter string, deleted bool, size int) ([]store.GuideEntry, int) {
		t.Helper()
		f, err := sqlfilter.GuideEntries.Parse(filter)
		noErr(t, err)
		total := -1
		items, _ := all(t, size, func(tok string) (store.Page[store.GuideEntry], error) {
			p, n, err := s.st.ListGuideEntries(s.ctx, store.ListGuideEntriesRequest{OrganizationID: "acme", WorkspaceID: "ops",
				AutomationID: aut, Filter: f, ShowDeleted: deleted, PageSize: size, PageToken: tok})
			if total >= 0 && n != total {
				t.Errorf("total changed between pages: %d, %d", total, n)
			}
			total = n
			return p, err
		})
		if total != len(items) {
			t.Errorf("%s %q: total %d, items %d", aut, filter, total, len(items))
		}
		return items, total
	}
	ids := func(items []store.GuideEntry) []string {
		var out []string
		for _, g := range items {
			out = append(out, g.ID)
		}
		return out
	}
	if got, _ := list(a.ID, "", false, 1); !equalStrings(ids(got), []string{made[2].ID, made[0].ID}) {
		t.Errorf("automation a, newest first, deleted hidden: %v", ids(got))
	}
	if got, _ := list(a.ID, "", true, 2); !equalStrings(ids(got), []string{made[2].ID, made[1].ID, made[0].ID}) {
		t.Errorf("show deleted: %v", ids(got))
	}
	if got, _ := list("-", "", false, 50); len(got) != 3 {
		t.Errorf("every automation: %v", ids(got))
	}
	for filter, want := range map[string][]string{
		`title : "grand"`:        {made[2].ID, made[0].ID},
		`title = "Grand total"`:  {made[0].ID},
		`state = STATE_APPROVED`: {made[2].ID},
		`automation = "b1"`:      {made[3].ID},
		`automation = "organizations/acme/workspaces/ops/automations/b1"`:      {made[3].ID},
		`automation = "organizations/zzz/workspaces/ops/automations/b1"`:       nil,
		`resolution_steps : "tax" OR title : "other"`:                          {made[3].ID},
		`source_exception = "x1" AND NOT title : "child"`:                      {made[3].ID, made[0].ID},
		`create_time >= "` + made[2].CreateTime.Format(time.RFC3339Nano) + `"`: {made[3].ID, made[2].ID},
	} {
		if got, _ := list("-", filter, false, 50); !equalStrings(ids(got), want) {
			t.Errorf("filter %s: %v, want %v", filter, ids(got), want)
		}
	}
	// A token is bound to its request.
	f, _ := sqlfilter.GuideEntries.Parse(`title : "grand"`)
	p, _, err := s.st.ListGuideEntries(s.ctx, store.ListGuideEntriesRequest{OrganizationID: "acme", WorkspaceID: "ops", AutomationID: a.ID, PageSize: 1})
	noErr(t, err)
	_, _, err = s.st.ListGuideEntries(s.ctx, store.ListGuideEntriesRequest{OrganizationID: "acme", WorkspaceID: "ops", AutomationID: a.ID, Filter: f, PageSize: 1, PageToken: p.NextPageToken})
	wantErr(t, err, store.ErrInvalidArgument, "a token with another filter")
}

// testGuideEntryMatch: the approved, not deleted entries of the
// automation with the statement hash, oldest first.
func testGuideEntryMatch(t *testing.T, s *suite) {
	a := s.automation(t, "a1")
	b := s.automation(t, "b1")
	first := s.guideEntry(t, a, "one", "h1", store.GuideApproved)
	second := s.guideEntry(t, a, "two", "h1", store.GuideApproved)
	s.guideEntry(t, a, "pending", "h1", store.GuidePendingApproval)
	s.guideEntry(t, a, "rejected", "h1", store.GuideRejected)
	s.guideEntry(t, a, "other statement", "h2", store.GuideApproved)
	s.guideEntry(t, b, "other automation", "h1", store.GuideApproved)
	deleted := s.guideEntry(t, a, "deleted", "h1", store.GuideApproved)
	of(s.st.UpdateGuideEntry(s.ctx, "acme", "ops", a.ID, deleted.ID, func(e *store.GuideEntry) error {
		e.DeleteTime = s.clock.Now()
		return nil
	})).must(t)
	got := of(s.st.MatchGuideEntries(s.ctx, store.GuideMatch{OrganizationID: "acme", WorkspaceID: "ops", AutomationID: a.ID, StatementHash: "h1"})).must(t)
	if len(got) != 2 || got[0].ID != first.ID || got[1].ID != second.ID {
		t.Fatalf("match: %+v", got)
	}
	if none := of(s.st.MatchGuideEntries(s.ctx, store.GuideMatch{OrganizationID: "acme", WorkspaceID: "ops", AutomationID: a.ID, StatementHash: "h9"})).must(t); len(none) != 0 {
		t.Errorf("no entry for h9: %+v", none)
	}
}

// testGuidedExceptions: an exception resolved by an entry is written
// RESOLVED with its resolver and entry, at most MaxPerRun times per run.
func testGuidedExceptions(t *testing.T, s *suite) {
	a := s.automation(t, "a1")
	r := s.run(t, a, "")
	other := s.run(t, a, "")
	x := store.Exception{OrganizationID: "acme", WorkspaceID: "ops", RunID: r.ID, AutomationID: a.ID, Stage: store.StageDraft,
		Group: "missing_values", Message: "Please provide the grand total", Location: store.Location{Start: 1, End: 5}}
	for i := range 2 {
		got := of(s.st.RecordGuidedException(s.ctx, store.GuidedException{Exception: x, Entry: "g1", MaxPerRun: 2})).must(t)
		if got.State != store.ExceptionResolved || got.Resolver != "guideEntries/g1" || got.ResolutionGuideEntry != "g1" || got.RunID != r.ID ||
			got.Message != x.Message || got.Location != x.Location {
			t.Fatalf("guided exception %d: %+v", i, got)
		}
		if back := of(s.st.GetException(s.ctx, "acme", "ops", got.ID)).must(t); back.ResolutionGuideEntry != "g1" {
			t.Errorf("read back: %+v", back)
		}
	}
	_, err := s.st.RecordGuidedException(s.ctx, store.GuidedException{Exception: x, Entry: "g1", MaxPerRun: 2})
	wantErr(t, err, store.ErrResourceExhausted, "a third in one run")
	x.RunID = other.ID
	of(s.st.RecordGuidedException(s.ctx, store.GuidedException{Exception: x, Entry: "g1", MaxPerRun: 2})).must(t)
	// A batch: one transaction, each bounded counting those before it.
	third := s.run(t, a, "")
	y := x
	y.RunID = third.ID
	batch := []store.GuidedException{{Exception: y, Entry: "g2", MaxPerRun: 2}, {Exception: y, Entry: "g2", MaxPerRun: 2},
		{Exception: y, Entry: "g2", MaxPerRun: 2}, {Exception: x, Entry: "g2", MaxPerRun: 2}}
	xs, errs, err := s.st.RecordGuidedExceptions(s.ctx, batch)
	noErr(t, err)
	for i, want := range []bool{true, true, false, true} {
		if want && (errs[i] != nil || xs[i].ID == "" || xs[i].Resolver != "guideEntries/g2" || xs[i].ResolutionGuideEntry != "g2") {
			t.Errorf("batch %d: %+v %v", i, xs[i], errs[i])
		}
		if !want {
			wantErr(t, errs[i], store.ErrResourceExhausted, "the third of a run in a batch")
		}
	}
	// A batch of distinct runs (one statement on PostgreSQL).
	fourth, fifth := s.run(t, a, ""), s.run(t, a, "")
	z1, z2, z3 := x, x, x
	z1.RunID, z2.RunID, z3.RunID = fourth.ID, fifth.ID, r.ID
	xs, errs, err = s.st.RecordGuidedExceptions(s.ctx, []store.GuidedException{{Exception: z1, Entry: "g3", MaxPerRun: 2}, {Exception: z2, Entry: "g3", MaxPerRun: 1}, {Exception: z3, Entry: "g3", MaxPerRun: 2}})
	noErr(t, err)
	if errs[0] != nil || errs[1] != nil || xs[0].RunID != fourth.ID || xs[1].Resolver != "guideEntries/g3" {
		t.Errorf("distinct runs: %+v %v", xs, errs)
	}
	wantErr(t, errs[2], store.ErrResourceExhausted, "a run at its bound, in a batch of distinct runs")
	if back := of(s.st.GetException(s.ctx, "acme", "ops", xs[0].ID)).must(t); back.ResolutionGuideEntry != "g3" || back.Message != x.Message || back.Location != x.Location {
		t.Errorf("read back: %+v", back)
	}
	f, _ := sqlfilter.Exceptions.Parse(`state = RESOLVED AND run = "` + r.ID + `"`)
	_, n, err := s.st.ListExceptions(s.ctx, store.ListExceptionsRequest{OrganizationID: "acme", WorkspaceID: "ops", Filter: f})
	noErr(t, err)
	if n != 2 {
		t.Errorf("resolved exceptions of the run: %d, want 2", n)
	}
	// The exceptions an entry resolved, by their resolver.
	f, _ = sqlfilter.Exceptions.Parse(`resolver = "guideEntries/g3"`)
	p, n, err := s.st.ListExceptions(s.ctx, store.ListExceptionsRequest{OrganizationID: "acme", WorkspaceID: "ops", Filter: f, PageSize: 10})
	noErr(t, err)
	if n != 2 || len(p.Items) != 2 || p.Items[0].ResolutionGuideEntry != "g3" || p.Items[1].ResolutionGuideEntry != "g3" {
		t.Errorf("resolved by g3: %d %+v, want the two it resolved", n, p.Items)
	}
	f, _ = sqlfilter.Exceptions.Parse(`resolver != "guideEntries/g3" AND state = RESOLVED AND run = "` + fourth.ID + `"`)
	if _, n, err := s.st.ListExceptions(s.ctx, store.ListExceptionsRequest{OrganizationID: "acme", WorkspaceID: "ops", Filter: f}); err != nil || n != 0 {
		t.Errorf("resolved by another than g3 in the fourth run: %d %v, want 0", n, err)
	}
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
