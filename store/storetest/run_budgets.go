package storetest

import (
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/proserun/prose/store"
)

// testRunBudgets: poison runs, giving a run up for a turn, and claims
// shared fairly between organizations and between the workspaces of one.
func testRunBudgets(t *testing.T, open Opener) {
	for _, tc := range []struct {
		name string
		fn   func(t *testing.T, s *suite)
	}{
		{"RunPoison", testRunPoison},
		{"RunYield", testRunYield},
		{"RunFairClaims", testRunFairClaims},
		{"RunFairClaimsWorkspaces", testRunFairClaimsWorkspaces},
		{"RunClaimsSkipping", testRunClaimsSkipping},
		{"RunQueueStats", testRunQueueStats},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, setup(t, open)) })
	}
	t.Run("RunPoisonLimit", func(t *testing.T) {
		c := &Clock{}
		s := &suite{st: open(t, store.WithClock(c.Now), store.WithMaxLostLeases(1)), clock: c, ctx: t.Context()}
		r := s.run(t, s.automation(t, "a1"), "")
		s.loseLease(t, r.ID, 2)
		if got := of(s.st.ClaimRuns(s.ctx, "w", 1, s.clock.Peek())).must(t); len(got) != 0 {
			t.Fatalf("a run that lost its lease twice with MaxLostLeases 1 was claimed again: %+v", got)
		}
		if got := of(s.st.GetRunByID(s.ctx, r.ID)).must(t); got.State != store.RunFailed || !strings.Contains(got.Description, "2 times in a row") {
			t.Fatalf("run %s %q, want failed after 2 lost leases", got.State, got.Description)
		}
	})
}

// loseLease claims run id n times with a lease that expires at once; each
// claim after the first recovers the lease the previous one lost.
func (s *suite) loseLease(t *testing.T, id string, n int) {
	t.Helper()
	for i := range n {
		got := of(s.st.ClaimRuns(s.ctx, "w", 1, s.clock.Peek())).must(t)
		if len(got) != 1 || got[0].ID != id {
			t.Fatalf("claim %d: %+v, want run %s", i+1, got, id)
		}
	}
}

func testRunPoison(t *testing.T, s *suite) {
	a := s.automation(t, "a1")
	r := s.run(t, a, "")
	// Claimed, and its lease lost, four times: the first claim and three
	// recoveries back to pending (default limit: 3 in a row).
	s.loseLease(t, r.ID, 4)
	// The fourth loss fails it: it is not claimed again.
	if got := of(s.st.ClaimRuns(s.ctx, "w", 1, s.clock.Peek())).must(t); len(got) != 0 {
		t.Fatalf("a poison run was claimed again: %+v", got)
	}
	got := of(s.st.GetRunByID(s.ctx, r.ID)).must(t)
	if got.State != store.RunFailed || !strings.HasPrefix(got.Description, "Internal error:") || !strings.Contains(got.Description, "4 times in a row") ||
		got.ErrorID == "" || got.LeaseOwner != "" || got.Checkpoint != nil {
		t.Fatalf("poison run: %+v", got)
	}

	// Progress resets the count: a run that saves progress between losses
	// is retried as long as it makes progress.
	r2 := s.run(t, a, "")
	s.loseLease(t, r2.ID, 3)
	noErr(t, s.st.SaveProgress(s.ctx, "w", r2.ID, store.Progress{Step: 0, Checkpoint: []byte("cp")}))
	// Two losses before the progress, three after: still retried.
	s.loseLease(t, r2.ID, 3)
	// Leaving the run (here: giving it up for a turn) resets the count too.
	of(s.st.FinishRun(s.ctx, "w", r2.ID, store.RunOutcome{State: store.RunPending, Checkpoint: []byte("cp2")})).must(t)
	s.loseLease(t, r2.ID, 4)
	if got := of(s.st.ClaimRuns(s.ctx, "w", 1, s.clock.Peek())).must(t); len(got) != 0 {
		t.Fatalf("a poison run was claimed again: %+v", got)
	}
	if got := of(s.st.GetRunByID(s.ctx, r2.ID)).must(t); got.State != store.RunFailed {
		t.Fatalf("run %s, want failed", got.State)
	}

	// A run being paused whose worker died is stopped, never failed.
	r3 := s.run(t, a, "")
	for range 5 {
		claimed := of(s.st.ClaimRuns(s.ctx, "w", 1, s.clock.Peek())).must(t)
		if len(claimed) != 1 {
			t.Fatalf("claim: %+v", claimed)
		}
		of(s.st.ChangeRun(s.ctx, a.OrganizationID, a.WorkspaceID, a.ID, r3.ID, pause("hold"))).must(t)
		of(s.st.ClaimRuns(s.ctx, "w", 1, s.clock.Peek())).must(t) // recovers it: stopped
		if got := of(s.st.GetRunByID(s.ctx, r3.ID)).must(t); got.State != store.RunStopped {
			t.Fatalf("paused run whose worker died: %s", got.State)
		}
		of(s.st.ChangeRun(s.ctx, a.OrganizationID, a.WorkspaceID, a.ID, r3.ID, resume)).must(t)
	}
}

func testRunYield(t *testing.T, s *suite) {
	a := s.automation(t, "a1")
	r := s.run(t, a, "")
	far := s.clock.Peek().Add(time.Hour)
	of(s.st.ClaimRuns(s.ctx, "w1", 1, far)).must(t)
	_, err := s.st.FinishRun(s.ctx, "w1", r.ID, store.RunOutcome{State: store.RunPending})
	wantErr(t, err, store.ErrInvalidArgument, "give a run up without its state")
	back := of(s.st.FinishRun(s.ctx, "w1", r.ID, store.RunOutcome{State: store.RunPending, Checkpoint: []byte("cp"), Step: 1, StepInputs: []byte("in")})).must(t)
	if back.State != store.RunPending || back.LeaseOwner != "" || string(back.Checkpoint) != "cp" || back.Step != 1 || string(back.StepInputs) != "in" {
		t.Fatalf("given up: %+v", back)
	}
	_, err = s.st.FinishRun(s.ctx, "w1", r.ID, store.RunOutcome{State: store.RunPending, Checkpoint: []byte("cp")})
	if !errors.Is(err, store.ErrConflict) {
		t.Fatalf("give up a run no longer leased: %v", err)
	}
	again := of(s.st.ClaimRuns(s.ctx, "w2", 1, far)).must(t)
	if len(again) != 1 || again[0].ID != r.ID || string(again[0].Checkpoint) != "cp" {
		t.Fatalf("claim a run given up: %+v", again)
	}
	// Being paused meanwhile: it is stopped instead, and keeps its state.
	of(s.st.ChangeRun(s.ctx, a.OrganizationID, a.WorkspaceID, a.ID, r.ID, pause("hold"))).must(t)
	stopped := of(s.st.FinishRun(s.ctx, "w2", r.ID, store.RunOutcome{State: store.RunPending, Checkpoint: []byte("cp3")})).must(t)
	if stopped.State != store.RunStopped || string(stopped.Checkpoint) != "cp3" || stopped.Reason != "hold" {
		t.Fatalf("given up while being paused: %+v", stopped)
	}
}

func testRunFairClaims(t *testing.T, s *suite) {
	fc := s.st
	if has := of(fc.HasPendingRuns(s.ctx)).must(t); has {
		t.Fatal("HasPendingRuns on an empty store")
	}
	a := s.automation(t, "a1") // organization acme
	s.org(t, "zen")
	s.ws(t, "zen", "w2", "W2")
	b := of(s.st.CreateAutomation(s.ctx, store.Automation{OrganizationID: "zen", WorkspaceID: "w2", ID: "b1", DisplayName: "B", Code: "the output x is 1\n"})).must(t)
	far := s.clock.Peek().Add(time.Hour)
	var acme []store.Run
	for range 6 {
		acme = append(acme, s.run(t, a, ""))
	}
	if has := of(fc.HasPendingRuns(s.ctx)).must(t); !has {
		t.Fatal("HasPendingRuns with six pending runs")
	}
	// ClaimRuns takes the oldest, whatever their organization.
	first := of(s.st.ClaimRuns(s.ctx, "w", 1, far)).must(t)
	if len(first) != 1 || first[0].ID != acme[0].ID {
		t.Fatalf("ClaimRuns: %v", runIDs(first))
	}
	// acme holds three runs.
	held := append(first, of(fc.ClaimRunsFair(s.ctx, "w", 2, far)).must(t)...)
	if len(held) != 3 || held[0].ID != acme[0].ID || held[2].ID != acme[2].ID {
		t.Fatalf("first claim: %+v", runIDs(held))
	}
	// zen's run, made after acme's three others, is claimed first.
	zen := s.run(t, b, "")
	next := of(fc.ClaimRunsFair(s.ctx, "w", 1, far)).must(t)
	if len(next) != 1 || next[0].ID != zen.ID {
		t.Fatalf("claim with a run of another organization waiting: %v, want %s", runIDs(next), zen.ID)
	}
	// zen holds one run and acme three: a claim of two takes zen's two
	// new runs before acme's older ones.
	z2, z3 := s.run(t, b, ""), s.run(t, b, "")
	got := of(fc.ClaimRunsFair(s.ctx, "w", 2, far)).must(t)
	if len(got) != 2 || got[0].ID != z2.ID || got[1].ID != z3.ID {
		t.Fatalf("claim of two: %v, want %s %s", runIDs(got), z2.ID, z3.ID)
	}
	// Now each holds three: acme's oldest goes next, then zen's.
	z4 := s.run(t, b, "")
	got = of(fc.ClaimRunsFair(s.ctx, "w", 2, far)).must(t)
	if len(got) != 2 || got[0].ID != acme[3].ID || got[1].ID != z4.ID {
		t.Fatalf("claim with equal shares: %v, want %s %s", runIDs(got), acme[3].ID, z4.ID)
	}
}

// testRunFairClaimsWorkspaces: within one organization, a workspace that
// floods the queue cannot starve another workspace of the same
// organization, and the organizations still share first.
func testRunFairClaimsWorkspaces(t *testing.T, s *suite) {
	a := s.automation(t, "a1") // acme/ops
	s.ws(t, "acme", "w2", "W2")
	b := of(s.st.CreateAutomation(s.ctx, store.Automation{OrganizationID: "acme", WorkspaceID: "w2", ID: "b1", DisplayName: "B", Code: "the output x is 1\n"})).must(t)
	far := s.clock.Peek().Add(time.Hour)
	var flood []store.Run
	for range 8 {
		flood = append(flood, s.run(t, a, ""))
	}
	// ops holds three runs.
	held := of(s.st.ClaimRunsFair(s.ctx, "w", 3, far)).must(t)
	if len(held) != 3 || held[0].ID != flood[0].ID || held[2].ID != flood[2].ID {
		t.Fatalf("first claim: %v", runIDs(held))
	}
	// w2's run, made after ops's five others, is claimed first: its
	// workspace holds none.
	w2 := s.run(t, b, "")
	next := of(s.st.ClaimRunsFair(s.ctx, "w", 1, far)).must(t)
	if len(next) != 1 || next[0].ID != w2.ID {
		t.Fatalf("claim with a run of another workspace of the organization waiting: %v, want %s", runIDs(next), w2.ID)
	}
	// w2 holds one, ops three: w2's next two runs go before ops's older
	// ones, then the shares are equal and ops's oldest goes next.
	w2b, w2c, w2d := s.run(t, b, ""), s.run(t, b, ""), s.run(t, b, "")
	got := of(s.st.ClaimRunsFair(s.ctx, "w", 3, far)).must(t)
	// (A claim returns its runs oldest first.)
	if len(got) != 3 || got[0].ID != flood[3].ID || got[1].ID != w2b.ID || got[2].ID != w2c.ID {
		t.Fatalf("claim of three: %v, want %s %s %s", runIDs(got), flood[3].ID, w2b.ID, w2c.ID)
	}
	// Another organization still goes before both: acme holds seven.
	s.org(t, "zen")
	s.ws(t, "zen", "z", "Z")
	zb := of(s.st.CreateAutomation(s.ctx, store.Automation{OrganizationID: "zen", WorkspaceID: "z", ID: "zb", DisplayName: "Z", Code: "the output x is 1\n"})).must(t)
	zen := s.run(t, zb, "")
	got = of(s.st.ClaimRunsFair(s.ctx, "w", 2, far)).must(t)
	// ops holds four and w2 three: w2's last run is acme's next.
	if len(got) != 2 || got[0].ID != w2d.ID || got[1].ID != zen.ID {
		t.Fatalf("claim with another organization waiting: %v, want %s and %s", runIDs(got), zen.ID, w2d.ID)
	}
}

// testRunClaimsSkipping: a claim skipping an organization leaves its
// pending runs in the queue, older ones included, in both claim orders;
// skipping nobody is the plain claim.
func testRunClaimsSkipping(t *testing.T, s *suite) {
	a := s.automation(t, "a1") // organization acme
	s.org(t, "zen")
	s.ws(t, "zen", "w2", "W2")
	b := of(s.st.CreateAutomation(s.ctx, store.Automation{OrganizationID: "zen", WorkspaceID: "w2", ID: "b1", DisplayName: "B", Code: "the output x is 1\n"})).must(t)
	far := s.clock.Peek().Add(time.Hour)
	var acme []store.Run
	for range 4 {
		acme = append(acme, s.run(t, a, ""))
	}
	z1, z2 := s.run(t, b, ""), s.run(t, b, "")
	for _, fair := range []bool{false, true} {
		z := z1
		if fair {
			z = z2
		}
		got := of(s.st.ClaimRunsSkipping(s.ctx, "w", 1, far, fair, []string{"acme", "nobody"})).must(t)
		if len(got) != 1 || got[0].ID != z.ID {
			t.Fatalf("fair %v: claim skipping acme: %v, want %s", fair, runIDs(got), z.ID)
		}
	}
	// Only acme's runs wait: skipping it claims nothing.
	if got := of(s.st.ClaimRunsSkipping(s.ctx, "w", 2, far, true, []string{"acme"})).must(t); len(got) != 0 {
		t.Fatalf("claim skipping the only organization waiting: %v", runIDs(got))
	}
	got := of(s.st.ClaimRunsSkipping(s.ctx, "w", 2, far, false, nil)).must(t)
	if len(got) != 2 || got[0].ID != acme[0].ID || got[1].ID != acme[1].ID {
		t.Fatalf("claim skipping nobody: %v, want acme's two oldest", runIDs(got))
	}
}

func runIDs(rs []store.Run) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.OrganizationID + "/" + r.ID
	}
	return out
}

// testRunQueueStats: CountPendingRuns counts the queue; OnLeasesRecovered
// hears of the runs a claim took back from a worker whose lease expired.
func testRunQueueStats(t *testing.T, s *suite) {
	if n := of(s.st.CountPendingRuns(s.ctx)).must(t); n != 0 {
		t.Fatalf("CountPendingRuns on an empty store: %d", n)
	}
	var recovered atomic.Int64
	s.st.OnLeasesRecovered(func(n int64) { recovered.Add(n) })
	t.Cleanup(func() { s.st.OnLeasesRecovered(nil) })
	a := s.automation(t, "a1")
	r := s.run(t, a, "")
	s.run(t, a, "")
	s.run(t, a, "")
	if n := of(s.st.CountPendingRuns(s.ctx)).must(t); n != 3 {
		t.Fatalf("CountPendingRuns with three pending runs: %d", n)
	}
	// Claimed with a lease that has expired at the next claim, which takes
	// it back (one recovery) and claims it again.
	s.loseLease(t, r.ID, 2)
	if n := recovered.Load(); n != 1 {
		t.Fatalf("OnLeasesRecovered heard of %d runs, want 1", n)
	}
	if n := of(s.st.CountPendingRuns(s.ctx)).must(t); n != 2 {
		t.Fatalf("CountPendingRuns with one of three claimed: %d", n)
	}
	// A claim that recovers nothing calls nobody.
	far := s.clock.Peek().Add(time.Hour)
	for range 2 {
		of(s.st.ClaimRuns(s.ctx, "w", 1, far)).must(t)
	}
	if n := recovered.Load(); n != 2 {
		// The first of these two claims took r back again (its lease
		// expired at the clock's next second); the second nothing.
		t.Fatalf("OnLeasesRecovered heard of %d runs, want 2", n)
	}
}
