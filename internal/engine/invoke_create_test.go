package engine_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/proserun/prose/internal/codec"
	"github.com/proserun/prose/internal/engine"
	"github.com/proserun/prose/internal/testtime"
	"github.com/proserun/prose/store"
	"github.com/proserun/prose/store/postgres"
)

// bothBackends runs f on a SQLite store and, when PROSE_TEST_POSTGRES_URL
// is set, on a PostgreSQL one (their batches are written differently).
func bothBackends(t *testing.T, opts engine.Options, f func(t *testing.T, e *env)) {
	t.Run("sqlite", func(t *testing.T) { f(t, newEnv(t, opts)) })
	t.Run("postgres", func(t *testing.T) {
		st, err := postgres.Open(t.Context(), tempPostgres(t))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		f(t, newEnvOn(t, st, opts))
	})
}

// TestInvokeSeesAutomationChanges: Invoke caches automations, yet a run
// always gets the stage as it is when the run is created: after a draft
// edit, a publish or a delete made behind the engine's back (another
// replica, the API), the next invoke uses the new code or is refused.
func TestInvokeSeesAutomationChanges(t *testing.T) {
	bothBackends(t, engine.Options{}, testInvokeSeesAutomationChanges)
}

func testInvokeSeesAutomationChanges(t *testing.T, e *env) {
	ctx := context.Background()
	a := e.automation(t, "the output result is 1")
	invoke := func(stage store.Stage) (store.Run, error) {
		r, _, err := e.eng.Invoke(ctx, engine.InvokeRequest{OrganizationID: e.org, WorkspaceID: e.ws, AutomationID: a.ID, Stage: stage})
		return r, err
	}
	code := func(r store.Run) string {
		t.Helper()
		code, ok := codec.StepCode(r, 0)
		if !ok {
			t.Fatal("no first step")
		}
		return code
	}
	r1, err := invoke(store.StageDraft)
	if err != nil || code(r1) != "the output result is 1" {
		t.Fatalf("first invoke: %v", err)
	}
	if _, err := invoke(store.StagePublished); !errors.Is(err, store.ErrFailedPrecondition) {
		t.Fatalf("published stage before any publish: %v", err)
	}
	a.Code = "the output result is 2"
	a2, err := e.st.UpdateAutomation(ctx, a, []string{"code"})
	if err != nil {
		t.Fatal(err)
	}
	r2, err := invoke(store.StageDraft)
	if err != nil || code(r2) != "the output result is 2" || r2.StageVersion != a2.Version {
		t.Fatalf("after a draft edit: %v, version %d (want %d)", err, r2.StageVersion, a2.Version)
	}
	if _, err := e.st.PublishAutomation(ctx, e.org, e.ws, a.ID, ""); err != nil {
		t.Fatal(err)
	}
	r3, err := invoke(store.StagePublished)
	if err != nil || code(r3) != "the output result is 2" {
		t.Fatalf("published stage after a publish: %v", err)
	}
	if _, err := e.st.DeleteAutomation(ctx, e.org, e.ws, a.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := invoke(store.StageDraft); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("after a delete: %v", err)
	}
}

// TestInvokeConcurrentCreates invokes from many goroutines at once (the
// engine batches their creates on SQLite): each gets its own result.
func TestInvokeConcurrentCreates(t *testing.T) {
	bothBackends(t, engine.Options{}, testInvokeConcurrentCreates)
}

func testInvokeConcurrentCreates(t *testing.T, e *env) {
	a := e.automation(t, "the output result is 1")
	b := e.automation(t, "the output result is 2")
	ctx := context.Background()
	const n = 64
	type result struct {
		r       store.Run
		created bool
		err     error
	}
	res := make([]result, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req := engine.InvokeRequest{OrganizationID: e.org, WorkspaceID: e.ws, AutomationID: a.ID, Stage: store.StageDraft}
			switch i % 4 {
			case 0:
				req.RequestID = "same"
			case 1:
				req.AutomationID = "nope"
			case 2:
				req.RequestID = "shared"
				if i == 2 {
					req.AutomationID = b.ID
				}
			}
			r, created, err := e.eng.Invoke(ctx, req)
			res[i] = result{r, created, err}
		}()
	}
	wg.Wait()
	ids := map[string]bool{}
	var same string
	sameCreated, sharedCreated := 0, 0
	for i, x := range res {
		switch i % 4 {
		case 0:
			if x.err != nil {
				t.Fatalf("%d: %v", i, x.err)
			}
			if same == "" {
				same = x.r.ID
			} else if x.r.ID != same {
				t.Fatalf("%d: request id %q gave runs %q and %q", i, "same", same, x.r.ID)
			}
			if x.created {
				sameCreated++
			}
		case 1:
			if !errors.Is(x.err, store.ErrNotFound) {
				t.Fatalf("%d: missing automation: %v", i, x.err)
			}
		case 2:
			// One automation wins request id "shared"; invokes of the
			// other get ErrAlreadyExists.
			if x.err != nil && !errors.Is(x.err, store.ErrAlreadyExists) {
				t.Fatalf("%d: %v", i, x.err)
			}
			if x.created {
				sharedCreated++
			}
		case 3:
			if x.err != nil || !x.created || ids[x.r.ID] {
				t.Fatalf("%d: %v %v %q", i, x.err, x.created, x.r.ID)
			}
			ids[x.r.ID] = true
		}
	}
	if sameCreated != 1 || sharedCreated != 1 {
		t.Fatalf("created %d runs for request id %q and %d for %q, want 1 each", sameCreated, "same", sharedCreated, "shared")
	}
}

// TestInvokeSameRequestIDsTwoReplicas: two engines on one PostgreSQL
// database (two replicas) invoke at once with request ids from a small
// shared set. Each request id starts exactly one run, and every invoke that
// used it gets that run back, whichever replica created it; nothing fails.
func TestInvokeSameRequestIDsTwoReplicas(t *testing.T) {
	url := tempPostgres(t)
	var replicas [2]*env
	for i := range replicas {
		st, err := postgres.Open(t.Context(), url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		if i == 0 {
			replicas[i] = newEnvOn(t, st, engine.Options{})
			continue
		}
		replicas[i] = &env{st: st, eng: engine.New(st, engine.Options{}), org: replicas[0].org, ws: replicas[0].ws}
	}
	a := replicas[0].automation(t, "the output result is 1")
	const perReplica, ids = 48, 6
	type result struct {
		id      string
		created bool
		err     error
	}
	res := make([][perReplica]result, len(replicas))
	var wg sync.WaitGroup
	for ri, e := range replicas {
		for i := range perReplica {
			wg.Go(func() {
				r, created, err := e.eng.Invoke(context.Background(), engine.InvokeRequest{OrganizationID: e.org, WorkspaceID: e.ws,
					AutomationID: a.ID, Stage: store.StageDraft, RequestID: fmt.Sprintf("req-%d", i%ids)})
				res[ri][i] = result{r.ID, created, err}
			})
		}
	}
	wg.Wait()
	runOf := map[string]string{}
	createdFor := map[string]int{}
	for ri := range replicas {
		for i, x := range res[ri] {
			req := fmt.Sprintf("req-%d", i%ids)
			if x.err != nil {
				t.Fatalf("replica %d, invoke %d (%s): %v", ri, i, req, x.err)
			}
			if prev, ok := runOf[req]; ok && prev != x.id {
				t.Fatalf("request id %s gave runs %s and %s", req, prev, x.id)
			}
			runOf[req] = x.id
			if x.created {
				createdFor[req]++
			}
		}
	}
	for req := range runOf {
		if createdFor[req] != 1 {
			t.Errorf("request id %s: %d invokes say they created its run, want 1", req, createdFor[req])
		}
	}
	page, err := replicas[0].st.ListRuns(context.Background(), store.ListRunsRequest{OrganizationID: replicas[0].org, WorkspaceID: replicas[0].ws, AutomationID: a.ID, PageSize: 100})
	if err != nil || len(page.Items) != ids {
		t.Fatalf("runs stored: %d (want %d), %v", len(page.Items), ids, err)
	}
}

// TestAnnounceCoalescesNotices: invokes tell other replicas through
// Options.Notify, but not once per run: the invokes made while a notice is
// being sent share one notice, sent after it.
func TestAnnounceCoalescesNotices(t *testing.T) {
	var mu sync.Mutex
	notices := 0
	entered := make(chan struct{}, 1)
	gate := make(chan struct{}) // holds the first notice
	e := newEnv(t, engine.Options{Notify: func(context.Context) {
		select {
		case entered <- struct{}{}:
		default:
		}
		<-gate
		mu.Lock()
		notices++
		mu.Unlock()
	}})
	a := e.automation(t, "the output result is 1")
	invoke := func() {
		if _, _, err := e.eng.Invoke(context.Background(), engine.InvokeRequest{OrganizationID: e.org, WorkspaceID: e.ws, AutomationID: a.ID, Stage: store.StageDraft}); err != nil {
			t.Error(err)
		}
	}
	invoke()
	<-entered // the first notice is being sent
	const n = 49
	var wg sync.WaitGroup
	for range n {
		wg.Go(invoke)
	}
	wg.Wait()
	close(gate)
	// The first notice, then one for the 49 invokes made meanwhile.
	deadline := testtime.Deadline(testtime.Wait)
	for {
		mu.Lock()
		got := notices
		mu.Unlock()
		if got == 2 {
			break
		}
		if got > 2 || time.Now().After(deadline) {
			t.Fatalf("%d notices for %d invokes, want 2", got, n+1)
		}
		time.Sleep(time.Millisecond)
	}
}
