package engine

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/proserun/prose/store"
	"github.com/proserun/prose/store/sqlite"
)

// Stop waits for the notice being sent; after it Announce sends nothing
// and starts no goroutine, until Start.
func TestNotifierStartStop(t *testing.T) {
	defer goleak.VerifyNone(t)
	var sent atomic.Int32
	entered, gate := make(chan struct{}, 1), make(chan struct{})
	n := &notifier{send: func(context.Context) {
		select {
		case entered <- struct{}{}:
		default:
		}
		<-gate
		sent.Add(1)
	}}
	n.Start()
	n.Announce(t.Context())
	<-entered // a notice is being sent
	n.Announce(t.Context())
	stopped := make(chan struct{})
	go func() { n.Stop(); close(stopped) }()
	select {
	case <-stopped:
		t.Fatal("Stop returned while a notice was being sent")
	default:
	}
	close(gate)
	<-stopped
	if got := sent.Load(); got != 1 {
		t.Fatalf("%d notices sent, want 1 (the one wanted during Stop is dropped)", got)
	}
	n.Announce(t.Context())
	if n.running {
		t.Fatal("Announce after Stop started the goroutine")
	}
	n.Start()
	n.Announce(t.Context())
	<-entered // being sent (the gate is open)
	n.Stop()  // waits for it
	if got := sent.Load(); got != 2 {
		t.Fatalf("%d notices sent after Start, want 2", got)
	}
}

// Outcomes given to a started completer are written by its writers, in
// batches, each with its own result; Stop waits for the writers; after it
// Finish writes on its own.
func TestCompleterStartStop(t *testing.T) {
	defer goleak.VerifyNone(t)
	ctx := t.Context()
	st, err := sqlite.Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	org, err := st.CreateOrganization(ctx, store.Organization{DisplayName: "Acme"})
	if err != nil {
		t.Fatal(err)
	}
	ws, err := st.CreateWorkspace(ctx, store.Workspace{OrganizationID: org.ID, Title: "ops"})
	if err != nil {
		t.Fatal(err)
	}
	a, err := st.CreateAutomation(ctx, store.Automation{OrganizationID: org.ID, WorkspaceID: ws.ID, DisplayName: "a", Code: "the output x is 1\n"})
	if err != nil {
		t.Fatal(err)
	}
	const n = 20
	var ids []string
	for range n + 1 {
		r, _, err := st.CreateRun(ctx, store.Run{OrganizationID: org.ID, WorkspaceID: ws.ID, AutomationID: a.ID, Stage: store.StageDraft, Steps: []byte{}})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, r.ID)
	}
	if claimed, err := st.ClaimRuns(ctx, "me", n+1, time.Now().Add(time.Hour)); err != nil || len(claimed) != n+1 {
		t.Fatalf("claimed %d, %v", len(claimed), err)
	}
	c := &completer{st: st, owner: "me", log: slog.New(slog.DiscardHandler), writers: 2, singleWriter: st.SingleWriter()}
	c.Start(ctx, n)
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			errs[i] = c.Finish(ctx, ids[i], store.RunOutcome{State: store.RunCompleted, Outputs: []byte{}}, nil)
		})
	}
	wg.Wait()
	c.Stop()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("run %d: %v", i, err)
		}
		if r, err := st.GetRunByID(ctx, ids[i]); err != nil || r.State != store.RunCompleted {
			t.Fatalf("run %d: %s, %v", i, r.State, err)
		}
	}
	// Stopped: written on its own; a second Finish of the same run is the
	// store's conflict.
	if err := c.Finish(ctx, ids[n], store.RunOutcome{State: store.RunFailed, ErrorID: "e"}, nil); err != nil {
		t.Fatal(err)
	}
	if err := c.Finish(ctx, ids[n], store.RunOutcome{State: store.RunFailed, ErrorID: "e"}, nil); err == nil {
		t.Fatal("finishing a finished run succeeded")
	}
}
