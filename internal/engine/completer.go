package engine

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"sync"

	"github.com/proserun/prose/store"
)

// maxFinishBatch bounds the runs finished in one transaction.
const maxFinishBatch = 128

// completer writes the completed and failed outcomes of workers, several
// per transaction (store.RunBatches.FinishRuns) instead of one writer
// transaction per run. Its writers take the outcomes queued, as many as
// are waiting (no timer: while one batch commits, the next one gathers).
//
// Start starts the writers; Stop, called once every worker has returned,
// waits for them. Outside Start and Stop, Finish writes each outcome on its
// own.
type completer struct {
	st           store.Store
	owner        string
	log          *slog.Logger
	writers      int  // batches written at once
	singleWriter bool // a batch of one is written with FinishRun

	mu    sync.RWMutex
	queue chan *finishReq // nil: not started
	stop  chan struct{}
	wg    sync.WaitGroup
}

// finishReq is a worker's completed or failed outcome waiting for a writer.
type finishReq struct {
	ctx  context.Context
	id   string
	o    store.RunOutcome
	done chan error
}

// Start starts the writers; they write with ctx (the engine cancels it
// when the shutdown's grace period ends). queued bounds the outcomes
// waiting.
func (c *completer) Start(ctx context.Context, queued int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	queue, stop := make(chan *finishReq, queued), make(chan struct{})
	c.queue, c.stop = queue, stop
	for range c.writers {
		c.wg.Go(func() { c.loop(ctx, queue, stop) })
	}
}

// Stop stops the writers and waits for them. Call it when no Finish is
// waiting any more (every worker has returned).
func (c *completer) Stop() {
	c.mu.Lock()
	if c.queue != nil {
		close(c.stop)
		c.queue, c.stop = nil, nil
	}
	c.mu.Unlock()
	c.wg.Wait()
}

// Finish leaves a run in a final state and returns that run's result.
// Completed and failed outcomes go to the writers while they run; handed,
// when not nil, is then called as soon as the outcome is queued for them
// (the worker gives its slot back while the outcome is written).
func (c *completer) Finish(ctx context.Context, id string, o store.RunOutcome, handed func()) error {
	c.mu.RLock()
	q := c.queue
	c.mu.RUnlock()
	if q == nil || (o.State != store.RunCompleted && o.State != store.RunFailed) {
		_, err := c.st.FinishRun(ctx, c.owner, id, o)
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	req := &finishReq{ctx: ctx, id: id, o: o, done: make(chan error, 1)}
	select {
	case q <- req:
	case <-ctx.Done():
		return ctx.Err()
	}
	if handed != nil {
		handed()
	}
	return <-req.done // the writers always answer
}

// loop takes the outcomes queued and writes them until stop is closed.
func (c *completer) loop(ctx context.Context, queue chan *finishReq, stop <-chan struct{}) {
	batchLoop(queue, stop, func(batch []*finishReq) { c.write(ctx, batch) })
}

// batchLoop waits for a request on queue, takes with it those already
// queued (at most maxFinishBatch in all) and hands them to write, until
// stop is closed: the writers of the completer and of guided exceptions.
func batchLoop[R any](queue chan R, stop <-chan struct{}, write func([]R)) {
	batch := make([]R, 0, maxFinishBatch)
	for {
		select {
		case r := <-queue:
			batch = append(batch[:0], r)
		case <-stop:
			return
		}
	gather:
		for len(batch) < maxFinishBatch {
			select {
			case r := <-queue:
				batch = append(batch, r)
			default:
				break gather
			}
		}
		write(batch)
	}
}

// write writes a batch and answers each request.
func (c *completer) write(ctx context.Context, batch []*finishReq) {
	live := batch[:0:0]
	for _, r := range batch {
		if err := r.ctx.Err(); err != nil {
			r.done <- err
			continue
		}
		live = append(live, r)
	}
	switch {
	case len(live) == 0:
		return
	case len(live) == 1 && c.singleWriter:
		// One statement either way on SQLite (no transaction this way). On
		// PostgreSQL FinishRuns is one statement that does not read the run
		// back.
		r := live[0]
		_, err := c.st.FinishRun(r.ctx, c.owner, r.id, r.o)
		r.done <- err
		return
	}
	// In id order: two transactions locking the same runs (PostgreSQL) take
	// the locks in the same order.
	slices.SortFunc(live, func(a, b *finishReq) int { return strings.Compare(a.id, b.id) })
	ids := make([]string, len(live))
	outs := make([]store.RunOutcome, len(live))
	for i, r := range live {
		ids[i], outs[i] = r.id, r.o
	}
	errs, err := c.st.FinishRuns(ctx, c.owner, ids, outs)
	if err != nil {
		// Nothing was written: finish them one by one.
		c.log.Warn("finish runs", "runs", len(live), "err", err)
		for _, r := range live {
			_, err := c.st.FinishRun(r.ctx, c.owner, r.id, r.o)
			r.done <- err
		}
		return
	}
	for i, r := range live {
		r.done <- errs[i]
	}
}
