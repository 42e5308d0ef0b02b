package engine_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/proserun/prose/engine"
	"github.com/proserun/prose/store"
)

// batchCreator is the optional store method behind the engine's batched
// run creation (sqlstore.DB.CreateRuns).
type batchCreator interface {
	CreateRuns(ctx context.Context, in []store.Run) ([]store.Run, []bool, []error, error)
}

// TestCreateRunsPerRunResults checks that in one batch a missing automation
// fails only its run and a request id reused within the batch gives the
// earlier run back.
func TestCreateRunsPerRunResults(t *testing.T) {
	e := newEnv(t, engine.Options{})
	a := e.automation(t, "the output result is 1")
	bc, ok := e.st.(batchCreator)
	if !ok {
		t.Skip("the store has no CreateRuns")
	}
	run := func(automation, requestID string) store.Run {
		return store.Run{OrganizationID: e.org, WorkspaceID: e.ws, AutomationID: automation, Stage: store.StageDraft, RequestID: requestID}
	}
	runs, created, errs, err := bc.CreateRuns(context.Background(), []store.Run{run(a.ID, "r1"), run("nope", ""), run(a.ID, "r1"), run(a.ID, "")})
	if err != nil {
		t.Fatal(err)
	}
	if errs[0] != nil || !created[0] || runs[0].State != store.RunPending {
		t.Fatalf("run 0: %v %v %v", errs[0], created[0], runs[0].State)
	}
	if !errors.Is(errs[1], store.ErrNotFound) || created[1] {
		t.Fatalf("run 1 (missing automation): %v %v", errs[1], created[1])
	}
	if errs[2] != nil || created[2] || runs[2].ID != runs[0].ID {
		t.Fatalf("run 2 (same request id): %v %v %q, want %q", errs[2], created[2], runs[2].ID, runs[0].ID)
	}
	if errs[3] != nil || !created[3] || runs[3].ID == runs[0].ID {
		t.Fatalf("run 3: %v %v", errs[3], created[3])
	}
}

// TestInvokeConcurrentCreates invokes from many goroutines at once (the
// engine batches their creates on SQLite): each gets its own result.
func TestInvokeConcurrentCreates(t *testing.T) {
	e := newEnv(t, engine.Options{})
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
