package engine_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/internal/engine"
	"github.com/proserun/prose/internal/lang"
	"github.com/proserun/prose/store"
)

// hookStore is a store whose creates are recorded (the state each run was
// asked to be created in, by request id), whose claims can be held, and
// whose finish writes of one run can be held and failed.
type hookStore struct {
	store.Store

	mu      sync.Mutex
	asked   map[string]store.RunState // request id → state asked at creation
	claimMu sync.RWMutex              // held (read) by each claim
	hold    chan struct{}             // non-nil: claims wait for it to close (under claimMu)
	claimed map[string]int            // run id → times claimed

	finishID  string        // the run whose finish writes are hooked
	entered   chan struct{} // closed when the first of them arrives
	release   chan struct{} // they wait for it
	enterOnce sync.Once
	finished  atomic.Int64 // finish writes of finishID that succeeded
	notes     []string     // what happened to finishID (under mu)
}

func (h *hookStore) note(format string, args ...any) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.notes = append(h.notes, fmt.Sprintf(format, args...))
}

func (h *hookStore) history() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return strings.Join(h.notes, "; ")
}

var errInjected = errors.New("injected: the database is away")

func newHookStore(st store.Store) *hookStore {
	return &hookStore{Store: st, asked: map[string]store.RunState{}, claimed: map[string]int{}}
}

func (h *hookStore) record(rs ...store.Run) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, r := range rs {
		if r.RequestID != "" {
			h.asked[r.RequestID] = r.State
		}
	}
}

func (h *hookStore) askedState(requestID string) (store.RunState, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	s, ok := h.asked[requestID]
	return s, ok
}

func (h *hookStore) CreateRun(ctx context.Context, r store.Run) (store.Run, bool, error) {
	h.record(r)
	return h.Store.CreateRun(ctx, r)
}

func (h *hookStore) CreateRuns(ctx context.Context, in []store.Run) ([]store.Run, []bool, []error, error) {
	h.record(in...)
	return h.Store.CreateRuns(ctx, in)
}

// holdClaims makes claims wait until the returned function is called.
func (h *hookStore) holdClaims() (unhold func()) {
	c := make(chan struct{})
	h.claimMu.Lock()
	h.hold = c
	h.claimMu.Unlock()
	return func() {
		h.claimMu.Lock()
		h.hold = nil
		h.claimMu.Unlock()
		close(c)
	}
}

// claim makes a claim once claims are not held. A claim in progress when
// they are held ends first (holdClaims waits for it).
func (h *hookStore) claim(ctx context.Context, claim func() ([]store.Run, error)) ([]store.Run, error) {
	for {
		h.claimMu.RLock()
		c := h.hold
		if c == nil {
			runs, err := claim()
			h.claimMu.RUnlock()
			h.claimedRuns(runs)
			return runs, err
		}
		h.claimMu.RUnlock()
		select {
		case <-c:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

func (h *hookStore) claimedRuns(runs []store.Run) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, r := range runs {
		h.claimed[r.ID]++
	}
}

func (h *hookStore) timesClaimed(id string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.claimed[id]
}

func (h *hookStore) ClaimRuns(ctx context.Context, owner string, max int, leaseUntil time.Time) ([]store.Run, error) {
	return h.claim(ctx, func() ([]store.Run, error) { return h.Store.ClaimRuns(ctx, owner, max, leaseUntil) })
}

func (h *hookStore) ClaimRunsFair(ctx context.Context, owner string, max int, leaseUntil time.Time) ([]store.Run, error) {
	return h.claim(ctx, func() ([]store.Run, error) { return h.Store.ClaimRunsFair(ctx, owner, max, leaseUntil) })
}

func (h *hookStore) ClaimRunsSkipping(ctx context.Context, owner string, max int, leaseUntil time.Time, fair bool, skip []string) ([]store.Run, error) {
	return h.claim(ctx, func() ([]store.Run, error) {
		return h.Store.ClaimRunsSkipping(ctx, owner, max, leaseUntil, fair, skip)
	})
}

// hookFinish holds the finish writes of run id (until release is closed)
// and fails them while the run has been claimed only once: its first
// execution's outcome is never written.
func (h *hookStore) hookFinish(id string) (entered <-chan struct{}, release chan<- struct{}) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.finishID, h.entered, h.release = id, make(chan struct{}), make(chan struct{})
	return h.entered, h.release
}

// finishHook is called before a finish write of the runs ids: err fails
// the write.
func (h *hookStore) finishHook(ctx context.Context, ids ...string) error {
	h.mu.Lock()
	id, entered, release := h.finishID, h.entered, h.release
	h.mu.Unlock()
	hooked := false
	for _, x := range ids {
		hooked = hooked || (x == id && id != "")
	}
	if !hooked {
		return nil
	}
	h.enterOnce.Do(func() { close(entered) })
	select {
	case <-release:
	case <-ctx.Done():
		return ctx.Err()
	}
	if h.timesClaimed(id) < 2 {
		return errInjected
	}
	return nil
}

func (h *hookStore) FinishRun(ctx context.Context, owner, id string, o store.RunOutcome) (store.Run, error) {
	if err := h.finishHook(ctx, id); err != nil {
		if id == h.finishID {
			h.note("FinishRun %s held: %v", o.State, err)
		}
		return store.Run{}, err
	}
	r, err := h.Store.FinishRun(ctx, owner, id, o)
	if id == h.finishID {
		h.note("FinishRun %s: %v", o.State, err)
	}
	if err == nil && id == h.finishID {
		h.finished.Add(1)
	}
	return r, err
}

func (h *hookStore) FinishRuns(ctx context.Context, owner string, ids []string, outs []store.RunOutcome) ([]error, error) {
	if err := h.finishHook(ctx, ids...); err != nil {
		h.note("FinishRuns (%d runs) held: %v", len(ids), err)
		return nil, err
	}
	errs, err := h.Store.FinishRuns(ctx, owner, ids, outs)
	for i, id := range ids {
		if id == h.finishID {
			h.note("FinishRuns (%d runs) %s: %v %v", len(ids), outs[i].State, err, errs)
		}
	}
	if err == nil {
		for i, id := range ids {
			if id == h.finishID && errs[i] == nil {
				h.finished.Add(1)
			}
		}
	}
	return errs, err
}

// signalBooks offers one procedure: a call signals calls, and an item
// named "slow" waits for open to be closed.
type signalBooks struct {
	open  chan struct{}
	calls chan string
}

func (b *signalBooks) Lookup(context.Context, string) ([]lang.BookProcedure, error) {
	return []lang.BookProcedure{{Book: "test@1", Name: "price", Signature: "look up the price of an item (the price)"}}, nil
}

func (b *signalBooks) Call(ctx context.Context, _ lang.BookProcedure, in map[string]lang.Value) (map[string]lang.Value, error) {
	item := ""
	for _, v := range in {
		if v.Kind() == lang.KindText {
			item = v.AsText()
		}
	}
	select {
	case b.calls <- item:
	default:
	}
	if item == "slow" {
		select {
		case <-b.open:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return map[string]lang.Value{"price": lang.Num(lang.MustNumber("9.99"))}, nil
}

const priceProgram = "look up the price of the item\nthe output price is the above\n"

// waitCall waits for the book to be called for item.
func waitCall(t *testing.T, b *signalBooks, item, why string) {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		select {
		case got := <-b.calls:
			if got == item {
				return
			}
		case <-deadline:
			t.Fatalf("no book call for %q: %s", item, why)
		}
	}
}

// TestSlotFreedBeforeFinishCommits: a worker gives its slot back when its
// run's outcome waits to be written, so the next run executes meanwhile
// (one worker here); the run stays leased and in flight until the write,
// and when the write fails the run is neither lost nor finished twice: its
// lease expires and it is executed again, and finished once.
func TestSlotFreedBeforeFinishCommits(t *testing.T) {
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			ctx := context.Background()
			h := newHookStore(openBackend(t, backend))
			bk := &signalBooks{open: make(chan struct{}), calls: make(chan string, 16)}
			e := newEnvOn(t, h, engine.Options{Workers: 1, InlineWindow: -1, LeaseDuration: 2 * time.Second, PollInterval: 50 * time.Millisecond,
				Books: func(string, string) lang.Books { return bk }})
			quick := e.automation(t, "the output x is 1\n")
			price := e.automation(t, priceProgram)
			// Created while the engine is stopped: pending.
			a, _, err := e.eng.Invoke(ctx, engine.InvokeRequest{OrganizationID: e.org, WorkspaceID: e.ws, AutomationID: quick.ID, Stage: store.StageDraft})
			if err != nil {
				t.Fatal(err)
			}
			entered, release := h.hookFinish(a.ID)
			e.start(t)
			<-entered // a was executed; its outcome waits to be written

			b, _, err := e.eng.Invoke(ctx, engine.InvokeRequest{OrganizationID: e.org, WorkspaceID: e.ws, AutomationID: price.ID, Stage: store.StageDraft,
				Inputs: map[string]*platformv1.Value{"item": text("tea")}})
			if err != nil {
				t.Fatal(err)
			}
			waitCall(t, bk, "tea", "the only worker's slot is held while the outcome of the run before waits to be written")
			if got, err := e.st.GetRunByID(ctx, a.ID); err != nil || got.State != store.RunExecuting || got.LeaseOwner != e.eng.Owner() {
				t.Fatalf("run a while its outcome waits: %+v (%v), want executing, leased", got, err)
			}
			close(release) // the writes of its first outcome fail
			e.waitFor(t, price, b.ID, store.RunCompleted)
			got := e.waitFor(t, quick, a.ID, store.RunCompleted)
			if n := h.timesClaimed(a.ID); n != 2 {
				t.Fatalf("run a claimed %d times, want 2 (its lease expired once); its finish writes: %s", n, h.history())
			}
			// The write is seen committed before the hook counts it.
			for deadline := time.Now().Add(10 * time.Second); h.finished.Load() == 0 && time.Now().Before(deadline); {
				time.Sleep(time.Millisecond)
			}
			if n := h.finished.Load(); n != 1 {
				t.Fatalf("run a finished %d times, want 1; its finish writes: %s", n, h.history())
			}
			if out := outputText(t, got, "output x"); out != "1" {
				t.Fatalf("output x = %q", out)
			}
		})
	}
}

// TestNoExecutionAtCreationWhileQueued: once a run executed at its
// creation comes back pending (runs wait in the queue: here another
// replica's), the engine creates its runs pending without executing them
// first, until a claim finds the queue empty; then it executes them at
// creation again.
func TestNoExecutionAtCreationWhileQueued(t *testing.T) {
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			ctx := context.Background()
			raw := openBackend(t, backend)
			h := newHookStore(raw)
			e := newEnvOn(t, h, engine.Options{InlineWindow: time.Minute})
			e.start(t)
			quick := e.automation(t, "the output x is 1\n")
			invoke := func(requestID string) store.Run {
				t.Helper()
				r, _, err := e.eng.Invoke(ctx, engine.InvokeRequest{OrganizationID: e.org, WorkspaceID: e.ws, AutomationID: quick.ID, Stage: store.StageDraft, RequestID: requestID})
				if err != nil {
					t.Fatal(err)
				}
				return r
			}
			stored := func(id string) store.Run {
				t.Helper()
				r, err := raw.GetRunByID(ctx, id)
				if err != nil {
					t.Fatal(err)
				}
				return r
			}
			e.waitFor(t, quick, invoke("q0").ID, store.RunCompleted) // the engine runs

			unhold := h.holdClaims()
			// Another replica (an engine not running) queues a run.
			other := engine.New(raw, engine.Options{})
			p, _, err := other.Invoke(ctx, engine.InvokeRequest{OrganizationID: e.org, WorkspaceID: e.ws, AutomationID: quick.ID, Stage: store.StageDraft})
			if err != nil {
				t.Fatal(err)
			}
			q1 := invoke("q1")
			if s, _ := h.askedState("q1"); s != store.RunCompleted {
				t.Fatalf("q1 asked to be created %q, want completed (executed at creation)", s)
			}
			if got := stored(q1.ID); got.State != store.RunPending {
				t.Fatalf("q1 stored %s, want pending (a run waits)", got.State)
			}
			q2 := invoke("q2")
			if s, ok := h.askedState("q2"); !ok || (s != "" && s != store.RunPending) {
				t.Fatalf("q2 asked to be created %q, want pending: the engine knows runs wait", s)
			}
			unhold()
			for _, id := range []string{p.ID, q1.ID, q2.ID} {
				e.waitFor(t, quick, id, store.RunCompleted)
			}
			// The claim that took them found the queue empty.
			q3 := invoke("q3")
			if s, _ := h.askedState("q3"); s != store.RunCompleted {
				t.Fatalf("q3 asked to be created %q, want completed (the queue is empty)", s)
			}
			if got := stored(q3.ID); got.State != store.RunCompleted || !got.UpdateTime.Equal(got.CreateTime) {
				t.Fatalf("q3 stored %+v, want completed at its creation", got)
			}
		})
	}
}

// TestClaimedRunsWaitingForASlotKeepTheirLeases: on a single-writer store
// a claim made while runs wait takes a whole batch; the runs beyond the
// free slots wait for one with their leases renewed, so no other worker
// takes them over however long they wait.
func TestClaimedRunsWaitingForASlotKeepTheirLeases(t *testing.T) {
	ctx := context.Background()
	raw := openBackend(t, "sqlite")
	bk := &signalBooks{open: make(chan struct{}), calls: make(chan string, 16)}
	lease := time.Second
	e := newEnvOn(t, raw, engine.Options{Workers: 1, InlineWindow: -1, LeaseDuration: lease, PollInterval: 50 * time.Millisecond,
		Books: func(string, string) lang.Books { return bk }})
	price := e.automation(t, priceProgram)
	var ids []string
	// Created while the engine is stopped, in this order: the first claim
	// takes one run (one free slot) and is saturated, the next takes the
	// other three; the slow one holds the only slot, the last two wait.
	for _, item := range []string{"tea", "slow", "cake", "jam"} {
		r, _, err := e.eng.Invoke(ctx, engine.InvokeRequest{OrganizationID: e.org, WorkspaceID: e.ws, AutomationID: price.ID, Stage: store.StageDraft,
			Inputs: map[string]*platformv1.Value{"item": text(item)}})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, r.ID)
		time.Sleep(time.Millisecond) // distinct create times: claims take the oldest first
	}
	e.start(t)
	waitCall(t, bk, "slow", "the slow run did not start")
	waiting := func() []store.Run {
		var out []store.Run
		for _, id := range ids[2:] {
			r, err := raw.GetRunByID(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, r)
		}
		return out
	}
	for _, r := range waiting() {
		if r.State != store.RunExecuting || r.LeaseOwner != e.eng.Owner() {
			t.Fatalf("run %s: %s leased to %q, want claimed with the slow run", r.ID, r.State, r.LeaseOwner)
		}
	}
	// Past their first lease (and past the store's recovery period).
	time.Sleep(2*lease + 200*time.Millisecond)
	stolen, err := raw.ClaimRuns(ctx, "another-replica", 10, time.Now().Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if len(stolen) != 0 {
		t.Fatalf("another replica claimed %d runs waiting for a slot here: their leases were not renewed", len(stolen))
	}
	close(bk.open)
	for _, id := range ids {
		e.waitFor(t, price, id, store.RunCompleted)
	}
}
