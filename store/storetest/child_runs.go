package storetest

import (
	"testing"
	"time"

	"github.com/proserun/prose/store"
)

// testChildRuns: runs started by a run (ParentRun), and a parent waiting
// for them without a lease (store.RunWaiting).
func testChildRuns(t *testing.T, open Opener) {
	t.Run("ChildRuns", func(t *testing.T) {
		s := setup(t, open)
		a := s.automation(t, "a1")
		parent := s.run(t, a, "")
		claimed := of(s.st.ClaimRuns(s.ctx, "w", 1, s.clock.Peek().Add(time.Hour))).must(t)
		if len(claimed) != 1 || claimed[0].ID != parent.ID {
			t.Fatalf("claimed %+v", claimed)
		}
		child := func(req string) store.Run {
			r, created, err := s.st.CreateRun(s.ctx, store.Run{
				OrganizationID: a.OrganizationID, WorkspaceID: a.WorkspaceID, AutomationID: a.ID,
				Stage: store.StageDraft, StageVersion: a.Version, Steps: []byte("child"), ParentRun: parent.ID, RequestID: req,
			})
			noErr(t, err)
			if !created || r.ParentRun != parent.ID || r.State != store.RunPending {
				t.Fatalf("child: created %v %+v", created, r)
			}
			return r
		}
		c1, c2 := child("child:1"), child("child:2")
		if got := of(s.st.GetRunByID(s.ctx, c1.ID)).must(t); got.ParentRun != parent.ID {
			t.Fatalf("read back: parent %q", got.ParentRun)
		}
		// The parent waits: released, not claimable.
		w := of(s.st.FinishRun(s.ctx, "w", parent.ID, store.RunOutcome{State: store.RunWaiting, Checkpoint: []byte("cp"), Step: 0})).must(t)
		if w.State != store.RunWaiting || w.LeaseOwner != "" || string(w.Checkpoint) != "cp" {
			t.Fatalf("waiting parent: %+v", w)
		}
		// A waiting run is executing for clients' filters.
		page := of(s.st.ListRuns(s.ctx, store.ListRunsRequest{OrganizationID: "acme", WorkspaceID: "ops", AutomationID: a.ID,
			Filter: store.Cond{Field: "state", Op: store.OpEq, Value: string(store.RunExecuting)}})).must(t)
		if len(page.Items) != 1 || page.Items[0].ID != parent.ID {
			t.Fatalf("state = executing lists %d runs, want the waiting parent", len(page.Items))
		}
		page = of(s.st.ListRuns(s.ctx, store.ListRunsRequest{OrganizationID: "acme", WorkspaceID: "ops", AutomationID: a.ID,
			Filter: store.Cond{Field: "state", Op: store.OpNe, Value: string(store.RunExecuting)}})).must(t)
		if len(page.Items) != 2 {
			t.Fatalf("state != executing lists %d runs, want the 2 children", len(page.Items))
		}
		// The children by their parent; the runs no run started.
		for _, tc := range []struct {
			f    store.Filter
			want int
		}{
			{store.Cond{Field: "parent_run", Op: store.OpEq, Value: parent.ID}, 2},
			{store.Cond{Field: "parent_run", Op: store.OpEq, Value: ""}, 1},
			{store.Cond{Field: "parent_run", Op: store.OpNe, Value: parent.ID}, 1},
			{store.And{store.Cond{Field: "automation", Op: store.OpEq, Value: a.ID}, store.Cond{Field: "parent_run", Op: store.OpEq, Value: parent.ID}}, 2},
			{store.And{store.Cond{Field: "automation", Op: store.OpEq, Value: "other"}, store.Cond{Field: "parent_run", Op: store.OpEq, Value: parent.ID}}, 0},
		} {
			page := of(s.st.ListRuns(s.ctx, store.ListRunsRequest{OrganizationID: "acme", WorkspaceID: "ops", AutomationID: "-", Filter: tc.f})).must(t)
			if len(page.Items) != tc.want {
				t.Errorf("filter %v lists %d runs, want %d", tc.f, len(page.Items), tc.want)
			}
		}
		// Workers get the children, never the waiting parent.
		got := of(s.st.ClaimRuns(s.ctx, "w", 10, s.clock.Peek().Add(time.Hour))).must(t)
		if len(got) != 2 || got[0].ParentRun != parent.ID || got[1].ParentRun != parent.ID {
			t.Fatalf("claimed %+v, want the two children", got)
		}
		of(s.st.FinishRun(s.ctx, "w", c1.ID, store.RunOutcome{State: store.RunCompleted, Outputs: []byte("o"), Step: 1})).must(t)
		if got := of(s.st.GetRunByID(s.ctx, parent.ID)).must(t); got.State != store.RunWaiting {
			t.Fatalf("parent with a child left is %s", got.State)
		}
		// The last child settles (failed counts): the parent is queued again.
		of(s.st.FinishRun(s.ctx, "w", c2.ID, store.RunOutcome{State: store.RunFailed, ErrorID: "e", Description: "boom"})).must(t)
		if got := of(s.st.GetRunByID(s.ctx, parent.ID)).must(t); got.State != store.RunPending || string(got.Checkpoint) != "cp" {
			t.Fatalf("parent after its children settled: %s", got.State)
		}
		got = of(s.st.ClaimRuns(s.ctx, "w", 10, s.clock.Peek().Add(time.Hour))).must(t)
		if len(got) != 1 || got[0].ID != parent.ID {
			t.Fatalf("claimed %+v, want the parent", got)
		}
		// Waiting when every child has settled: pending at once.
		r := of(s.st.FinishRun(s.ctx, "w", parent.ID, store.RunOutcome{State: store.RunWaiting, Checkpoint: []byte("cp2"), Step: 0})).must(t)
		if r.State != store.RunPending {
			t.Fatalf("waiting with no unsettled child: %s, want pending", r.State)
		}
		// A waiting outcome needs the state to continue from.
		of(s.st.ClaimRuns(s.ctx, "w", 10, s.clock.Peek().Add(time.Hour))).must(t)
		_, err := s.st.FinishRun(s.ctx, "w", parent.ID, store.RunOutcome{State: store.RunWaiting})
		wantErr(t, err, store.ErrInvalidArgument, "waiting without a checkpoint")
	})

	t.Run("ChildRunsPauseAndRecovery", func(t *testing.T) {
		s := setup(t, open)
		a := s.automation(t, "a1")
		parent := s.run(t, a, "")
		of(s.st.ClaimRuns(s.ctx, "w", 1, s.clock.Peek().Add(time.Hour))).must(t)
		c, _, err := s.st.CreateRun(s.ctx, store.Run{OrganizationID: a.OrganizationID, WorkspaceID: a.WorkspaceID, AutomationID: a.ID,
			Stage: store.StageDraft, StageVersion: a.Version, Steps: []byte("child"), ParentRun: parent.ID})
		noErr(t, err)
		of(s.st.FinishRun(s.ctx, "w", parent.ID, store.RunOutcome{State: store.RunWaiting, Checkpoint: []byte("cp")})).must(t)
		// Pause: waiting → stopped; continue: pending (it waits again when run).
		p := of(s.st.ChangeRun(s.ctx, "acme", "ops", a.ID, parent.ID, pause("hold"))).must(t)
		if p.State != store.RunStopped || p.Reason != "hold" {
			t.Fatalf("paused waiting run: %s %q", p.State, p.Reason)
		}
		p = of(s.st.ChangeRun(s.ctx, "acme", "ops", a.ID, parent.ID, resume)).must(t)
		if p.State != store.RunPending {
			t.Fatalf("continued: %s", p.State)
		}
		got := of(s.st.ClaimRuns(s.ctx, "w", 10, s.clock.Peek().Add(time.Hour))).must(t)
		if len(got) != 2 {
			t.Fatalf("claimed %d runs, want the parent and its child", len(got))
		}
		// A pause that meets the waiting outcome wins: stopped.
		of(s.st.ChangeRun(s.ctx, "acme", "ops", a.ID, parent.ID, pause("hold"))).must(t)
		if r := of(s.st.FinishRun(s.ctx, "w", parent.ID, store.RunOutcome{State: store.RunWaiting, Checkpoint: []byte("cp")})).must(t); r.State != store.RunStopped {
			t.Fatalf("waiting outcome of a stopping run: %s, want stopped", r.State)
		}
		of(s.st.ChangeRun(s.ctx, "acme", "ops", a.ID, parent.ID, resume)).must(t)
		of(s.st.ClaimRuns(s.ctx, "w", 10, s.clock.Peek().Add(time.Hour))).must(t)
		of(s.st.FinishRun(s.ctx, "w", parent.ID, store.RunOutcome{State: store.RunWaiting, Checkpoint: []byte("cp")})).must(t)
		// The child settles in a batch (which does not wake parents): the
		// recovery of the next claim does.
		errs, err := s.st.FinishRuns(s.ctx, "w", []string{c.ID}, []store.RunOutcome{{State: store.RunCompleted, Step: 1}})
		noErr(t, err)
		noErr(t, errs[0])
		if r := of(s.st.GetRunByID(s.ctx, parent.ID)).must(t); r.State != store.RunWaiting {
			t.Fatalf("parent %s before the recovery", r.State)
		}
		s.clock.Now() // a second later: the recovery is due
		got = of(s.st.ClaimRuns(s.ctx, "w", 10, s.clock.Peek().Add(time.Hour))).must(t)
		if len(got) != 1 || got[0].ID != parent.ID {
			t.Fatalf("claimed %+v, want the woken parent", got)
		}
	})
}
