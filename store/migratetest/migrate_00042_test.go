package migratetest_test

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/proserun/prose/store"
	"github.com/proserun/prose/store/migratetest"
)

// Migration 00042 numbers the runs made before it in creation order, per
// automation, and starts each automation's counter after them.
func TestRunNumbersMigration(t *testing.T) {
	migratetest.ForEachBackend(t, func(t *testing.T, b migratetest.Backend) {
		ctx := context.Background()
		if err := b.MigrateTo(ctx, 42); err != nil {
			t.Fatal(err)
		}
		var tick atomic.Int64
		clock := func() time.Time { return time.Unix(1_800_000_000+tick.Add(1), 0) }
		st, err := b.Open(ctx, store.WithClock(clock), store.WithoutMigrations())
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = st.Close() }()
		if _, err := st.CreateOrganization(ctx, store.Organization{ID: "o", DisplayName: "O"}); err != nil {
			t.Fatal(err)
		}
		if _, err := st.CreateWorkspace(ctx, store.Workspace{OrganizationID: "o", ID: "w", Title: "W"}); err != nil {
			t.Fatal(err)
		}
		var made []string // a, b, a, a, b
		for _, id := range []string{"a", "b", "a", "a", "b"} {
			if _, err := st.GetAutomation(ctx, "o", "w", id); err != nil {
				if _, err := st.CreateAutomation(ctx, store.Automation{OrganizationID: "o", WorkspaceID: "w", ID: id, DisplayName: id, Code: "the output x is 1\n"}); err != nil {
					t.Fatal(err)
				}
			}
			r, _, err := st.CreateRun(ctx, store.Run{OrganizationID: "o", WorkspaceID: "w", AutomationID: id, Stage: store.StageDraft, StageVersion: 1})
			if err != nil {
				t.Fatal(err)
			}
			made = append(made, r.ID)
		}
		// Down and up again: the numbers are the migration's.
		if err := b.Apply(ctx, 42, false); err != nil {
			t.Fatal(err)
		}
		if err := b.Apply(ctx, 42, true); err != nil {
			t.Fatal(err)
		}
		var got []int64
		for i, id := range []string{"a", "b", "a", "a", "b"} {
			r, err := st.GetRun(ctx, "o", "w", id, made[i])
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, r.Number)
		}
		if want := []int64{1, 1, 2, 3, 2}; !slices.Equal(got, want) {
			t.Errorf("numbers %v, want %v", got, want)
		}
		next, _, err := st.CreateRun(ctx, store.Run{OrganizationID: "o", WorkspaceID: "w", AutomationID: "a", Stage: store.StageDraft, StageVersion: 1})
		if err != nil || next.Number != 4 {
			t.Errorf("the next run of a: #%d, %v; want #4", next.Number, err)
		}
	})
}
