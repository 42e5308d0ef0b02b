package engine

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/proserun/prose/internal/codec/protovalue"
	"github.com/proserun/prose/internal/lang"
	"github.com/proserun/prose/store"
)

// DefaultInlineWindow is the default of Options.InlineWindow.
const DefaultInlineWindow = 2 * time.Millisecond

// Executing a run at its creation ("inline"). A run that ends within the
// inline window without calling a book (a short computation: most of a
// busy server's runs) is executed by Invoke itself, on a free worker slot,
// before the run is created, and created completed or failed: one write
// per run (its creation, batched with the creations of concurrent
// invokes) instead of three (creation, claim, finish).
//
// Nothing about it is visible before the creation commits, and nothing it
// did can be lost or done twice: the interpreter is stopped at its first
// book lookup or call, checkpoint or exception, and at the end of the
// window, and its work is then thrown away (the run is created pending and
// a worker executes it from the start, as it would have). The store
// creates the run executed only while no run of its organization waits in
// the queue (see store.Run.State), so an inline run never goes before its
// organization's runs waiting for a worker, and another organization's
// backlog does not take the inline path from it (docs/fairness.md); and
// only a free worker slot within the organization's share executes
// inline, so the runs executing (fair between organizations, each within
// its budgets) keep their workers.

// errInline stops an inline execution at its first book lookup, call or
// checkpoint.
var errInline = errors.New("the run calls a book: it is executed by a worker")

// inlineBooks refuses every book: a run that looks one up is executed by a
// worker.
type inlineBooks struct{ touched atomic.Bool }

func (b *inlineBooks) Lookup(context.Context, string) ([]lang.BookProcedure, error) {
	b.touched.Store(true)
	return nil, errInline
}

func (b *inlineBooks) Call(context.Context, lang.BookProcedure, map[string]lang.Value) (map[string]lang.Value, error) {
	b.touched.Store(true)
	return nil, errInline
}

// Start and Settled make a run that starts child runs leave the inline
// execution: its children are runs of the store (childRuns), made by a
// worker.
func (b *inlineBooks) Start(context.Context, lang.RunRequest) (string, error) {
	b.touched.Store(true)
	return "", errInline
}

func (b *inlineBooks) Settled(context.Context, []string) ([]lang.RunOutcome, bool, error) {
	b.touched.Store(true)
	return nil, false, errInline
}

// inlineSlot takes a free worker slot for an inline execution: the engine
// runs (Run), executes fewer runs than it has workers, and the
// organization holds fewer slots than its share and has no run known to
// wait in the queue (holdFree). Other organizations' runs waiting do not
// keep it from a free slot: those holding their share cannot take it, and
// the others' claims come at once (a free slot wakes the claimer); an
// inline execution holds its slot for at most the inline window. release
// gives it back.
func (e *Engine) inlineSlot(org string) (release func(), ok bool) {
	if e.opts.InlineWindow < 0 || !e.running.Load() || e.saturated() {
		return nil, false
	}
	if !e.holdFree(org) {
		return nil, false
	}
	if n := e.inline.Add(1); n+e.busy.Load() > int64(e.opts.Workers) {
		e.inline.Add(-1)
		e.dropOrg(org)
		return nil, false
	}
	return func() { e.inline.Add(-1); e.dropOrg(org) }, true
}

// executeInline executes the one step code of a run about to be created
// with its encoded inputs (Run.UserInputs, which are its first step's) for
// at most the inline window. ok reports that the run completed or failed
// of its own: r then carries the outcome for CreateRun (store.Run.State).
// Otherwise the run is created pending, unchanged.
func (e *Engine) executeInline(ctx context.Context, r store.Run, code string) (store.Run, bool) {
	release, ok := e.inlineSlot(r.OrganizationID)
	if !ok {
		return r, false
	}
	defer release()
	prog, err := e.progs.parse(code)
	if err != nil {
		return r, false // the worker fails it, with the parse error
	}
	inputs, err := decodeLangValues(r.UserInputs)
	if err != nil {
		return r, false
	}
	if inputs == nil {
		inputs = map[string]lang.Value{}
	}
	wctx, cancel := context.WithTimeout(ctx, e.opts.InlineWindow)
	defer cancel()
	books := &inlineBooks{}
	h := newHistory(e.opts.History, 0)
	res := lang.Start(wctx, prog, inputs, lang.Options{
		Clock:      e.opts.Clock,
		Books:      books,
		Runs:       books,
		Limits:     e.opts.Limits,
		SayAt:      h.say,
		SetAt:      h.setFact,
		Checkpoint: func([]byte) error { books.touched.Store(true); return errInline },
	})
	if books.touched.Load() || wctx.Err() != nil {
		return r, false
	}
	switch res.Status {
	case lang.Completed:
		out, err := protovalue.MapToProto(res.Outputs)
		if err != nil {
			return r, false
		}
		b, err := encodeValues(out)
		if err != nil {
			return r, false
		}
		// Step stays where it is, as a worker's completion leaves it.
		r.State, r.Outputs, r.Events = store.RunCompleted, b, h.flush()
		return r, true
	case lang.Failed:
		fl := res.Failure
		r.State, r.ErrorID, r.Description = store.RunFailed, store.NewID(), fl.Description
		r.Location = store.Location{Start: int64(fl.Span.Start), End: int64(fl.Span.End)}
		r.Events = h.flush()
		return r, true
	}
	return r, false // an exception, a stop: a worker executes it
}

// asCreated is a run executed at its creation as Invoke returns it: as it
// would have been created, pending, so that what a client sees of an
// invoke does not depend on where the run executed (reading the run shows
// it completed or failed, as it may show any run a moment later).
func asCreated(r store.Run) store.Run {
	r.State, r.StateTime, r.UpdateTime = store.RunPending, r.CreateTime, r.CreateTime
	r.Outputs, r.Step, r.ErrorID, r.Description, r.Location = nil, 0, "", "", store.Location{}
	r.LeaseOwner, r.LeaseExpireTime = "", time.Unix(0, 0).UTC()
	r.HistoryEvents, r.Events = 0, nil
	return r
}

// Creating a run leased. A run not executed at its creation (it calls a
// book, raises an exception or takes longer than the inline window) is
// created executing, leased to this engine, when a worker slot is free and
// no run of its organization waits in the queue (the store checks, see
// store.Run.State): the
// worker starts it at once, without a claim (one write fewer, and no
// wait for the claim). A crash after the creation leaves it leased: its
// lease expires and any worker continues it, as any run a worker held.

// reserveSlot takes a free worker slot of Run's pool, and one of the
// organization's share (holdFree: none of its runs known to wait), for a
// run to be created leased. Both go back with the run's worker (launch),
// or with unreserve.
func (e *Engine) reserveSlot(org string) (*workerPool, bool) {
	if e.saturated() {
		return nil, false
	}
	e.poolMu.Lock()
	p := e.pool
	e.poolMu.Unlock()
	if p == nil || !e.holdFree(org) {
		return nil, false
	}
	select {
	case p.slots <- struct{}{}:
		return p, true
	default:
		e.dropOrg(org)
		return nil, false
	}
}

// unreserve gives back what reserveSlot took for a run not launched.
func (e *Engine) unreserve(p *workerPool, org string) {
	p.release()
	e.dropOrg(org)
}

// release gives back a slot reserveSlot took and no run used.
func (p *workerPool) release() {
	<-p.slots
	select {
	case p.freed <- struct{}{}:
	default:
	}
}

// launch starts r, created leased to this engine, on the slot reserved in
// p. False when Run has stopped meanwhile: the run's lease then expires and
// a worker continues it.
func (e *Engine) launch(p *workerPool, r store.Run) bool {
	e.poolMu.Lock()
	defer e.poolMu.Unlock()
	if e.pool != p {
		e.dropOrg(r.OrganizationID)
		return false
	}
	f := e.register(p, r)
	if f == nil {
		// In flight here already (a run just created is not; nothing to
		// start twice).
		e.unreserve(p, r.OrganizationID)
		return true
	}
	e.startFlight(p, f, r)
	return true
}
