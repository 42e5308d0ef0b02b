package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/proserun/prose/store/postgres"
)

// One replica's Notify wakes another replica's Listen on the same database.
func TestNotifyWakesOtherReplica(t *testing.T) {
	dbURL := tempDatabase(t)
	a, err := postgres.Open(t.Context(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := postgres.Open(t.Context(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	wake := b.Listen(ctx)
	deadline := time.After(10 * time.Second)
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
