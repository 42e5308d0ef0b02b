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
type broker struct {
	mu     sync.Mutex
	topics map[string]*topic
	n      int
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
}

// flight is a query of a thread's events after an offset, shared by the
// streams that ask for it while it runs.
type flight struct {
	gen    uint64
	done   chan struct{}
	events []*platformv1.StreamEventsResponse // shared: read only
	err    error
}

func newBroker() *broker { return &broker{topics: map[string]*topic{}} }

// subscribe returns a channel woken after changes to the thread, and the
// function that ends the subscription (it must be called: a stream calls
// it when its client goes away).
func (b *broker) subscribe(key string) (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	b.mu.Lock()
	tp := b.topics[key]
	if tp == nil {
		tp = &topic{subs: map[chan struct{}]struct{}{}, flights: map[int64]*flight{}}
		b.topics[key] = tp
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
// the change is committed.
func (b *broker) notify(key string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if key == "" {
		for _, tp := range b.topics {
			tp.wake()
		}
		return
	}
	if tp := b.topics[key]; tp != nil {
		tp.wake()
	}
}

func (tp *topic) wake() {
	tp.gen++
	for ch := range tp.subs {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// read returns load's answer for the thread's events after offset (the
// messages to send): a query of the same offset started since the last
// change announced is shared rather than repeated, and so are the messages
// it made. The caller must be subscribed to key. The messages returned are
// shared: read only (sending them is reading).
func (b *broker) read(ctx context.Context, key string, after int64, load func(context.Context) ([]*platformv1.StreamEventsResponse, error)) ([]*platformv1.StreamEventsResponse, error) {
	b.mu.Lock()
	tp := b.topics[key]
	if tp == nil { // not subscribed: nothing to share
		b.mu.Unlock()
		return load(ctx)
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
	b.mu.Unlock()
	return f.events, f.err
}

// count is the number of subscriptions (streams open on this process).
func (b *broker) count() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.n
}
