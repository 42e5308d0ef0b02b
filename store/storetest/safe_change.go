package storetest

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/proserun/prose/store"
	"github.com/proserun/prose/store/sqlfilter"
)

func testSafeChange(t *testing.T, open Opener) {
	t.Run("AutomationTests", func(t *testing.T) { testAutomationTests(t, setup(t, open)) })
	t.Run("AutomationTestsInRevisions", func(t *testing.T) { testAutomationTestsInRevisions(t, setup(t, open)) })
	t.Run("Replays", func(t *testing.T) { testReplays(t, setup(t, open)) })
	t.Run("RunRecords", func(t *testing.T) { testRunRecords(t, setup(t, open)) })
}

func (s *suite) test(t *testing.T, a store.Automation, id, name string) store.AutomationTest {
	t.Helper()
	return of(s.st.CreateAutomationTest(s.ctx, store.AutomationTest{OrganizationID: a.OrganizationID, WorkspaceID: a.WorkspaceID,
		AutomationID: a.ID, ID: id, DisplayName: name, Spec: []byte("name: " + name + "\n")}, "u1", 3)).must(t)
}

// testAutomationTests: tests are part of the draft (each change is a new
// draft version), their ids and display names are unique in the
// automation, at most max of them, and they page oldest first.
func testAutomationTests(t *testing.T, s *suite) {
	a := s.automation(t, "inv")
	t1 := s.test(t, a, "small", "A small invoice")
	if t1.ID != "small" || t1.DisplayName != "A small invoice" || string(t1.Spec) != "name: A small invoice\n" || t1.CreateTime.IsZero() {
		t.Fatalf("created: %+v", t1)
	}
	if got := of(s.st.GetAutomation(s.ctx, "acme", "ops", "inv")).must(t); got.Version != a.Version+1 || got.UpdateUserID != "u1" {
		t.Errorf("the draft's version after a test: %d, want %d", got.Version, a.Version+1)
	}
	_, err := s.st.CreateAutomationTest(s.ctx, store.AutomationTest{OrganizationID: "acme", WorkspaceID: "ops", AutomationID: "inv",
		ID: "small", DisplayName: "other"}, "u1", 3)
	wantErr(t, err, store.ErrAlreadyExists, "a test id taken")
	_, err = s.st.CreateAutomationTest(s.ctx, store.AutomationTest{OrganizationID: "acme", WorkspaceID: "ops", AutomationID: "inv",
		DisplayName: "  a SMALL invoice "}, "u1", 3)
	wantErr(t, err, store.ErrAlreadyExists, "a display name taken, in other case")
	_, err = s.st.CreateAutomationTest(s.ctx, store.AutomationTest{OrganizationID: "acme", WorkspaceID: "ops", AutomationID: "nope",
		DisplayName: "x"}, "u1", 3)
	wantErr(t, err, store.ErrNotFound, "a test of an absent automation")
	gen := of(s.st.CreateAutomationTest(s.ctx, store.AutomationTest{OrganizationID: "acme", WorkspaceID: "ops", AutomationID: "inv",
		DisplayName: "generated"}, "u1", 3)).must(t)
	if gen.ID == "" {
		t.Error("no id generated")
	}
	s.test(t, a, "large", "A large invoice")
	_, err = s.st.CreateAutomationTest(s.ctx, store.AutomationTest{OrganizationID: "acme", WorkspaceID: "ops", AutomationID: "inv",
		DisplayName: "fourth"}, "u1", 3)
	wantErr(t, err, store.ErrResourceExhausted, "more tests than the most")

	// Pages, oldest first.
	p1 := of(s.st.ListAutomationTests(s.ctx, store.ListAutomationTestsRequest{OrganizationID: "acme", WorkspaceID: "ops", AutomationID: "inv", PageSize: 2})).must(t)
	if len(p1.Items) != 2 || p1.Items[0].ID != "small" || p1.Items[1].ID != gen.ID || p1.NextPageToken == "" {
		t.Fatalf("page 1: %+v", p1)
	}
	p2 := of(s.st.ListAutomationTests(s.ctx, store.ListAutomationTestsRequest{OrganizationID: "acme", WorkspaceID: "ops", AutomationID: "inv",
		PageSize: 2, PageToken: p1.NextPageToken})).must(t)
	if len(p2.Items) != 1 || p2.Items[0].ID != "large" || p2.NextPageToken != "" {
		t.Fatalf("page 2: %+v", p2)
	}
	_, err = s.st.ListAutomationTests(s.ctx, store.ListAutomationTestsRequest{OrganizationID: "acme", WorkspaceID: "ops", AutomationID: "other",
		PageSize: 2, PageToken: p1.NextPageToken})
	wantErr(t, err, store.ErrInvalidArgument, "a token of another automation's tests")

	// Update: a new name and spec; a name taken is refused.
	up := of(s.st.UpdateAutomationTest(s.ctx, "acme", "ops", "inv", "small", "u2", func(x *store.AutomationTest) error {
		x.DisplayName, x.Spec = "A tiny invoice", []byte("v2")
		return nil
	})).must(t)
	if up.DisplayName != "A tiny invoice" || string(up.Spec) != "v2" || !up.UpdateTime.After(t1.UpdateTime) || !up.CreateTime.Equal(t1.CreateTime) {
		t.Errorf("updated: %+v", up)
	}
	_, err = s.st.UpdateAutomationTest(s.ctx, "acme", "ops", "inv", "small", "u2", func(x *store.AutomationTest) error {
		x.DisplayName = "a large INVOICE"
		return nil
	})
	wantErr(t, err, store.ErrAlreadyExists, "rename to a name taken")
	_, err = s.st.UpdateAutomationTest(s.ctx, "acme", "ops", "inv", "nope", "u2", func(*store.AutomationTest) error { return nil })
	wantErr(t, err, store.ErrNotFound, "update an absent test")
	_, err = s.st.UpdateAutomationTest(s.ctx, "acme", "ops", "inv", "small", "u2", func(*store.AutomationTest) error { return errRefused })
	wantErr(t, err, errRefused, "the change's own error")

	noErr(t, s.st.DeleteAutomationTest(s.ctx, "acme", "ops", "inv", gen.ID, "u2"))
	wantErr(t, s.st.DeleteAutomationTest(s.ctx, "acme", "ops", "inv", gen.ID, "u2"), store.ErrNotFound, "delete twice")
	_, err = s.st.GetAutomationTest(s.ctx, "acme", "ops", "inv", gen.ID)
	wantErr(t, err, store.ErrNotFound, "get a deleted test")
	all := of(s.st.AllAutomationTests(s.ctx, "acme", "ops", "inv")).must(t)
	if len(all) != 2 || all[0].ID != "small" || all[1].ID != "large" {
		t.Fatalf("all: %+v", all)
	}
	of(s.st.DeleteAutomation(s.ctx, "acme", "ops", "inv")).must(t)
	_, err = s.st.CreateAutomationTest(s.ctx, store.AutomationTest{OrganizationID: "acme", WorkspaceID: "ops", AutomationID: "inv", DisplayName: "late"}, "u1", 9)
	wantErr(t, err, store.ErrNotFound, "a test of a deleted automation")
}

// testAutomationTestsInRevisions: every revision keeps the tests as they
// stood; a checked publish publishes only the draft its checks ran on and
// keeps what they found.
func testAutomationTestsInRevisions(t *testing.T, s *suite) {
	a := s.automation(t, "inv")
	s.test(t, a, "one", "One")
	a = of(s.st.GetAutomation(s.ctx, "acme", "ops", "inv")).must(t)
	_, err := s.st.PublishCheckedAutomation(s.ctx, "acme", "ops", "inv", "u3", a.Version-1, []byte("check"))
	wantErr(t, err, store.ErrStageChanged, "publish a draft its checks did not run on")
	_, err = s.st.PublishCheckedAutomation(s.ctx, "acme", "ops", "nope", "u3", 1, nil)
	wantErr(t, err, store.ErrNotFound, "publish an absent automation")
	p := of(s.st.PublishCheckedAutomation(s.ctx, "acme", "ops", "inv", "u3", a.Version, []byte("check"))).must(t)
	if p.PublishedVersion != a.Version+1 || p.PublishUserID != "u3" {
		t.Fatalf("published: %+v", p)
	}
	s.test(t, a, "two", "Two")
	pub := of(s.st.GetAutomationRevision(s.ctx, "acme", "ops", "inv", p.PublishedVersion)).must(t)
	if pub.Stage != store.StagePublished || string(pub.PublishCheck) != "check" || len(pub.Tests) != 1 || pub.Tests[0].ID != "one" ||
		pub.Tests[0].DisplayName != "One" || string(pub.Tests[0].Spec) != "name: One\n" || pub.Tests[0].AutomationID != "inv" {
		t.Fatalf("published revision: %+v", pub)
	}
	latest := of(s.st.GetAutomationRevision(s.ctx, "acme", "ops", "inv", 0)).must(t)
	var ids []string
	for _, x := range latest.Tests {
		ids = append(ids, x.ID)
	}
	if latest.Stage != store.StageDraft || latest.PublishCheck != nil || !slices.Equal(ids, []string{"one", "two"}) {
		t.Fatalf("latest revision: %+v", latest)
	}
	first := of(s.st.GetAutomationRevision(s.ctx, "acme", "ops", "inv", 1)).must(t)
	if len(first.Tests) != 0 {
		t.Errorf("the first revision has tests: %+v", first.Tests)
	}
	// An unchecked publish keeps the tests too, and no check.
	up := of(s.st.PublishAutomation(s.ctx, "acme", "ops", "inv", "u3")).must(t)
	if r := of(s.st.GetAutomationRevision(s.ctx, "acme", "ops", "inv", up.PublishedVersion)).must(t); len(r.Tests) != 2 || r.PublishCheck != nil {
		t.Errorf("unchecked publish: %+v", r)
	}
}

// testReplays: an automation keeps one replay; a new one replaces it and
// its results unless it still runs; results page in order and filter by
// outcome.
func testReplays(t *testing.T, s *suite) {
	a := s.automation(t, "inv")
	_, err := s.st.GetReplay(s.ctx, "acme", "ops", "inv")
	wantErr(t, err, store.ErrNotFound, "no replay yet")
	_, err = s.st.StartReplay(s.ctx, store.Replay{OrganizationID: "acme", WorkspaceID: "ops", AutomationID: "nope", RunCount: 1}, time.Hour)
	wantErr(t, err, store.ErrNotFound, "replay an absent automation")
	r := of(s.st.StartReplay(s.ctx, store.Replay{OrganizationID: "acme", WorkspaceID: "ops", AutomationID: a.ID,
		AutomationVersion: 3, PublishedVersion: 2, Filter: "state = completed", RunCount: 5}, time.Hour)).must(t)
	if r.ID == "" || r.State != store.ReplayRunning || r.RunCount != 5 || r.AutomationVersion != 3 || r.PublishedVersion != 2 ||
		r.Filter != "state = completed" || r.CreateTime.IsZero() || !r.EndTime.IsZero() {
		t.Fatalf("started: %+v", r)
	}
	_, err = s.st.StartReplay(s.ctx, store.Replay{OrganizationID: "acme", WorkspaceID: "ops", AutomationID: a.ID, RunCount: 1}, time.Hour)
	wantErr(t, err, store.ErrFailedPrecondition, "a second replay while one runs")

	outcomes := []string{"unchanged", "outputs_differ", "unchanged", "new_exception", "unchanged"}
	var results []store.ReplayResult
	for i, o := range outcomes {
		results = append(results, store.ReplayResult{Seq: i, RunID: fmt.Sprintf("run-%d", i), Outcome: o, RunCreateTime: Epoch, Data: []byte{byte(i)}})
	}
	r.Replayed, r.Unchanged = 2, 1
	r = of(s.st.SaveReplay(s.ctx, r, results[:2])).must(t)
	if r.Replayed != 2 || r.Unchanged != 1 || r.State != store.ReplayRunning {
		t.Fatalf("progress: %+v", r)
	}
	r.State, r.Replayed, r.Unchanged, r.OutputsDiffer, r.NewException, r.EndTime = store.ReplaySucceeded, 5, 3, 1, 1, s.clock.Now()
	r.RunCount = 5
	r = of(s.st.SaveReplay(s.ctx, r, results[2:])).must(t)
	if got := of(s.st.GetReplay(s.ctx, "acme", "ops", "inv")).must(t); got.State != store.ReplaySucceeded || got.Unchanged != 3 || got.RunCount != 5 ||
		got.OutputsDiffer != 1 || got.NewException != 1 || got.EndTime.IsZero() || got.ID != r.ID {
		t.Fatalf("saved: %+v", got)
	}
	list := func(filter, token string, size int) store.Page[store.ReplayResult] {
		t.Helper()
		var f store.Filter
		if filter != "" {
			var err error
			f, err = sqlfilter.ReplayResults.Parse(filter)
			noErr(t, err)
		}
		return of(s.st.ListReplayResults(s.ctx, store.ListReplayResultsRequest{OrganizationID: "acme", WorkspaceID: "ops",
			AutomationID: "inv", Filter: f, PageSize: size, PageToken: token})).must(t)
	}
	p1 := list("", "", 3)
	if len(p1.Items) != 3 || p1.Items[0].RunID != "run-0" || p1.Items[2].Seq != 2 || p1.NextPageToken == "" ||
		!p1.Items[1].RunCreateTime.Equal(Epoch) || p1.Items[1].Data[0] != 1 || p1.Items[1].Outcome != "outputs_differ" {
		t.Fatalf("page 1: %+v", p1)
	}
	if p2 := list("", p1.NextPageToken, 3); len(p2.Items) != 2 || p2.Items[0].RunID != "run-3" || p2.NextPageToken != "" {
		t.Fatalf("page 2: %+v", p2)
	}
	if changed := list("outcome != OUTCOME_UNCHANGED", "", 10); len(changed.Items) != 2 || changed.Items[0].RunID != "run-1" || changed.Items[1].RunID != "run-3" {
		t.Fatalf("changed: %+v", changed)
	}
	if differ := list(`outcome = "OUTPUTS_DIFFER"`, "", 10); len(differ.Items) != 1 {
		t.Fatalf("differ: %+v", differ)
	}

	// A new replay replaces the one that ended, and its results.
	next := of(s.st.StartReplay(s.ctx, store.Replay{OrganizationID: "acme", WorkspaceID: "ops", AutomationID: a.ID, RunCount: 1}, time.Hour)).must(t)
	if next.ID == r.ID || next.Replayed != 0 {
		t.Fatalf("next: %+v", next)
	}
	if got := list("", "", 10); len(got.Items) != 0 {
		t.Fatalf("the last replay's results are kept: %+v", got)
	}
	_, err = s.st.SaveReplay(s.ctx, r, nil)
	wantErr(t, err, store.ErrConflict, "save a replaced replay")
	// A running replay whose progress is older than stale is replaced.
	of(s.st.StartReplay(s.ctx, store.Replay{OrganizationID: "acme", WorkspaceID: "ops", AutomationID: a.ID, RunCount: 1}, time.Nanosecond)).must(t)
}

// testRunRecords: what runs recorded, read for a set of runs at once: the
// journal in order, and the exceptions resolved with their guidance (a
// guide entry's when it resolved one).
func testRunRecords(t *testing.T, s *suite) {
	a := s.automation(t, "inv")
	r1, x1 := s.exception(t, a, "missing_values", "Please provide the total")
	of(s.st.ResolveException(s.ctx, "acme", "ops", x1.ID, accept(store.Resolution{Resolver: "users/u1", Data: []byte("forty")}))).must(t)
	far := s.clock.Peek().Add(time.Hour)
	claimed := of(s.st.ClaimRuns(s.ctx, "w1", 10, far)).must(t)
	if len(claimed) != 1 || claimed[0].ID != r1.ID {
		t.Fatalf("claimed %+v", claimed)
	}
	noErr(t, s.st.SaveProgress(s.ctx, "w1", r1.ID, store.Progress{Step: 0, Journal: []store.JournalEntry{
		{Step: 0, Seq: 2, Kind: "book", Key: "email/send#b", Data: []byte("m2")},
		{Step: 0, Seq: 0, Kind: "book", Key: "email/send#a", Data: []byte("m1")},
	}}))
	en := of(s.st.CreateGuideEntry(s.ctx, store.GuideEntry{OrganizationID: "acme", WorkspaceID: "ops", AutomationID: a.ID,
		Statement: "get the date", StatementHash: "h", Guidance: []byte("entry's guidance"), State: store.GuideApproved})).must(t)
	of(s.st.RecordGuidedException(s.ctx, store.GuidedException{Exception: store.Exception{OrganizationID: "acme", WorkspaceID: "ops",
		RunID: r1.ID, AutomationID: a.ID, Stage: store.StageDraft, Group: "missing_values", Message: "Please provide the date",
		Location: store.Location{Start: 4, End: 16}}, Entry: en.ID, MaxPerRun: 10})).must(t)
	quiet := s.run(t, a, "")

	recs := of(s.st.ListRunRecords(s.ctx, "acme", "ops", []string{r1.ID, quiet.ID, "nope"})).must(t)
	rec := recs[r1.ID]
	if len(rec.Journal) != 2 || rec.Journal[0].Key != "email/send#a" || string(rec.Journal[1].Data) != "m2" {
		t.Fatalf("journal: %+v", rec.Journal)
	}
	if len(rec.Resolved) != 2 {
		t.Fatalf("resolved: %+v", rec.Resolved)
	}
	p, g := rec.Resolved[0], rec.Resolved[1]
	if p.Exception.ID != x1.ID || p.Exception.Group != "missing_values" || p.Exception.Message != "Please provide the total" ||
		p.Exception.Location != (store.Location{Start: 3, End: 9}) || string(p.Exception.Details) != `{"fact":"x"}` ||
		p.Exception.Resolver != "users/u1" || string(p.Guidance) != "forty" {
		t.Errorf("a person's resolution: %+v", p)
	}
	if g.Exception.ResolutionGuideEntry != en.ID || string(g.Guidance) != "entry's guidance" || g.Exception.Location.Start != 4 {
		t.Errorf("a guide entry's resolution: %+v", g)
	}
	if len(recs[quiet.ID].Journal)+len(recs[quiet.ID].Resolved) != 0 {
		t.Errorf("a run that recorded nothing: %+v", recs[quiet.ID])
	}
	if other := of(s.st.ListRunRecords(s.ctx, "acme", "other", []string{r1.ID})).must(t); len(other[r1.ID].Resolved)+len(other[r1.ID].Journal) != 0 {
		t.Errorf("the records of another workspace's run: %+v", other)
	}
	if none := of(s.st.ListRunRecords(s.ctx, "acme", "ops", nil)).must(t); len(none) != 0 {
		t.Errorf("no runs: %+v", none)
	}
}
