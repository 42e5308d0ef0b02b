package engine_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/proserun/prose/internal/engine"
	"github.com/proserun/prose/internal/loadprog"
	"github.com/proserun/prose/store"
	"github.com/proserun/prose/store/sqlite"
)

// BenchmarkInvokeComplete measures in-process throughput on SQLite: b.N
// runs invoked from 8 goroutines through Engine.Invoke and executed by the
// engine's workers until all completed. It reports completed runs/s.
func BenchmarkInvokeComplete(b *testing.B) { benchInvokeComplete(b, loadprog.Short) }

// BenchmarkInvokeCompleteSay is BenchmarkInvokeComplete with an automation
// that says 0 or 5 lines before its ten statements (the cost of the run's
// history: each line is an entry written with the run's outcome).
func BenchmarkInvokeCompleteSay(b *testing.B) {
	for _, n := range []int{0, 5} {
		b.Run(fmt.Sprintf("say=%d", n), func(b *testing.B) {
			benchInvokeComplete(b, strings.Repeat("say \"a line of the run\"\n", n)+loadprog.Short)
		})
	}
}

func benchInvokeComplete(b *testing.B, code string) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	org, err := st.CreateOrganization(ctx, store.Organization{DisplayName: "Acme"})
	if err != nil {
		b.Fatal(err)
	}
	ws, err := st.CreateWorkspace(ctx, store.Workspace{OrganizationID: org.ID, Title: "ops"})
	if err != nil {
		b.Fatal(err)
	}
	a, err := st.CreateAutomation(ctx, store.Automation{OrganizationID: org.ID, WorkspaceID: ws.ID, DisplayName: "bench", Code: code})
	if err != nil {
		b.Fatal(err)
	}
	eng := engine.New(st, engine.Options{})
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { _ = eng.Run(runCtx, 5*time.Second); close(done) }()
	defer func() { stop(); <-done }()

	// anyIn reports whether a run of the automation is in one of states.
	anyIn := func(states ...store.RunState) bool {
		var or store.Or
		for _, s := range states {
			or = append(or, store.Cond{Field: "state", Op: store.OpEq, Value: string(s)})
		}
		p, err := st.ListRuns(ctx, store.ListRunsRequest{OrganizationID: org.ID, WorkspaceID: ws.ID, AutomationID: a.ID, Filter: or, PageSize: 1})
		if err != nil {
			b.Fatal(err)
		}
		return len(p.Items) > 0
	}
	unfinished := func() bool { return anyIn(store.RunPending, store.RunExecuting, store.RunStopping) }
	b.ResetTimer()
	start := time.Now()
	var next atomic.Int64
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(b.N) {
				if _, _, err := eng.Invoke(ctx, engine.InvokeRequest{OrganizationID: org.ID, WorkspaceID: ws.ID, AutomationID: a.ID, Stage: store.StageDraft}); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	deadline := time.Now().Add(time.Minute)
	for unfinished() {
		if time.Now().After(deadline) {
			b.Fatalf("runs of the %d not ended", b.N)
		}
		<-tick.C
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "runs/s")
	if anyIn(store.RunFailed) {
		b.Fatal("runs failed")
	}
}
