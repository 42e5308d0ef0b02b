package storetest

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/proserun/prose/store"
	"github.com/proserun/prose/store/sqlfilter"
)

// ResolveRaces is how many times the suite races two resolutions of one
// exception.
const ResolveRaces = 1000

// testExceptions runs the exception cases.
func testExceptions(t *testing.T, open Opener) {
	for _, tc := range []struct {
		name string
		fn   func(t *testing.T, s *suite)
	}{
		{"ExceptionCreateGet", testExceptionCreateGet},
		{"ListExceptions", testListExceptions},
		{"CountExceptions", testCountExceptions},
		{"ExceptionTransitions", testExceptionTransitions},
		{"AssignException", testAssignException},
		{"FilterByAssignee", testFilterByAssignee},
		{"ListExceptionIDs", testListExceptionIDs},
		{"ResolveRaces", testResolveRaces},
		{"ResolveCheck", testResolveCheck},
		{"ExceptionCheck", testExceptionCheck},
		{"TransitionsReturnTheRow", testTransitionsReturnTheRow},
		{"CountPendingExceptions", testCountPendingExceptions},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, setup(t, open)) })
	}
}

// exception makes a run of a wait for guidance on a new exception in group
// g, the way a worker does (claim, then finish awaiting_guidance). Other
// runs the claim picks up (resolved ones, back to pending) are completed.
func (s *suite) exception(t *testing.T, a store.Automation, g, msg string) (store.Run, store.Exception) {
	t.Helper()
	r := s.run(t, a, "")
	far := s.clock.Peek().Add(time.Hour)
	for {
		claimed := of(s.st.ClaimRuns(s.ctx, "w1", 1000, far)).must(t)
		for _, c := range claimed {
			if c.ID != r.ID {
				of(s.st.FinishRun(s.ctx, "w1", c.ID, store.RunOutcome{State: store.RunCompleted, Outputs: []byte("out")})).must(t)
				continue
			}
			w := of(s.st.FinishRun(s.ctx, "w1", r.ID, store.RunOutcome{
				State: store.RunAwaitingGuidance, Description: msg, Location: store.Location{Start: 3, End: 9},
				Exception: &store.Exception{
					Step: 1, Group: g, Message: msg, Description: "about " + msg, Location: store.Location{Start: 3, End: 9},
					Details: []byte(`{"fact":"x"}`), State: store.ExceptionPending, Extra: map[string]string{"k": "v"},
				},
				Checkpoint: []byte("cp"), Step: 1,
			})).must(t)
			if w.State != store.RunAwaitingGuidance || w.ExceptionID == "" {
				t.Fatalf("finish awaiting_guidance: %+v", w)
			}
			return w, of(s.st.GetException(s.ctx, "acme", "ops", w.ExceptionID)).must(t)
		}
		if len(claimed) == 0 {
			t.Fatalf("run %s was not claimed", r.ID)
		}
	}
}

func (s *suite) runOf(t *testing.T, r store.Run) store.Run {
	t.Helper()
	return of(s.st.GetRun(s.ctx, r.OrganizationID, r.WorkspaceID, r.AutomationID, r.ID)).must(t)
}

func testExceptionCreateGet(t *testing.T, s *suite) {
	a := s.automation(t, "inv")
	r, x := s.exception(t, a, "missing_values", "Please provide x")
	if x.OrganizationID != "acme" || x.WorkspaceID != "ops" || x.ID != r.ExceptionID || x.RunID != r.ID || x.AutomationID != "inv" ||
		x.Stage != store.StageDraft || x.Step != 1 || x.Group != "missing_values" || x.Message != "Please provide x" ||
		x.Description != "about Please provide x" || x.Location != (store.Location{Start: 3, End: 9}) || string(x.Details) != `{"fact":"x"}` ||
		x.State != store.ExceptionPending || x.Assignee != "" || x.Resolver != "" || x.Extra["k"] != "v" {
		t.Fatalf("exception: %+v", x)
	}
	if x.CreateTime.IsZero() || !x.CreateTime.Equal(x.UpdateTime) {
		t.Errorf("times: %v %v", x.CreateTime, x.UpdateTime)
	}
	_, err := s.st.GetException(s.ctx, "acme", "ops", "nope")
	wantErr(t, err, store.ErrNotFound, "get an absent exception")
	_, err = s.st.GetException(s.ctx, "acme", "other", x.ID)
	wantErr(t, err, store.ErrNotFound, "get an exception of another workspace")

	noErr(t, s.st.SetExceptionDescription(s.ctx, "acme", "ops", x.ID, "Better words"))
	if got := of(s.st.GetException(s.ctx, "acme", "ops", x.ID)).must(t); got.Description != "Better words" || !got.UpdateTime.After(x.UpdateTime) {
		t.Errorf("description: %+v", got)
	}
	wantErr(t, s.st.SetExceptionDescription(s.ctx, "acme", "ops", "nope", "x"), store.ErrNotFound, "describe an absent exception")
}

func mustFilter(t *testing.T, text string) store.Filter {
	t.Helper()
	f, err := sqlfilter.Exceptions.Parse(text)
	noErr(t, err)
	return f
}

func excIDList(xs []store.Exception) []string {
	var out []string
	for _, x := range xs {
		out = append(out, x.ID)
	}
	return out
}

func testListExceptions(t *testing.T, s *suite) {
	a := s.automation(t, "inv")
	b := s.automation(t, "pay")
	var made []store.Exception // oldest first
	for i := range 7 {
		au, g := a, "missing_values"
		if i%3 == 2 {
			au, g = b, "user_system_error"
		}
		_, x := s.exception(t, au, g, fmt.Sprintf("m%d", i))
		made = append(made, x)
	}
	newest := slices.Clone(made)
	slices.Reverse(newest)
	list := func(f store.Filter, skip, size int, token string) (store.Page[store.Exception], int, error) {
		return s.st.ListExceptions(s.ctx, store.ListExceptionsRequest{OrganizationID: "acme", WorkspaceID: "ops", Filter: f, Skip: skip, PageSize: size, PageToken: token})
	}
	// Pages of three, newest first, the total on each.
	var got []store.Exception
	tok := ""
	for {
		p, total, err := list(nil, 0, 3, tok)
		noErr(t, err)
		if total != 7 || len(p.Items) > 3 {
			t.Fatalf("page: total %d, %d items", total, len(p.Items))
		}
		got = append(got, p.Items...)
		if tok = p.NextPageToken; tok == "" {
			break
		}
	}
	if !slices.Equal(excIDList(got), excIDList(newest)) {
		t.Fatalf("pages: %v, want %v", excIDList(got), excIDList(newest))
	}
	// Skip.
	p, total, err := list(nil, 5, 10, "")
	noErr(t, err)
	if total != 7 || !slices.Equal(excIDList(p.Items), excIDList(newest[5:])) {
		t.Fatalf("skip 5: %v total %d", excIDList(p.Items), total)
	}
	_, _, err = list(nil, -1, 10, "")
	wantErr(t, err, store.ErrInvalidArgument, "negative skip")
	// Filter: by automation, state, group, run, time.
	p, total, err = list(mustFilter(t, `automation = "pay"`), 0, 10, "")
	noErr(t, err)
	if total != 2 || !slices.Equal(excIDList(p.Items), []string{made[5].ID, made[2].ID}) {
		t.Fatalf("automation filter: %v total %d", excIDList(p.Items), total)
	}
	p, total, err = list(mustFilter(t, `group = "missing_values" AND run != "`+made[0].RunID+`"`), 0, 2, "")
	noErr(t, err)
	if total != 4 || len(p.Items) != 2 || p.NextPageToken == "" {
		t.Fatalf("group and run filter: %v total %d", excIDList(p.Items), total)
	}
	// A token is bound to its filter.
	_, _, err = list(mustFilter(t, `group = "user_system_error"`), 0, 2, p.NextPageToken)
	wantErr(t, err, store.ErrInvalidArgument, "a token with another filter")
	_, _, err = list(nil, 0, 2, "garbage")
	wantErr(t, err, store.ErrInvalidArgument, "a bad token")
	at := made[3].CreateTime.Format(time.RFC3339Nano)
	p, total, err = list(mustFilter(t, `create_time >= "`+at+`" AND state = PENDING`), 0, 10, "")
	noErr(t, err)
	if total != 4 || !slices.Equal(excIDList(p.Items), excIDList(newest[:4])) {
		t.Fatalf("time filter: %v total %d", excIDList(p.Items), total)
	}
	// Another workspace sees none.
	s.ws(t, "acme", "other", "Other")
	p, total, err = s.st.ListExceptions(s.ctx, store.ListExceptionsRequest{OrganizationID: "acme", WorkspaceID: "other", PageSize: 10})
	noErr(t, err)
	if total != 0 || len(p.Items) != 0 {
		t.Fatalf("other workspace: %d", total)
	}
}

func testCountExceptions(t *testing.T, s *suite) {
	a := s.automation(t, "inv")
	b := s.automation(t, "pay")
	c := s.automation(t, "zzz")
	s.exception(t, a, "missing_values", "1")
	s.exception(t, a, "missing_values", "2")
	_, x := s.exception(t, b, "user_system_error", "3")
	s.exception(t, c, "internal_error", "4")
	s.exception(t, c, "", "5")
	_, err := s.st.ArchiveException(s.ctx, "acme", "ops", x.ID, nil)
	noErr(t, err)

	req := store.CountRequest{OrganizationID: "acme", WorkspaceID: "ops", PageSize: 2}
	p := of(s.st.CountExceptionsByGroup(s.ctx, req)).must(t)
	if p.TotalKeys != 4 || p.TotalCount != 5 || p.NextPageToken == "" ||
		!slices.Equal(p.Counts, []store.Count{{Key: "", Count: 1}, {Key: "internal_error", Count: 1}}) {
		t.Fatalf("by group, page 1: %+v", p)
	}
	req.PageToken = p.NextPageToken
	p = of(s.st.CountExceptionsByGroup(s.ctx, req)).must(t)
	if p.TotalKeys != 4 || p.TotalCount != 5 || p.NextPageToken != "" ||
		!slices.Equal(p.Counts, []store.Count{{Key: "missing_values", Count: 2}, {Key: "user_system_error", Count: 1}}) {
		t.Fatalf("by group, page 2: %+v", p)
	}
	// The token is bound to the filter and the kind of count.
	req.Filter = mustFilter(t, `state = PENDING`)
	_, err = s.st.CountExceptionsByGroup(s.ctx, req)
	wantErr(t, err, store.ErrInvalidArgument, "a count token with another filter")
	req.Filter = nil
	_, err = s.st.CountExceptionsByAutomation(s.ctx, req)
	wantErr(t, err, store.ErrInvalidArgument, "a group token for the automation count")

	req = store.CountRequest{OrganizationID: "acme", WorkspaceID: "ops", Filter: mustFilter(t, `state = PENDING`)}
	p = of(s.st.CountExceptionsByAutomation(s.ctx, req)).must(t)
	if p.TotalKeys != 2 || p.TotalCount != 4 || p.NextPageToken != "" ||
		!slices.Equal(p.Counts, []store.Count{{Key: "inv", Count: 2}, {Key: "zzz", Count: 2}}) {
		t.Fatalf("by automation: %+v", p)
	}
	req.Filter = mustFilter(t, `state = RESOLVED`)
	p = of(s.st.CountExceptionsByAutomation(s.ctx, req)).must(t)
	if p.TotalKeys != 0 || p.TotalCount != 0 || len(p.Counts) != 0 {
		t.Fatalf("none resolved: %+v", p)
	}
}

func testExceptionTransitions(t *testing.T, s *suite) {
	a := s.automation(t, "inv")
	r, x := s.exception(t, a, "missing_values", "m")

	// PENDING → ARCHIVED: the run is abandoned (stopped).
	ar := of(s.st.ArchiveException(s.ctx, "acme", "ops", x.ID, nil)).must(t)
	if ar.State != store.ExceptionArchived || !ar.UpdateTime.After(x.UpdateTime) {
		t.Fatalf("archive: %+v", ar)
	}
	if got := s.runOf(t, r); got.State != store.RunStopped || got.ExceptionID != x.ID {
		t.Fatalf("run after archive: %+v", got)
	}
	_, err := s.st.ArchiveException(s.ctx, "acme", "ops", x.ID, nil)
	wantErr(t, err, store.ErrFailedPrecondition, "archive an archived exception")
	_, err = s.st.ResolveException(s.ctx, "acme", "ops", x.ID, accept(store.Resolution{Resolver: "users/u", Data: []byte("g")}))
	wantErr(t, err, store.ErrFailedPrecondition, "resolve an archived exception")

	// ARCHIVED → PENDING: the run waits again.
	un := of(s.st.UnarchiveException(s.ctx, "acme", "ops", x.ID, nil)).must(t)
	if un.State != store.ExceptionPending {
		t.Fatalf("unarchive: %+v", un)
	}
	if got := s.runOf(t, r); got.State != store.RunAwaitingGuidance || got.ExceptionID != x.ID {
		t.Fatalf("run after unarchive: %+v", got)
	}
	_, err = s.st.UnarchiveException(s.ctx, "acme", "ops", x.ID, nil)
	wantErr(t, err, store.ErrFailedPrecondition, "unarchive a pending exception")

	// PENDING → RESOLVED: the run goes on with the guidance.
	res := of(s.st.ResolveException(s.ctx, "acme", "ops", x.ID, accept(store.Resolution{Resolver: "users/u", Data: []byte("guidance")}))).must(t)
	if res.State != store.ExceptionResolved || res.Resolver != "users/u" {
		t.Fatalf("resolve: %+v", res)
	}
	if got := s.runOf(t, r); got.State != store.RunPending || string(got.Resolution) != "guidance" {
		t.Fatalf("run after resolve: %+v", got)
	}
	// RESOLVED is terminal.
	_, err = s.st.ResolveException(s.ctx, "acme", "ops", x.ID, accept(store.Resolution{Resolver: "users/v"}))
	wantErr(t, err, store.ErrFailedPrecondition, "resolve twice")
	_, err = s.st.ArchiveException(s.ctx, "acme", "ops", x.ID, nil)
	wantErr(t, err, store.ErrFailedPrecondition, "archive a resolved exception")
	_, err = s.st.UnarchiveException(s.ctx, "acme", "ops", x.ID, nil)
	wantErr(t, err, store.ErrFailedPrecondition, "unarchive a resolved exception")
	if got := of(s.st.GetException(s.ctx, "acme", "ops", x.ID)).must(t); got.Resolver != "users/u" || got.State != store.ExceptionResolved {
		t.Fatalf("after the losers: %+v", got)
	}

	// Absent exceptions.
	for name, err := range map[string]error{
		"resolve":   second(s.st.ResolveException(s.ctx, "acme", "ops", "nope", accept(store.Resolution{}))),
		"archive":   second(s.st.ArchiveException(s.ctx, "acme", "ops", "nope", nil)),
		"unarchive": second(s.st.UnarchiveException(s.ctx, "acme", "ops", "nope", nil)),
	} {
		wantErr(t, err, store.ErrNotFound, name+" an absent exception")
	}

	// A paused waiting run keeps the guidance and stays stopped.
	r2, x2 := s.exception(t, a, "missing_values", "m2")
	of(s.st.ChangeRun(s.ctx, "acme", "ops", "inv", r2.ID, pause("hold"))).must(t)
	of(s.st.ResolveException(s.ctx, "acme", "ops", x2.ID, accept(store.Resolution{Resolver: "users/u", Data: []byte("later")}))).must(t)
	if got := s.runOf(t, r2); got.State != store.RunStopped || string(got.Resolution) != "later" {
		t.Fatalf("paused run after resolve: %+v", got)
	}

	// An archived exception whose run was continued since cannot come back.
	r3, x3 := s.exception(t, a, "missing_values", "m3")
	of(s.st.ArchiveException(s.ctx, "acme", "ops", x3.ID, nil)).must(t)
	if c := of(s.st.ChangeRun(s.ctx, "acme", "ops", "inv", r3.ID, resume)).must(t); c.State != store.RunPending {
		t.Fatalf("continue an abandoned run: %+v", c)
	}
	_, err = s.st.UnarchiveException(s.ctx, "acme", "ops", x3.ID, nil)
	wantErr(t, err, store.ErrFailedPrecondition, "unarchive when the run moved on")
	if got := of(s.st.GetException(s.ctx, "acme", "ops", x3.ID)).must(t); got.State != store.ExceptionArchived {
		t.Fatalf("refused unarchive changed the exception: %+v", got)
	}
}

func second[T any](_ T, err error) error { return err }

// accept is a check that resolves any exception with r.
func accept(r store.Resolution) store.ResolveCheck {
	return func(store.Exception) (store.Resolution, error) { return r, nil }
}

// errRefused is a check's own error.
var errRefused = errors.New("refused by the check")

// testResolveCheck: ResolveException decides with its check, inside the
// transaction, on the row it read: the check sees the stored exception, is
// called once, and its error leaves the exception and the run unchanged.
func testResolveCheck(t *testing.T, s *suite) {
	a := s.automation(t, "inv")
	r, x := s.exception(t, a, "missing_values", "m")

	calls := 0
	_, err := s.st.ResolveException(s.ctx, "acme", "ops", x.ID, func(got store.Exception) (store.Resolution, error) {
		calls++
		if got.ID != x.ID || got.State != store.ExceptionPending || string(got.Details) != string(x.Details) || got.RunID != r.ID {
			t.Errorf("check saw %+v, want %+v", got, x)
		}
		return store.Resolution{}, fmt.Errorf("does not fit: %w", errRefused)
	})
	if !errors.Is(err, errRefused) || calls != 1 {
		t.Fatalf("refused resolve: err %v, %d calls; want the check's error, 1 call", err, calls)
	}
	if got := of(s.st.GetException(s.ctx, "acme", "ops", x.ID)).must(t); got.State != store.ExceptionPending || got.Resolver != "" || !got.UpdateTime.Equal(x.UpdateTime) {
		t.Fatalf("exception after a refused resolve: %+v", got)
	}
	if got := s.runOf(t, r); got.State != store.RunAwaitingGuidance || got.Resolution != nil {
		t.Fatalf("run after a refused resolve: %+v", got)
	}

	// The check is not called for an absent exception.
	_, err = s.st.ResolveException(s.ctx, "acme", "ops", "nope", func(store.Exception) (store.Resolution, error) {
		t.Error("check called for an absent exception")
		return store.Resolution{}, nil
	})
	wantErr(t, err, store.ErrNotFound, "resolve an absent exception")

	// The check sees an archived exception as it is; accepting it anyway
	// does not resolve it.
	of(s.st.ArchiveException(s.ctx, "acme", "ops", x.ID, nil)).must(t)
	var seen store.ExceptionState
	_, err = s.st.ResolveException(s.ctx, "acme", "ops", x.ID, func(got store.Exception) (store.Resolution, error) {
		seen = got.State
		return store.Resolution{Resolver: "users/u", Data: []byte("g")}, nil
	})
	wantErr(t, err, store.ErrFailedPrecondition, "resolve an archived exception its check accepted")
	if seen != store.ExceptionArchived {
		t.Fatalf("check saw state %q, want ARCHIVED", seen)
	}
}

// testExceptionCheck: archive, unarchive and assign decide with their
// check, inside the transaction, on the row they read: the check sees the
// stored exception, is called once, its error leaves the exception and the
// run unchanged, and it is not called for an absent exception; a check that
// accepts an exception in the wrong state does not make the change.
func testExceptionCheck(t *testing.T, s *suite) {
	a := s.automation(t, "inv")
	r, x := s.exception(t, a, "missing_values", "m")
	type change struct {
		name string
		do   func(id string, check store.ExceptionCheck) (store.Exception, error)
	}
	changes := []change{
		{"archive", func(id string, c store.ExceptionCheck) (store.Exception, error) {
			return s.st.ArchiveException(s.ctx, "acme", "ops", id, c)
		}},
		{"unarchive", func(id string, c store.ExceptionCheck) (store.Exception, error) {
			return s.st.UnarchiveException(s.ctx, "acme", "ops", id, c)
		}},
		{"assign", func(id string, c store.ExceptionCheck) (store.Exception, error) {
			return s.st.AssignException(s.ctx, "acme", "ops", id, "users/ana", c)
		}},
	}
	for _, ch := range changes {
		calls := 0
		_, err := ch.do(x.ID, func(got store.Exception) error {
			calls++
			if got.ID != x.ID || got.State != store.ExceptionPending || got.RunID != r.ID || string(got.Details) != string(x.Details) {
				t.Errorf("%s: check saw %+v, want %+v", ch.name, got, x)
			}
			return fmt.Errorf("no: %w", errRefused)
		})
		if !errors.Is(err, errRefused) || calls != 1 {
			t.Fatalf("refused %s: err %v, %d calls; want the check's error, 1 call", ch.name, err, calls)
		}
		if got := of(s.st.GetException(s.ctx, "acme", "ops", x.ID)).must(t); got.State != store.ExceptionPending || got.Assignee != "" || !got.UpdateTime.Equal(x.UpdateTime) {
			t.Fatalf("exception after a refused %s: %+v", ch.name, got)
		}
		if got := s.runOf(t, r); got.State != store.RunAwaitingGuidance {
			t.Fatalf("run after a refused %s: %+v", ch.name, got)
		}
		_, err = ch.do("nope", func(store.Exception) error {
			t.Errorf("%s: check called for an absent exception", ch.name)
			return nil
		})
		wantErr(t, err, store.ErrNotFound, ch.name+" an absent exception")
	}
	// Accepted where the store's own rule refuses: unarchive a pending
	// exception, then (resolved) archive and assign it.
	accepted := func(store.Exception) error { return nil }
	_, err := changes[1].do(x.ID, accepted)
	wantErr(t, err, store.ErrFailedPrecondition, "unarchive a pending exception its check accepted")
	of(s.st.ResolveException(s.ctx, "acme", "ops", x.ID, accept(store.Resolution{Resolver: "users/u", Data: []byte("g")}))).must(t)
	for _, ch := range []change{changes[0], changes[2]} {
		_, err := ch.do(x.ID, accepted)
		wantErr(t, err, store.ErrFailedPrecondition, ch.name+" a resolved exception its check accepted")
	}
	if got := of(s.st.GetException(s.ctx, "acme", "ops", x.ID)).must(t); got.State != store.ExceptionResolved || got.Assignee != "" {
		t.Fatalf("resolved exception after accepted changes: %+v", got)
	}
}

// testTransitionsReturnTheRow: each transition returns the exception as it
// is stored afterwards (it is read once, and the changes made to it).
func testTransitionsReturnTheRow(t *testing.T, s *suite) {
	a := s.automation(t, "inv")
	_, x := s.exception(t, a, "missing_values", "m")
	same := func(what string, got store.Exception) {
		t.Helper()
		stored := of(s.st.GetException(s.ctx, "acme", "ops", x.ID)).must(t)
		if fmt.Sprintf("%+v", got) != fmt.Sprintf("%+v", stored) {
			t.Fatalf("%s returned\n%+v\nstored\n%+v", what, got, stored)
		}
	}
	same("assign", of(s.st.AssignException(s.ctx, "acme", "ops", x.ID, "users/u1", nil)).must(t))
	same("archive", of(s.st.ArchiveException(s.ctx, "acme", "ops", x.ID, nil)).must(t))
	same("unarchive", of(s.st.UnarchiveException(s.ctx, "acme", "ops", x.ID, nil)).must(t))
	same("resolve", of(s.st.ResolveException(s.ctx, "acme", "ops", x.ID, accept(store.Resolution{Resolver: "users/u1", Data: []byte("g")}))).must(t))
}

func testAssignException(t *testing.T, s *suite) {
	a := s.automation(t, "inv")
	_, x := s.exception(t, a, "missing_values", "m")
	as := of(s.st.AssignException(s.ctx, "acme", "ops", x.ID, "users/ana", nil)).must(t)
	if as.Assignee != "users/ana" || as.State != store.ExceptionPending {
		t.Fatalf("assign: %+v", as)
	}
	if un := of(s.st.AssignException(s.ctx, "acme", "ops", x.ID, "", nil)).must(t); un.Assignee != "" {
		t.Fatalf("unassign: %+v", un)
	}
	of(s.st.ArchiveException(s.ctx, "acme", "ops", x.ID, nil)).must(t)
	if as := of(s.st.AssignException(s.ctx, "acme", "ops", x.ID, "users/bo", nil)).must(t); as.Assignee != "users/bo" || as.State != store.ExceptionArchived {
		t.Fatalf("assign archived: %+v", as)
	}
	of(s.st.UnarchiveException(s.ctx, "acme", "ops", x.ID, nil)).must(t)
	of(s.st.ResolveException(s.ctx, "acme", "ops", x.ID, accept(store.Resolution{Resolver: "users/u"}))).must(t)
	_, err := s.st.AssignException(s.ctx, "acme", "ops", x.ID, "users/ana", nil)
	wantErr(t, err, store.ErrFailedPrecondition, "assign a resolved exception")
	_, err = s.st.AssignException(s.ctx, "acme", "ops", "nope", "users/ana", nil)
	wantErr(t, err, store.ErrNotFound, "assign an absent exception")
}

// testFilterByAssignee: the assignee field selects the exceptions of one
// member (or, with "", the unassigned) in lists and counts.
func testFilterByAssignee(t *testing.T, s *suite) {
	a := s.automation(t, "inv")
	b := s.automation(t, "pay")
	_, x1 := s.exception(t, a, "missing_values", "1")
	_, x2 := s.exception(t, b, "user_system_error", "2")
	_, x3 := s.exception(t, a, "missing_values", "3")
	s.exception(t, a, "missing_values", "4")
	for _, x := range []store.Exception{x1, x2} {
		of(s.st.AssignException(s.ctx, "acme", "ops", x.ID, "users/ana", nil)).must(t)
	}
	of(s.st.AssignException(s.ctx, "acme", "ops", x3.ID, "users/bo", nil)).must(t)
	of(s.st.ArchiveException(s.ctx, "acme", "ops", x2.ID, nil)).must(t)
	for _, tc := range []struct {
		filter string
		want   []string // newest first
	}{
		{`assignee = "users/ana"`, []string{x2.ID, x1.ID}},
		{`assignee = "users/ana" AND state = PENDING`, []string{x1.ID}},
		{`assignee = "users/bo"`, []string{x3.ID}},
		{`assignee = "users/nobody"`, nil},
	} {
		p, total, err := s.st.ListExceptions(s.ctx, store.ListExceptionsRequest{OrganizationID: "acme", WorkspaceID: "ops", Filter: mustFilter(t, tc.filter), PageSize: 10})
		noErr(t, err)
		if got := excIDList(p.Items); !slices.Equal(got, tc.want) || total != len(tc.want) {
			t.Errorf("%s: %v (total %d), want %v", tc.filter, got, total, tc.want)
		}
	}
	if p, total, err := s.st.ListExceptions(s.ctx, store.ListExceptionsRequest{OrganizationID: "acme", WorkspaceID: "ops", Filter: mustFilter(t, `assignee = ""`), PageSize: 10}); err != nil || total != 1 || len(p.Items) != 1 || p.Items[0].Assignee != "" {
		t.Errorf("unassigned: %+v %d %v", p.Items, total, err)
	}
	if n := of(s.st.ListExceptionIDs(s.ctx, "acme", "ops", mustFilter(t, `assignee != "users/ana"`), 100)).must(t); len(n) != 2 {
		t.Errorf("assignee != ana: %v", n)
	}
	c := of(s.st.CountExceptionsByAutomation(s.ctx, store.CountRequest{OrganizationID: "acme", WorkspaceID: "ops", Filter: mustFilter(t, `assignee = "users/ana"`), PageSize: 10})).must(t)
	if c.TotalCount != 2 || !slices.Equal(c.Counts, []store.Count{{Key: "inv", Count: 1}, {Key: "pay", Count: 1}}) {
		t.Errorf("counts by automation of ana: %+v", c)
	}
	g := of(s.st.CountExceptionsByGroup(s.ctx, store.CountRequest{OrganizationID: "acme", WorkspaceID: "ops", Filter: mustFilter(t, `assignee = "users/ana" AND state = PENDING`), PageSize: 10})).must(t)
	if g.TotalCount != 1 || !slices.Equal(g.Counts, []store.Count{{Key: "missing_values", Count: 1}}) {
		t.Errorf("counts by group of ana, pending: %+v", g)
	}
}

func testListExceptionIDs(t *testing.T, s *suite) {
	a := s.automation(t, "inv")
	b := s.automation(t, "pay")
	var want []string
	for i := range 5 {
		_, x := s.exception(t, a, "missing_values", fmt.Sprint(i))
		want = append(want, x.ID)
		s.exception(t, b, "missing_values", fmt.Sprint(i))
	}
	got := of(s.st.ListExceptionIDs(s.ctx, "acme", "ops", mustFilter(t, `automation = "inv"`), 3)).must(t)
	if !slices.Equal(got, want[:3]) {
		t.Fatalf("ids: %v, want %v", got, want[:3])
	}
	if all := of(s.st.ListExceptionIDs(s.ctx, "acme", "ops", nil, 1000)).must(t); len(all) != 10 {
		t.Fatalf("all ids: %d", len(all))
	}
}

// testResolveRaces races two resolutions of one exception ResolveRaces
// times: exactly one wins, the other gets ErrFailedPrecondition, and the
// run carries the winner's guidance.
func testResolveRaces(t *testing.T, s *suite) {
	a := s.automation(t, "inv")
	n := ResolveRaces
	if testing.Short() {
		n = 50
	}
	for i := range n {
		r, x := s.exception(t, a, "missing_values", "m")
		var wg sync.WaitGroup
		var errs [2]error
		var outs [2]store.Exception
		start := make(chan struct{})
		for j := range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				outs[j], errs[j] = s.st.ResolveException(s.ctx, "acme", "ops", x.ID, func(got store.Exception) (store.Resolution, error) {
					// The engine's check: only a pending exception (as
					// read, locked, in this transaction) is resolved.
					if got.State != store.ExceptionPending {
						return store.Resolution{}, fmt.Errorf("is %s: %w", got.State, store.ErrFailedPrecondition)
					}
					return store.Resolution{Resolver: fmt.Sprintf("users/u%d", j), Data: []byte{byte(j)}}, nil
				})
			}()
		}
		close(start)
		wg.Wait()
		winner := -1
		for j, err := range errs {
			switch {
			case err == nil:
				if winner >= 0 {
					t.Fatalf("race %d: both won", i)
				}
				winner = j
			case !isFailedPrecondition(err):
				t.Fatalf("race %d: loser got %v, want ErrFailedPrecondition", i, err)
			}
		}
		if winner < 0 {
			t.Fatalf("race %d: nobody won: %v", i, errs)
		}
		if outs[winner].Resolver != fmt.Sprintf("users/u%d", winner) || outs[winner].State != store.ExceptionResolved {
			t.Fatalf("race %d: winner sees %+v", i, outs[winner])
		}
		got := s.runOf(t, r)
		if got.State != store.RunPending || len(got.Resolution) != 1 || int(got.Resolution[0]) != winner {
			t.Fatalf("race %d: run %+v carries the wrong guidance (winner %d)", i, got, winner)
		}
		if x := of(s.st.GetException(s.ctx, "acme", "ops", x.ID)).must(t); x.Resolver != fmt.Sprintf("users/u%d", winner) {
			t.Fatalf("race %d: stored resolver %q, winner %d", i, x.Resolver, winner)
		}
	}
}

func isFailedPrecondition(err error) bool { return errors.Is(err, store.ErrFailedPrecondition) }

// testCountPendingExceptions: the counts of pending exceptions by
// workspace, automation and group follow raising, resolving, archiving and
// unarchiving, and a workspace's deletion.
func testCountPendingExceptions(t *testing.T, s *suite) {
	count := func(want map[string]int64) {
		t.Helper()
		got := map[string]int64{}
		for _, c := range of(s.st.CountPendingExceptions(s.ctx)).must(t) {
			got[c.OrganizationID+"/"+c.WorkspaceID+"/"+c.AutomationID+"/"+c.Group] = c.N
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("pending exceptions %v, want %v", got, want)
		}
	}
	count(map[string]int64{})
	inv, pay := s.automation(t, "inv"), s.automation(t, "pay")
	_, x1 := s.exception(t, inv, "missing_values", "a")
	_, x2 := s.exception(t, inv, "missing_values", "b")
	s.exception(t, inv, "", "c")
	_, x4 := s.exception(t, pay, "user_system_error", "d")
	count(map[string]int64{"acme/ops/inv/": 1, "acme/ops/inv/missing_values": 2, "acme/ops/pay/user_system_error": 1})
	of(s.st.ResolveException(s.ctx, "acme", "ops", x1.ID, accept(store.Resolution{Resolver: "users/u", Data: []byte("g")}))).must(t)
	of(s.st.ArchiveException(s.ctx, "acme", "ops", x4.ID, nil)).must(t)
	count(map[string]int64{"acme/ops/inv/": 1, "acme/ops/inv/missing_values": 1})
	of(s.st.UnarchiveException(s.ctx, "acme", "ops", x4.ID, nil)).must(t)
	of(s.st.ArchiveException(s.ctx, "acme", "ops", x2.ID, nil)).must(t)
	count(map[string]int64{"acme/ops/inv/": 1, "acme/ops/pay/user_system_error": 1})
}
