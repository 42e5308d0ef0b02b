package storetest

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/proserun/prose/store"
)

// testRunHistory: the run's history (store.RunHistory) holds, oldest
// first, every state the run entered (whichever method moved it), the
// engine's entries written with its progress and outcomes, and its
// exceptions raised and resolved, who paused and continued it; paging and
// the node_kind filter.
func testRunHistory(t *testing.T, open Opener) {
	t.Run("RunHistory", func(t *testing.T) {
		s := setup(t, open)
		a := s.automation(t, "a1")
		r := s.run(t, a, "")
		say := func(text string) store.RunEvent {
			return store.RunEvent{NodeKind: "Say", Data: []byte(text), Location: store.Location{Start: 1, End: 5}}
		}
		lease := s.clock.Peek().Add(time.Hour)
		claimed := of(s.st.ClaimRuns(s.ctx, "w", 1, lease)).must(t)
		if len(claimed) != 1 || claimed[0].HistoryEvents != 0 {
			t.Fatalf("claimed %+v", claimed)
		}
		noErr(t, s.st.SaveProgress(s.ctx, "w", r.ID, store.Progress{Step: 0, Checkpoint: []byte("cp"),
			Events: []store.RunEvent{say("one"), {NodeKind: "FunctionCall", Data: []byte("call")}}}))
		// Not leased: nothing is written.
		wantErr(t, s.st.SaveProgress(s.ctx, "other", r.ID, store.Progress{Events: []store.RunEvent{say("lost")}}), store.ErrConflict, "save progress of another owner")
		w := of(s.st.FinishRun(s.ctx, "w", r.ID, store.RunOutcome{
			State: store.RunAwaitingGuidance, Checkpoint: []byte("cp2"), Events: []store.RunEvent{say("two")},
			Exception: &store.Exception{ID: "x1", Group: "missing_values", Message: "m", State: store.ExceptionPending, Location: store.Location{Start: 3, End: 9}},
		})).must(t)
		if w.HistoryEvents != 3 {
			t.Errorf("history_events = %d, want 3", w.HistoryEvents)
		}
		_ = of(s.st.ResolveException(s.ctx, "acme", "ops", "x1", func(store.Exception) (store.Resolution, error) {
			return store.Resolution{Resolver: "guideEntries/g1", Data: []byte("guidance")}, nil
		})).must(t)
		_ = of(s.st.ClaimRuns(s.ctx, "w", 1, lease)).must(t)
		_ = of(s.st.ChangeRun(s.ctx, "acme", "ops", a.ID, r.ID, pause("lunch"))).must(t)
		done := of(s.st.FinishRun(s.ctx, "w", r.ID, store.RunOutcome{State: store.RunCompleted, Outputs: []byte("o"), Step: 1,
			Events: []store.RunEvent{say("three")}})).must(t)
		if done.State != store.RunStopped || done.HistoryEvents != 4 {
			t.Fatalf("finished while stopping: %s, %d events", done.State, done.HistoryEvents)
		}
		_ = of(s.st.ChangeRun(s.ctx, "acme", "ops", a.ID, r.ID, resume)).must(t)

		type row struct{ kind, node, state, reason, ref, data string }
		want := []row{
			{"state", "", "pending", "", "", ""},
			{"state", "", "executing", "", "", ""},
			{"engine", "Say", "", "", "", "one"},
			{"engine", "FunctionCall", "", "", "", "call"},
			{"engine", "Say", "", "", "", "two"},
			{"exception", store.ExceptionNodeKind, "PENDING", "", "x1", ""},
			{"state", "", "awaiting_guidance", "", "x1", ""},
			{"exception", store.ExceptionNodeKind, "RESOLVED", "guideEntries/g1", "x1", "guidance"},
			{"state", "", "pending", "", "", ""},
			{"state", "", "executing", "", "", ""},
			{"control", store.PauseNodeKind, "", suiteActor, "", ""},
			{"state", "", "stopping", "lunch", "", ""},
			{"engine", "Say", "", "", "", "three"},
			{"state", "", "stopped", "lunch", "", ""},
			{"control", store.ContinueNodeKind, "", suiteActor, "", ""},
			{"state", "", "pending", "", "", ""},
		}
		list := func(f store.Filter, size int) []store.RunEvent {
			t.Helper()
			got, _ := all(t, size, func(token string) (store.Page[store.RunEvent], error) {
				return s.st.ListRunEvents(s.ctx, store.ListRunEventsRequest{RunID: r.ID, Filter: f, PageSize: size, PageToken: token})
			})
			return got
		}
		rows := func(evs []store.RunEvent) []row {
			var out []row
			for _, e := range evs {
				out = append(out, row{string(e.Kind), e.NodeKind, e.State, e.Reason, e.Ref, string(e.Data)})
			}
			return out
		}
		for _, size := range []int{1, 3, 100} {
			got := list(nil, size)
			if !slices.Equal(rows(got), want) {
				t.Fatalf("page size %d:\n got %v\nwant %v", size, rows(got), want)
			}
			for i := 1; i < len(got); i++ {
				if got[i].ID <= got[i-1].ID || got[i].Time.Before(got[i-1].Time) || got[i].RunID != r.ID {
					t.Fatalf("not in order: %+v then %+v", got[i-1], got[i])
				}
			}
		}
		got := list(nil, 100)
		if got[2].Location != (store.Location{Start: 1, End: 5}) || got[6].Location != (store.Location{Start: 3, End: 9}) {
			t.Errorf("locations: %+v, %+v", got[2].Location, got[6].Location)
		}
		if ctl := list(store.Cond{Field: "node_kind", Op: store.OpEq, Value: store.PauseNodeKind}, 2); len(ctl) != 1 || ctl[0].Kind != store.RunEventControl {
			t.Errorf("node_kind = Pause: %+v", ctl)
		}
		if says := list(store.Cond{Field: "node_kind", Op: store.OpEq, Value: "Say"}, 2); len(says) != 3 {
			t.Errorf("node_kind = Say: %d entries, want 3", len(says))
		}
		if other := list(store.Cond{Field: "node_kind", Op: store.OpNe, Value: "Say"}, 100); len(other) != len(want)-3 {
			t.Errorf("node_kind != Say: %d entries, want %d", len(other), len(want)-3)
		}
		// A token is bound to its filter and run.
		p := of(s.st.ListRunEvents(s.ctx, store.ListRunEventsRequest{RunID: r.ID, PageSize: 2})).must(t)
		_, err := s.st.ListRunEvents(s.ctx, store.ListRunEventsRequest{RunID: r.ID, PageSize: 2, PageToken: p.NextPageToken,
			Filter: store.Cond{Field: "node_kind", Op: store.OpEq, Value: "Say"}})
		wantErr(t, err, store.ErrInvalidArgument, "token with another filter")
		other := s.run(t, a, "")
		_, err = s.st.ListRunEvents(s.ctx, store.ListRunEventsRequest{RunID: other.ID, PageSize: 2, PageToken: p.NextPageToken})
		wantErr(t, err, store.ErrInvalidArgument, "token of another run")
		_, err = s.st.ListRunEvents(s.ctx, store.ListRunEventsRequest{RunID: r.ID, Filter: store.Cond{Field: "state", Op: store.OpEq, Value: "x"}})
		wantErr(t, err, store.ErrInvalidArgument, "unknown filter field")

		// A run created completed keeps what it said, before its state; one
		// created pending (the queue is not empty) drops it.
		mk := func(req string) store.Run {
			out, _, err := s.st.CreateRun(s.ctx, store.Run{OrganizationID: a.OrganizationID, WorkspaceID: a.WorkspaceID, AutomationID: a.ID,
				Stage: store.StageDraft, StageVersion: a.Version, Steps: []byte("s"), RequestID: req,
				State: store.RunCompleted, Outputs: []byte("o"), Events: []store.RunEvent{say("hello"), say("bye")}})
			noErr(t, err)
			return out
		}
		queued := mk("inline-1") // `other` is pending
		if queued.State != store.RunPending || queued.HistoryEvents != 0 {
			t.Fatalf("created while runs wait: %s, %d events", queued.State, queued.HistoryEvents)
		}
		evs := of(s.st.ListRunEvents(s.ctx, store.ListRunEventsRequest{RunID: queued.ID})).must(t)
		if !slices.Equal(rows(evs.Items), []row{{"state", "", "pending", "", "", ""}}) {
			t.Fatalf("queued run's history: %v", rows(evs.Items))
		}
		for range 2 {
			_ = of(s.st.ClaimRuns(s.ctx, "w2", 10, lease)).must(t)
		}
		for _, b := range []bool{true, false} {
			var done store.Run
			if b {
				done = mk("inline-2")
			} else {
				_, _, errs, err := s.st.CreateRuns(s.ctx, []store.Run{{OrganizationID: a.OrganizationID, WorkspaceID: a.WorkspaceID, AutomationID: a.ID,
					Stage: store.StageDraft, StageVersion: a.Version, Steps: []byte("s"), RequestID: "inline-3",
					State: store.RunFailed, ErrorID: "e1", Description: "boom", Events: []store.RunEvent{say("hello"), say("bye")}}})
				noErr(t, err)
				noErr(t, errs[0])
				done = of(s.st.GetRunByID(s.ctx, of(s.st.ListRuns(s.ctx, store.ListRunsRequest{OrganizationID: "acme", WorkspaceID: "ops", AutomationID: a.ID, PageSize: 1})).must(t).Items[0].ID)).must(t)
			}
			if done.State != store.RunCompleted && done.State != store.RunFailed || done.HistoryEvents != 2 {
				t.Fatalf("created executed: %s, %d events", done.State, done.HistoryEvents)
			}
			evs := of(s.st.ListRunEvents(s.ctx, store.ListRunEventsRequest{RunID: done.ID})).must(t)
			w := []row{{"engine", "Say", "", "", "", "hello"}, {"engine", "Say", "", "", "", "bye"}, {"state", "", string(done.State), "", "", ""}}
			if !b {
				w[2] = row{"state", "", "failed", "boom", "e1", ""}
			}
			if !slices.Equal(rows(evs.Items), w) {
				t.Fatalf("history of a run created %s:\n got %v\nwant %v", done.State, rows(evs.Items), w)
			}
		}

		// Batched finishes write each run's entries before its state.
		b := s.run(t, a, "")
		_ = of(s.st.ClaimRuns(s.ctx, "w3", 10, lease)).must(t)
		errs, err := s.st.FinishRuns(s.ctx, "w3", []string{b.ID, "nope"}, []store.RunOutcome{
			{State: store.RunCompleted, Outputs: []byte("o"), Events: []store.RunEvent{say("batched")}},
			{State: store.RunCompleted, Events: []store.RunEvent{say("x")}},
		})
		noErr(t, err)
		noErr(t, errs[0])
		wantErr(t, errs[1], store.ErrConflict, "finish a run not leased")
		evs = of(s.st.ListRunEvents(s.ctx, store.ListRunEventsRequest{RunID: b.ID})).must(t)
		if got := rows(evs.Items); len(got) != 4 || got[2] != (row{"engine", "Say", "", "", "", "batched"}) || got[3].state != "completed" {
			t.Fatalf("batched finish: %v", got)
		}
		// Archive and unarchive are entries too.
		x := s.run(t, a, "")
		_ = of(s.st.ClaimRuns(s.ctx, "w4", 10, lease)).must(t)
		_ = of(s.st.FinishRun(s.ctx, "w4", x.ID, store.RunOutcome{State: store.RunAwaitingGuidance, Checkpoint: []byte("c"),
			Exception: &store.Exception{ID: "x2", Message: "m", State: store.ExceptionPending}})).must(t)
		_ = of(s.st.ArchiveException(s.ctx, "acme", "ops", "x2", nil)).must(t)
		_ = of(s.st.UnarchiveException(s.ctx, "acme", "ops", "x2", nil)).must(t)
		evs = of(s.st.ListRunEvents(s.ctx, store.ListRunEventsRequest{RunID: x.ID, Filter: store.Cond{Field: "node_kind", Op: store.OpEq, Value: store.ExceptionNodeKind}})).must(t)
		var states []string
		for _, e := range evs.Items {
			states = append(states, e.State)
		}
		if fmt.Sprint(states) != "[PENDING ARCHIVED PENDING]" {
			t.Errorf("exception entries: %v", states)
		}
		// Exceptions a guide entry resolved at once: raised, and resolved by
		// the entry (one, then a batch of two runs).
		guided := func(run store.Run, entry string) store.GuidedException {
			return store.GuidedException{Entry: entry, MaxPerRun: 10, Exception: store.Exception{OrganizationID: "acme", WorkspaceID: "ops",
				RunID: run.ID, AutomationID: a.ID, Stage: store.StageDraft, Message: "m", Group: "missing_values"}}
		}
		g1 := of(s.st.RecordGuidedException(s.ctx, guided(x, "g1"))).must(t)
		gs, gerrs, err := s.st.RecordGuidedExceptions(s.ctx, []store.GuidedException{guided(x, "g2"), guided(b, "g3")})
		noErr(t, err)
		noErr(t, gerrs[0])
		noErr(t, gerrs[1])
		for _, c := range []struct {
			run   store.Run
			id    string
			entry string
		}{{x, g1.ID, "g1"}, {x, gs[0].ID, "g2"}, {b, gs[1].ID, "g3"}} {
			evs := of(s.st.ListRunEvents(s.ctx, store.ListRunEventsRequest{RunID: c.run.ID, PageSize: 100})).must(t)
			var got []string
			for _, e := range evs.Items {
				if e.Ref == c.id {
					got = append(got, e.State+" "+e.Reason)
				}
			}
			if fmt.Sprint(got) != "[PENDING  RESOLVED guideEntries/"+c.entry+"]" {
				t.Errorf("guided exception %s in the history: %q", c.entry, got)
			}
		}
	})
}
