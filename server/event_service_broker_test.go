package server

import (
	"context"
	"sync/atomic"
	"testing"

	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
)

// TestBrokerSharesReadsOnlyAfterTheLastChange: streams at one offset share
// a query in progress, unless a change was announced after it started
// (the query might not see it: the stream must read again).
func TestBrokerSharesReadsOnlyAfterTheLastChange(t *testing.T) {
	b := newBroker()
	joinedCh := make(chan struct{}, 1)
	b.joined = func() { joinedCh <- struct{}{} }
	_, unsub := b.subscribe("run/prose")
	ctx := context.Background()
	var loads atomic.Int32
	release := make(chan struct{})
	started := make(chan struct{})
	slow := func(context.Context) ([]*platformv1.StreamEventsResponse, error) {
		loads.Add(1)
		started <- struct{}{}
		<-release
		return []*platformv1.StreamEventsResponse{{Offset: 7}}, nil
	}
	first := make(chan []*platformv1.StreamEventsResponse)
	go func() {
		m, _ := b.read(ctx, "run/prose", 3, false, slow)
		first <- m
	}()
	<-started
	// Same offset, no change since the query began: shared.
	joined := make(chan []*platformv1.StreamEventsResponse)
	go func() {
		m, _ := b.read(ctx, "run/prose", 3, false, func(context.Context) ([]*platformv1.StreamEventsResponse, error) {
			t.Error("a second query while one started after the last change runs")
			return nil, nil
		})
		joined <- m
	}()
	<-joinedCh
	// A change is announced: a reader now needs a query of its own.
	b.notify("run/prose")
	own := make(chan []*platformv1.StreamEventsResponse)
	go func() {
		m, _ := b.read(ctx, "run/prose", 3, false, slow)
		own <- m
	}()
	<-started
	close(release)
	for _, ch := range []chan []*platformv1.StreamEventsResponse{first, joined, own} {
		if m := <-ch; len(m) != 1 || m[0].GetOffset() != 7 {
			t.Fatalf("read %v", m)
		}
	}
	if n := loads.Load(); n != 2 {
		t.Fatalf("%d queries, want 2", n)
	}
	if b.count() != 1 {
		t.Fatalf("%d subscriptions", b.count())
	}
	unsub()
	unsub()
	if b.count() != 0 || len(b.topics) != 0 {
		t.Fatalf("after unsubscribing: %d subscriptions, %d topics", b.count(), len(b.topics))
	}
}

// TestBrokerPreloadsTheSnapshot: once a thread has a snapshot, a write is
// read once by the broker before its streams are woken, and the woken
// streams read from the snapshot (no query of their own), each from its
// offset; a safety re-read (fresh) still asks the store.
func TestBrokerPreloadsTheSnapshot(t *testing.T) {
	b := newBroker()
	var loads atomic.Int32
	var head atomic.Int64 // the thread's last offset
	load := func(_ context.Context, after int64) ([]*platformv1.StreamEventsResponse, error) {
		loads.Add(1)
		var out []*platformv1.StreamEventsResponse
		for o := after + 1; o <= head.Load(); o++ {
			out = append(out, &platformv1.StreamEventsResponse{Offset: o})
		}
		return out, nil
	}
	key := "run/prose"
	wake, unsub := b.subscribeWith(key, load)
	defer unsub()
	ctx := context.Background()
	read := func(after int64, fresh bool) []*platformv1.StreamEventsResponse {
		m, err := b.read(ctx, key, after, fresh, func(ctx context.Context) ([]*platformv1.StreamEventsResponse, error) { return load(ctx, after) })
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	head.Store(2)
	if m := read(0, false); len(m) != 2 || loads.Load() != 1 {
		t.Fatalf("first read: %v, %d loads", m, loads.Load())
	}
	head.Store(3)
	b.notify(key)
	<-wake // after the preload
	if n := loads.Load(); n != 2 {
		t.Fatalf("%d loads after the write, want 2 (the preload)", n)
	}
	for _, after := range []int64{2, 2, 0} {
		m := read(after, false)
		want := int(3 - after)
		if after < 2 {
			want = 3 // before the snapshot: a query of its own
		}
		if len(m) != want || m[len(m)-1].GetOffset() != 3 {
			t.Fatalf("read after %d: %v", after, m)
		}
	}
	if n := loads.Load(); n != 3 {
		t.Fatalf("%d loads, want 3 (streams at the snapshot read no store)", n)
	}
	if m := read(3, true); len(m) != 0 || loads.Load() != 4 {
		t.Fatalf("a fresh read: %v, %d loads", m, loads.Load())
	}
}
