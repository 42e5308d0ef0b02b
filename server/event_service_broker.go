package server

import (
	"context"
	"sync"

	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
)

// broker wakes the streams of a thread when it changes: it is told by the
// writes of this process (CreateEvent, the agents' runner) and, on
// PostgreSQL, by the notices of every replica's writes (LISTEN/NOTIFY,
// store/postgres.Store.OnEventChange). Wake-ups carry no events: a woken
// stream reads from the store just the events after the last offset it
// sent (read), so a missed or merged wake-up loses nothing, and an idle
// stream holds one subscription (a channel of one slot) and no events.
//
// The streams of a thread woken by one write are mostly at the same offset:
// read makes them share one query (and its events) instead of one each.
// Better still, once a thread has a snapshot (the messages of every change
// after some offset, complete as of the latest change announced), a write
// announced on it is read once by the broker itself (preload) before the
// streams are woken, and each woken stream takes the messages after its own
// offset from the snapshot without waiting on anything: 10,000 streams
// waiting on one query's channel cost more than the query (the wake-up of
// every waiter contends on that channel's lock).
type broker struct {
	mu     sync.Mutex
	topics map[string]*topic
	n      int
	// batch is the most messages a load returns (streamBatch): a load
	// that returns fewer is complete.
	batch int
	// joined, when set (tests), is called when a read shares a query.
	joined func()
}

// topic is the streams of one thread.
type topic struct {
	subs map[chan struct{}]struct{}
	// gen counts the changes announced; a read may share a query only if
	// the query started after the reader last saw gen (so it sees them).
	gen     uint64
	flights map[int64]*flight // queries in progress, by offset
	// snap, when set, holds every change after snap.from as of snap.gen
	// (a complete load); while snap.gen == gen a reader at or after
	// snap.from reads from it.
	snap *snapshot
	// load reads the messages after an offset (the first subscriber's);
	// with it, notify preloads the snapshot before waking the streams.
	load             func(ctx context.Context, after int64) ([]*platformv1.StreamEventsResponse, error)
	loading, reloads bool // a preload runs; another change came meanwhile
}

// snapshot is a complete load: the messages of the changes after from, as
// of the change gen, in offset order (shared: read only).
type snapshot struct {
	gen  uint64
	from int64
	msgs []*platformv1.StreamEventsResponse
}

// end is the offset the snapshot reaches.
func (s *snapshot) end() int64 {
	if len(s.msgs) == 0 {
		return s.from
	}
	return s.msgs[len(s.msgs)-1].GetOffset()
}

// after is the snapshot's messages after offset.
func (s *snapshot) after(offset int64) []*platformv1.StreamEventsResponse {
	for i, m := range s.msgs {
		if m.GetOffset() > offset {
			return s.msgs[i:]
		}
	}
	return nil
}

// flight is a query of a thread's events after an offset, shared by the
// streams that ask for it while it runs.
type flight struct {
	gen    uint64
	done   chan struct{}
	events []*platformv1.StreamEventsResponse // shared: read only
	err    error
}

func newBroker() *broker { return &broker{topics: map[string]*topic{}, batch: streamBatch} }

// subscribe returns a channel woken after changes to the thread, and the
// function that ends the subscription (it must be called: a stream calls
// it when its client goes away).
func (b *broker) subscribe(key string) (<-chan struct{}, func()) {
	return b.subscribeWith(key, nil)
}

// subscribeWith is subscribe; load (the thread's messages after an
// offset, at most batch) lets notify preload the thread's snapshot.
func (b *broker) subscribeWith(key string, load func(context.Context, int64) ([]*platformv1.StreamEventsResponse, error)) (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	b.mu.Lock()
	tp := b.topics[key]
	if tp == nil {
		tp = &topic{subs: map[chan struct{}]struct{}{}, flights: map[int64]*flight{}}
		b.topics[key] = tp
	}
	if tp.load == nil {
		tp.load = load
	}
	tp.subs[ch] = struct{}{}
	b.n++
	b.mu.Unlock()
	var once sync.Once
	return ch, func() {
		once.Do(func() {
			b.mu.Lock()
			delete(tp.subs, ch)
			if len(tp.subs) == 0 && b.topics[key] == tp {
				delete(b.topics, key)
			}
			b.n--
			b.mu.Unlock()
		})
	}
}

// notify wakes the thread's streams without blocking; key "" wakes every
// stream (notices from other replicas may have been missed). Call it after
// the change is committed. A thread with a snapshot and a loader is read
// first (preload, in the background), then its streams are woken.
func (b *broker) notify(key string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if key == "" {
		for _, tp := range b.topics {
			tp.gen++
			tp.wake()
		}
		return
	}
	tp := b.topics[key]
	if tp == nil {
		return
	}
	tp.gen++
	switch {
	case tp.load == nil || tp.snap == nil:
		tp.wake()
	case tp.loading:
		tp.reloads = true // the preload running reads again, then wakes
	default:
		tp.loading = true
		go b.preload(tp)
	}
}

// preload reads the changes after the thread's snapshot, makes them the
// snapshot and wakes the streams; again while changes were announced
// meanwhile. A failed load wakes the streams all the same (they read for
// themselves).
func (b *broker) preload(tp *topic) {
	b.mu.Lock()
	for {
		gen, from, load := tp.gen, tp.snap.end(), tp.load
		b.mu.Unlock()
		msgs, err := load(context.Background(), from)
		b.mu.Lock()
		if err == nil && len(msgs) < b.batch && gen == tp.gen {
			tp.snap = &snapshot{gen: gen, from: from, msgs: msgs}
		}
		if !tp.reloads {
			tp.wake()
			tp.loading = false
			b.mu.Unlock()
			return
		}
		tp.reloads = false
	}
}

// wake signals the thread's streams.
func (tp *topic) wake() {
	for ch := range tp.subs {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// read returns load's answer for the thread's events after offset (the
// messages to send): from the thread's snapshot when it is current and
// reaches back to offset (unless fresh: a safety re-read, which must ask
// the store), else a query of the same offset started since the last
// change announced is shared rather than repeated, and so are the messages
// it made. The caller must be subscribed to key. The messages returned are
// shared: read only (sending them is reading).
func (b *broker) read(ctx context.Context, key string, after int64, fresh bool, load func(context.Context) ([]*platformv1.StreamEventsResponse, error)) ([]*platformv1.StreamEventsResponse, error) {
	b.mu.Lock()
	tp := b.topics[key]
	if tp == nil { // not subscribed: nothing to share
		b.mu.Unlock()
		return load(ctx)
	}
	if sn := tp.snap; !fresh && sn != nil && sn.gen == tp.gen && after >= sn.from {
		b.mu.Unlock()
		return sn.after(after), nil
	}
	if f := tp.flights[after]; f != nil && f.gen >= tp.gen {
		b.mu.Unlock()
		if b.joined != nil {
			b.joined()
		}
		select {
		case <-f.done:
			return f.events, f.err
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	f := &flight{gen: tp.gen, done: make(chan struct{})}
	tp.flights[after] = f
	b.mu.Unlock()
	// Not the caller's context: other streams may wait for this query.
	f.events, f.err = load(context.WithoutCancel(ctx))
	close(f.done)
	b.mu.Lock()
	if tp.flights[after] == f {
		delete(tp.flights, after)
	}
	// A complete load as of the latest change is the thread's snapshot.
	if f.err == nil && len(f.events) < b.batch && f.gen == tp.gen && (tp.snap == nil || tp.snap.gen <= f.gen) {
		tp.snap = &snapshot{gen: f.gen, from: after, msgs: f.events}
	}
	b.mu.Unlock()
	return f.events, f.err
}

// count is the number of subscriptions (streams open on this process).
func (b *broker) count() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.n
}
