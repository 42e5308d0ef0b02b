package engine_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/proserun/prose/internal/engine"
	"github.com/proserun/prose/internal/lang"
	"github.com/proserun/prose/internal/loadprog"
	"github.com/proserun/prose/store"
	"github.com/proserun/prose/store/postgres"
	"github.com/proserun/prose/store/postgres/pgtest"
	"github.com/proserun/prose/store/sqlite"
)

// BenchmarkNoisyNeighbour measures the create→completed latency of
// organization A's trivial runs (loadprog.Short, one at a time: b.N of
// them, from just before Invoke until the store shows the run completed)
// while organization B saturates the engine: Workers+16 endless runs (24
// on SQLite's default 8 workers) and 40 invokes/s of loadprog.Short.
// quiet is A alone; busy is with B; busy-noturns is with B and no
// processor turns (Processors -1); busy-noshare is with B, no turns and no
// share of the workers per organization (OrgWorkers -1; the store's rule
// for executing a run at its creation stays per organization). A's reads
// of its run count as its work (Engine.Work), as the server's calls do
// (server/transport/orgwork). It reports p50-ms, p90-ms and p99-ms, and
// the share of A's runs executed at their creation (inline-%). PostgreSQL
// with PROSE_TEST_POSTGRES_URL.
//
//	go test ./internal/engine -run '^$' -bench NoisyNeighbour -benchtime 200x
func BenchmarkNoisyNeighbour(b *testing.B) {
	for _, be := range benchBackends {
		for _, mode := range []string{"quiet", "busy", "busy-noturns", "busy-noshare"} {
			b.Run(be.name+"/"+mode, func(b *testing.B) {
				st := be.open(b)
				defer st.Close()
				opts := engine.Options{Limits: lang.Limits{MaxSteps: -1, MaxDuration: -1}}
				switch mode {
				case "busy-noturns":
					opts.Processors = -1
				case "busy-noshare":
					opts.OrgWorkers, opts.Processors = -1, -1
				}
				load := loadLong
				if mode == "quiet" {
					load = nil
				}
				benchNoisy(b, st, opts, load)
			})
		}
	}
}

// BenchmarkNoisyNeighbourFlood is BenchmarkNoisyNeighbour with another
// kind of saturating organization: B invokes loadprog.Short from 32
// goroutines, each as soon as its last invoke returned (the most runs the
// engine creates and completes), so that B's creates keep the store's
// writer busy. It reports A's latency as BenchmarkNoisyNeighbour does and
// B's throughput (b-runs/s).
//
//	go test ./internal/engine -run '^$' -bench NoisyNeighbourFlood -benchtime 200x
func BenchmarkNoisyNeighbourFlood(b *testing.B) {
	for _, be := range benchBackends {
		for _, mode := range []string{"quiet", "busy"} {
			b.Run(be.name+"/"+mode, func(b *testing.B) {
				st := be.open(b)
				defer st.Close()
				load := loadFlood
				if mode == "quiet" {
					load = nil
				}
				benchNoisy(b, st, engine.Options{}, load)
			})
		}
	}
}

var benchBackends = []struct {
	name string
	open func(b *testing.B) store.Store
}{
	{"sqlite", func(b *testing.B) store.Store {
		st, err := sqlite.Open(context.Background(), b.TempDir())
		if err != nil {
			b.Fatal(err)
		}
		return st
	}},
	{"postgres", func(b *testing.B) store.Store {
		st, err := postgres.Open(context.Background(), pgtest.TempDatabase(b, "prose_bench_"))
		if err != nil {
			b.Fatal(err)
		}
		return st
	}},
}

// endless is a program that runs for hours: 100⁴ turns of a loop.
func endless() string {
	var nums []string
	for i := 1; i <= 100; i++ {
		nums = append(nums, fmt.Sprint(i))
	}
	return "the rounds are " + strings.Join(nums, ", ") + "\n" +
		"the n is 0\n" +
		"process each round as follows\n" +
		"  process each round as follows\n" +
		"    process each round as follows\n" +
		"      process each round as follows\n" +
		"        the n is the n + 1\n"
}

// noisy is what benchNoisy gives a load of organization B.
type noisy struct {
	st   store.Store
	e    *engine.Engine
	mk   func(name, code string) store.Automation
	ctx  context.Context // ended when the load must stop
	wg   *sync.WaitGroup
	runs *atomic.Int64 // B's runs invoked
}

// invokeLoop invokes a from a goroutine, every tick (or at once after the
// last invoke returned when tick is 0), until the load stops.
func (n noisy) invokeLoop(b *testing.B, a store.Automation, tick time.Duration) {
	n.wg.Go(func() {
		var t <-chan time.Time
		if tick > 0 {
			tk := time.NewTicker(tick)
			defer tk.Stop()
			t = tk.C
		}
		for n.ctx.Err() == nil {
			if t != nil {
				select {
				case <-n.ctx.Done():
					return
				case <-t:
				}
			}
			if _, _, err := n.e.Invoke(n.ctx, engine.InvokeRequest{OrganizationID: a.OrganizationID, WorkspaceID: a.WorkspaceID, AutomationID: a.ID, Stage: store.StageDraft}); err != nil {
				if n.ctx.Err() == nil {
					b.Error(err)
				}
				return
			}
			n.runs.Add(1)
		}
	})
}

// loadLong is B's endless runs (Workers+16, in one workspace) and 40
// invokes/s of loadprog.Short (in another); it returns once B holds its
// share of the workers.
func loadLong(b *testing.B, n noisy) {
	long := n.mk("B", endless())
	ws, err := n.st.CreateWorkspace(n.ctx, store.Workspace{OrganizationID: long.OrganizationID, Title: "steady"})
	if err != nil {
		b.Fatal(err)
	}
	steady, err := n.st.CreateAutomation(n.ctx, store.Automation{OrganizationID: long.OrganizationID, WorkspaceID: ws.ID, DisplayName: "steady", Code: loadprog.Short})
	if err != nil {
		b.Fatal(err)
	}
	for range n.e.Workers() + 16 {
		if _, _, err := n.e.Invoke(n.ctx, engine.InvokeRequest{OrganizationID: long.OrganizationID, WorkspaceID: long.WorkspaceID, AutomationID: long.ID, Stage: store.StageDraft}); err != nil {
			b.Fatal(err)
		}
	}
	n.invokeLoop(b, steady, time.Second/40)
	// B holds what it may of the workers.
	for n.e.BusyByOrganization()[long.OrganizationID] < n.e.OrgWorkers() {
		time.Sleep(time.Millisecond)
	}
}

// loadFlood is B invoking loadprog.Short from 32 goroutines, each as soon
// as its last invoke returned; it returns once B has made 1,000 runs.
func loadFlood(b *testing.B, n noisy) {
	quick := n.mk("B", loadprog.Short)
	for range 32 {
		n.invokeLoop(b, quick, 0)
	}
	for n.runs.Load() < 1000 {
		time.Sleep(time.Millisecond)
	}
}

func benchNoisy(b *testing.B, st store.Store, opts engine.Options, load func(*testing.B, noisy)) {
	ctx := context.Background()
	mk := func(name, code string) store.Automation {
		org, err := st.CreateOrganization(ctx, store.Organization{DisplayName: name})
		if err != nil {
			b.Fatal(err)
		}
		ws, err := st.CreateWorkspace(ctx, store.Workspace{OrganizationID: org.ID, Title: name})
		if err != nil {
			b.Fatal(err)
		}
		a, err := st.CreateAutomation(ctx, store.Automation{OrganizationID: org.ID, WorkspaceID: ws.ID, DisplayName: name, Code: code})
		if err != nil {
			b.Fatal(err)
		}
		return a
	}
	e := engine.New(st, opts)
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { _ = e.Run(runCtx, 5*time.Second); close(done) }()
	defer func() { stop(); <-done }()

	quick := mk("A", loadprog.Short)
	var wg sync.WaitGroup
	var bRuns atomic.Int64
	loadCtx, stopLoad := context.WithCancel(ctx)
	defer func() { stopLoad(); wg.Wait() }()
	if load != nil {
		load(b, noisy{st: st, e: e, mk: mk, ctx: loadCtx, wg: &wg, runs: &bRuns})
	}
	lat, inv, inline := measureA(b, st, e, quick, &bRuns)
	q := func(d []time.Duration, p float64) float64 {
		return float64(d[int(p*float64(len(d)-1))]) / float64(time.Millisecond)
	}
	b.ReportMetric(q(lat, 0.5), "p50-ms")
	b.ReportMetric(q(lat, 0.9), "p90-ms")
	b.ReportMetric(q(lat, 0.99), "p99-ms")
	// Invoke's own share: the creation.
	b.ReportMetric(q(inv, 0.5), "invoke-p50-ms")
	b.ReportMetric(float64(100*inline)/float64(b.N), "inline-%")
	b.ReportMetric(0, "ns/op")
}

// measureA invokes b.N runs of A one at a time and returns, sorted, each
// one's create→completed latency and its invoke's, and how many were
// executed at their creation. It reports B's runs per second meanwhile.
func measureA(b *testing.B, st store.Store, e *engine.Engine, quick store.Automation, bRuns *atomic.Int64) (lat, inv []time.Duration, inline int) {
	ctx := context.Background()
	lat, inv = make([]time.Duration, 0, b.N), make([]time.Duration, 0, b.N)
	b0, start := bRuns.Load(), time.Now()
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		r, _, err := e.Invoke(ctx, engine.InvokeRequest{OrganizationID: quick.OrganizationID, WorkspaceID: quick.WorkspaceID, AutomationID: quick.ID, Stage: store.StageDraft})
		if err != nil {
			b.Fatal(err)
		}
		inv = append(inv, time.Since(t0))
		for {
			done := e.Work(r.OrganizationID)
			got, err := st.GetRun(ctx, r.OrganizationID, r.WorkspaceID, r.AutomationID, r.ID)
			done()
			if err != nil {
				b.Fatal(err)
			}
			if got.State == store.RunCompleted {
				if got.UpdateTime.Equal(got.CreateTime) {
					inline++ // created completed
				}
				break
			}
			if got.State.Terminal() {
				b.Fatalf("A's run %s: %s", got.State, got.Description)
			}
			time.Sleep(200 * time.Microsecond)
		}
		lat = append(lat, time.Since(t0))
	}
	b.StopTimer()
	b.ReportMetric(float64(bRuns.Load()-b0)/time.Since(start).Seconds(), "b-runs/s")
	slices.Sort(lat)
	slices.Sort(inv)
	return lat, inv, inline
}
