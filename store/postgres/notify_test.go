package postgres_test

import (
	"errors"
	"testing"
	"time"

	"github.com/proserun/prose/internal/testtime"
	"github.com/proserun/prose/store"
	"github.com/proserun/prose/store/postgres"
	"github.com/proserun/prose/store/storetest"
)

// twoReplicas opens two stores on one new database, closed when the test
// ends.
func twoReplicas(t *testing.T) (a, b *postgres.Store) {
	t.Helper()
	dbURL := tempDatabase(t)
	for _, s := range []**postgres.Store{&a, &b} {
		st, err := postgres.Open(t.Context(), dbURL)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		*s = st
	}
	return a, b
}

// One replica's Notify wakes another replica's Listen on the same database.
func TestNotifyWakesOtherReplica(t *testing.T) {
	a, b := twoReplicas(t)
	ctx := t.Context()
	wake := b.Listen(ctx)
	deadline := time.After(testtime.Limit(testtime.Wait))
	tick := time.NewTicker(20 * time.Millisecond) // LISTEN may not be registered yet: notify until heard
	defer tick.Stop()
	for {
		a.Notify(ctx)
		select {
		case <-wake:
			return
		case <-tick.C:
		case <-deadline:
			t.Fatal("the other replica was not woken")
		}
	}
}

// A replica that changes what authentication reads (here: deletes an API
// key) moves the other replicas' AuthGeneration on, so their caches of
// keys and permissions drop what they hold.
func TestAuthChangeInvalidatesOtherReplica(t *testing.T) {
	a, b := twoReplicas(t)
	ctx := t.Context()
	_ = b.Listen(ctx)
	deadline := testtime.Deadline(testtime.Wait)
	// Listen moves the generation on once it listens (a notification may
	// have been missed before).
	for b.AuthGeneration() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the listener did not start")
		}
		time.Sleep(5 * time.Millisecond)
	}
	before := b.AuthGeneration()
	if err := a.DeleteAPIKey(ctx, "no-org", "no-key"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("delete a missing key: %v", err)
	}
	if a.AuthGeneration() == 0 {
		t.Fatal("the writing replica's own generation did not move")
	}
	for b.AuthGeneration() == before {
		if time.Now().After(deadline) {
			t.Fatal("the other replica's generation did not move")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A workspace one replica updates is seen updated by another replica that
// read (and may remember) it before, once the change's notice has arrived:
// GetWorkspace's cache goes by AuthGeneration.
func TestWorkspaceChangeSeenByOtherReplica(t *testing.T) {
	a, b := twoReplicas(t)
	ctx := t.Context()
	_ = b.Listen(ctx)
	deadline := testtime.Deadline(testtime.Wait)
	for b.AuthGeneration() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the listener did not start")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if _, err := a.CreateOrganization(ctx, store.Organization{ID: "acme", DisplayName: "Acme"}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.CreateWorkspace(ctx, store.Workspace{OrganizationID: "acme", ID: "w", Title: "Before"}); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if w, err := b.GetWorkspace(ctx, "acme", "w"); err != nil || w.Title != "Before" {
			t.Fatalf("b reads %+v, %v", w, err)
		}
	}
	before := b.AuthGeneration()
	if _, err := a.UpdateWorkspace(ctx, store.Workspace{OrganizationID: "acme", ID: "w", Title: "After"}, []string{"title"}); err != nil {
		t.Fatal(err)
	}
	for b.AuthGeneration() == before {
		if time.Now().After(deadline) {
			t.Fatal("the other replica's generation did not move")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if w, err := b.GetWorkspace(ctx, "acme", "w"); err != nil || w.Title != "After" {
		t.Fatalf("b reads %+v, %v after the notice, want the title After", w, err)
	}
}

// Two replicas creating runs of the same automations at once number them
// densely and uniquely.
func TestRunNumbersAcrossReplicas(t *testing.T) {
	skipWithoutServer(t)
	a, b := twoReplicas(t)
	storetest.RunNumbers(t, a, b)
}
