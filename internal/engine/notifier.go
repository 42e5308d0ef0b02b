package engine

import (
	"context"
	"sync"
	"time"
)

// notifySpacing is the least time between two notices to other replicas.
const notifySpacing = 5 * time.Millisecond

// notifier sends the engine's wake-up notices to the other replicas
// (Options.Notify). Notices are coalesced: one at a time, at most one per
// notifySpacing, each standing for every Announce since the previous one
// (a woken replica claims all the work there is). A notice per run cost
// PostgreSQL a transaction each, and NOTIFY serialises commits.
//
// Its goroutine runs only while there are notices to send. New starts it
// (Invoke works without Run); Stop waits for the notice being sent, and
// Announce does nothing until the next Start.
type notifier struct {
	send func(context.Context) // nil: no notices

	mu      sync.Mutex
	wanted  bool // an Announce came since the last notice began
	running bool // the goroutine is running
	stopped bool
	done    sync.WaitGroup
}

// Start lets Announce send notices.
func (n *notifier) Start() {
	n.mu.Lock()
	n.stopped = false
	n.mu.Unlock()
}

// Stop sends no more notices and waits for the goroutine to return.
func (n *notifier) Stop() {
	n.mu.Lock()
	n.stopped, n.wanted = true, false
	n.mu.Unlock()
	n.done.Wait()
}

// Announce asks for a notice.
func (n *notifier) Announce(ctx context.Context) {
	if n.send == nil {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.stopped {
		return
	}
	n.wanted = true
	if !n.running {
		n.running = true
		n.done.Add(1)
		go n.loop(context.WithoutCancel(ctx))
	}
}

// loop sends the notices wanted, then returns.
func (n *notifier) loop(ctx context.Context) {
	defer n.done.Done()
	for {
		n.mu.Lock()
		if !n.wanted || n.stopped {
			n.running = false
			n.mu.Unlock()
			return
		}
		n.wanted = false
		n.mu.Unlock()
		start := time.Now()
		n.send(ctx)
		if d := notifySpacing - time.Since(start); d > 0 {
			time.Sleep(d)
		}
	}
}
