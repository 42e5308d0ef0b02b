package engine

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/proserun/prose/internal/testtime"
)

// TestTurnLimits: each organization with work may hold its fair part of the
// turns, and more as far as the others do not use theirs.
func TestTurnLimits(t *testing.T) {
	for _, tc := range []struct {
		procs int
		busy  map[string]int
		want  map[string]int
	}{
		{2, map[string]int{"b": 56}, map[string]int{"b": 2}},
		{2, map[string]int{"b": 56, "a": 1}, map[string]int{"b": 1, "a": 1}},
		{2, map[string]int{"a": 1, "b": 1, "c": 5}, map[string]int{"a": 1, "b": 1, "c": 1}},
		{8, map[string]int{"b": 56, "a": 1}, map[string]int{"b": 7, "a": 4}},
		{8, map[string]int{"b": 56, "a": 30}, map[string]int{"b": 4, "a": 4}},
		{8, map[string]int{"b": 56, "a": 30, "c": 1}, map[string]int{"b": 4, "a": 4, "c": 3}},
		{1, map[string]int{"b": 3, "a": 1}, map[string]int{"b": 1, "a": 1}},
	} {
		s := newCPUShare(tc.procs)
		for org, n := range tc.busy {
			for range n {
				s.enter(org)
			}
		}
		for org, want := range tc.want {
			s.mu.Lock()
			got := s.limit(s.orgs[org])
			s.mu.Unlock()
			if got != want {
				t.Errorf("%d turns, busy %v: %s may hold %d, want %d", tc.procs, tc.busy, org, got, want)
			}
		}
	}
	if newCPUShare(0) != nil || newCPUShare(-1) != nil {
		t.Error("no turns: want no bound (nil)")
	}
}

// TestTurnsGoRound: with one turn, the runs waiting take it in order, the
// organizations in turn: a run holding it hands it on at its next yield
// point when another waits, and a run whose wait ends (a pause) leaves the
// queue.
func TestTurnsGoRound(t *testing.T) {
	s := newCPUShare(1)
	ctx := context.Background()
	waiting := func(org string, n int) {
		t.Helper()
		deadline := testtime.Deadline(testtime.Wait)
		for {
			s.mu.Lock()
			got := 0
			if o := s.orgs[org]; o != nil {
				got = len(o.waiting)
			}
			s.mu.Unlock()
			if got == n {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d runs of %s wait, want %d", got, org, n)
			}
			time.Sleep(time.Millisecond)
		}
	}
	// order receives the name of each run as it gets the turn.
	order := make(chan string, 8)
	wait := func(ctx context.Context, name, org string, held bool) {
		go func() {
			if s.turn(ctx, org, held) {
				order <- name
			} else {
				order <- name + " gave up"
			}
		}()
	}
	got := func() string {
		t.Helper()
		select {
		case n := <-order:
			return n
		case <-time.After(testtime.Limit(testtime.Wait)):
			t.Fatal("no run got the turn")
		}
		return ""
	}
	for range 2 {
		s.enter("b")
	}
	if !s.turn(ctx, "b", false) {
		t.Fatal("b1: the free turn not taken")
	}
	wait(ctx, "b2", "b", false)
	waiting("b", 1)
	// b1's yield point: b2 waits, so b1 hands the turn on and waits.
	wait(ctx, "b1", "b", true)
	if n := got(); n != "b2" {
		t.Fatalf("%s got the turn, want b2", n)
	}
	waiting("b", 1)
	// A run of a, and one that will give up.
	s.enter("a")
	wait(ctx, "a1", "a", false)
	waiting("a", 1)
	cctx, cancel := context.WithCancel(ctx)
	s.enter("c")
	wait(cctx, "c1", "c", false)
	waiting("c", 1)
	cancel()
	if n := got(); n != "c1 gave up" {
		t.Fatalf("%s, want c1 to give up", n)
	}
	waiting("c", 0)
	s.leave("c")
	// b2 yields: b1 waited first, then a1; then b2 again.
	for i, want := range []string{"b1", "a1", "b2"} {
		holder := []string{"b2", "b1", "a1"}[i]
		org := holder[:1]
		wait(ctx, holder, org, true)
		if n := got(); n != want {
			t.Fatalf("%s yields: %s got the turn, want %s", holder, n, want)
		}
	}
	// a1 and b1 wait; b2 holds the turn.
	s.mu.Lock()
	state := fmt.Sprint(s.held, len(s.orgs["a"].waiting), len(s.orgs["b"].waiting))
	s.mu.Unlock()
	if state != "1 1 1" {
		t.Fatalf("held, a waiting, b waiting: %s, want 1 1 1", state)
	}
	// Let them all go: each run that gets the turn gives it back.
	s.release("b")
	for range 2 {
		n := got()
		s.release(n[:1])
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.held != 0 || len(s.queue) != 0 {
		t.Fatalf("held %d, queue %v after every run gave its turn back", s.held, s.queue)
	}
}
