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
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/proserun/prose/internal/lang"
	"github.com/proserun/prose/internal/logctx"
	"github.com/proserun/prose/internal/metrics"
	"github.com/proserun/prose/store"
	"go.opentelemetry.io/otel/trace"
)

// Options configure an Engine.
type Options struct {
	// Workers bounds the runs executed at once. Default: 4 × GOMAXPROCS on
	// a single-writer store (SQLite), 32 × GOMAXPROCS otherwise
	// (PostgreSQL: a run mostly waits for the database's round trips, and
	// more runs in flight make larger batches of claims and finishes).
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
	// Changed, when set, is told after this engine changes a run or an
	// exception of a workspace: a run created, claimed, finished (completed,
	// failed, waiting for guidance on a new exception, stopped), paused or
	// continued, an exception resolved (see also Engine.Changed). It runs
	// on the engine's goroutines: it must return at once (the web console
	// wakes the pages open on the workspace).
	Changed func(organizationID, workspaceID string)
	// Limits bound the memory, statements and time of each run (zero
	// fields: lang.DefaultLimits).
	Limits lang.Limits
	// TimeSlice is how long a run executes before it gives its worker up
	// when every worker is busy and other runs wait: it goes back to the
	// queue with its state, and the store's claims, shared fairly between
	// organizations, give the worker to the one holding the fewest.
	// Default: 1s; negative: never.
	TimeSlice time.Duration
	// OrgWorkers bounds the worker slots the runs of one organization
	// hold at once (runs executing, executed at their creation, started
	// leased): the other Workers-OrgWorkers slots are kept for the other
	// organizations, so that one busy organization cannot make another's
	// runs wait for a time slice (docs/fairness.md). Default: Workers less
	// an eighth of them, at least one, when Workers is 4 or more (Workers
	// otherwise); negative or Workers and more: no bound.
	OrgWorkers int
	// Processors bounds the runs interpreting at once past their first
	// 1,024 statements (long, processor-bound stretches), in turns shared
	// between the organizations with work in the engine, so that one
	// organization's long runs leave processors to another's work
	// (cpu.go, docs/fairness.md). Default: GOMAXPROCS; negative: no
	// bound.
	Processors int
	// InlineWindow is how long Invoke may execute a run itself, on a free
	// worker slot while the engine runs, before creating it: a run that
	// ends within it without calling a book is created completed or failed
	// (see inline.go). Default: DefaultInlineWindow; negative: never.
	InlineWindow time.Duration
	// MaxGuidedPerRun bounds the exceptions approved guide entries resolve
	// in one run; past it, the run's exceptions wait for a person as if no
	// entry matched (a loop whose every turn meets a remembered gap does
	// not go on unseen for ever). Default: DefaultMaxGuidedPerRun;
	// negative: guide entries never apply.
	MaxGuidedPerRun int
	// History bounds what the engine records in each run's history (see
	// HistoryLimits).
	History HistoryLimits
	// Metrics, when set, counts the work (runs started and ended, queue
	// wait, exceptions, book calls); nil counts nothing.
	Metrics *metrics.Work
	// Tracer, when set, makes a span per execution of a run (linked to the
	// span of the request that started it), per step and per book call.
	// Nil: tracing off, nothing made.
	Tracer trace.Tracer
}

// DefaultTimeSlice is the default of Options.TimeSlice.
const DefaultTimeSlice = time.Second

// Engine runs the run queue of a store.
type Engine struct {
	st   store.Store
	opts Options
	log  *slog.Logger
	wake chan struct{}

	progs programCache
	autos autoCache // automations read by Invoke

	mu       sync.Mutex
	inflight map[string]*flight
	// renewNow asks the renew loop for a renewal at once (PauseNoticed).
	renewNow chan struct{}

	// done writes the completed and failed outcomes of workers, several per
	// transaction, while Run runs.
	done *completer
	// guided writes the exceptions guide entries resolve, several per
	// transaction, while Run runs.
	guided *guidedWriter
	// notes sends wake-up notices to the other replicas.
	notes *notifier

	// creates queues the runs of concurrent invokes for the creators, which
	// create several per transaction (see create).
	createMu sync.Mutex
	creates  []*createReq
	creating int // createLoop goroutines draining creates (see create)
	// writing counts the runs of each organization in the batches being
	// written: an organization's runs are in one batch at a time.
	writing map[string]int

	// writers is how many batches of finishes are written at once: one on
	// a single-writer database, where they queue anyway; parallelBatches on
	// PostgreSQL, where each batch is one statement and the server commits
	// several at once. Creates are written one batch at a time (create).
	writers      int
	singleWriter bool

	// busy counts the runs executing; contended is set while every worker
	// is busy and runs wait in the queue (see fairLoop).
	busy      atomic.Int64
	contended atomic.Bool
	// working counts the runs started and whose worker has not returned:
	// busy, and those whose outcome waits to be written (Busy).
	working atomic.Int64
	// lastYield is when a run last gave its worker up (UnixNano): claims
	// are fair (store.FairClaimer) for a while after, see claim.
	lastYield atomic.Int64
	fair      store.FairClaimer

	// orgHeld counts the worker slots each organization's runs hold (see
	// Options.OrgWorkers); parked are runs claimed while their
	// organization held its share, registered (their leases renewed) and
	// started when it holds fewer (startParked).
	orgMu   sync.Mutex
	orgHeld map[string]int
	parked  []parkedRun
	// queued holds the organizations a run of which, executed here at its
	// creation (or to be started leased), came back pending from the
	// store: runs of theirs wait in the queue, so their invokes skip the
	// execution the store would throw away, until a claim not skipping
	// them finds the queue empty (fewer runs than it asked for). Only a
	// hint: the store's check at each creation decides (another replica's
	// pending runs included). Per organization, as the store's check is:
	// another organization's queue does not keep a run from executing at
	// its creation (docs/fairness.md).
	queued map[string]bool

	// cpu is the processor turns of long runs (nil: no bound).
	cpu *cpuShare

	// running is set while Run runs (until its context ends); inline counts
	// the runs Invoke executes (see inlineSlot).
	running atomic.Bool
	inline  atomic.Int64
	// draining is set (under mu) when Run's context ended: the runs in
	// flight, and any started after, are handed back (errHandBack).
	draining bool

	// pool is Run's worker pool while it runs (nil otherwise): Invoke
	// starts runs it created leased on it (see launch).
	poolMu sync.Mutex
	pool   *workerPool
}

// workerPool is what Run's workers share: a slot per worker, the context
// their runs execute under, and their wait group.
type workerPool struct {
	slots  chan struct{}
	freed  chan struct{} // signalled when a worker returns its slot
	runCtx context.Context
	wg     sync.WaitGroup
}

// parallelBatches is the number of batches of finishes written at once on
// a database with concurrent writers (PostgreSQL).
const parallelBatches = 4

// createReq is an invoke's run waiting for the creator.
type createReq struct {
	ctx     context.Context
	in      store.Run
	out     store.Run
	created bool
	err     error
	done    chan struct{}
}

// maxCreateBatch bounds the runs created in one transaction.
const maxCreateBatch = 128

// flight is a run being executed here. It has two contexts: ctx, cancelled
// when the lease is lost or the engine shuts down, governs the store writes
// and book calls; soft, a child of ctx also cancelled by a pause, governs
// only the interpreter, which stops at its next statement. A pause so never
// cancels a book call in flight nor a write: the call's result is journaled
// and the run ends stopped.
type flight struct {
	org    string // the run's organization (its share of workers)
	ctx    context.Context
	cancel context.CancelCauseFunc // ctx
	pause  context.CancelCauseFunc // soft
	soft   context.Context
	// lost is set by the renew loop when the lease was lost (write nothing
	// more), and read by the run's worker.
	lost    atomic.Bool
	yielded bool // the run gave its worker up for a turn (set by the executing goroutine)
	// free gives the run's worker slot back (once; nil for a flight not
	// started on a pool): called when the run's outcome is handed to the
	// completer, so that the slot waits on the interpretation of the next
	// run, not on the commit of this one. The run stays in flight (its
	// lease renewed) until its outcome is written.
	free func()
}

var (
	errPaused    = errors.New("the run is being paused")
	errLeaseLost = errors.New("the lease on the run was lost")
	errShutdown  = errors.New("the engine is shutting down")
	// errHandBack stops the interpreter of a run in flight when Run's
	// context ends: the run goes back to the queue with its state, for
	// another worker (another replica) at once.
	errHandBack = errors.New("the engine is shutting down: the run goes back to the queue")
)

// New returns an engine over st. Call Run to start it.
func New(st store.Store, opts Options) *Engine {
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
	if opts.TimeSlice == 0 {
		opts.TimeSlice = DefaultTimeSlice
	}
	if opts.MaxGuidedPerRun == 0 {
		opts.MaxGuidedPerRun = DefaultMaxGuidedPerRun
	}
	if opts.InlineWindow == 0 {
		opts.InlineWindow = DefaultInlineWindow
	}
	if opts.Owner == "" {
		host, _ := os.Hostname()
		var b [4]byte
		_, _ = rand.Read(b[:])
		opts.Owner = host + "-" + strconv.Itoa(os.Getpid()) + "-" + hex.EncodeToString(b[:])
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	e := &Engine{st: st, opts: opts, log: log, wake: make(chan struct{}, 1), inflight: map[string]*flight{}, progs: newProgramCache(1024)}
	// On a single-writer database (SQLite) one committer writes, and
	// claims wait a moment to take several runs; otherwise (PostgreSQL,
	// where a batch is one statement) parallelBatches of finishes write at
	// once. Creates are written one batch at a time on both (see create).
	e.singleWriter = st.SingleWriter()
	e.fair = st
	e.writers = parallelBatches
	if e.singleWriter {
		e.writers = 1
	}
	if e.opts.Workers <= 0 {
		e.opts.Workers = 32 * runtime.GOMAXPROCS(0)
		if e.singleWriter {
			e.opts.Workers = 4 * runtime.GOMAXPROCS(0)
		}
	}
	e.opts.OrgWorkers = orgWorkers(e.opts.Workers, e.opts.OrgWorkers)
	e.orgHeld, e.queued, e.writing = map[string]int{}, map[string]bool{}, map[string]int{}
	if e.opts.Processors == 0 {
		e.opts.Processors = runtime.GOMAXPROCS(0)
	}
	e.cpu = newCPUShare(e.opts.Processors)
	e.done = &completer{st: st, owner: opts.Owner, log: log, writers: e.writers, singleWriter: e.singleWriter}
	// One writer: every guided exception of an automation updates the same
	// rows of exception_counts, so parallel batches would only wait on
	// each other's locks; one writer gathers what waits while it commits.
	e.guided = &guidedWriter{st: st, writers: 1}
	e.notes = &notifier{send: opts.Notify}
	e.renewNow = make(chan struct{}, 1)
	e.notes.Start()
	return e
}

// Busy is the number of runs this engine executes now, including those
// whose outcome waits to be written (they gave their slot back): it drops
// when the worker has returned, after its last notice (Options.Changed).
func (e *Engine) Busy() int64 { return e.working.Load() }

// BusySlots is the number of worker slots taken now (at most Workers): the
// runs executing, without those whose outcome waits to be written.
func (e *Engine) BusySlots() int64 { return e.busy.Load() }

// Workers is the number of runs this engine executes at most at once.
func (e *Engine) Workers() int { return e.opts.Workers }

// Owner is the name this engine leases runs under.
func (e *Engine) Owner() string { return e.opts.Owner }

// Wake tells the engine there may be work: a run was created or guided.
func (e *Engine) Wake() {
	select {
	case e.wake <- struct{}{}:
	default:
	}
}

// Changed tells Options.Changed that a run or exception of the workspace
// changed; services that change exceptions without the engine (assign,
// archive) call it.
func (e *Engine) Changed(organizationID, workspaceID string) {
	if e.opts.Changed != nil {
		e.opts.Changed(organizationID, workspaceID)
	}
}

// announce wakes this engine and, through Notify, the other replicas (see
// notifier).
func (e *Engine) announce(ctx context.Context) {
	e.Wake()
	e.notes.Announce(ctx)
}

// Run executes runs until ctx is cancelled, then hands the runs in flight
// back: each stops at its next statement (a book call in flight completes
// and is journaled first) and goes back to the queue, pending with its
// state and no lease, so that another replica continues it at once (the
// replicas are told). Run waits for that at most the grace period and
// returns. Runs still executing then are abandoned: their leases expire and
// another worker continues them. The shutdown stops, in order: the workers,
// the completer (it writes their last outcomes), the notifier, the renewal
// of leases.
func (e *Engine) Run(ctx context.Context, grace time.Duration) error {
	runCtx, stopRuns := context.WithCancelCause(context.Background())
	defer stopRuns(errShutdown)
	pool := &workerPool{slots: make(chan struct{}, e.opts.Workers), freed: make(chan struct{}, 1), runCtx: runCtx}
	slots := pool.slots

	renewDone := make(chan struct{})
	go func() {
		defer close(renewDone)
		e.renewLoop(ctx)
	}()
	fairDone := make(chan struct{})
	go func() {
		defer close(fairDone)
		e.fairLoop(ctx)
	}()

	// The completer lives until every worker has returned (they wait for
	// it); it writes with runCtx, cancelled when the grace period ends.
	// Runs whose outcome waits for the writers have given their slots
	// back (flight.free): up to a batch of them queue while another
	// batch commits, so the batches of a saturated engine are not bounded
	// by its workers.
	e.done.Start(runCtx, max(e.opts.Workers, maxFinishBatch))
	e.guided.Start(runCtx, e.opts.Workers)
	e.notes.Start()

	saturated := false // the last claim filled every free slot
	poll := time.NewTicker(e.opts.PollInterval)
	defer poll.Stop()
	e.poolMu.Lock()
	e.pool = pool
	e.poolMu.Unlock()
	e.running.Store(true)
	for ctx.Err() == nil {
		// Wait for a free slot.
		select {
		case slots <- struct{}{}:
			<-slots
		case <-ctx.Done():
			continue
		}
		saturated = e.claimAndStart(ctx, pool, saturated, grace)
		if saturated {
			continue // there may be more
		}
		select {
		case <-ctx.Done():
		case <-e.wake:
		case <-e.opts.Wakeups:
		case <-poll.C:
		}
	}
	e.drain(ctx, pool, grace, stopRuns)
	<-renewDone
	<-fairDone
	return nil
}

// claimAndStart claims as many runs as the engine has free slots (a whole
// batch when runs wait on a single-writer database) and starts them;
// saturated: the claim took all it asked for, so more may wait.
func (e *Engine) claimAndStart(ctx context.Context, pool *workerPool, saturated bool, grace time.Duration) bool {
	slots, freed := pool.slots, pool.freed
	if saturated && e.singleWriter {
		// Work is queued on a single-writer database: let slots free up
		// for a moment (finished runs come back in batches from the
		// committer) and claim them in one transaction rather than one
		// claim per freed slot.
		e.gatherSlots(ctx, slots, freed)
	}
	// Runs claimed while their organization held its share start first
	// if it holds fewer now; the claim skips the organizations holding
	// theirs.
	parked := e.startParked(ctx, pool)
	skip := e.skipOrgs()
	free := e.opts.Workers - len(slots)
	if free > e.opts.ClaimBatch {
		free = e.opts.ClaimBatch
	}
	ask := free
	fair := e.fairClaims()
	if saturated && e.singleWriter && !fair && free > 0 && parked == 0 {
		// Runs wait in the queue (the last claim took all it asked
		// for): claim a whole batch, not only the free slots. On a
		// single-writer database each claim is a writer transaction
		// taking its turn with the creates (up to a batch each) and
		// the finishes: claims of a few runs each would let the queue
		// grow for as long as invokes keep coming (the queued mode).
		// The runs beyond the free slots wait here for one, their
		// leases renewed (register); not with fair claims, whose runs
		// are long and give their workers up for turns.
		ask = max(free, e.opts.ClaimBatch)
	}
	now := e.opts.Clock()
	runs, err := e.claimRuns(ctx, fair, ask, now.Add(e.opts.LeaseDuration), skip)
	if err != nil && ctx.Err() == nil {
		e.log.Warn("claim runs", "err", err)
	}
	if err == nil && len(runs) < ask {
		// The queue was empty, but for the organizations skipped, when
		// the claim took its runs: the others' invokes may execute at
		// creation again (see queued).
		e.unqueue(skip)
	}
	e.startClaimed(ctx, pool, runs, grace)
	return len(runs) == ask && ask > 0
}

// startClaimed starts the runs a claim took, each on a worker slot, or
// parks those whose organization holds its share of the workers.
func (e *Engine) startClaimed(ctx context.Context, pool *workerPool, runs []store.Run, grace time.Duration) {
	slots := pool.slots
	// A run this engine executes already (its lease expired by the
	// store's clock, and the claim took it back for this same owner)
	// is not started twice: its flight goes on, under the new lease.
	flights := make([]*flight, 0, len(runs))
	claimed := runs[:0:0]
	for _, r := range runs {
		if f := e.register(pool, r); f != nil {
			flights, claimed = append(flights, f), append(claimed, r)
		}
	}
	for i, r := range claimed {
		if !e.holdOrg(r.OrganizationID) {
			// Its organization holds its share of the workers (this
			// claim took several of its runs): the run waits here,
			// leased, and the workers kept for the others stay free.
			e.park(flights[i], r)
			continue
		}
		// A slot counted free may have been taken meanwhile by a run
		// this replica launched itself (launch shares the pool), and
		// the runs claimed beyond the free slots wait for workers to
		// finish, so the send may wait; it must not outlive ctx, or a
		// shutdown waits for a worker that waits for the shutdown.
		// Runs not started go back to the queue at once (release).
		// A slot and the shutdown may come at once (select picks
		// either): a run is not started once the shutdown has begun.
		select {
		case slots <- struct{}{}:
			if ctx.Err() == nil {
				e.startFlight(pool, flights[i], r)
				continue
			}
			<-slots // not used: the slot goes back
		case <-ctx.Done():
		}
		e.dropOrg(r.OrganizationID)
		e.release(ctx, flights[i:], claimed[i:], grace)
		break
	}
}

// drain stops the engine's workers: no worker starts from now on, the runs
// in flight are handed back, and those still executing after grace are
// stopped where they are (their leases expire).
func (e *Engine) drain(ctx context.Context, pool *workerPool, grace time.Duration, stopRuns context.CancelCauseFunc) {
	e.running.Store(false)
	e.poolMu.Lock()
	e.pool = nil // no worker starts from now on (launch)
	e.poolMu.Unlock()
	e.releaseParked(ctx, grace)
	e.mu.Lock()
	e.draining = true
	for _, f := range e.inflight {
		f.pause(errHandBack)
	}
	e.mu.Unlock()
	done := make(chan struct{})
	go func() { pool.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(grace):
		stopRuns(errShutdown)
		<-done
	}
	e.done.Stop()
	e.guided.Stop()
	e.notes.Stop()
}

// runLogContext is ctx with the run's fields for the log lines made while
// it executes (organization, workspace, run).
func runLogContext(ctx context.Context, r store.Run) context.Context {
	return logctx.With(ctx, logctx.Organization, r.OrganizationID, logctx.Workspace, r.WorkspaceID, logctx.Run, r.ID)
}

// register makes the flight of r, leased to this engine, before it starts
// (startFlight): from now on its lease is renewed and a pause reaches it.
// Nil when r is in flight here already: its flight stays the one the
// renewals and pauses reach.
func (e *Engine) register(pool *workerPool, r store.Run) *flight {
	e.mu.Lock()
	if e.inflight[r.ID] != nil {
		e.mu.Unlock()
		return nil
	}
	fctx, cancel := context.WithCancelCause(pool.runCtx)
	soft, pause := context.WithCancelCause(fctx)
	f := &flight{org: r.OrganizationID, ctx: fctx, cancel: cancel, pause: pause, soft: soft}
	e.inflight[r.ID] = f
	if e.draining {
		pause(errHandBack)
	}
	e.mu.Unlock()
	return f
}

// release hands back the runs this engine claimed but will not start (Run's
// context ended while they waited for a worker): their flights are dropped
// (no renewal reaches them any more) and the runs go back to the queue in
// one write (store.Runs.ReleaseRuns), pending as the claim found them (or
// stopped, if paused meanwhile), so that another replica, or this process
// restarted, claims them at once instead of after their lease. The other
// replicas are told. The write may take at most grace; if it fails, the
// runs stay leased until their lease expires, as after a crash.
func (e *Engine) release(ctx context.Context, flights []*flight, runs []store.Run, grace time.Duration) {
	ids := make([]string, len(runs))
	for i, r := range runs {
		e.unregister(flights[i], r.ID)
		ids[i] = r.ID
	}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), max(grace, time.Second))
	defer cancel()
	n, err := e.st.ReleaseRuns(wctx, e.opts.Owner, ids)
	if err != nil {
		e.log.Warn("shutdown: claimed runs not started left to their lease", "runs", len(ids), "err", err)
		return
	}
	e.log.Info("shutdown: claimed runs not started handed back", "runs", n)
	told := map[[2]string]bool{}
	for _, r := range runs {
		if k := [2]string{r.OrganizationID, r.WorkspaceID}; !told[k] {
			told[k] = true
			e.Changed(r.OrganizationID, r.WorkspaceID)
		}
	}
	e.notes.Announce(wctx)
}

// unregister drops the flight of a run register made that will not start.
func (e *Engine) unregister(f *flight, id string) {
	e.mu.Lock()
	if e.inflight[id] == f {
		delete(e.inflight, id)
	}
	e.mu.Unlock()
	f.cancel(errShutdown)
}

// startFlight executes r, leased to this engine and registered as f, on a
// worker of pool whose slot the caller took, as it took one of the
// organization's share (holdOrg). Both are given back when
// the run's outcome is handed to the completer or, at the latest, when the
// worker returns (flight.free).
func (e *Engine) startFlight(pool *workerPool, f *flight, r store.Run) {
	fctx, cancel := f.ctx, f.cancel
	if r.Step == 0 && r.Checkpoint == nil {
		// Its first execution: the wait since its creation.
		e.opts.Metrics.QueueWait(e.opts.Clock().Sub(r.CreateTime))
	}
	pool.wg.Add(1)
	e.busy.Add(1)
	e.working.Add(1)
	var freeOnce sync.Once
	f.free = func() {
		freeOnce.Do(func() {
			e.busy.Add(-1)
			pool.release()
			e.dropOrg(f.org)
		})
	}
	go func() {
		defer pool.wg.Done()
		defer e.working.Add(-1)
		defer f.free()
		defer cancel(nil)
		e.Changed(r.OrganizationID, r.WorkspaceID) // executing
		e.execute(fctx, f, r)
		e.mu.Lock()
		delete(e.inflight, r.ID)
		e.mu.Unlock()
		e.Changed(r.OrganizationID, r.WorkspaceID)
	}()
}

// claimLinger is how long a saturated engine waits for half its slots to
// free before claiming (claims are writer transactions too).
const claimLinger = time.Millisecond

// gatherSlots waits until half the slots are free, claimLinger passed or ctx
// ended.
func (e *Engine) gatherSlots(ctx context.Context, slots chan struct{}, freed <-chan struct{}) {
	want := e.opts.Workers / 2
	if e.opts.Workers-len(slots) >= want {
		return
	}
	t := time.NewTimer(claimLinger)
	defer t.Stop()
	for e.opts.Workers-len(slots) < want {
		select {
		case <-freed:
		case <-t.C:
			return
		case <-ctx.Done():
			return
		}
	}
}

// finish leaves a run in a final state (see completer); handed, when not
// nil, is called once the outcome waits for the writers.
func (e *Engine) finish(ctx context.Context, id string, o store.RunOutcome, handed func()) error {
	return e.done.Finish(ctx, id, o, handed)
}

// create creates a run (store.Runs.CreateRun). The run is queued and one
// createLoop goroutine (started when none runs) writes everything queued
// in one transaction per batch: while one batch commits, the next gathers
// (group commit, no timer). Invoke works without Run, so the goroutine
// lives only while there is something to create.
//
// One batch at a time on PostgreSQL too (finishes write parallelBatches at
// once): with four, under prose-load --concurrency 32 on 2 cores, the
// batches held a quarter of the runs each and PostgreSQL spent 181–195 µs
// of CPU per created run; with one, 91–102 µs, and the server 187–218
// against 236–289 µs (BENCHMARKS.md, "One create batch at a time"). But
// one batch at a time per organization: on PostgreSQL a run of an
// organization with none in the batch being written starts another
// createLoop (parallelBatches at most), so that one organization's
// commits do not sit in front of another's (issue 26; each batch waits
// for a flush of the WAL). An organization's runs are in one batch at a
// time, in their order, so the store's check that none of its runs waits
// (store.Run.State) sees the earlier ones. A single organization's runs
// are still written one batch at a time; SQLite's one writer takes one
// batch at a time anyway.
func (e *Engine) create(ctx context.Context, r store.Run) (store.Run, bool, error) {
	if err := ctx.Err(); err != nil {
		return store.Run{}, false, err
	}
	req := &createReq{ctx: ctx, in: r, done: make(chan struct{})}
	e.createMu.Lock()
	e.creates = append(e.creates, req)
	if e.creating == 0 || !e.singleWriter && e.creating < parallelBatches && e.writing[r.OrganizationID] == 0 {
		e.creating++
		go e.createLoop()
	}
	e.createMu.Unlock()
	<-req.done // the creator always answers; nothing is created after we return
	return req.out, req.created, req.err
}

// createLoop creates the queued runs, at most maxCreateBatch per
// transaction, until none is queued.
func (e *Engine) createLoop() {
	for yielded := false; ; {
		e.createMu.Lock()
		if len(e.creates) == 1 && e.singleWriter && !yielded {
			// One run queued: let the invokes running on the other
			// goroutines queue theirs first (no timer, one scheduling
			// round): a writer transaction's begin and commit are a third
			// of a create's cost on SQLite, shared by the runs of a batch.
			e.createMu.Unlock()
			yielded = true
			runtime.Gosched()
			continue
		}
		yielded = false
		batch := e.takeCreates()
		if len(batch) == 0 {
			e.creating--
			if len(e.creates) == 0 {
				e.creates = nil
			}
			e.createMu.Unlock()
			return
		}
		e.createMu.Unlock()
		e.createBatch(batch)
		e.createMu.Lock()
		for _, r := range batch {
			if e.writing[r.in.OrganizationID]--; e.writing[r.in.OrganizationID] <= 0 {
				delete(e.writing, r.in.OrganizationID)
			}
		}
		e.createMu.Unlock()
	}
}

// takeCreates takes the next batch of queued runs, at most maxCreateBatch,
// in order, of the organizations none of whose runs is in a batch being
// written (under createMu).
func (e *Engine) takeCreates() []*createReq {
	var batch []*createReq
	if len(e.writing) == 0 {
		n := min(len(e.creates), maxCreateBatch)
		batch, e.creates = e.creates[:n:n], e.creates[n:]
	} else {
		keep := e.creates[:0:0]
		for _, r := range e.creates {
			if len(batch) < maxCreateBatch && e.writing[r.in.OrganizationID] == 0 {
				batch = append(batch, r)
				continue
			}
			keep = append(keep, r)
		}
		e.creates = keep
	}
	for _, r := range batch {
		e.writing[r.in.OrganizationID]++
	}
	return batch
}

// createBatch creates a batch of runs and answers each request.
func (e *Engine) createBatch(batch []*createReq) {
	live := batch[:0:0]
	for _, r := range batch {
		if err := r.ctx.Err(); err != nil {
			r.err = err
			close(r.done)
			continue
		}
		live = append(live, r)
	}
	one := func(r *createReq) {
		r.out, r.created, r.err = e.st.CreateRun(r.ctx, r.in)
		close(r.done)
	}
	switch {
	case len(live) == 0:
		return
	case len(live) == 1 && e.singleWriter:
		// The same transaction either way. On PostgreSQL CreateRuns is one
		// statement where CreateRun is a transaction of three.
		one(live[0])
		return
	}
	in := make([]store.Run, len(live))
	for i, r := range live {
		in[i] = r.in
	}
	// Not a caller's context: the batch is written for all of them.
	runs, created, errs, err := e.st.CreateRuns(context.WithoutCancel(live[0].ctx), in)
	if err != nil {
		// Nothing was written: create them one by one.
		e.log.Warn("create runs", "runs", len(live), "err", err)
		for _, r := range live {
			one(r)
		}
		return
	}
	for i, r := range live {
		r.out, r.created, r.err = runs[i], created[i], errs[i]
		close(r.done)
	}
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
		case <-e.renewNow:
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
			f.lost.Store(true)
			f.cancel(errLeaseLost)
		case st == store.RunStopping:
			f.pause(errPaused)
		}
	}
}

// fairLoop sets contended, every half time slice, while every worker is
// busy and runs wait in the queue: a run that has executed for a time slice
// then gives its worker up (one per setting, see yield).
func (e *Engine) fairLoop(ctx context.Context) {
	if e.opts.TimeSlice < 0 {
		return
	}
	t := time.NewTicker(max(e.opts.TimeSlice/2, time.Millisecond))
	defer t.Stop()
	pc := e.st
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		// Every worker is busy, or an organization holds its share of
		// them (its own runs then take turns, see yield).
		full := e.busy.Load() >= int64(e.opts.Workers) || e.anyOrgFull()
		waiting := full
		if full && pc != nil {
			var err error
			if waiting, err = pc.HasPendingRuns(ctx); err != nil {
				e.log.Warn("look for pending runs", "err", err)
			}
		}
		e.contended.Store(waiting)
	}
}

// fairFor is how long after a run gave its worker up claims stay fair, in
// time slices.
const fairFor = 10

// fairClaims reports whether claims are fair now (shared fairly between
// organizations): a run gave its worker up less than fairFor time slices
// ago. The fair claim costs the store more; quick runs, however many, do
// not need it, and are claimed oldest first.
func (e *Engine) fairClaims() bool {
	return e.fair != nil && e.opts.TimeSlice > 0 && time.Since(time.Unix(0, e.lastYield.Load())) < fairFor*e.opts.TimeSlice
}

// claimRuns claims up to max runs, fairly or oldest first.
func (e *Engine) claimRuns(ctx context.Context, fair bool, max int, leaseUntil time.Time, skip []string) ([]store.Run, error) {
	if len(skip) > 0 {
		return e.fair.ClaimRunsSkipping(ctx, e.opts.Owner, max, leaseUntil, fair, skip)
	}
	if fair {
		return e.fair.ClaimRunsFair(ctx, e.opts.Owner, max, leaseUntil)
	}
	return e.st.ClaimRuns(ctx, e.opts.Owner, max, leaseUntil)
}

// yield tells a run that started executing at start whether to give its
// worker up now: it has had a time slice and other runs wait for a worker.
// One run yields per setting of contended.
func (e *Engine) yield(f *flight, start time.Time) bool {
	// Every 1,024 statements the run also lets the goroutines waiting for
	// a processor go first: the Go scheduler preempts a busy goroutine
	// only every 10 ms, so with long runs on every processor, each step of
	// a quick run (its creation, claim, execution and finish, on as many
	// goroutines) waited tens of milliseconds (issue 26). A few hundred
	// nanoseconds per thousand statements, none when nothing waits.
	runtime.Gosched()
	if e.opts.TimeSlice < 0 || time.Since(start) < e.opts.TimeSlice {
		return false
	}
	if e.busy.Load() < int64(e.opts.Workers) && !e.orgFull(f.org) {
		// Workers are free: the runs waiting are those of organizations
		// holding their share; one of theirs gives its worker up, not
		// this one.
		return false
	}
	if !e.contended.CompareAndSwap(true, false) {
		return false
	}
	f.yielded = true
	e.lastYield.Store(time.Now().UnixNano())
	return true
}

// CheckPauses asks the store at once whether runs in flight are being
// paused or were lost (the renew loop does it every third of the lease).
func (e *Engine) CheckPauses(ctx context.Context) { e.renewOnce(ctx) }
