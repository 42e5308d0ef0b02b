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
