package engine_test

import (
	"context"
	"errors"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/proserun/prose/store"
	"github.com/proserun/prose/store/postgres"
	"github.com/proserun/prose/store/sqlite"
)

// batchFinisher is the optional store method the engine's committer uses.
type batchFinisher interface {
	FinishRuns(ctx context.Context, owner string, runIDs []string, outcomes []store.RunOutcome) ([]error, error)
}

// TestFinishRuns checks the batch finish of the SQL stores: each run's lease
// is checked on its own (a run not leased to the owner is ErrConflict and
// the others are still finished), completed and failed outcomes are written
// as FinishRun writes them, and a run is finished only once.
func TestFinishRuns(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) {
		st, err := sqlite.Open(t.Context(), t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		testFinishRuns(t, st)
	})
	t.Run("postgres", func(t *testing.T) {
		st, err := postgres.Open(t.Context(), tempPostgres(t))
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		testFinishRuns(t, st)
	})
}

func testFinishRuns(t *testing.T, st store.Store) {
	ctx := t.Context()
	bf, ok := st.(batchFinisher)
	if !ok {
		t.Fatalf("%T has no FinishRuns", st)
	}
	org, err := st.CreateOrganization(ctx, store.Organization{DisplayName: "Acme"})
	if err != nil {
		t.Fatal(err)
	}
	ws, err := st.CreateWorkspace(ctx, store.Workspace{OrganizationID: org.ID, Title: "ops"})
	if err != nil {
		t.Fatal(err)
	}
	a, err := st.CreateAutomation(ctx, store.Automation{OrganizationID: org.ID, WorkspaceID: ws.ID, DisplayName: "bench", Code: benchCode})
	if err != nil {
		t.Fatal(err)
	}
	newRun := func() store.Run {
		r, _, err := st.CreateRun(ctx, store.Run{OrganizationID: org.ID, WorkspaceID: ws.ID, AutomationID: a.ID, Stage: store.StageDraft, Steps: []byte{}})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	r1, r2, r3 := newRun(), newRun(), newRun()
	claimed, err := st.ClaimRuns(ctx, "owner-a", 3, time.Now().Add(time.Minute))
	if err != nil || len(claimed) != 3 {
		t.Fatalf("claim: %d runs, %v", len(claimed), err)
	}
	r4 := newRun() // pending: not leased
	if _, err := st.FinishRun(ctx, "owner-a", r2.ID, store.RunOutcome{State: store.RunCompleted, Outputs: []byte{}}); err != nil {
		t.Fatal(err)
	}
	ids := []string{r1.ID, r2.ID, r3.ID, r4.ID}
	outs := []store.RunOutcome{
		{State: store.RunCompleted, Outputs: []byte("out")},
		{State: store.RunCompleted, Outputs: []byte("again")}, // finished already
		{State: store.RunFailed, ErrorID: "e1", Description: "boom", Location: store.Location{Start: 1, End: 4}},
		{State: store.RunCompleted, Outputs: []byte{}}, // not leased
	}
	errs, err := bf.FinishRuns(ctx, "owner-a", ids, outs)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []bool{false, true, false, true} {
		if got := errors.Is(errs[i], store.ErrConflict); got != want {
			t.Errorf("run %d: err %v, want conflict %v", i+1, errs[i], want)
		}
	}
	get := func(id string) store.Run {
		r, err := st.GetRunByID(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
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
	// Another owner cannot finish a run leased to owner-a.
	r5 := newRun()
	if _, err := st.ClaimRuns(ctx, "owner-a", 2, time.Now().Add(time.Minute)); err != nil { // r4 and r5
		t.Fatal(err)
	}
	errs, err = bf.FinishRuns(ctx, "owner-b", []string{r5.ID}, []store.RunOutcome{{State: store.RunCompleted}})
	if err != nil || !errors.Is(errs[0], store.ErrConflict) {
		t.Fatalf("other owner: %v %v", errs, err)
	}
	errs, err = bf.FinishRuns(ctx, "owner-a", []string{r5.ID}, []store.RunOutcome{{State: store.RunStopped}})
	if err != nil || !errors.Is(errs[0], store.ErrInvalidArgument) {
		t.Fatalf("stopped outcome: %v %v", errs, err)
	}
	if r := get(r5.ID); r.State != store.RunExecuting {
		t.Errorf("run 5: %s", r.State)
	}
}

// tempPostgres creates a database on PROSE_TEST_POSTGRES_URL (skipping
// without it), dropped at cleanup, and returns its URL.
func tempPostgres(t *testing.T) string {
	t.Helper()
	base := os.Getenv("PROSE_TEST_POSTGRES_URL")
	if base == "" {
		t.Skip("PROSE_TEST_POSTGRES_URL not set")
	}
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatal(err)
	}
	name := "prose_test_" + strings.ToLower(store.NewID())
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		_ = admin.Close(ctx)
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = admin.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)")
		_ = admin.Close(ctx)
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + name
	return u.String()
}
