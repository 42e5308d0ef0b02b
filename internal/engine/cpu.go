package engine

import (
	"context"
	"slices"
	"sync"

	"github.com/proserun/prose/internal/lang"
)

// Processor turns (issue 26). The share of the workers (share.go) bounds
// how many of an organization's runs execute, not the processor time they
// take: on 2 cores, seven long runs of one organization kept each step of
// another's quick run (its creation, execution, finish: several
// goroutines) waiting for the Go scheduler, and on PostgreSQL 56 of them
// took both processors. So a run interprets past its first 1,024
// statements (a long, processor-bound stretch: quick runs never get there)
// only while it holds one of Options.Processors turns. It takes one at the
// interpreter's yield point (every 1,024 statements, under a millisecond),
// may have to hand it on at the next, and gives it up at every book
// lookup or call, checkpoint and child-run call, and when the interpreter
// returns; so a turn is never held by a run that waits.
//
// The turns are shared between the organizations with work in the engine
// now: an invoke in progress (its execution at creation and its write), a
// run interpreting (between its calls). Each such organization's long runs
// may hold at least its fair part of the turns (the turns over the
// organizations with work, rounded up), and more only as far as the others
// do not use theirs: alone, an organization takes them all; beside a quick
// run of another, a saturating organization's runs leave it a processor
// (on 2 cores: one of the two) and take it back when the other's work is
// done. Runs waiting for a turn take them in order, the organizations in
// turn, so one organization's runs cannot keep another's waiting, and
// within an organization none waits for ever.

// cpuShare is the engine's processor turns (nil: no bound).
type cpuShare struct {
	procs int

	mu     sync.Mutex
	orgs   map[string]*cpuOrg
	queue  []string // organizations with runs waiting for a turn, in turn order
	held   int      // turns held in all
	stale  bool     // busy counts changed since fair and reserved were computed
	fair   int      // each organization's fair part of the turns
	usedBy int      // turns the organizations with work use of their fair parts: Σ min(busy, fair)
}

// cpuOrg is one organization's part: present while it has work, turns or
// runs waiting for one.
type cpuOrg struct {
	busy    int // invokes in progress and runs interpreting
	held    int // turns held
	waiting []*cpuWaiter
}

// cpuWaiter is a run waiting for a turn; granted (under mu) once it holds
// one, and ch closed.
type cpuWaiter struct {
	ch      chan struct{}
	granted bool
}

// newCPUShare returns procs turns; none (nil, no bound) when procs < 1.
func newCPUShare(procs int) *cpuShare {
	if procs < 1 {
		return nil
	}
	return &cpuShare{procs: procs, orgs: map[string]*cpuOrg{}}
}

func (s *cpuShare) orgOf(org string) *cpuOrg {
	o := s.orgs[org]
	if o == nil {
		o = &cpuOrg{}
		s.orgs[org] = o
	}
	return o
}

// forget drops an organization's part once it has nothing left in it.
func (s *cpuShare) forget(org string, o *cpuOrg) {
	if o.busy == 0 && o.held == 0 && len(o.waiting) == 0 {
		delete(s.orgs, org)
	}
}

// enter counts one more piece of the organization's work in progress.
func (s *cpuShare) enter(org string) {
	if s == nil {
		return
	}
	s.mu.Lock()
	s.orgOf(org).busy++
	s.stale = true
	s.mu.Unlock()
}

// leave ends a piece of work enter counted: the others' parts may grow.
func (s *cpuShare) leave(org string) {
	if s == nil {
		return
	}
	s.mu.Lock()
	o := s.orgOf(org)
	o.busy--
	s.stale = true
	s.forget(org, o)
	s.grant()
	s.mu.Unlock()
}

// limit is how many turns o may hold now (under mu).
func (s *cpuShare) limit(o *cpuOrg) int {
	if s.stale {
		n := 0
		for _, x := range s.orgs {
			if x.busy > 0 {
				n++
			}
		}
		s.fair = s.procs
		if n > 1 {
			s.fair = (s.procs + n - 1) / n
		}
		s.usedBy = 0
		for _, x := range s.orgs {
			s.usedBy += min(x.busy, s.fair)
		}
		s.stale = false
	}
	return max(s.fair, s.procs-(s.usedBy-min(o.busy, s.fair)))
}

// free reports whether o may take a turn now (under mu).
func (s *cpuShare) free(o *cpuOrg) bool {
	return s.held < s.procs && o.held < s.limit(o)
}

// grant gives the free turns to the runs waiting, the organizations in
// turn (under mu).
func (s *cpuShare) grant() {
	for s.held < s.procs && len(s.queue) > 0 {
		i := slices.IndexFunc(s.queue, func(org string) bool { return s.free(s.orgs[org]) })
		if i < 0 {
			return
		}
		org := s.queue[i]
		o := s.orgs[org]
		w := o.waiting[0]
		o.waiting = o.waiting[1:]
		w.granted = true
		close(w.ch)
		o.held++
		s.held++
		s.queue = slices.Delete(s.queue, i, i+1)
		if len(o.waiting) > 0 {
			s.queue = append(s.queue, org) // its next run waits for the others' turns
		}
	}
}

// handOn reports whether a run of o holding a turn should give it up
// now: o holds more than its part, or every turn is taken and a run
// waiting may take this one (under mu).
func (s *cpuShare) handOn(o *cpuOrg) bool {
	if o.held > s.limit(o) {
		return true
	}
	if s.held < s.procs {
		return false
	}
	for _, org := range s.queue {
		if x := s.orgs[org]; x == o || x.held < s.limit(x) {
			return true
		}
	}
	return false
}

// turn is a long run's yield point: a run holding a turn (held) keeps it
// or hands it on and waits for the next; one holding none takes one,
// waiting for it if need be. It returns whether the run holds a turn:
// false when ctx ended while it waited (the interpreter then stops at its
// next statement).
func (s *cpuShare) turn(ctx context.Context, org string, held bool) bool {
	s.mu.Lock()
	o := s.orgOf(org)
	switch {
	case held && !s.handOn(o):
		s.mu.Unlock()
		return true
	case held:
		o.held--
		s.held--
	case len(o.waiting) == 0 && s.free(o):
		o.held++
		s.held++
		s.mu.Unlock()
		return true
	}
	w := &cpuWaiter{ch: make(chan struct{})}
	o.waiting = append(o.waiting, w)
	if len(o.waiting) == 1 {
		s.queue = append(s.queue, org)
	}
	s.grant()
	s.mu.Unlock()
	select {
	case <-w.ch:
		return true
	case <-ctx.Done():
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if w.granted {
		return true // granted meanwhile: the caller gives it up
	}
	o.waiting = slices.DeleteFunc(o.waiting, func(x *cpuWaiter) bool { return x == w })
	if len(o.waiting) == 0 {
		s.queue = slices.DeleteFunc(s.queue, func(x string) bool { return x == org })
	}
	s.forget(org, o)
	return false
}

// release gives a turn back.
func (s *cpuShare) release(org string) {
	s.mu.Lock()
	o := s.orgOf(org)
	o.held--
	s.held--
	s.forget(org, o)
	s.grant()
	s.mu.Unlock()
}

// byOrganization is how many turns each organization holds.
func (s *cpuShare) byOrganization() map[string]int {
	out := map[string]int{}
	if s == nil {
		return out
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for org, o := range s.orgs {
		if o.held > 0 {
			out[org] = o.held
		}
	}
	return out
}

// cpuTurn is one run's part in the turns while it executes, used by its
// executing goroutine only: busy while it interprets (counted as its
// organization's work), held while it holds a turn.
type cpuTurn struct {
	s    *cpuShare
	org  string
	ctx  context.Context // the interpreter's: a pause ends a wait for a turn
	busy bool
	held bool
}

// interpret marks the run interpreting.
func (t *cpuTurn) interpret() {
	if t.s != nil && !t.busy {
		t.busy = true
		t.s.enter(t.org)
	}
}

// wait marks the run waiting (a call, a write, the interpreter returned):
// its turn, if it holds one, goes to the next run.
func (t *cpuTurn) wait() {
	if t.s == nil {
		return
	}
	if t.held {
		t.held = false
		t.s.release(t.org)
	}
	if t.busy {
		t.busy = false
		t.s.leave(t.org)
	}
}

// yield is the run's yield point (every 1,024 statements).
func (t *cpuTurn) yield() {
	if t.s == nil {
		return
	}
	t.interpret()
	t.held = t.s.turn(t.ctx, t.org, t.held)
}

// options makes the run wait (wait) in each call the interpreter makes
// through opts that may block, and interpret again when it returns.
func (t *cpuTurn) options(opts lang.Options) lang.Options {
	if t.s == nil {
		return opts
	}
	if opts.Books != nil {
		opts.Books = turnBooks{inner: opts.Books, t: t}
	}
	if opts.Runs != nil {
		opts.Runs = turnRuns{inner: opts.Runs, t: t}
	}
	if cp := opts.Checkpoint; cp != nil {
		opts.Checkpoint = func(state []byte) error {
			t.wait()
			defer t.interpret()
			return cp(state)
		}
	}
	return opts
}

// turnBooks is a run's books, called outside its turn.
type turnBooks struct {
	inner lang.Books
	t     *cpuTurn
}

func (b turnBooks) Lookup(ctx context.Context, sentence string) ([]lang.BookProcedure, error) {
	b.t.wait()
	defer b.t.interpret()
	return b.inner.Lookup(ctx, sentence)
}

func (b turnBooks) Call(ctx context.Context, proc lang.BookProcedure, inputs map[string]lang.Value) (map[string]lang.Value, error) {
	b.t.wait()
	defer b.t.interpret()
	return b.inner.Call(ctx, proc, inputs)
}

// turnRuns is a run's child runs, started and asked about outside its
// turn.
type turnRuns struct {
	inner lang.Runs
	t     *cpuTurn
}

func (r turnRuns) Start(ctx context.Context, req lang.RunRequest) (string, error) {
	r.t.wait()
	defer r.t.interpret()
	return r.inner.Start(ctx, req)
}

func (r turnRuns) Settled(ctx context.Context, names []string) ([]lang.RunOutcome, bool, error) {
	r.t.wait()
	defer r.t.interpret()
	return r.inner.Settled(ctx, names)
}

// Work counts a piece of the organization's work in progress (an API call
// being served: server/transport/orgwork) until done is called, as Invoke
// counts itself: other organizations' long runs leave it a processor
// meanwhile.
func (e *Engine) Work(org string) (done func()) {
	e.cpu.enter(org)
	return func() { e.cpu.leave(org) }
}

// TurnsByOrganization is the number of processor turns each
// organization's long runs hold now (organizations holding none are
// absent); they hold Processors at most in all.
func (e *Engine) TurnsByOrganization() map[string]int { return e.cpu.byOrganization() }

// Processors is the number of processor turns (Options.Processors; 0: no
// bound).
func (e *Engine) Processors() int {
	if e.cpu == nil {
		return 0
	}
	return e.cpu.procs
}
