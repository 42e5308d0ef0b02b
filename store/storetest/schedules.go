package storetest

import (
	"bytes"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/proserun/prose/store"
)

// testSchedules runs the schedule cases.
func testSchedules(t *testing.T, open Opener) {
	for _, tc := range []struct {
		name string
		fn   func(t *testing.T, s *suite)
	}{
		{"ScheduleCRUD", testScheduleCRUD},
		{"ScheduleDueAndAdvance", testScheduleDueAndAdvance},
		{"ScheduleAdvanceRace", testScheduleAdvanceRace},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, setup(t, open)) })
	}
}

func sched(a store.Automation, cfg string, enabled bool, next time.Time) store.Schedule {
	return store.Schedule{OrganizationID: a.OrganizationID, WorkspaceID: a.WorkspaceID, AutomationID: a.ID, Config: []byte(cfg), Enabled: enabled, NextTime: next}
}

func testScheduleCRUD(t *testing.T, s *suite) {
	a := s.automation(t, "a1")
	next := time.Date(2026, 3, 27, 8, 0, 0, 0, time.UTC)
	c := of(s.st.CreateSchedule(s.ctx, sched(a, "\x0a\x00cfg", true, next))).must(t)
	if c.Generation != 1 || !c.Enabled || !c.NextTime.Equal(next) || c.CreateTime.IsZero() || !bytes.Equal(c.Config, []byte("\x0a\x00cfg")) {
		t.Fatalf("created: %+v", c)
	}
	g := of(s.st.GetSchedule(s.ctx, a.OrganizationID, a.WorkspaceID, a.ID)).must(t)
	if g.Generation != 1 || !g.NextTime.Equal(next) || !g.CreateTime.Equal(c.CreateTime) {
		t.Errorf("get: %+v", g)
	}
	_, err := s.st.CreateSchedule(s.ctx, sched(a, "x", true, next))
	wantErr(t, err, store.ErrAlreadyExists, "a second schedule")
	_, err = s.st.CreateSchedule(s.ctx, store.Schedule{OrganizationID: a.OrganizationID, WorkspaceID: a.WorkspaceID, AutomationID: "nope", Config: []byte("x")})
	wantErr(t, err, store.ErrNotFound, "schedule of an unknown automation")
	_, err = s.st.GetSchedule(s.ctx, a.OrganizationID, a.WorkspaceID, "nope")
	wantErr(t, err, store.ErrNotFound, "get unknown")

	// Update replaces config, enabled and next time; disabled with no next.
	u := of(s.st.UpdateSchedule(s.ctx, sched(a, "v2", false, time.Time{}))).must(t)
	if u.Generation != 2 || u.Enabled || !u.NextTime.IsZero() || string(u.Config) != "v2" || !u.UpdateTime.After(c.UpdateTime) {
		t.Errorf("updated: %+v", u)
	}
	_, err = s.st.UpdateSchedule(s.ctx, store.Schedule{OrganizationID: a.OrganizationID, WorkspaceID: a.WorkspaceID, AutomationID: "nope"})
	wantErr(t, err, store.ErrNotFound, "update unknown")

	noErr(t, s.st.DeleteSchedule(s.ctx, a.OrganizationID, a.WorkspaceID, a.ID))
	wantErr(t, s.st.DeleteSchedule(s.ctx, a.OrganizationID, a.WorkspaceID, a.ID), store.ErrNotFound, "delete twice")

	// A schedule goes with its automation's workspace.
	of(s.st.CreateSchedule(s.ctx, sched(a, "x", true, next))).must(t)
	noErr(t, s.st.DeleteWorkspace(s.ctx, a.OrganizationID, a.WorkspaceID))
	_, err = s.st.GetSchedule(s.ctx, a.OrganizationID, a.WorkspaceID, a.ID)
	wantErr(t, err, store.ErrNotFound, "schedule of a deleted workspace")
}

func testScheduleDueAndAdvance(t *testing.T, s *suite) {
	base := time.Date(2026, 3, 27, 8, 0, 0, 0, time.UTC)
	if n := of(s.st.NextScheduleTime(s.ctx)).must(t); !n.IsZero() {
		t.Errorf("next of no schedule = %v", n)
	}
	var scheds []store.Schedule
	for i, tc := range []struct {
		id      string
		enabled bool
		next    time.Time
	}{
		{"late", true, base.Add(-time.Hour)},
		{"now", true, base},
		{"later", true, base.Add(time.Minute)},
		{"off", false, base.Add(-2 * time.Hour)},
		{"ended", true, time.Time{}},
	} {
		a := s.automation(t, tc.id)
		scheds = append(scheds, of(s.st.CreateSchedule(s.ctx, sched(a, "c", tc.enabled, tc.next))).must(t))
		_ = i
	}
	due := of(s.st.ListDueSchedules(s.ctx, base, 10)).must(t)
	if len(due) != 2 || due[0].AutomationID != "late" || due[1].AutomationID != "now" {
		t.Fatalf("due = %+v, want late, now", due)
	}
	if one := of(s.st.ListDueSchedules(s.ctx, base, 1)).must(t); len(one) != 1 || one[0].AutomationID != "late" {
		t.Errorf("due with limit 1 = %+v", one)
	}
	if n := of(s.st.NextScheduleTime(s.ctx)).must(t); !n.Equal(base.Add(-time.Hour)) {
		t.Errorf("next = %v", n)
	}

	late := scheds[0]
	// A stale generation or time advances nothing.
	if ok := of(s.st.AdvanceSchedule(s.ctx, late.OrganizationID, late.WorkspaceID, late.AutomationID, late.Generation+1, late.NextTime, base.Add(time.Hour))).must(t); ok {
		t.Error("advanced with a stale generation")
	}
	if ok := of(s.st.AdvanceSchedule(s.ctx, late.OrganizationID, late.WorkspaceID, late.AutomationID, late.Generation, base, base.Add(time.Hour))).must(t); ok {
		t.Error("advanced from another time")
	}
	if ok := of(s.st.AdvanceSchedule(s.ctx, late.OrganizationID, late.WorkspaceID, late.AutomationID, late.Generation, late.NextTime, base.Add(time.Hour))).must(t); !ok {
		t.Fatal("advance refused")
	}
	g := of(s.st.GetSchedule(s.ctx, late.OrganizationID, late.WorkspaceID, late.AutomationID)).must(t)
	if !g.NextTime.Equal(base.Add(time.Hour)) || g.Generation != late.Generation || !g.UpdateTime.Equal(late.UpdateTime) {
		t.Errorf("advanced: %+v", g)
	}
	// To none left.
	now := scheds[1]
	if ok := of(s.st.AdvanceSchedule(s.ctx, now.OrganizationID, now.WorkspaceID, now.AutomationID, now.Generation, now.NextTime, time.Time{})).must(t); !ok {
		t.Fatal("advance to none refused")
	}
	if due := of(s.st.ListDueSchedules(s.ctx, base.Add(time.Minute), 10)).must(t); len(due) != 1 || due[0].AutomationID != "later" {
		t.Errorf("due after advancing = %+v", due)
	}
	// An API write moves the generation on: the scheduler's advance fails.
	later := scheds[2]
	of(s.st.UpdateSchedule(s.ctx, later)).must(t)
	if ok := of(s.st.AdvanceSchedule(s.ctx, later.OrganizationID, later.WorkspaceID, later.AutomationID, later.Generation, later.NextTime, base.Add(time.Hour))).must(t); ok {
		t.Error("advanced a schedule the API changed meanwhile")
	}
}

// testScheduleAdvanceRace: of many schedulers advancing one schedule from
// the same time, exactly one succeeds.
func testScheduleAdvanceRace(t *testing.T, s *suite) {
	a := s.automation(t, "race")
	base := time.Date(2026, 3, 27, 8, 0, 0, 0, time.UTC)
	sc := of(s.st.CreateSchedule(s.ctx, sched(a, "c", true, base))).must(t)
	var wins atomic.Int32
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			ok, err := s.st.AdvanceSchedule(s.ctx, sc.OrganizationID, sc.WorkspaceID, sc.AutomationID, sc.Generation, base, base.Add(time.Minute))
			if err != nil {
				t.Errorf("advance: %v", err)
			}
			if ok {
				wins.Add(1)
			}
		})
	}
	wg.Wait()
	if wins.Load() != 1 {
		t.Errorf("%d advances won, want 1", wins.Load())
	}
}
