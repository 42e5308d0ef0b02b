package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/proserun/prose/internal/testtime"
	"github.com/proserun/prose/server"
	"github.com/proserun/prose/server/app"
	"github.com/proserun/prose/server/testenv"
	"github.com/proserun/prose/store"
)

// crashCode calls the counting book three times; each run's outputs are
// determined by its key.
const crashCode = `the alpha is the key + "/1"
stamp the alpha
the output a is the above
the beta is the key + "/2"
stamp the beta
the output b is the above
the gamma is the key + "/3"
stamp the gamma
the output c is the above
`

const (
	crashRuns   = 500
	callsPerRun = 3
)

// TestCrashSQLite starts 500 runs on a `prose serve` child process, kills it
// with SIGKILL after some runs completed, restarts it on the same data
// directory and checks that every run completes exactly once with the
// right outputs and that no journaled book call was made again.
func TestCrashSQLite(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test: builds the binary and runs 500 runs across a SIGKILL")
	}
	runCrashScenario(t, crashScenario{storeArgs: []string{"--data", t.TempDir()}, replicas: 1, restart: true})
}

// crashScenario describes a crash test.
type crashScenario struct {
	storeArgs []string // --data DIR or --database URL
	replicas  int      // servers on the store at the start; replica 0 is killed
	restart   bool     // start a new server on the store after the kill
}

func runCrashScenario(t *testing.T, sc crashScenario) {
	ctx := context.Background()
	bin := proseBinary(t) // built once per test binary, before the deadline starts
	// The deadline only bounds how long a broken scenario hangs (every wait
	// returns at its event): 500 runs take about 15 s on a quiet machine,
	// and several times that at a load average of 40.
	deadline := testtime.Deadline(3 * time.Minute)
	const lease = 3 * time.Second
	ini := proseInit(t, bin, sc.storeArgs...)

	// The kill is asked for when the book has received 40% of all calls;
	// the calls of the victim from then on are held unanswered until it is
	// dead, so some calls certainly die in flight.
	book := newCountingBook(t, crashRuns*callsPerRun*2/5)
	serve := func(replica int) *proseProc {
		args := append([]string{"--lease", lease.String(), "--books", writeBookFile(t, ini.Workspace, testenv.StampBook(book.endpoint(replica)))}, sc.storeArgs...)
		return startProse(t, bin, deadline, args...)
	}
	procs := make([]*proseProc, sc.replicas)
	clients := make([]*apiClient, sc.replicas)
	for i := range procs {
		procs[i] = serve(i)
		clients[i] = newAPIClient(procs[i].addr, ini.APIKey)
	}
	fail := func(format string, args ...any) {
		t.Helper()
		for i, p := range procs {
			t.Logf("replica %d log tail:\n%s", i, p.logTail())
		}
		t.Fatalf(format, args...)
	}

	automation, err := clients[0].createAutomation(ctx, ini.Workspace, crashCode)
	if err != nil {
		fail("create automation: %v", err)
	}

	// Start the runs over HTTP (the book holds every call until all are
	// started), spread over the replicas.
	runKey := map[string]string{} // run id → key
	var mu sync.Mutex
	var wg sync.WaitGroup
	errs := make(chan error, crashRuns)
	keys := make(chan int)
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range keys {
				key := fmt.Sprintf("k%03d", i)
				id, err := clients[i%len(clients)].invoke(ctx, ini.Workspace, automation, key, map[string]string{"key": key})
				if err != nil {
					errs <- err
					continue
				}
				mu.Lock()
				runKey[id] = key
				mu.Unlock()
			}
		}()
	}
	for i := 0; i < crashRuns; i++ {
		keys <- i
	}
	close(keys)
	wg.Wait()
	close(errs)
	for err := range errs {
		fail("invoke: %v", err)
	}
	if len(runKey) != crashRuns {
		fail("%d distinct runs, want %d", len(runKey), crashRuns)
	}
	book.open()

	select {
	case <-book.killNow:
	case <-time.After(time.Until(deadline)):
		fail("no call of the victim arrived after %d book calls in time", book.killAt)
	}
	// Hold every new call until the journal is read, so that a call the
	// book sees after the kill cannot have been journaled at that reading.
	book.closeGate()
	procs[0].kill()
	book.victimDead()

	st, err := app.OpenStore(ctx, storeFlag(sc.storeArgs, "--data"), storeFlag(sc.storeArgs, "--database"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	journaled := map[string]bool{} // call ids journaled when the victim died
	completedAtKill := 0
	for id := range runKey {
		r, err := st.GetRunByID(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if r.State == store.RunCompleted {
			completedAtKill++
		}
		entries, err := st.ListJournal(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			journaled[fmt.Sprintf("%s/%d/%d", id, e.Step, e.Seq)] = true
		}
	}
	book.open()
	t.Logf("at the kill: %d of %d runs completed, %d book calls journaled", completedAtKill, crashRuns, len(journaled))
	if completedAtKill == 0 || completedAtKill == crashRuns {
		fail("the kill came at the wrong time: %d runs completed", completedAtKill)
	}
	if sc.restart {
		procs = append(procs, serve(len(procs)))
	}

	// Wait for every run to end.
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		n, err := countEnded(ctx, st, runKey)
		if err != nil {
			t.Fatal(err)
		}
		if n == crashRuns {
			break
		}
		if time.Now().After(deadline) {
			fail("%d of %d runs ended in time", n, crashRuns)
		}
		<-tick.C
	}

	// Every run completed, with the outputs its key determines.
	for id, key := range runKey {
		r, err := st.GetRunByID(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if r.State != store.RunCompleted {
			fail("run %s (%s) is %s: %s", id, key, r.State, r.Description)
		}
		p, err := server.RunToProto(r)
		if err != nil {
			t.Fatal(err)
		}
		outs := p.GetState().GetCompleted().GetOutputs()
		for i, name := range []string{"output a", "output b", "output c"} {
			if got, want := outs[name].GetText(), fmt.Sprintf("S:%s/%d", key, i+1); got != want {
				t.Errorf("run %s: %s = %q, want %q", key, name, got, want)
			}
		}
	}

	// The book's side. Let J be the calls (by call id: run/step/journal
	// index, the same when a call is repeated) whose results were journaled
	// when the victim died, read from the database after the SIGKILL while
	// the book held every new call. Then:
	//  1. every call of every run reached the book (it is not answered from
	//     nowhere): 3 call ids per run, with the run's tickets;
	//  2. no call is made twice before the kill, nor twice after it: a run
	//     is executed by one worker at a time, and within a worker's life a
	//     journaled call is answered from the journal;
	//  3. a call in J is never made after the kill: journaled results are
	//     not asked for again;
	//  4. so a call is made at most twice, and a repeated one (before and
	//     after the kill) was made by the victim and is not in J: its
	//     result died with the process (held unanswered by the book, or
	//     answered but not yet checkpointed). A run makes its book calls one
	//     after another, so at most one call per run is repeated;
	//  5. every call the book held unanswered when the victim died is
	//     repeated: the crash window was exercised.
	calls, bad := book.snapshot()
	for _, b := range bad {
		t.Errorf("call without a matching call id: %s", b)
	}
	perRun := map[string]int{}
	repeatsPerRun := map[string]int{}
	repeats, held := 0, 0
	for id, cs := range calls {
		run := id[:max(0, strings.IndexByte(id, '/'))]
		key, ok := runKey[run]
		if !ok {
			t.Errorf("call %s of an unknown run", id)
			continue
		}
		perRun[run]++
		if !strings.HasPrefix(cs[0].ticket, key+"/") {
			t.Errorf("call %s of run %s has ticket %q", id, key, cs[0].ticket)
		}
		var before, after, wasHeld int
		for _, c := range cs {
			if c.phase == 1 {
				before++
			} else {
				after++
			}
			if c.held {
				wasHeld++
			}
		}
		held += wasHeld
		if before > 1 || after > 1 {
			t.Errorf("call %s made %d times before the kill and %d after", id, before, after)
		}
		if after > 0 && journaled[id] {
			t.Errorf("call %s was journaled at the kill and made again", id)
		}
		if before == 1 && after == 1 {
			repeats++
			repeatsPerRun[run]++
			if cs[0].replica != 0 {
				t.Errorf("call %s repeated, first made by replica %d, not the victim", id, cs[0].replica)
			}
		}
		if wasHeld > 0 && after == 0 {
			t.Errorf("call %s was held when the victim died and never made again", id)
		}
	}
	for run, key := range runKey {
		if perRun[run] != callsPerRun {
			t.Errorf("run %s: %d distinct calls, want %d", key, perRun[run], callsPerRun)
		}
		if repeatsPerRun[run] > 1 {
			t.Errorf("run %s: %d calls repeated, want at most 1", key, repeatsPerRun[run])
		}
	}
	if held == 0 {
		t.Errorf("no call was in flight at the kill")
	}
	t.Logf("%d book calls; %d were in flight at the kill (held), %d repeated after it", len(calls), held, repeats)
}

// storeFlag is the value of a flag in args ("" if absent).
func storeFlag(args []string, name string) string {
	for i := 0; i+1 < len(args); i++ {
		if args[i] == name {
			return args[i+1]
		}
	}
	return ""
}

// countEnded counts the runs of runKey that completed or failed.
func countEnded(ctx context.Context, st store.Store, runKey map[string]string) (int, error) {
	n := 0
	for id := range runKey {
		r, err := st.GetRunByID(ctx, id)
		if err != nil {
			return 0, err
		}
		if r.State == store.RunCompleted || r.State == store.RunFailed {
			n++
		}
	}
	return n, nil
}
