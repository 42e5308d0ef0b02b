package storetest

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/proserun/prose/store"
	"github.com/proserun/prose/store/sqlfilter"
)

// testCapabilities covers the store capabilities the engine and the server
// rely on besides the aggregates: batches of runs, wake-up notices, the
// generation of what authentication reads, and typed filter conditions.
func testCapabilities(t *testing.T, open Opener) {
	for _, tc := range []struct {
		name string
		fn   func(t *testing.T, s *suite)
	}{
		{"CreateRuns", testCreateRuns},
		{"CreateRunsExecuted", testCreateRunsExecuted},
		{"CreateRunsExecutedPerOrganization", testCreateRunsExecutedPerOrganization},
		{"FinishRuns", testFinishRuns},
		{"Notifier", testNotifier},
		{"AuthGenerations", testAuthGenerations},
		{"TypedFilters", testTypedFilters},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, setup(t, open)) })
	}
}

// In one batch a missing automation fails only its run, a request id reused
// within the batch or found in the table gives the earlier run back, and a
// run of a stage at another version fails alone.
func testCreateRuns(t *testing.T, s *suite) {
	a := s.automation(t, "inv")
	run := func(automation, requestID string) store.Run {
		return store.Run{OrganizationID: "acme", WorkspaceID: "ops", AutomationID: automation, Stage: store.StageDraft, RequestID: requestID, Steps: []byte("steps")}
	}
	if runs, created, errs, err := s.st.CreateRuns(s.ctx, nil); err != nil || len(runs)+len(created)+len(errs) != 0 {
		t.Fatalf("empty batch: %v %v %v %v", runs, created, errs, err)
	}
	runs, created, errs, err := s.st.CreateRuns(s.ctx, []store.Run{run(a.ID, "r1"), run("nope", ""), run(a.ID, "r1"), run(a.ID, "")})
	noErr(t, err)
	if errs[0] != nil || !created[0] || runs[0].State != store.RunPending || runs[0].ID == "" {
		t.Fatalf("run 0: %v %v %+v", errs[0], created[0], runs[0])
	}
	if !errors.Is(errs[1], store.ErrNotFound) || created[1] {
		t.Fatalf("run 1 (missing automation): %v %v", errs[1], created[1])
	}
	if errs[2] != nil || created[2] || runs[2].ID != runs[0].ID {
		t.Fatalf("run 2 (same request id): %v %v %q, want %q", errs[2], created[2], runs[2].ID, runs[0].ID)
	}
	if errs[3] != nil || !created[3] || runs[3].ID == runs[0].ID {
		t.Fatalf("run 3: %v %v", errs[3], created[3])
	}
	runs2, created2, errs2, err := s.st.CreateRuns(s.ctx, []store.Run{run(a.ID, "r1"), run(a.ID, "r2")})
	noErr(t, err)
	if errs2[0] != nil || created2[0] || runs2[0].ID != runs[0].ID || runs2[0].State != store.RunPending {
		t.Fatalf("existing request id: %v %v %q, want %q", errs2[0], created2[0], runs2[0].ID, runs[0].ID)
	}
	if errs2[1] != nil || !created2[1] || runs2[1].RequestID != "r2" || runs2[1].AutomationID != a.ID || runs2[1].CreateTime.IsZero() {
		t.Fatalf("new run: %v %v %+v", errs2[1], created2[1], runs2[1])
	}
	got := of(s.st.GetRunByID(s.ctx, runs2[1].ID)).must(t)
	if got.RequestID != "r2" || got.State != store.RunPending || string(got.Steps) != "steps" {
		t.Fatalf("read back: %+v", got)
	}
	cur := func(version int64) store.Run {
		r := run(a.ID, "")
		r.StageVersion, r.CurrentStage = version, true
		return r
	}
	runs3, created3, errs3, err := s.st.CreateRuns(s.ctx, []store.Run{cur(a.Version), cur(a.Version + 1), run("nope", "")})
	noErr(t, err)
	if errs3[0] != nil || !created3[0] || runs3[0].StageVersion != a.Version {
		t.Fatalf("current stage: %v %v %+v", errs3[0], created3[0], runs3[0])
	}
	if !errors.Is(errs3[1], store.ErrStageChanged) || created3[1] {
		t.Fatalf("stage at another version: %v %v", errs3[1], created3[1])
	}
	if !errors.Is(errs3[2], store.ErrNotFound) {
		t.Fatalf("missing automation: %v", errs3[2])
	}
}

// Each run's lease is checked on its own (a run not leased to the owner is
// ErrConflict and the others are still finished), completed and failed
// outcomes are written as FinishRun writes them, and a run is finished only
// once.
func testFinishRuns(t *testing.T, s *suite) {
	a := s.automation(t, "inv")
	far := s.clock.Peek().Add(time.Hour)
	r1, r2, r3 := s.run(t, a, ""), s.run(t, a, ""), s.run(t, a, "")
	if claimed := of(s.st.ClaimRuns(s.ctx, "owner-a", 3, far)).must(t); len(claimed) != 3 {
		t.Fatalf("claimed %d runs", len(claimed))
	}
	r4 := s.run(t, a, "") // pending: not leased
	of(s.st.FinishRun(s.ctx, "owner-a", r2.ID, store.RunOutcome{State: store.RunCompleted, Outputs: []byte{}})).must(t)
	errs, err := s.st.FinishRuns(s.ctx, "owner-a", []string{r1.ID, r2.ID, r3.ID, r4.ID}, []store.RunOutcome{
		{State: store.RunCompleted, Outputs: []byte("out")},
		{State: store.RunCompleted, Outputs: []byte("again")}, // finished already
		{State: store.RunFailed, ErrorID: "e1", Description: "boom", Location: store.Location{Start: 1, End: 4}},
		{State: store.RunCompleted, Outputs: []byte{}}, // not leased
	})
	noErr(t, err)
	for i, want := range []bool{false, true, false, true} {
		if got := errors.Is(errs[i], store.ErrConflict); got != want {
			t.Errorf("run %d: err %v, want conflict %v", i+1, errs[i], want)
		}
	}
	get := func(id string) store.Run { return of(s.st.GetRunByID(s.ctx, id)).must(t) }
	if r := get(r1.ID); r.State != store.RunCompleted || string(r.Outputs) != "out" || r.LeaseOwner != "" {
		t.Errorf("run 1: %s %q lease %q", r.State, r.Outputs, r.LeaseOwner)
	}
	if r := get(r2.ID); r.State != store.RunCompleted || string(r.Outputs) == "again" {
		t.Errorf("run 2 finished twice: %s %q", r.State, r.Outputs)
	}
	if r := get(r3.ID); r.State != store.RunFailed || r.ErrorID != "e1" || r.Description != "boom" || r.Location != (store.Location{Start: 1, End: 4}) {
		t.Errorf("run 3: %+v", r)
	}
	if r := get(r4.ID); r.State != store.RunPending {
		t.Errorf("run 4: %s", r.State)
	}
	r5 := s.run(t, a, "")
	of(s.st.ClaimRuns(s.ctx, "owner-a", 2, far)).must(t) // r4 and r5
	errs, err = s.st.FinishRuns(s.ctx, "owner-b", []string{r5.ID}, []store.RunOutcome{{State: store.RunCompleted}})
	if err != nil || !errors.Is(errs[0], store.ErrConflict) {
		t.Fatalf("other owner: %v %v", errs, err)
	}
	errs, err = s.st.FinishRuns(s.ctx, "owner-a", []string{r5.ID}, []store.RunOutcome{{State: store.RunStopped}})
	if err != nil || !errors.Is(errs[0], store.ErrInvalidArgument) {
		t.Fatalf("stopped outcome: %v %v", errs, err)
	}
	if _, err := s.st.FinishRuns(s.ctx, "owner-a", []string{r5.ID}, nil); !errors.Is(err, store.ErrInvalidArgument) {
		t.Fatalf("lengths differ: %v", err)
	}
	if r := get(r5.ID); r.State != store.RunExecuting {
		t.Errorf("run 5: %s", r.State)
	}
	_ = s.st.SingleWriter() // either answer is valid; it only tunes the engine
}

// A notice reaches every listener of the store, coalesced, and a listener
// whose context ended gets nothing more.
func testNotifier(t *testing.T, s *suite) {
	ctx, cancel := context.WithCancel(s.ctx)
	a, b := s.st.Listen(ctx), s.st.Listen(s.ctx)
	heard := func(ch <-chan struct{}) bool {
		// PostgreSQL's LISTEN may not be registered yet: notify until heard.
		deadline := time.After(10 * time.Second)
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			s.st.Notify(s.ctx)
			select {
			case <-ch:
				return true
			case <-tick.C:
			case <-deadline:
				return false
			}
		}
	}
	if !heard(a) || !heard(b) {
		t.Fatal("a listener was not woken")
	}
	cancel()
	// A cancelled listener's channel is forgotten (SQLite) or its connection
	// closed (PostgreSQL): it is not written to any more, and Notify does
	// not block on it.
	for range 3 {
		s.st.Notify(s.ctx)
	}
	if !heard(b) {
		t.Fatal("the remaining listener was not woken")
	}
}

// Writes that change what authentication reads move AuthGeneration on; a
// read does not.
func testAuthGenerations(t *testing.T, s *suite) {
	s.org(t, "acme")
	s.user(t, "u1", "Ann", "ann@example.com")
	_, err := s.st.AddOrganizationMember(s.ctx, "acme", "u1", []string{"member"})
	noErr(t, err)
	k := of(s.st.CreateAPIKey(s.ctx, store.APIKey{OrganizationID: "acme", UserID: "u1", Name: "k", Prefix: "prose_k1_",
		SecretHash: []byte{1}, AllWorkspaces: true, PermissionLevel: store.PermissionAll}, 0)).must(t)
	for _, tc := range []struct {
		what  string
		write func() error
	}{
		{"update key", func() error {
			_, err := s.st.UpdateAPIKey(s.ctx, store.APIKey{OrganizationID: "acme", ID: k.ID, Name: "k2"}, []string{"name"})
			return err
		}},
		{"set roles", func() error {
			_, err := s.st.SetOrganizationRoles(s.ctx, "acme", "u1", []string{"admin"})
			return err
		}},
		{"delete key", func() error { return s.st.DeleteAPIKey(s.ctx, "acme", k.ID) }},
		{"remove member", func() error { return s.st.RemoveOrganizationMember(s.ctx, "acme", "u1") }},
	} {
		before := s.st.AuthGeneration()
		_ = of(s.st.GetOrganization(s.ctx, "acme")).must(t)
		if s.st.AuthGeneration() != before {
			t.Fatalf("%s: a read moved the generation", tc.what)
		}
		noErr(t, tc.write())
		if s.st.AuthGeneration() == before {
			t.Errorf("%s: the generation did not move", tc.what)
		}
	}
}

// testTypedFilters covers the conditions callers add to a parsed filter:
// a set of workspace ids (a scoped key), the state and assignee conditions
// of the batch methods, and the errors of conditions a list does not have.
func testTypedFilters(t *testing.T, s *suite) {
	s.org(t, "acme")
	for _, w := range []struct{ id, title string }{{"w1", "Sales EU"}, {"w2", "Sales US"}, {"w3", "Ops"}} {
		s.ws(t, "acme", w.id, w.title)
	}
	title, err := sqlfilter.Workspaces.Parse(`title:"sales"`)
	noErr(t, err)
	scoped := func(ids ...string) store.Filter { return store.And{store.In{Field: "id", Values: ids}, title} }
	list := func(f store.Filter) []string {
		return s.listWS(t, store.ListWorkspacesRequest{OrganizationID: "acme", Filter: f, OrderBy: store.OrderBy{{Field: "title"}}, PageSize: 1})
	}
	if got := list(scoped("w1", "w3")); !slices.Equal(got, []string{"w1"}) {
		t.Errorf("scoped to w1, w3 and titled sales: %v", got)
	}
	if got := list(scoped()); len(got) != 0 {
		t.Errorf("scoped to no workspace: %v", got)
	}
	if got := list(store.And{store.In{Field: "id", Values: []string{"w2", "w3"}}}); !slices.Equal(got, []string{"w3", "w2"}) {
		t.Errorf("scoped to w2, w3: %v", got)
	}
	p := of(s.st.ListWorkspaces(s.ctx, store.ListWorkspacesRequest{OrganizationID: "acme", Filter: scoped("w1", "w2"), PageSize: 1})).must(t)
	_, err = s.st.ListWorkspaces(s.ctx, store.ListWorkspacesRequest{OrganizationID: "acme", Filter: scoped("w1"), PageSize: 1, PageToken: p.NextPageToken})
	wantErr(t, err, store.ErrInvalidArgument, "a token reused with another scope")

	s.ws(t, "acme", "ops", "Operations")
	a := s.automation(t, "inv")
	_, x1 := s.exception(t, a, "missing_values", "m1")
	_, x2 := s.exception(t, a, "missing_values", "m2")
	_, x3 := s.exception(t, a, "", "m3")
	of(s.st.AssignException(s.ctx, "acme", "ops", x1.ID, "users/u1", nil)).must(t)
	of(s.st.ArchiveException(s.ctx, "acme", "ops", x2.ID, nil)).must(t)
	ids := func(f store.Filter) []string { return of(s.st.ListExceptionIDs(s.ctx, "acme", "ops", f, 10)).must(t) }
	pending := store.Cond{Field: "state", Op: store.OpEq, Value: string(store.ExceptionPending)}
	if got := ids(pending); !slices.Equal(got, []string{x1.ID, x3.ID}) {
		t.Errorf("pending: %v", got)
	}
	notU1 := store.Cond{Field: "assignee", Op: store.OpNe, Value: "users/u1"}
	if got := ids(store.And{pending, notU1}); !slices.Equal(got, []string{x3.ID}) {
		t.Errorf("pending, not assigned to u1: %v", got)
	}
	grouped, err := sqlfilter.Exceptions.Parse(`group != ""`)
	noErr(t, err)
	if got := ids(store.And{grouped, store.Cond{Field: "state", Op: store.OpGt, Value: string(store.ExceptionPending)}}); !slices.Equal(got, []string{x2.ID}) {
		t.Errorf("grouped, past pending: %v", got)
	}
	for _, f := range []store.Filter{
		store.Cond{Field: "title", Op: store.OpEq, Value: "x"},               // a workspace field
		store.Cond{Field: "create_time", Op: store.OpLt, Value: "yesterday"}, // not a time
		store.Not{Filter: store.In{Field: "nope", Values: []string{"x"}}},
	} {
		_, err := s.st.ListExceptionIDs(s.ctx, "acme", "ops", f, 10)
		wantErr(t, err, store.ErrInvalidArgument, f.String())
	}
}

// A run may be created already executed (completed, failed) or leased
// (executing), both by CreateRun and in a batch, but only while no run waits
// in the queue, earlier runs of the batch included: otherwise it is created
// pending without what its creator wrote. Other states are refused.
func testCreateRunsExecuted(t *testing.T, s *suite) {
	a := s.automation(t, "inline")
	lease := s.clock.Peek().Add(time.Hour)
	in := func(state store.RunState, requestID string) store.Run {
		r := store.Run{OrganizationID: "acme", WorkspaceID: "ops", AutomationID: a.ID, Stage: store.StageDraft, RequestID: requestID,
			Steps: []byte("steps"), State: state}
		switch state {
		case store.RunCompleted:
			r.Outputs, r.Step = []byte("out"), 1
		case store.RunFailed:
			r.ErrorID, r.Description, r.Location = "e1", "it failed", store.Location{Start: 3, End: 7}
		case store.RunExecuting:
			r.LeaseOwner, r.LeaseExpireTime = "w1", lease
		}
		return r
	}
	for _, bad := range []store.Run{in(store.RunStopped, ""), in(store.RunAwaitingGuidance, ""), {OrganizationID: "acme", WorkspaceID: "ops", AutomationID: a.ID, Stage: store.StageDraft, State: store.RunExecuting}} {
		_, _, err := s.st.CreateRun(s.ctx, bad)
		wantErr(t, err, store.ErrInvalidArgument, "create run "+string(bad.State))
		_, _, errs, err := s.st.CreateRuns(s.ctx, []store.Run{bad, in(store.RunCompleted, "")})
		noErr(t, err)
		wantErr(t, errs[0], store.ErrInvalidArgument, "create runs "+string(bad.State))
		if errs[1] != nil {
			t.Fatalf("the other run of the batch: %v", errs[1])
		}
	}

	// What CreateRun and CreateRuns return is what reading the run gives.
	for _, r := range []store.Run{in(store.RunPending, "rb1"), in(store.RunCompleted, "rb2"), in(store.RunFailed, ""), in(store.RunExecuting, "")} {
		r.Name, r.StageVersion, r.CurrentStage, r.UserInputs, r.FileIDs, r.StepInputs, r.InvocationDetails = "n", a.Version, true, []byte("in"), []string{"f1"}, []byte("si"), []byte{}
		one := s.create(t, r)
		if got := of(s.st.GetRunByID(s.ctx, one.ID)).must(t); !reflect.DeepEqual(got, one) {
			t.Fatalf("CreateRun returned\n%+v\nreading it gives\n%+v", one, got)
		}
		r.RequestID = ""
		batch, _, errs, err := s.st.CreateRuns(s.ctx, []store.Run{r})
		noErr(t, err)
		noErr(t, errs[0])
		if got := of(s.st.GetRunByID(s.ctx, batch[0].ID)).must(t); !reflect.DeepEqual(got, batch[0]) {
			t.Fatalf("CreateRuns returned\n%+v\nreading it gives\n%+v", batch[0], got)
		}
		// Out of the way of the queue checks below.
		switch r.State {
		case store.RunPending:
			for _, c := range of(s.st.ClaimRuns(s.ctx, "w0", 10, lease)).must(t) {
				of(s.st.FinishRun(s.ctx, "w0", c.ID, store.RunOutcome{State: store.RunCompleted})).must(t)
			}
		case store.RunExecuting:
			for _, id := range []string{one.ID, batch[0].ID} {
				of(s.st.FinishRun(s.ctx, "w1", id, store.RunOutcome{State: store.RunCompleted})).must(t)
			}
		}
	}

	// The queue is empty: every run is created as asked.
	done := s.create(t, in(store.RunCompleted, "c1"))
	if done.State != store.RunCompleted || string(done.Outputs) != "out" || done.Step != 1 || done.LeaseOwner != "" {
		t.Fatalf("created completed: %+v", done)
	}
	if got := of(s.st.GetRunByID(s.ctx, done.ID)).must(t); got.State != store.RunCompleted || string(got.Outputs) != "out" || !got.UpdateTime.Equal(got.CreateTime) {
		t.Fatalf("read back: %+v", got)
	}
	again, created, err := s.st.CreateRun(s.ctx, in(store.RunPending, "c1"))
	noErr(t, err)
	if created || again.ID != done.ID || again.State != store.RunCompleted {
		t.Fatalf("retry of a run created completed: %v %+v", created, again)
	}
	runs, created2, errs, err := s.st.CreateRuns(s.ctx, []store.Run{in(store.RunFailed, ""), in(store.RunExecuting, ""), in(store.RunCompleted, "")})
	noErr(t, err)
	for i, want := range []store.RunState{store.RunFailed, store.RunExecuting, store.RunCompleted} {
		if errs[i] != nil || !created2[i] || runs[i].State != want {
			t.Fatalf("batch run %d: %v %v %+v, want %s", i, errs[i], created2[i], runs[i], want)
		}
	}
	if f := runs[0]; f.ErrorID != "e1" || f.Description != "it failed" || f.Location != (store.Location{Start: 3, End: 7}) {
		t.Fatalf("created failed: %+v", f)
	}
	if x := runs[1]; x.LeaseOwner != "w1" || !x.LeaseExpireTime.Equal(lease) {
		t.Fatalf("created executing: %+v", x)
	}
	// The run created leased is its owner's to finish, and nobody else's
	// to claim.
	if claimed := of(s.st.ClaimRuns(s.ctx, "w2", 10, lease)).must(t); len(claimed) != 0 {
		t.Fatalf("claimed %d runs, want none", len(claimed))
	}
	if _, err := s.st.FinishRun(s.ctx, "w2", runs[1].ID, store.RunOutcome{State: store.RunCompleted, Step: 1}); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("finish by another owner: %v", err)
	}
	if r := of(s.st.FinishRun(s.ctx, "w1", runs[1].ID, store.RunOutcome{State: store.RunCompleted, Outputs: []byte("o"), Step: 1})).must(t); r.State != store.RunCompleted {
		t.Fatalf("finished: %+v", r)
	}

	// A run waits in the queue (here one earlier in the batch): the others
	// are created pending, without their outcome or lease, in order.
	runs, _, errs, err = s.st.CreateRuns(s.ctx, []store.Run{in(store.RunCompleted, ""), in(store.RunPending, ""), in(store.RunCompleted, ""), in(store.RunExecuting, "")})
	noErr(t, err)
	for i, want := range []store.RunState{store.RunCompleted, store.RunPending, store.RunPending, store.RunPending} {
		if errs[i] != nil || runs[i].State != want {
			t.Fatalf("batch behind the queue, run %d: %v %+v, want %s", i, errs[i], runs[i], want)
		}
	}
	for _, r := range runs[2:] {
		if r.Outputs != nil || r.Step != 0 || r.LeaseOwner != "" {
			t.Fatalf("created pending behind the queue: %+v", r)
		}
	}
	late := s.create(t, in(store.RunFailed, ""))
	if late.State != store.RunPending || late.ErrorID != "" || late.Description != "" {
		t.Fatalf("created behind the queue: %+v", late)
	}
	claimed := of(s.st.ClaimRuns(s.ctx, "w2", 10, lease)).must(t)
	got, want := ids(claimed, func(r store.Run) string { return r.ID }), []string{runs[1].ID, runs[2].ID, runs[3].ID, late.ID}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("claimed %v, want the pending runs %v", got, want)
	}
	// The queue is empty again.
	if r := s.create(t, in(store.RunCompleted, "")); r.State != store.RunCompleted {
		t.Fatalf("after the queue emptied: %+v", r)
	}
}

// Only a run of its own organization waiting in the queue makes a run
// asked executed or leased be created pending: another organization's
// queue does not hold it back (docs/fairness.md), in CreateRun and in a
// batch mixing both organizations.
func testCreateRunsExecutedPerOrganization(t *testing.T, s *suite) {
	a := s.automation(t, "inline") // organization acme
	s.org(t, "zen")
	s.ws(t, "zen", "w2", "W2")
	b := of(s.st.CreateAutomation(s.ctx, store.Automation{OrganizationID: "zen", WorkspaceID: "w2", ID: "b1", DisplayName: "B", Code: "the output x is 1\n"})).must(t)
	lease := s.clock.Peek().Add(time.Hour)
	in := func(a store.Automation, state store.RunState) store.Run {
		r := store.Run{OrganizationID: a.OrganizationID, WorkspaceID: a.WorkspaceID, AutomationID: a.ID, Stage: store.StageDraft, Steps: []byte("steps"), State: state}
		switch state {
		case store.RunCompleted:
			r.Outputs, r.Step = []byte("out"), 1
		case store.RunExecuting:
			r.LeaseOwner, r.LeaseExpireTime = "w1", lease
		}
		return r
	}
	// zen's runs wait in the queue.
	waiting := []store.Run{s.run(t, b, ""), s.run(t, b, "")}
	for _, state := range []store.RunState{store.RunCompleted, store.RunExecuting} {
		if r := s.create(t, in(a, state)); r.State != state {
			t.Fatalf("acme's run asked %s behind zen's queue: created %s", state, r.State)
		}
		if r := s.create(t, in(b, state)); r.State != store.RunPending || r.Outputs != nil || r.LeaseOwner != "" {
			t.Fatalf("zen's run asked %s behind its own queue: %+v", state, r)
		}
	}
	// A batch: acme's runs go as asked until one of acme's is created
	// pending; zen's are created pending (their organization waits).
	runs, _, errs, err := s.st.CreateRuns(s.ctx, []store.Run{in(b, store.RunCompleted), in(a, store.RunCompleted), in(a, store.RunPending),
		in(b, store.RunExecuting), in(a, store.RunExecuting)})
	noErr(t, err)
	for i, want := range []store.RunState{store.RunPending, store.RunCompleted, store.RunPending, store.RunPending, store.RunPending} {
		if errs[i] != nil || runs[i].State != want {
			t.Fatalf("mixed batch, run %d (%s): %v %s, want %s", i, runs[i].OrganizationID, errs[i], runs[i].State, want)
		}
	}
	// acme's queue is empty again once its pending runs are claimed; zen's
	// still waits.
	claimed := of(s.st.ClaimRunsSkipping(s.ctx, "w2", 10, lease, false, []string{"zen"})).must(t)
	if len(claimed) != 2 {
		t.Fatalf("claimed %v, want acme's two pending runs", runIDs(claimed))
	}
	if r := s.create(t, in(a, store.RunCompleted)); r.State != store.RunCompleted {
		t.Fatalf("acme's run after its queue emptied: %s", r.State)
	}
	if r := s.create(t, in(b, store.RunCompleted)); r.State != store.RunPending {
		t.Fatalf("zen's run with %d of its runs waiting: %s", len(waiting), r.State)
	}
}

// create creates a run that must be created.
func (s *suite) create(t *testing.T, r store.Run) store.Run {
	t.Helper()
	out, created, err := s.st.CreateRun(s.ctx, r)
	noErr(t, err)
	if !created {
		t.Fatalf("run %+v not created", r)
	}
	return out
}
