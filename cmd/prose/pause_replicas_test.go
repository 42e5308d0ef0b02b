package main

import (
	"context"
	"fmt"
	"testing"
	"time"

	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
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
	newReplica := pgReplica(t)
	a, _ := startApp(t, newReplica(), initResult{}, "")
	a.email = "owner-" + store.NewID() + "@example.test"
	var err error
	a.init, err = bootstrap(context.Background(), a.st, initOptions{organization: "Pause replicas org", email: a.email, workspace: "Ops"})
	if err != nil {
		t.Fatal(err)
	}
	a.app.stopEngine()
	cfgB := newReplica()
	cfgB.lease = 10 * time.Minute
	b, _ := startApp(t, cfgB, a.init, a.email)

	book := newGatedBook(t)
	a.registerStampBook(t, book.srv.URL, "1.0.0")
	auto := a.mkAutomation(t, "Two stamps", twoStampsCode, true)
	a.conn = grpcConn(t, a)

	forEachTransport(t, func(t *testing.T, tr apiTransport) {
		transport := tr.name
		before := book.calls.Load()
		m := b.api(t, "POST", b.automationsPath()+"/"+auto.id+":invoke",
			`{"stage":"AUTOMATION_STAGE_PUBLISHED","inputs":{"key":{"text":"`+transport+`"}}}`, 200)
		id := fmt.Sprint(m["run_id"])
		if got := <-book.entered; got != transport+"/1" {
			t.Fatalf("the book got %q", got)
		}
		reason := "paused on A over " + transport
		p := a.mustCall(t, tr, runSvc+"PauseRun", &platformv1.PauseRunRequest{
			OrganizationId: a.init.orgID, WorkspaceId: a.init.workspaceID, AutomationId: auto.id, RunId: id, Reason: reason})
		if field(p, "state.stopping.reason") != reason {
			t.Fatalf("pause: %v", p)
		}
		// B is told while the book call is in flight and the lease
		// (10 minutes, renewed every 200 s) has not expired.
		r := b.pollRun(t, auto.id, id, "B never learned of the pause", func(store.Run) bool { return b.app.engine.Pausing(id) },
			func(r store.Run) bool { return r.State != store.RunStopping })
		if r.State != store.RunStopping || r.LeaseExpireTime.Before(time.Now()) {
			t.Fatalf("run %s when B learned of the pause (lease until %s)", r.State, r.LeaseExpireTime)
		}
		book.release <- struct{}{}
		done := b.settled(t, auto.id, id)
		if done.State != store.RunStopped || done.Reason != reason {
			t.Fatalf("the paused run: %s %q", done.State, done.Reason)
		}
		if n := book.calls.Load() - before; n != 1 {
			t.Errorf("the book was called %d times: the run went on past the pause", n)
		}
	})
}
