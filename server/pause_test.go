package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/server/testenv"
	"github.com/proserun/prose/store"
)

// gatedBook is an external stamp book whose calls block until released.
type gatedBook struct {
	srv     *httptest.Server
	calls   atomic.Int64
	entered chan string   // the ticket of each call, when it arrives
	release chan struct{} // one receive answers one call
}

func newGatedBook(t *testing.T) *gatedBook {
	t.Helper()
	b := &gatedBook{entered: make(chan string, 16), release: make(chan struct{})}
	b.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Inputs struct {
				Ticket string `json:"ticket"`
			} `json:"inputs"`
		}
		if r.URL.Path != "/procedures/stamp:call" || json.NewDecoder(r.Body).Decode(&req) != nil {
			http.Error(w, "bad call", http.StatusBadRequest)
			return
		}
		b.calls.Add(1)
		b.entered <- req.Inputs.Ticket
		select {
		case <-b.release:
		case <-r.Context().Done():
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"outputs": map[string]string{"stamp": "S:" + req.Inputs.Ticket}})
	}))
	t.Cleanup(b.srv.Close)
	return b
}

// TestPauseDuringBookCall pauses runs while their book call is in flight
// (over HTTP, then over gRPC): the pause answers stopping, the call
// finishes and is journaled, the run ends stopped with the reason kept
// (never failed), and continue completes it without calling the book
// again.
func TestPauseDuringBookCall(t *testing.T) {
	e := newTestEnv(t)
	book := newGatedBook(t)
	e.registerStampBook(t, book.srv.URL, "1.0.0")
	a := e.MkAutomation(t, "Stamper", stampCode, true)

	forEachTransport(t, func(t *testing.T, tr apiTransport) {
		transport := tr.name
		before := book.calls.Load()
		m := e.API(t, "POST", e.AutomationsPath()+"/"+a.ID+":invoke",
			`{"stage":"AUTOMATION_STAGE_PUBLISHED","inputs":{"key":{"text":"`+transport+`"}}}`, 200)
		id := fmt.Sprint(m["run_id"])
		if got := <-book.entered; got != transport+"/1" {
			t.Fatalf("the book got %q", got)
		}
		reason := "checking the stamp over " + transport
		paused := e.mustCall(t, tr, runSvc+"PauseRun", &platformv1.PauseRunRequest{
			OrganizationId: e.Init.OrganizationID, WorkspaceId: e.Init.WorkspaceID, AutomationId: a.ID, RunId: id, Reason: reason})
		if testenv.Field(paused, "state.stopping.reason") != reason {
			t.Fatalf("pause of an executing run: %v", paused)
		}
		book.release <- struct{}{}
		stopped := e.WaitRun(t, a.ID, id, "stopped")
		if testenv.Field(stopped, "state.stopped.reason") != reason {
			t.Fatalf("stopped: %v", stopped)
		}
		if v1 := e.Legacy(t, "GET", "/v1/run/"+id, "", 200); v1["state"] != "stopped" {
			t.Errorf("v1 state: %v", v1)
		}
		journal, err := e.Store.ListJournal(context.Background(), id)
		if err != nil || len(journal) != 1 {
			t.Fatalf("journal of the stopped run: %v %+v", err, journal)
		}
		e.mustCall(t, tr, runSvc+"ContinueRun", &platformv1.ContinueRunRequest{
			OrganizationId: e.Init.OrganizationID, WorkspaceId: e.Init.WorkspaceID, AutomationId: a.ID, RunId: id})
		done := e.WaitRun(t, a.ID, id, "completed")
		if got := testenv.Field(done, "state.completed.outputs.output a.text"); got != "S:"+transport+"/1" {
			t.Errorf("output a = %v", got)
		}
		if n := book.calls.Load() - before; n != 1 {
			t.Errorf("the book was called %d times, want once", n)
		}
	})
}

// raceCode waits for an approval, then calls the stamp book with it.
const raceCode = "get the approval\nstamp the approval\nthe output a is the above\n"

// TestPauseResolveRace resolves the exceptions of many waiting runs while
// pausing them, both at once: no run fails, every pause that answered 200
// ends stopped (with its reason), and every pause that answered
// FAILED_PRECONDITION came after the run completed. With
// PROSE_TEST_POSTGRES_URL set it runs on PostgreSQL.
func TestPauseResolveRace(t *testing.T) {
	e := newTestEnv(t)
	book := stampServer(t)
	e.registerStampBook(t, book.URL, "1.0.0")
	a := e.MkAutomation(t, "Approver", raceCode, true)
	const n = 60
	ids := make([]string, n)
	for i := range ids {
		m := e.API(t, "POST", e.AutomationsPath()+"/"+a.ID+":invoke", `{"stage":"AUTOMATION_STAGE_PUBLISHED"}`, 200)
		ids[i] = fmt.Sprint(m["run_id"])
	}
	excs := make([]string, n)
	for i, id := range ids {
		excs[i] = e.WaitRunState(t, a.ID, id, store.RunAwaitingGuidance).ExceptionID
	}
	excPath := "/api/v1/organizations/" + e.Init.OrganizationID + "/workspaces/" + e.Init.WorkspaceID + "/exceptions/"
	hdr := map[string]string{"Authorization": "Bearer " + e.Init.APIKey}
	pauseCode := make([]int, n)
	var wg sync.WaitGroup
	for i := range ids {
		resolve := func() {
			code, _, raw := e.DoHTTP(t, "POST", excPath+excs[i]+":resolve",
				`{"provide_values":{"values":{"the approval":{"text":"ok `+fmt.Sprint(i)+`"}}}}`, hdr)
			if code != 200 {
				t.Errorf("resolve %d: HTTP %d %s", i, code, raw)
			}
		}
		pause := func() {
			code, _, raw := e.DoHTTP(t, "POST", e.RunPath(a.ID, ids[i])+":pause", `{"reason":"race `+fmt.Sprint(i)+`"}`, hdr)
			if code != 200 && (code != http.StatusBadRequest || !strings.Contains(string(raw), "too late")) {
				t.Errorf("pause %d: HTTP %d %s", i, code, raw)
			}
			pauseCode[i] = code
		}
		if i%2 == 0 {
			// Both at once: the pause usually finds the run waiting or pending.
			wg.Go(resolve)
			wg.Go(pause)
		} else {
			// The pause right behind the resolution: it finds the run
			// pending, executing (its book call) or completed.
			wg.Go(func() { resolve(); pause() })
		}
	}
	wg.Wait()
	stopped, late := 0, 0
	for i, id := range ids {
		r := e.settled(t, a.ID, id)
		switch {
		case r.State == store.RunFailed:
			t.Errorf("run %d failed: %s", i, r.Description)
		case pauseCode[i] == 200 && (r.State != store.RunStopped || r.Reason != fmt.Sprint("race ", i)):
			t.Errorf("run %d: the pause answered 200, the run is %s (reason %q)", i, r.State, r.Reason)
		case pauseCode[i] != 200 && r.State != store.RunCompleted:
			t.Errorf("run %d: the pause came too late, the run is %s", i, r.State)
		case pauseCode[i] == 200:
			stopped++
		default:
			late++
		}
	}
	t.Logf("%d runs stopped, %d pauses too late", stopped, late)
}

// settled waits until a run is neither pending, executing nor stopping.
func (e *testEnv) settled(t *testing.T, automation, id string) store.Run {
	t.Helper()
	return e.PollRun(t, automation, id, "want it settled", func(r store.Run) bool {
		switch r.State {
		case store.RunPending, store.RunExecuting, store.RunStopping:
			return false
		}
		return true
	}, func(store.Run) bool { return false })
}
