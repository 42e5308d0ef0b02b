// Package engine executes runs: a durable queue in the store, workers that
// lease runs, interpret their steps with package lang, checkpoint at every
// book call and suspension, and release them when they complete, fail, stop
// or wait for guidance.
//
// A run that waits holds no goroutine and no memory: its interpreter state
// is in the store. A worker that dies loses its lease; another worker (in
// this process or another replica sharing the database) continues the run
// from its last checkpoint, and book calls already journaled are not made
// again.
package engine

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"log/slog"
	"os"
	"runtime"
	"sync"
	"time"

	"github.com/proserun/prose/lang"
	"github.com/proserun/prose/store"
)

// Options configure an Engine.
type Options struct {
	// Workers bounds the runs executed at once. Default: 4 × GOMAXPROCS.
	Workers int
	// ClaimBatch bounds the runs leased in one transaction. Default: 64.
	ClaimBatch int
	// LeaseDuration is how long a lease lasts without renewal; it is renewed
	// every third of it. Default: 30s.
	LeaseDuration time.Duration
	// PollInterval is how often an idle engine looks for work it was not told
	// about (runs made by another replica). Default: 250ms.
	PollInterval time.Duration
	// Owner names this engine in leases. Default: host, pid and a random part.
	Owner string
	// Clock is the engine's and the runs' clock. Default: time.Now.
	Clock func() time.Time
	// Logger receives run failures and internal errors.
	Logger *slog.Logger
	// Books gives the books a run of a workspace can call. Nil: none.
	Books func(organizationID, workspaceID string) lang.Books
	// Wakeups, when set, delivers notices that another replica made work
	// (PostgreSQL LISTEN/NOTIFY); Notify is then called after this engine
	// makes work.
	Wakeups <-chan struct{}
	Notify  func(ctx context.Context)
}

// Engine runs the run queue of a store.
type Engine struct {
	st   store.Store
	opts Options
	log  *slog.Logger
	wake chan struct{}

	progs programCache

	mu       sync.Mutex
	inflight map[string]*flight
}

// flight is a run being executed here.
type flight struct {
	cancel context.CancelCauseFunc
	lost   bool // the lease was lost: write nothing more
}

var (
	errPaused    = errors.New("the run is being paused")
	errLeaseLost = errors.New("the lease on the run was lost")
	errShutdown  = errors.New("the engine is shutting down")
)

// New returns an engine over st. Call Run to start it.
func New(st store.Store, opts Options) *Engine {
	if opts.Workers <= 0 {
		opts.Workers = 4 * runtime.GOMAXPROCS(0)
	}
	if opts.ClaimBatch <= 0 {
		opts.ClaimBatch = 64
	}
	if opts.LeaseDuration <= 0 {
		opts.LeaseDuration = 30 * time.Second
	}
	if opts.PollInterval <= 0 {
		opts.PollInterval = 250 * time.Millisecond
	}
	if opts.Clock == nil {
		opts.Clock = time.Now
	}
	if opts.Owner == "" {
		host, _ := os.Hostname()
		var b [4]byte
		_, _ = rand.Read(b[:])
		opts.Owner = host + "-" + itoa(os.Getpid()) + "-" + hex.EncodeToString(b[:])
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Engine{st: st, opts: opts, log: log, wake: make(chan struct{}, 1), inflight: map[string]*flight{}, progs: newProgramCache(1024)}
}

// Owner is the name this engine leases runs under.
func (e *Engine) Owner() string { return e.opts.Owner }

// Wake tells the engine there may be work: a run was created or guided.
func (e *Engine) Wake() {
	select {
	case e.wake <- struct{}{}:
	default:
	}
}

// announce wakes this engine and, through Notify, the other replicas.
func (e *Engine) announce(ctx context.Context) {
	e.Wake()
	if e.opts.Notify != nil {
		e.opts.Notify(ctx)
	}
}

// Run executes runs until ctx is cancelled, then waits for the runs in
// flight to reach their next checkpoint (at most the grace period) and
// returns. Runs still executing then are abandoned: their leases expire and
// another worker continues them.
func (e *Engine) Run(ctx context.Context, grace time.Duration) error {
	runCtx, stopRuns := context.WithCancelCause(context.Background())
	defer stopRuns(errShutdown)
	slots := make(chan struct{}, e.opts.Workers)
	var wg sync.WaitGroup

	renewDone := make(chan struct{})
	go func() {
		defer close(renewDone)
		e.renewLoop(ctx)
	}()

	poll := time.NewTicker(e.opts.PollInterval)
	defer poll.Stop()
	for ctx.Err() == nil {
		// Wait for a free slot.
		select {
		case slots <- struct{}{}:
			<-slots
		case <-ctx.Done():
			continue
		}
		free := e.opts.Workers - len(slots)
		if free > e.opts.ClaimBatch {
			free = e.opts.ClaimBatch
		}
		now := e.opts.Clock()
		runs, err := e.st.ClaimRuns(ctx, e.opts.Owner, free, now.Add(e.opts.LeaseDuration))
		if err != nil && ctx.Err() == nil {
			e.log.Warn("claim runs", "err", err)
		}
		for _, r := range runs {
			slots <- struct{}{}
			fctx, cancel := context.WithCancelCause(runCtx)
			f := &flight{cancel: cancel}
			e.mu.Lock()
			e.inflight[r.ID] = f
			e.mu.Unlock()
			wg.Add(1)
			go func(r store.Run) {
				defer wg.Done()
				defer func() { <-slots }()
				defer cancel(nil)
				e.execute(fctx, f, r)
				e.mu.Lock()
				delete(e.inflight, r.ID)
				e.mu.Unlock()
			}(r)
		}
		if len(runs) == free && free > 0 {
			continue // there may be more
		}
		select {
		case <-ctx.Done():
		case <-e.wake:
		case <-e.opts.Wakeups:
		case <-poll.C:
		}
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(grace):
		stopRuns(errShutdown)
		<-done
	}
	<-renewDone
	return nil
}

// renewLoop renews the leases of the runs in flight and tells them when they
// are being paused or were lost.
func (e *Engine) renewLoop(ctx context.Context) {
	t := time.NewTicker(e.opts.LeaseDuration / 3)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		e.renewOnce(ctx)
	}
}

func (e *Engine) renewOnce(ctx context.Context) {
	e.mu.Lock()
	ids := make([]string, 0, len(e.inflight))
	for id := range e.inflight {
		ids = append(ids, id)
	}
	e.mu.Unlock()
	if len(ids) == 0 {
		return
	}
	states, err := e.st.RenewLeases(ctx, e.opts.Owner, ids, e.opts.Clock().Add(e.opts.LeaseDuration))
	if err != nil {
		e.log.Warn("renew leases", "err", err)
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, id := range ids {
		f := e.inflight[id]
		if f == nil {
			continue
		}
		switch st, ok := states[id]; {
		case !ok:
			f.lost = true
			f.cancel(errLeaseLost)
		case st == store.RunStopping:
			f.cancel(errPaused)
		}
	}
}

// CheckPauses asks the store at once whether runs in flight are being
// paused or were lost (the renew loop does it every third of the lease).
func (e *Engine) CheckPauses(ctx context.Context) { e.renewOnce(ctx) }

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b [20]byte
	i := len(b)
	neg := n < 0
	if neg {
		n = -n
	}
	for n > 0 {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
	}
	if neg {
		i--
		b[i] = '-'
	}
	return string(b[i:])
}
