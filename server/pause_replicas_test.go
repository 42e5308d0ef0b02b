package server_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/server/app"
	"github.com/proserun/prose/server/testenv"
	"github.com/proserun/prose/store"
)

// twoStampsCode calls the stamp book twice.
const twoStampsCode = "the alpha is the key + \"/1\"\nstamp the alpha\nthe beta is the key + \"/2\"\nstamp the beta\nthe output a is the above\n"

// TestPauseAcrossReplicas: two PostgreSQL replicas, A (its engine stopped:
// it executes nothing) and B (a 10-minute lease: it renews, and so learns of
// pauses through renewals, only every 200 s). A run executes on B, in its
// first book call; it is paused on A (over HTTP, then over gRPC). B learns
// of the pause from A's notice while the call is in flight, long before
// the lease would tell it, and the run stops at its next statement: it
// ends stopped with the reason, and the second book call is never made.
func TestPauseAcrossReplicas(t *testing.T) {
	newReplica := testenv.PGReplica(t)
	a, _ := startApp(t, newReplica(), app.InitResult{}, "")
	a.Email = "owner-" + store.NewID() + "@example.test"
	var err error
	a.Init, err = app.Bootstrap(context.Background(), a.Store, app.InitOptions{Organization: "Pause replicas org", Email: a.Email, Workspace: "Ops"})
	if err != nil {
		t.Fatal(err)
	}
	a.App.StopEngine()
	cfgB := newReplica()
	cfgB.Lease = 10 * time.Minute
	b, _ := startApp(t, cfgB, a.Init, a.Email)

	book := newGatedBook(t)
	a.registerStampBook(t, book.srv.URL, "1.0.0")
	auto := a.MkAutomation(t, "Two stamps", twoStampsCode, true)
	a.Conn = grpcConn(t, a)

	forEachTransport(t, func(t *testing.T, tr apiTransport) {
		transport := tr.name
		before := book.calls.Load()
		m := b.API(t, "POST", b.AutomationsPath()+"/"+auto.ID+":invoke",
			`{"stage":"AUTOMATION_STAGE_PUBLISHED","inputs":{"key":{"text":"`+transport+`"}}}`, 200)
		id := fmt.Sprint(m["run_id"])
		if got := <-book.entered; got != transport+"/1" {
			t.Fatalf("the book got %q", got)
		}
		reason := "paused on A over " + transport
		p := a.mustCall(t, tr, runSvc+"PauseRun", &platformv1.PauseRunRequest{
			OrganizationId: a.Init.OrganizationID, WorkspaceId: a.Init.WorkspaceID, AutomationId: auto.ID, RunId: id, Reason: reason})
		if testenv.Field(p, "state.stopping.reason") != reason {
			t.Fatalf("pause: %v", p)
		}
		// B is told while the book call is in flight and the lease
		// (10 minutes, renewed every 200 s) has not expired.
		r := b.PollRun(t, auto.ID, id, "B never learned of the pause", func(store.Run) bool { return b.App.Engine.Pausing(id) },
			func(r store.Run) bool { return r.State != store.RunStopping })
		if r.State != store.RunStopping || r.LeaseExpireTime.Before(time.Now()) {
			t.Fatalf("run %s when B learned of the pause (lease until %s)", r.State, r.LeaseExpireTime)
		}
		book.release <- struct{}{}
		done := b.settled(t, auto.ID, id)
		if done.State != store.RunStopped || done.Reason != reason {
			t.Fatalf("the paused run: %s %q", done.State, done.Reason)
		}
		if n := book.calls.Load() - before; n != 1 {
			t.Errorf("the book was called %d times: the run went on past the pause", n)
		}
	})
}
