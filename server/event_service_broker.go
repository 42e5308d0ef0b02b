package server

import "sync"

// broker wakes the streams of a thread when it changes: it is told by the
// writes of this process (CreateEvent, the agents' runner) and, on
// PostgreSQL, by the notices of every replica's writes (LISTEN/NOTIFY,
// store/postgres.Store.OnEventChange). Wake-ups carry no events: a woken
// stream reads from the store just the events after the last offset it
// sent, so a missed or merged wake-up loses nothing, and an idle stream
// holds one subscription (a channel of one slot) and no events.
type broker struct {
	mu   sync.Mutex
	subs map[string]map[chan struct{}]struct{}
	n    int
}

func newBroker() *broker { return &broker{subs: map[string]map[chan struct{}]struct{}{}} }

// subscribe returns a channel woken after changes to the thread, and the
// function that ends the subscription (it must be called: a stream calls
// it when its client goes away).
func (b *broker) subscribe(key string) (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	b.mu.Lock()
	if b.subs[key] == nil {
		b.subs[key] = map[chan struct{}]struct{}{}
	}
	b.subs[key][ch] = struct{}{}
	b.n++
	b.mu.Unlock()
	var once sync.Once
	return ch, func() {
		once.Do(func() {
			b.mu.Lock()
			delete(b.subs[key], ch)
			if len(b.subs[key]) == 0 {
				delete(b.subs, key)
			}
			b.n--
			b.mu.Unlock()
		})
	}
}

// notify wakes the thread's streams without blocking; key "" wakes every
// stream (notices from other replicas may have been missed).
func (b *broker) notify(key string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if key == "" {
		for _, subs := range b.subs {
			wakeAll(subs)
		}
		return
	}
	wakeAll(b.subs[key])
}

func wakeAll(subs map[chan struct{}]struct{}) {
	for ch := range subs {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// count is the number of subscriptions (streams open on this process).
func (b *broker) count() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.n
}
