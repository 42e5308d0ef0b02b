package server

import "sync"

// broker wakes the streams of a thread when this process writes to it.
// Wake-ups carry no data: a woken stream reads the store, so a missed or
// merged wake-up loses nothing.
type broker struct {
	mu   sync.Mutex
	subs map[string]map[chan struct{}]struct{}
}

func newBroker() *broker { return &broker{subs: map[string]map[chan struct{}]struct{}{}} }

// subscribe returns a channel woken after changes to the thread, and the
// function that ends the subscription.
func (b *broker) subscribe(key string) (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	b.mu.Lock()
	if b.subs[key] == nil {
		b.subs[key] = map[chan struct{}]struct{}{}
	}
	b.subs[key][ch] = struct{}{}
	b.mu.Unlock()
	return ch, func() {
		b.mu.Lock()
		delete(b.subs[key], ch)
		if len(b.subs[key]) == 0 {
			delete(b.subs, key)
		}
		b.mu.Unlock()
	}
}

// notify wakes the thread's streams without blocking.
func (b *broker) notify(key string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for ch := range b.subs[key] {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}
