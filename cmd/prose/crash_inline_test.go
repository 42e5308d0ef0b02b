package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/proserun/prose/internal/codec"
	"github.com/proserun/prose/internal/testtime"
	"github.com/proserun/prose/server/app"
	"github.com/proserun/prose/store"
)

// TestCrashInlineRunsSQLite kills `prose serve` with SIGKILL while quick
// runs, executed at their creation (no book call), are being invoked from
// 16 connections (1,500 request ids), restarts it on the same data and checks: every run whose
// invoke was answered exists and completed with its key's output; a retry
// of every request id (answered or not before the kill) gives one run per
// request id, the same one as the answer before the kill; and every run
// completes exactly once.
func TestCrashInlineRunsSQLite(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test: builds the binary and kills it while runs are invoked")
	}
	runInlineCrash(t, []string{"--data", t.TempDir()})
}

// TestCrashInlineRunsPostgres is TestCrashInlineRunsSQLite on PostgreSQL.
func TestCrashInlineRunsPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test: builds the binary and kills it while runs are invoked")
	}
	runInlineCrash(t, []string{"--database", crashTempDatabase(t)})
}

func runInlineCrash(t *testing.T, storeArgs []string) {
	ctx := context.Background()
	bin := proseBinary(t)
	deadline := testtime.Deadline(3 * time.Minute)
	ini := proseInit(t, bin, storeArgs...)
	// The default inline window (2 ms) is shorter than a run takes on a
	// loaded machine, where no invoke then executes its run at its creation
	// and the test has nothing to check; a long window keeps that path
	// exercised (the runs are one line, without book calls).
	inline := []string{"--inline-window", "10s"}
	p := startProse(t, bin, deadline, append(inline, storeArgs...)...)
	c := newAPIClient(p.addr, ini.APIKey)
	automation, err := c.createAutomation(ctx, ini.Workspace, "the output o is the key + \"!\"\n")
	if err != nil {
		t.Fatal(err)
	}

	const keys = 1500
	var mu sync.Mutex
	answered := map[string]string{} // key → run id, from an invoke answered before the kill
	var next, ok atomic.Int64
	killed := make(chan struct{})
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1)
				if i > keys {
					return
				}
				key := fmt.Sprintf("k%04d", i)
				id, err := c.invoke(ctx, ini.Workspace, automation, key, map[string]string{"key": key})
				if err != nil {
					select {
					case <-killed:
						continue // the server is gone: retried below
					default:
						t.Errorf("invoke %s before the kill: %v", key, err)
						return
					}
				}
				mu.Lock()
				answered[key] = id
				mu.Unlock()
				ok.Add(1)
			}
		}()
	}
	// Kill it mid-way, while invokes are in flight.
	for ok.Load() < keys/3 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	close(killed)
	p.kill()
	wg.Wait()
	if t.Failed() {
		return
	}
	n := len(answered)
	if n == 0 || n == keys {
		t.Fatalf("the kill came at the wrong time: %d of %d invokes answered", n, keys)
	}

	st, err := app.OpenStore(ctx, storeFlag(storeArgs, "--data"), storeFlag(storeArgs, "--database"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	// Every answered run was written before its answer.
	executed := 0
	for key, id := range answered {
		r, err := st.GetRunByID(ctx, id)
		if err != nil {
			t.Fatalf("run %s of %s, answered before the kill: %v", id, key, err)
		}
		if r.State.Terminal() && r.UpdateTime.Equal(r.CreateTime) {
			executed++
		}
	}
	if executed == 0 {
		t.Fatalf("no run was executed at its creation: the test does not test it")
	}

	// Restart; retry every request id.
	p2 := startProse(t, bin, deadline, append(inline, storeArgs...)...)
	c2 := newAPIClient(p2.addr, ini.APIKey)
	runOf := map[string]string{} // key → run id
	for i := 1; i <= keys; i++ {
		key := fmt.Sprintf("k%04d", i)
		id, err := c2.invoke(ctx, ini.Workspace, automation, key, map[string]string{"key": key})
		if err != nil {
			t.Fatalf("invoke %s after the restart: %v", key, err)
		}
		if first, ok := answered[key]; ok && first != id {
			t.Fatalf("request id %s: run %s after the restart, %s before the kill", key, id, first)
		}
		runOf[key] = id
	}
	// Every run completes, once, with its key's output; one run per key.
	for key, id := range runOf {
		var r store.Run
		for {
			if r, err = st.GetRunByID(ctx, id); err != nil {
				t.Fatal(err)
			}
			if r.State.Terminal() || time.Now().After(deadline) {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		if r.State != store.RunCompleted {
			t.Fatalf("run %s of %s is %s: %s", id, key, r.State, r.Description)
		}
		out, err := codec.DecodeOutputs(r)
		if err != nil {
			t.Fatal(err)
		}
		if got := out["output o"].GetText(); got != key+"!" {
			t.Fatalf("run %s: output o = %q, want %q", key, got, key+"!")
		}
	}
	parts := strings.Split(ini.Workspace, "/") // organizations/{o}/workspaces/{w}
	if len(parts) != 4 {
		t.Fatalf("workspace %q", ini.Workspace)
	}
	total, token := 0, ""
	for {
		page, err := st.ListRuns(ctx, store.ListRunsRequest{OrganizationID: parts[1], WorkspaceID: parts[3], AutomationID: automation, PageSize: 1000, PageToken: token})
		if err != nil {
			t.Fatal(err)
		}
		total += len(page.Items)
		if token = page.NextPageToken; token == "" {
			break
		}
	}
	if total != keys {
		t.Fatalf("%d runs stored for %d request ids", total, keys)
	}
	t.Logf("%d of %d invokes answered before the kill, %d of them executed at their creation", n, keys, executed)
}
