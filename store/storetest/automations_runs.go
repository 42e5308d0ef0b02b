package storetest

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/proserun/prose/store"
	"github.com/proserun/prose/store/sqlfilter"
)

// testAutomationsAndRuns runs the automation and run cases.
func testAutomationsAndRuns(t *testing.T, open Opener) {
	for _, tc := range []struct {
		name string
		fn   func(t *testing.T, s *suite)
	}{
		{"Automations", testAutomations},
		{"ListAutomations", testListAutomations},
		{"AutomationSlugs", testAutomationSlugs},
		{"RunNumbers", testRunNumbers},
		{"RunCreate", testRunCreate},
		{"RunCreateCurrentStage", testRunCreateCurrentStage},
		{"RunLeases", testRunLeases},
		{"RunRelease", testRunRelease},
		{"RunPauseContinue", testRunPauseContinue},
		{"RunPauseMeetsFinish", testRunPauseMeetsFinish},
		{"RunPauseFinishRace", testRunPauseFinishRace},
		{"ListRuns", testListRuns},
		{"PageByteBudget", testPageByteBudget},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, setup(t, open)) })
	}
}

// automation makes org acme, workspace ops and an automation of code.
func (s *suite) automation(t *testing.T, id string) store.Automation {
	t.Helper()
	if _, err := s.st.GetOrganization(s.ctx, "acme"); err != nil {
		s.org(t, "acme")
		s.ws(t, "acme", "ops", "Ops")
	}
	return of(s.st.CreateAutomation(s.ctx, store.Automation{
		OrganizationID: "acme", WorkspaceID: "ops", ID: id, DisplayName: "Automation " + id,
		Code: "the output x is 1\n", Details: []byte{1, 2}, AuthorID: "u1",
	})).must(t)
}

func (s *suite) run(t *testing.T, a store.Automation, requestID string) store.Run {
	t.Helper()
	r, created, err := s.st.CreateRun(s.ctx, store.Run{
		OrganizationID: a.OrganizationID, WorkspaceID: a.WorkspaceID, AutomationID: a.ID,
		Stage: store.StageDraft, StageVersion: a.Version, Steps: []byte("steps"), RequestID: requestID,
	})
	noErr(t, err)
	if !created {
		t.Fatalf("run with request id %q not created", requestID)
	}
	return r
}

func testAutomations(t *testing.T, s *suite) {
	a := s.automation(t, "inv")
	if a.Version != 1 || a.PublishedVersion != 0 || a.DraftShareID == "" || a.PublishedShareID == "" || a.DraftShareID == a.PublishedShareID {
		t.Fatalf("created: %+v", a)
	}
	if a.CreateTime.IsZero() || !a.PublishTime.IsZero() || !a.DeleteTime.IsZero() {
		t.Errorf("times: %+v", a)
	}
	gen := of(s.st.CreateAutomation(s.ctx, store.Automation{OrganizationID: "acme", WorkspaceID: "ops", DisplayName: "generated"})).must(t)
	if gen.ID == "" {
		t.Error("no id generated")
	}
	_, err := s.st.CreateAutomation(s.ctx, store.Automation{OrganizationID: "acme", WorkspaceID: "ops", ID: "inv", DisplayName: "dup"})
	wantErr(t, err, store.ErrAlreadyExists, "duplicate id")
	_, err = s.st.CreateAutomation(s.ctx, store.Automation{OrganizationID: "acme", WorkspaceID: "nope", DisplayName: "x"})
	wantErr(t, err, store.ErrNotFound, "missing workspace")

	got := of(s.st.GetAutomation(s.ctx, "acme", "ops", "inv")).must(t)
	if got.Code != a.Code || !slices.Equal(got.Details, []byte{1, 2}) || got.DisplayName != a.DisplayName || got.AuthorID != "u1" {
		t.Errorf("get: %+v", got)
	}
	_, err = s.st.GetAutomation(s.ctx, "acme", "ops", "nope")
	wantErr(t, err, store.ErrNotFound, "get missing")

	// Share ids name a stage.
	byShare, stage, err := s.st.GetAutomationByShareID(s.ctx, a.DraftShareID)
	if err != nil || byShare.ID != "inv" || stage != store.StageDraft {
		t.Errorf("draft share id: %v %s %s", err, byShare.ID, stage)
	}
	byShare, stage, err = s.st.GetAutomationByShareID(s.ctx, a.PublishedShareID)
	if err != nil || byShare.ID != "inv" || stage != store.StagePublished {
		t.Errorf("published share id: %v %s %s", err, byShare.ID, stage)
	}
	_, _, err = s.st.GetAutomationByShareID(s.ctx, "nope")
	wantErr(t, err, store.ErrNotFound, "unknown share id")

	// Update: only the masked fields; the version increases.
	u := of(s.st.UpdateAutomation(s.ctx, store.Automation{OrganizationID: "acme", WorkspaceID: "ops", ID: "inv",
		DisplayName: "Renamed", Code: "ignored", UpdateUserID: "u2"}, []string{"display_name"})).must(t)
	if u.DisplayName != "Renamed" || u.Code != a.Code || u.Version != 2 || u.UpdateUserID != "u2" || !u.UpdateTime.After(a.UpdateTime) {
		t.Errorf("update display_name: %+v", u)
	}
	u = of(s.st.UpdateAutomation(s.ctx, store.Automation{OrganizationID: "acme", WorkspaceID: "ops", ID: "inv",
		DisplayName: "Renamed", Code: "the output y is 2\n", Details: []byte{3}}, []string{"code", "details"})).must(t)
	if u.Code != "the output y is 2\n" || !slices.Equal(u.Details, []byte{3}) || u.Version != 3 {
		t.Errorf("update code: %+v", u)
	}
	_, err = s.st.UpdateAutomation(s.ctx, store.Automation{OrganizationID: "acme", WorkspaceID: "ops", ID: "nope", DisplayName: "x"}, nil)
	wantErr(t, err, store.ErrNotFound, "update missing")

	// Publish copies the draft.
	p := of(s.st.PublishAutomation(s.ctx, "acme", "ops", "inv", "u3")).must(t)
	if p.PublishedCode != "the output y is 2\n" || !slices.Equal(p.PublishedDetails, []byte{3}) || p.Version != 4 || p.PublishedVersion != 4 ||
		p.PublishUserID != "u3" || p.PublishTime.IsZero() {
		t.Errorf("publish: %+v", p)
	}
	// A later draft change leaves the published stage alone.
	u = of(s.st.UpdateAutomation(s.ctx, store.Automation{OrganizationID: "acme", WorkspaceID: "ops", ID: "inv", Code: "the output z is 3\n"}, []string{"code"})).must(t)
	if u.PublishedCode != "the output y is 2\n" || u.PublishedVersion != 4 || u.Version != 5 {
		t.Errorf("draft after publish: %+v", u)
	}
	_, err = s.st.PublishAutomation(s.ctx, "acme", "ops", "nope", "u3")
	wantErr(t, err, store.ErrNotFound, "publish missing")

	// Delete is soft.
	d := of(s.st.DeleteAutomation(s.ctx, "acme", "ops", "inv")).must(t)
	if d.DeleteTime.IsZero() {
		t.Errorf("delete: %+v", d)
	}
	if g := of(s.st.GetAutomation(s.ctx, "acme", "ops", "inv")).must(t); g.DeleteTime.IsZero() {
		t.Error("a deleted automation reads back without delete time")
	}
	_, err = s.st.DeleteAutomation(s.ctx, "acme", "ops", "inv")
	wantErr(t, err, store.ErrNotFound, "delete twice")
	_, _, err = s.st.GetAutomationByShareID(s.ctx, a.DraftShareID)
	wantErr(t, err, store.ErrNotFound, "share id of a deleted automation")
	_, err = s.st.UpdateAutomation(s.ctx, store.Automation{OrganizationID: "acme", WorkspaceID: "ops", ID: "inv", DisplayName: "x"}, []string{"display_name"})
	wantErr(t, err, store.ErrNotFound, "update deleted")
	_, err = s.st.PublishAutomation(s.ctx, "acme", "ops", "inv", "u")
	wantErr(t, err, store.ErrNotFound, "publish deleted")
}

func testListAutomations(t *testing.T, s *suite) {
	for _, id := range []string{"a1", "a2", "a3", "a4"} {
		s.automation(t, id)
	}
	of(s.st.UpdateAutomation(s.ctx, store.Automation{OrganizationID: "acme", WorkspaceID: "ops", ID: "a2", DisplayName: "Zeta"}, []string{"display_name"})).must(t)
	of(s.st.DeleteAutomation(s.ctx, "acme", "ops", "a4")).must(t)
	list := func(req store.ListAutomationsRequest) []string {
		t.Helper()
		req.OrganizationID, req.WorkspaceID = "acme", "ops"
		items, _ := all(t, 2, func(tok string) (store.Page[store.Automation], error) {
			req.PageSize, req.PageToken = 2, tok
			return s.st.ListAutomations(s.ctx, req)
		})
		return ids(items, func(a store.Automation) string { return a.ID })
	}
	// Default: update_time desc; deleted ones hidden.
	if got := list(store.ListAutomationsRequest{}); !slices.Equal(got, []string{"a2", "a3", "a1"}) {
		t.Errorf("default order: %v", got)
	}
	if got := list(store.ListAutomationsRequest{ShowDeleted: true}); len(got) != 4 {
		t.Errorf("show deleted: %v", got)
	}
	ob, err := store.ParseOrderBy("display_name desc", store.AutomationOrdering)
	noErr(t, err)
	if got := list(store.ListAutomationsRequest{OrderBy: ob}); !slices.Equal(got, []string{"a2", "a3", "a1"}) {
		t.Errorf("display_name desc: %v", got)
	}
	f, err := sqlfilter.Automations.Parse(`display_name:"zet"`)
	noErr(t, err)
	if got := list(store.ListAutomationsRequest{Filter: f}); !slices.Equal(got, []string{"a2"}) {
		t.Errorf("filter: %v", got)
	}
	_, err = s.st.ListAutomations(s.ctx, store.ListAutomationsRequest{OrganizationID: "acme", WorkspaceID: "ops", PageSize: 2, PageToken: "zzz"})
	wantErr(t, err, store.ErrInvalidArgument, "bad token")
}

func testRunCreate(t *testing.T, s *suite) {
	a := s.automation(t, "inv")
	r := s.run(t, a, "req-1")
	if r.ID == "" || r.State != store.RunPending || r.CreateTime.IsZero() || r.StateTime.IsZero() || string(r.Steps) != "steps" {
		t.Fatalf("created: %+v", r)
	}
	// The same request id returns the first run.
	again, created, err := s.st.CreateRun(s.ctx, store.Run{OrganizationID: "acme", WorkspaceID: "ops", AutomationID: "inv", Stage: store.StageDraft, RequestID: "req-1"})
	if err != nil || created || again.ID != r.ID {
		t.Errorf("retry: %v created=%v id=%s want %s", err, created, again.ID, r.ID)
	}
	_, _, err = s.st.CreateRun(s.ctx, store.Run{OrganizationID: "acme", WorkspaceID: "ops", AutomationID: "nope", Stage: store.StageDraft})
	wantErr(t, err, store.ErrNotFound, "run of a missing automation")

	got := of(s.st.GetRun(s.ctx, "acme", "ops", "inv", r.ID)).must(t)
	if got.ID != r.ID || got.Stage != store.StageDraft || got.StageVersion != a.Version {
		t.Errorf("get: %+v", got)
	}
	if byID := of(s.st.GetRunByID(s.ctx, r.ID)).must(t); byID.AutomationID != "inv" || byID.WorkspaceID != "ops" {
		t.Errorf("by id: %+v", byID)
	}
	other := s.automation(t, "other")
	_, err = s.st.GetRun(s.ctx, "acme", "ops", other.ID, r.ID)
	wantErr(t, err, store.ErrNotFound, "run in another automation")
	_, err = s.st.GetRunByID(s.ctx, "nope")
	wantErr(t, err, store.ErrNotFound, "unknown run id")
}

// testRunCreateCurrentStage: a run with CurrentStage is created only while
// its automation's stage is at the run's StageVersion and not deleted.
func testRunCreateCurrentStage(t *testing.T, s *suite) {
	a := s.automation(t, "cur")
	run := func(stage store.Stage, version int64) (store.Run, error) {
		r, _, err := s.st.CreateRun(s.ctx, store.Run{OrganizationID: "acme", WorkspaceID: "ops", AutomationID: a.ID,
			Stage: stage, StageVersion: version, CurrentStage: true})
		return r, err
	}
	if r, err := run(store.StageDraft, a.Version); err != nil || r.StageVersion != a.Version {
		t.Fatalf("current draft: %v %+v", err, r)
	}
	_, err := run(store.StageDraft, a.Version+1)
	wantErr(t, err, store.ErrStageChanged, "draft at another version")
	if !errors.Is(err, store.ErrConflict) {
		t.Errorf("ErrStageChanged is not an ErrConflict: %v", err)
	}
	_, err = run(store.StagePublished, 1)
	wantErr(t, err, store.ErrStageChanged, "published stage of a never-published automation")
	p := of(s.st.PublishAutomation(s.ctx, "acme", "ops", a.ID, "")).must(t)
	_, err = run(store.StageDraft, a.Version)
	wantErr(t, err, store.ErrStageChanged, "draft after a publish (the version moved on)")
	if _, err := run(store.StagePublished, p.PublishedVersion); err != nil {
		t.Fatalf("current published: %v", err)
	}
	// Without CurrentStage the version is not checked.
	if _, _, err := s.st.CreateRun(s.ctx, store.Run{OrganizationID: "acme", WorkspaceID: "ops", AutomationID: a.ID, Stage: store.StageDraft, StageVersion: 99}); err != nil {
		t.Fatalf("without CurrentStage: %v", err)
	}
	of(s.st.DeleteAutomation(s.ctx, "acme", "ops", a.ID)).must(t)
	_, err = run(store.StagePublished, p.PublishedVersion)
	wantErr(t, err, store.ErrStageChanged, "deleted automation")
}

func testRunLeases(t *testing.T, s *suite) {
	a := s.automation(t, "inv")
	r1 := s.run(t, a, "")
	r2 := s.run(t, a, "")
	far := s.clock.Peek().Add(time.Hour)

	claimed := of(s.st.ClaimRuns(s.ctx, "w1", 1, far)).must(t)
	if len(claimed) != 1 || claimed[0].ID != r1.ID || claimed[0].State != store.RunExecuting || claimed[0].LeaseOwner != "w1" {
		t.Fatalf("claim oldest first: %+v", claimed)
	}
	claimed = of(s.st.ClaimRuns(s.ctx, "w2", 10, far)).must(t)
	if len(claimed) != 1 || claimed[0].ID != r2.ID {
		t.Fatalf("second claim: %+v", claimed)
	}
	if none := of(s.st.ClaimRuns(s.ctx, "w3", 10, far)).must(t); len(none) != 0 {
		t.Fatalf("claimed leased runs: %+v", none)
	}

	// Renew reports the owner's runs only.
	states := of(s.st.RenewLeases(s.ctx, "w1", []string{r1.ID, r2.ID}, far.Add(time.Hour))).must(t)
	if len(states) != 1 || states[r1.ID] != store.RunExecuting {
		t.Errorf("renew: %v", states)
	}

	// Progress and journal, then finish.
	noErr(t, s.st.SaveProgress(s.ctx, "w1", r1.ID, store.Progress{Step: 0, Checkpoint: []byte("cp"),
		Journal: []store.JournalEntry{{Step: 0, Seq: 0, Kind: "book", Key: "k", Data: []byte("d")}}}))
	noErr(t, s.st.AppendJournal(s.ctx, "w1", r1.ID, []store.JournalEntry{{Step: 0, Seq: 1, Kind: "clock", Key: "now", Data: []byte("t")}}))
	j := of(s.st.ListJournal(s.ctx, r1.ID)).must(t)
	if len(j) != 2 || j[0].Seq != 0 || j[1].Kind != "clock" {
		t.Errorf("journal: %+v", j)
	}
	if got := of(s.st.GetRun(s.ctx, "acme", "ops", "inv", r1.ID)).must(t); string(got.Checkpoint) != "cp" {
		t.Errorf("checkpoint: %q", got.Checkpoint)
	}

	// A worker that does not hold the lease gets ErrConflict.
	wantErr(t, s.st.SaveProgress(s.ctx, "w2", r1.ID, store.Progress{}), store.ErrConflict, "save progress without the lease")
	wantErr(t, s.st.AppendJournal(s.ctx, "w2", r1.ID, []store.JournalEntry{{Step: 0, Seq: 9, Kind: "book", Key: "k"}}), store.ErrConflict, "append journal without the lease")
	_, err := s.st.FinishRun(s.ctx, "w2", r1.ID, store.RunOutcome{State: store.RunCompleted})
	wantErr(t, err, store.ErrConflict, "finish without the lease")

	done := of(s.st.FinishRun(s.ctx, "w1", r1.ID, store.RunOutcome{State: store.RunCompleted, Outputs: []byte("out")})).must(t)
	if done.State != store.RunCompleted || string(done.Outputs) != "out" || done.LeaseOwner != "" {
		t.Errorf("finish: %+v", done)
	}
	_, err = s.st.FinishRun(s.ctx, "w1", r1.ID, store.RunOutcome{State: store.RunFailed})
	wantErr(t, err, store.ErrConflict, "finish a finished run")

	failed := of(s.st.FinishRun(s.ctx, "w2", r2.ID, store.RunOutcome{State: store.RunFailed, ErrorID: "e1", Description: "boom", Location: store.Location{Start: 1, End: 4}})).must(t)
	if failed.State != store.RunFailed || failed.Description != "boom" || failed.Location != (store.Location{Start: 1, End: 4}) || failed.ErrorID != "e1" {
		t.Errorf("failed: %+v", failed)
	}

	// An expired lease: the run goes back to pending and another worker
	// claims it; the first worker lost it.
	r3 := s.run(t, a, "")
	past := s.clock.Peek()
	of(s.st.ClaimRuns(s.ctx, "w1", 1, past)).must(t)
	claimed = of(s.st.ClaimRuns(s.ctx, "w2", 1, far)).must(t)
	if len(claimed) != 1 || claimed[0].ID != r3.ID || claimed[0].LeaseOwner != "w2" {
		t.Fatalf("reclaim after expiry: %+v", claimed)
	}
	states = of(s.st.RenewLeases(s.ctx, "w1", []string{r3.ID}, far)).must(t)
	if _, ok := states[r3.ID]; ok {
		t.Errorf("the old owner still renews: %v", states)
	}
	wantErr(t, s.st.SaveProgress(s.ctx, "w1", r3.ID, store.Progress{}), store.ErrConflict, "lease lost")
}

// ReleaseRuns: runs claimed and never started go back, in one write, to
// the queue as the claim found them (stopped when paused meanwhile), and
// another worker claims them at once, their leases far from expired; runs
// not leased to the owner are left alone.
func testRunRelease(t *testing.T, s *suite) {
	a := s.automation(t, "inv")
	far := s.clock.Peek().Add(time.Hour)
	if n, err := s.st.ReleaseRuns(s.ctx, "w1", nil); err != nil || n != 0 {
		t.Fatalf("release nothing: %d %v", n, err)
	}
	// r1 comes back to the queue with a checkpoint (a worker handed it
	// back): released, it keeps it.
	r1 := s.run(t, a, "")
	of(s.st.ClaimRuns(s.ctx, "w0", 1, far)).must(t)
	of(s.st.FinishRun(s.ctx, "w0", r1.ID, store.RunOutcome{State: store.RunPending, Checkpoint: []byte("cp"), Step: 2, StepInputs: []byte("in")})).must(t)
	r2, r3, r4 := s.run(t, a, ""), s.run(t, a, ""), s.run(t, a, "")
	claimed := of(s.st.ClaimRuns(s.ctx, "w1", 4, far)).must(t)
	if len(claimed) != 4 {
		t.Fatalf("claimed %d runs, want 4", len(claimed))
	}
	r5 := s.run(t, a, "")
	of(s.st.ClaimRuns(s.ctx, "w2", 1, far)).must(t)
	// r2 is paused while it waits for a worker.
	if p := of(s.st.ChangeRun(s.ctx, "acme", "ops", "inv", r2.ID, pause("hold"))).must(t); p.State != store.RunStopping {
		t.Fatalf("pause a claimed run: %+v", p)
	}

	n, err := s.st.ReleaseRuns(s.ctx, "w1", []string{r1.ID, r2.ID, r3.ID, r5.ID, "no-such-run"})
	if err != nil || n != 3 {
		t.Fatalf("release: %d %v, want 3", n, err)
	}
	for _, c := range []struct {
		r     store.Run
		state store.RunState
		owner string
	}{{r1, store.RunPending, ""}, {r2, store.RunStopped, ""}, {r3, store.RunPending, ""}, {r4, store.RunExecuting, "w1"}, {r5, store.RunExecuting, "w2"}} {
		got := of(s.st.GetRun(s.ctx, "acme", "ops", "inv", c.r.ID)).must(t)
		if got.State != c.state || got.LeaseOwner != c.owner {
			t.Errorf("run %s after the release: %s leased to %q, want %s leased to %q", c.r.ID, got.State, got.LeaseOwner, c.state, c.owner)
		}
	}
	if got := of(s.st.GetRun(s.ctx, "acme", "ops", "inv", r1.ID)).must(t); string(got.Checkpoint) != "cp" || got.Step != 2 || string(got.StepInputs) != "in" {
		t.Errorf("released run lost its state: checkpoint %q step %d inputs %q", got.Checkpoint, got.Step, got.StepInputs)
	}
	if got := of(s.st.GetRun(s.ctx, "acme", "ops", "inv", r2.ID)).must(t); got.Reason != "hold" {
		t.Errorf("released paused run: reason %q", got.Reason)
	}
	// The releasing worker holds them no more.
	if states := of(s.st.RenewLeases(s.ctx, "w1", []string{r1.ID, r2.ID, r3.ID, r4.ID}, far)).must(t); len(states) != 1 || states[r4.ID] != store.RunExecuting {
		t.Errorf("renew after the release: %v, want only %s", states, r4.ID)
	}
	wantErr(t, s.st.SaveProgress(s.ctx, "w1", r1.ID, store.Progress{}), store.ErrConflict, "progress of a released run")
	// Another worker claims the pending ones now, oldest first.
	again := of(s.st.ClaimRuns(s.ctx, "w3", 10, far)).must(t)
	if len(again) != 2 || again[0].ID != r1.ID || again[1].ID != r3.ID || string(again[0].Checkpoint) != "cp" {
		t.Fatalf("claim after the release: %+v, want %s (with its checkpoint) and %s", again, r1.ID, r3.ID)
	}
	// Released again by w1 (no longer its own): nothing changes.
	if n, err := s.st.ReleaseRuns(s.ctx, "w1", []string{r1.ID, r3.ID}); err != nil || n != 0 {
		t.Errorf("release runs leased to another: %d %v", n, err)
	}
}

func testRunPauseContinue(t *testing.T, s *suite) {
	a := s.automation(t, "inv")
	far := s.clock.Peek().Add(time.Hour)

	// pending → stopped → pending.
	r := s.run(t, a, "")
	p := of(s.st.ChangeRun(s.ctx, "acme", "ops", "inv", r.ID, pause("hold"))).must(t)
	if p.State != store.RunStopped || p.Reason != "hold" {
		t.Fatalf("pause pending: %+v", p)
	}
	// The check sees the row as it is and decides; its error is returned
	// as is and changes nothing.
	refused := errors.New("refused by the check")
	_, err := s.st.ChangeRun(s.ctx, "acme", "ops", "inv", r.ID, func(got store.Run, pending string) (store.RunChange, error) {
		if got.State != store.RunStopped || got.Reason != "hold" || pending != "" {
			t.Errorf("the check saw %s (%q), pending %q", got.State, got.Reason, pending)
		}
		return store.RunChange{State: store.RunPending}, refused
	})
	if !errors.Is(err, refused) {
		t.Fatalf("a refusal of the check: %v", err)
	}
	// What the store refuses whatever the check says: stopping a run no
	// worker executes, awaiting guidance on no exception, another state.
	_, err = s.st.ChangeRun(s.ctx, "acme", "ops", "inv", r.ID, to(store.RunStopping))
	wantErr(t, err, store.ErrFailedPrecondition, "stopping a stopped run")
	_, err = s.st.ChangeRun(s.ctx, "acme", "ops", "inv", r.ID, to(store.RunAwaitingGuidance))
	wantErr(t, err, store.ErrInvalidArgument, "awaiting guidance on no exception")
	_, err = s.st.ChangeRun(s.ctx, "acme", "ops", "inv", r.ID, to(store.RunCompleted))
	wantErr(t, err, store.ErrInvalidArgument, "a client completes a run")
	_, err = s.st.ChangeRun(s.ctx, "acme", "ops", "inv", r.ID, nil)
	wantErr(t, err, store.ErrInvalidArgument, "no check")
	if got := of(s.st.GetRun(s.ctx, "acme", "ops", "inv", r.ID)).must(t); got.State != store.RunStopped || got.Reason != "hold" || !got.UpdateTime.Equal(p.UpdateTime) {
		t.Fatalf("refused changes changed the run: %+v", got)
	}
	c := of(s.st.ChangeRun(s.ctx, "acme", "ops", "inv", r.ID, resume)).must(t)
	if c.State != store.RunPending {
		t.Fatalf("continue: %+v", c)
	}
	if got := of(s.st.GetRun(s.ctx, "acme", "ops", "inv", r.ID)).must(t); got.State != c.State || !got.UpdateTime.Equal(c.UpdateTime) || !got.StateTime.Equal(c.StateTime) {
		t.Fatalf("ChangeRun returned %+v, the store holds %+v", c, got)
	}

	// executing → stopping (renew reports it) → stopped keeping the reason.
	claimed := of(s.st.ClaimRuns(s.ctx, "w1", 1, far)).must(t)
	if len(claimed) != 1 || claimed[0].ID != r.ID {
		t.Fatalf("claim: %+v", claimed)
	}
	p = of(s.st.ChangeRun(s.ctx, "acme", "ops", "inv", r.ID, pause("slow down"))).must(t)
	if p.State != store.RunStopping || p.Reason != "slow down" {
		t.Fatalf("pause executing: %+v", p)
	}
	if st := of(s.st.RenewLeases(s.ctx, "w1", []string{r.ID}, far)).must(t); st[r.ID] != store.RunStopping {
		t.Errorf("renew of a stopping run: %v", st)
	}
	stopped := of(s.st.FinishRun(s.ctx, "w1", r.ID, store.RunOutcome{State: store.RunStopped, Checkpoint: []byte("cp")})).must(t)
	if stopped.State != store.RunStopped || stopped.Reason != "slow down" {
		t.Fatalf("stopped: %+v", stopped)
	}

	// awaiting_guidance → stopped → awaiting_guidance (its exception pending).
	of(s.st.ChangeRun(s.ctx, "acme", "ops", "inv", r.ID, resume)).must(t)
	of(s.st.ClaimRuns(s.ctx, "w1", 1, far)).must(t)
	w := of(s.st.FinishRun(s.ctx, "w1", r.ID, store.RunOutcome{State: store.RunAwaitingGuidance, Description: "Please provide x",
		Exception: &store.Exception{Message: "missing x", Description: "Please provide x"}, Checkpoint: []byte("cp2")})).must(t)
	if w.State != store.RunAwaitingGuidance || w.ExceptionID == "" {
		t.Fatalf("awaiting: %+v", w)
	}
	p = of(s.st.ChangeRun(s.ctx, "acme", "ops", "inv", r.ID, pause("later"))).must(t)
	if p.State != store.RunStopped || p.Reason != "later" {
		t.Fatalf("pause awaiting: %+v", p)
	}
	c = of(s.st.ChangeRun(s.ctx, "acme", "ops", "inv", r.ID, resume)).must(t)
	if c.State != store.RunAwaitingGuidance || c.ExceptionID != w.ExceptionID {
		t.Fatalf("continue with a pending exception: %+v", c)
	}

	// Terminal runs cannot be paused; unknown runs are not found.
	done := s.run(t, a, "")
	of(s.st.ClaimRuns(s.ctx, "w1", 1, far)).must(t)
	of(s.st.FinishRun(s.ctx, "w1", done.ID, store.RunOutcome{State: store.RunCompleted})).must(t)
	_, err = s.st.ChangeRun(s.ctx, "acme", "ops", "inv", done.ID, pause("x"))
	wantErr(t, err, store.ErrFailedPrecondition, "pause a completed run")
	_, err = s.st.ChangeRun(s.ctx, "acme", "ops", "inv", done.ID, resume)
	wantErr(t, err, store.ErrFailedPrecondition, "continue a completed run")
	_, err = s.st.ChangeRun(s.ctx, "acme", "ops", "inv", "nope", pause("x"))
	wantErr(t, err, store.ErrNotFound, "pause unknown")
	_, err = s.st.ChangeRun(s.ctx, "acme", "ops", "inv", "nope", resume)
	wantErr(t, err, store.ErrNotFound, "continue unknown")
}

func testListRuns(t *testing.T, s *suite) {
	a := s.automation(t, "inv")
	b := s.automation(t, "other")
	var made []string
	for i := 0; i < 3; i++ {
		made = append(made, s.run(t, a, "").ID)
	}
	made = append(made, s.run(t, b, "").ID)
	of(s.st.ChangeRun(s.ctx, "acme", "ops", "inv", made[0], pause("x"))).must(t)
	list := func(req store.ListRunsRequest) []string {
		t.Helper()
		req.OrganizationID, req.WorkspaceID = "acme", "ops"
		items, _ := all(t, 2, func(tok string) (store.Page[store.Run], error) {
			req.PageSize, req.PageToken = 2, tok
			return s.st.ListRuns(s.ctx, req)
		})
		return ids(items, func(r store.Run) string { return r.ID })
	}
	if got := list(store.ListRunsRequest{AutomationID: "inv"}); !slices.Equal(got, []string{made[2], made[1], made[0]}) {
		t.Errorf("newest first: %v, made %v", got, made)
	}
	if got := list(store.ListRunsRequest{AutomationID: "-"}); len(got) != 4 || got[0] != made[3] {
		t.Errorf("every automation: %v", got)
	}
	ob, err := store.ParseOrderBy("create_time", store.RunOrdering)
	noErr(t, err)
	if got := list(store.ListRunsRequest{AutomationID: "inv", OrderBy: ob}); !slices.Equal(got, made[:3]) {
		t.Errorf("oldest first: %v", got)
	}
	f, err := sqlfilter.Runs.Parse(`state = stopped`)
	noErr(t, err)
	if got := list(store.ListRunsRequest{AutomationID: "-", Filter: f}); !slices.Equal(got, made[:1]) {
		t.Errorf("state filter: %v", got)
	}
	f, err = sqlfilter.Runs.Parse(`create_time > "` + Epoch.Format(time.RFC3339) + `" AND state = "pending"`)
	noErr(t, err)
	if got := list(store.ListRunsRequest{AutomationID: "-", Filter: f}); len(got) != 3 {
		t.Errorf("create_time and state filter: %v", got)
	}
	f, err = sqlfilter.Runs.Parse(`create_time < "` + Epoch.Format(time.RFC3339) + `"`)
	noErr(t, err)
	if got := list(store.ListRunsRequest{AutomationID: "-", Filter: f}); len(got) != 0 {
		t.Errorf("create_time before every run: %v", got)
	}
	_, err = s.st.ListRuns(s.ctx, store.ListRunsRequest{OrganizationID: "acme", WorkspaceID: "ops", AutomationID: "-", PageSize: 2, PageToken: "zzz"})
	wantErr(t, err, store.ErrInvalidArgument, "bad token")
}

// testPageByteBudget: a page stops before the item that would take it past
// store.MaxPageBytes and carries a next token; paging still returns every
// item once, in order, and an item larger than the budget comes alone.
func testPageByteBudget(t *testing.T, s *suite) {
	const n = 7
	big := strings.Repeat("x", store.MaxPageBytes/3-1024) // three fit in a page, four do not
	var want []string
	for i := range n {
		id := fmt.Sprintf("b%d", i)
		a := s.automation(t, id)
		of(s.st.UpdateAutomation(s.ctx, store.Automation{OrganizationID: "acme", WorkspaceID: "ops", ID: id, Code: big}, []string{"code"})).must(t)
		want = append(want, a.ID)
	}
	ob, err := store.ParseOrderBy("display_name", store.AutomationOrdering)
	noErr(t, err)
	var sizes []int
	items, pages := all(t, 1000, func(tok string) (store.Page[store.Automation], error) {
		p, err := s.st.ListAutomations(s.ctx, store.ListAutomationsRequest{OrganizationID: "acme", WorkspaceID: "ops", OrderBy: ob, PageSize: 1000, PageToken: tok})
		sizes = append(sizes, len(p.Items))
		return p, err
	})
	if got := ids(items, func(a store.Automation) string { return a.ID }); !slices.Equal(got, want) {
		t.Errorf("paged through %v, want %v", got, want)
	}
	if pages != 3 || !slices.Equal(sizes, []int{3, 3, 1}) {
		t.Errorf("page sizes %v, want [3 3 1]", sizes)
	}

	// A run larger than the budget is a page of its own.
	a := s.automation(t, "huge")
	huge := []byte(strings.Repeat("y", store.MaxPageBytes+1))
	for i := range 3 {
		_, _, err := s.st.CreateRun(s.ctx, store.Run{
			OrganizationID: "acme", WorkspaceID: "ops", AutomationID: a.ID,
			Stage: store.StageDraft, StageVersion: a.Version, Steps: huge, RequestID: fmt.Sprintf("huge-%d", i),
		})
		noErr(t, err)
	}
	runs, pages := all(t, 50, func(tok string) (store.Page[store.Run], error) {
		return s.st.ListRuns(s.ctx, store.ListRunsRequest{OrganizationID: "acme", WorkspaceID: "ops", AutomationID: a.ID, PageSize: 50, PageToken: tok})
	})
	if len(runs) != 3 || pages != 3 {
		t.Errorf("runs over the budget: %d runs in %d pages, want 3 in 3", len(runs), pages)
	}
}

// testRunPauseMeetsFinish: a pause that committed first wins over the
// worker's outcome. A completed outcome leaves the run stopped after its
// last step, with the reason and outputs kept; continuing then lets a
// worker complete it. A pause after the finish came too late.
func testRunPauseMeetsFinish(t *testing.T, s *suite) {
	a := s.automation(t, "inv")
	far := s.clock.Peek().Add(time.Hour)
	finishers := map[string]func(id string, o store.RunOutcome) error{
		"FinishRun": func(id string, o store.RunOutcome) error {
			_, err := s.st.FinishRun(s.ctx, "w1", id, o)
			return err
		},
		// store.RunBatches, declared by every store.
		"FinishRuns": func(id string, o store.RunOutcome) error {
			errs, err := s.st.FinishRuns(s.ctx, "w1", []string{id}, []store.RunOutcome{o})
			if err != nil {
				return err
			}
			return errs[0]
		},
	}
	for name, finish := range finishers {
		r := s.run(t, a, "")
		if got := of(s.st.ClaimRuns(s.ctx, "w1", 1, far)).must(t); len(got) != 1 || got[0].ID != r.ID {
			t.Fatalf("%s: claim %+v", name, got)
		}
		of(s.st.ChangeRun(s.ctx, "acme", "ops", "inv", r.ID, pause("hold on"))).must(t)
		noErr(t, finish(r.ID, store.RunOutcome{State: store.RunCompleted, Outputs: []byte("out"), Step: 1}))
		got := of(s.st.GetRun(s.ctx, "acme", "ops", "inv", r.ID)).must(t)
		if got.State != store.RunStopped || got.Reason != "hold on" || string(got.Outputs) != "out" || got.Step != 1 || got.LeaseOwner != "" {
			t.Fatalf("%s: completed while stopping: %+v", name, got)
		}
		of(s.st.ChangeRun(s.ctx, "acme", "ops", "inv", r.ID, resume)).must(t)
		again := of(s.st.ClaimRuns(s.ctx, "w2", 1, far)).must(t)
		if len(again) != 1 || again[0].Step != 1 || string(again[0].Outputs) != "out" {
			t.Fatalf("%s: claimed after continue: %+v", name, again)
		}
		done := of(s.st.FinishRun(s.ctx, "w2", r.ID, store.RunOutcome{State: store.RunCompleted, Outputs: again[0].Outputs, Step: again[0].Step})).must(t)
		if done.State != store.RunCompleted || string(done.Outputs) != "out" {
			t.Fatalf("%s: completed after continue: %+v", name, done)
		}
		_, err := s.st.ChangeRun(s.ctx, "acme", "ops", "inv", r.ID, pause("late"))
		wantErr(t, err, store.ErrFailedPrecondition, name+": pause a completed run")
	}
}

// testRunPauseFinishRace pauses executing runs while their worker finishes
// them: every pause that succeeded ends stopped, every one that failed
// came too late (the run completed), and no run fails.
func testRunPauseFinishRace(t *testing.T, s *suite) {
	a := s.automation(t, "inv")
	far := s.clock.Peek().Add(time.Hour)
	const n = 40
	made := make([]string, n)
	for i := range made {
		made[i] = s.run(t, a, "").ID
	}
	claimed := of(s.st.ClaimRuns(s.ctx, "w1", n, far)).must(t)
	if len(claimed) != n {
		t.Fatalf("claimed %d of %d", len(claimed), n)
	}
	pauseErrs := make([]error, n)
	var wg sync.WaitGroup
	for i, id := range made {
		wg.Go(func() {
			_, pauseErrs[i] = s.st.ChangeRun(s.ctx, "acme", "ops", "inv", id, pause(fmt.Sprint("reason ", i)))
		})
		wg.Go(func() {
			o := store.RunOutcome{State: store.RunCompleted, Outputs: []byte("out"), Step: 1}
			if i%2 == 0 {
				errs, err := s.st.FinishRuns(s.ctx, "w1", []string{id}, []store.RunOutcome{o})
				if err == nil {
					err = errs[0]
				}
				if err != nil {
					t.Errorf("finish runs %s: %v", id, err)
				}
				return
			}
			if _, err := s.st.FinishRun(s.ctx, "w1", id, o); err != nil {
				t.Errorf("finish %s: %v", id, err)
			}
		})
	}
	wg.Wait()
	for i, id := range made {
		r := of(s.st.GetRun(s.ctx, "acme", "ops", "inv", id)).must(t)
		switch err := pauseErrs[i]; {
		case err == nil:
			if r.State != store.RunStopped || r.Reason != fmt.Sprint("reason ", i) {
				t.Errorf("run %d: the pause answered ok, the run is %s (%q)", i, r.State, r.Reason)
			}
		case errors.Is(err, store.ErrFailedPrecondition):
			if r.State != store.RunCompleted {
				t.Errorf("run %d: the pause came too late (%v), the run is %s", i, err, r.State)
			}
		default:
			t.Errorf("run %d: pause: %v", i, err)
		}
	}
}
