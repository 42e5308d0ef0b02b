package server

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/pressly/goose/v3"

	"github.com/proserun/prose/store"
	"github.com/proserun/prose/store/migratetest"
	"github.com/proserun/prose/store/sqlite"
	"github.com/proserun/prose/store/sqlite/sqlitetest"
)

// TestRunAggregateRollupsOfVersion27: runs counted before migration 00030
// (rows per automation only; on PostgreSQL partly still deltas not folded,
// which 00032's coarse levels must include)
// are in the workspace rollups it builds, and runs created, finished and
// after it, and a deletion of the workspace, keep the rollups equal to the sum of the automations'
// counts, on both backends.
func TestRunAggregateRollupsOfVersion27(t *testing.T) {
	// 00036 (PostgreSQL only: its deltas are hours, without 00032's
	// column level) goes down first.
	laterDown := []int64{36, 34, 33, 32, 30}
	migratetest.ForEachBackend(t, func(t *testing.T, b migratetest.Backend) {
		ctx := context.Background()
		if err := b.MigrateTo(ctx, goose.MaxVersion); err != nil {
			t.Fatal(err)
		}
		// Back to version 29 in order: the later migrations (00032's
		// levels and value, SQLite's 00033) redefine what 00030 defines,
		// and 00034's SQLite index holds 00032's columns.
		var down []int64 // the backend's
		for _, v := range laterDown {
			err := b.Apply(ctx, v, false)
			if errors.Is(err, goose.ErrVersionNotFound) {
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			down = append(down, v)
		}
		old, err := b.Open(ctx, store.WithoutMigrations())
		if err != nil {
			t.Fatal(err)
		}
		org, err := old.CreateOrganization(ctx, store.Organization{DisplayName: "Acme"})
		if err != nil {
			t.Fatal(err)
		}
		ws, err := old.CreateWorkspace(ctx, store.Workspace{OrganizationID: org.ID, Title: "ops"})
		if err != nil {
			t.Fatal(err)
		}
		var autos []store.Automation
		for _, id := range []string{"a1", "a2"} {
			a, err := old.CreateAutomation(ctx, store.Automation{OrganizationID: org.ID, WorkspaceID: ws.ID, ID: id,
				DisplayName: id, Code: "the output y is 1\n"})
			if err != nil {
				t.Fatal(err)
			}
			autos = append(autos, a)
		}
		// want: the counts of the workspace (runs, completed, failed).
		var want store.RunCounts
		far := time.Now().Add(time.Hour)
		addRuns := func(st store.Store, n int) {
			t.Helper()
			for i := range n {
				a := autos[i%len(autos)]
				r, _, err := st.CreateRun(ctx, store.Run{OrganizationID: org.ID, WorkspaceID: ws.ID, AutomationID: a.ID,
					Stage: store.StageDraft, StageVersion: a.Version, Steps: []byte("steps")})
				if err != nil {
					t.Fatal(err)
				}
				want.Runs++
				c, err := st.ClaimRuns(ctx, "w1", 1, far)
				if err != nil || len(c) != 1 || c[0].ID != r.ID {
					t.Fatalf("claim %s: %v %v", r.ID, c, err)
				}
				if i%3 == 2 {
					continue // stays executing
				}
				o := store.RunOutcome{State: store.RunCompleted, Outputs: []byte("o")}
				if i%3 == 1 {
					o = store.RunOutcome{State: store.RunFailed, ErrorID: "e", Description: "d"}
					want.Failed++
				} else {
					want.Completed++
				}
				if _, err := st.FinishRun(ctx, "w1", r.ID, o); err != nil {
					t.Fatal(err)
				}
			}
		}
		if lite, ok := old.(*sqlite.Store); ok {
			// Since 00033 today's SQLite store counts the runs it creates
			// itself, in the columns of 00032: the runs of version 29 are
			// written as rows, counted by its triggers.
			var runs []store.Run
			for i := range 7 {
				a := autos[i%len(autos)]
				r := store.Run{OrganizationID: org.ID, WorkspaceID: ws.ID, AutomationID: a.ID, StageVersion: a.Version,
					State: []store.RunState{store.RunCompleted, store.RunFailed, store.RunStopped}[i%3], CreateTime: time.Now()}
				runs = append(runs, r)
				want.Runs++
				switch r.State {
				case store.RunCompleted:
					want.Completed++
				case store.RunFailed:
					want.Failed++
				}
			}
			sqlitetest.InsertRunRows(t, lite, runs)
		} else {
			addRuns(old, 7)
		}
		if err := old.Close(); err != nil {
			t.Fatal(err)
		}

		for _, v := range slices.Backward(down) {
			if err := b.Apply(ctx, v, true); err != nil {
				t.Fatal(err)
			}
		}
		st, err := b.Open(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = st.Close() }()
		check := func(round string) {
			t.Helper()
			for _, p := range []store.TimeRange{{}, {Start: time.Now().Add(-48 * time.Hour), End: time.Now().Add(48 * time.Hour)}} {
				req := store.RunAggregatesRequest{OrganizationID: org.ID, WorkspaceIDs: []string{ws.ID}, Periods: []store.TimeRange{p}}
				rollup, err := st.SumRunAggregates(ctx, req) // the rollup rows
				if err != nil {
					t.Fatal(err)
				}
				req.ByAutomation = true
				per, err := st.SumRunAggregates(ctx, req) // the automations' rows
				if err != nil {
					t.Fatal(err)
				}
				var sum store.RunCounts
				for _, g := range per {
					sum.Add(g.Counts)
				}
				if len(rollup) != 1 || rollup[0].Counts != want || rollup[0].AutomationID != "" || sum != want {
					t.Fatalf("%s, period %v: rollup %v, automations' sum %v, want %v", round, p, rollup, fmt.Sprint(sum), want)
				}
			}
		}
		check("after the migration")
		addRuns(st, 5)
		check("after more runs")
		if err := st.DeleteWorkspace(ctx, org.ID, ws.ID); err != nil {
			t.Fatal(err)
		}
		got, err := st.SumRunAggregates(ctx, store.RunAggregatesRequest{OrganizationID: org.ID, WorkspaceIDs: []string{ws.ID}, Periods: []store.TimeRange{{}}})
		if err != nil || len(got) != 0 {
			t.Fatalf("after deleting the workspace: %v, %v; want nothing", got, err)
		}
	})
}
