package engine_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.uber.org/goleak"

	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/internal/codec"
	"github.com/proserun/prose/internal/engine"
	"github.com/proserun/prose/internal/lang"
	"github.com/proserun/prose/internal/testtime"
	"github.com/proserun/prose/store"
	"github.com/proserun/prose/store/postgres/pgtest"
	"github.com/proserun/prose/store/sqlite"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// tempPostgres creates a database on PROSE_TEST_POSTGRES_URL (skipping
// without it), dropped at cleanup, and returns its URL.
func tempPostgres(t *testing.T) string {
	t.Helper()
	return pgtest.TempDatabase(t, "prose_test_")
}

type env struct {
	st  store.Store
	eng *engine.Engine
	org string
	ws  string
}

func newEnv(t *testing.T, opts engine.Options) *env {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return newEnvOn(t, st, opts)
}

// newEnvOn is newEnv over st.
func newEnvOn(t *testing.T, st store.Store, opts engine.Options) *env {
	t.Helper()
	ctx := context.Background()
	org, err := st.CreateOrganization(ctx, store.Organization{DisplayName: "Acme"})
	if err != nil {
		t.Fatal(err)
	}
	ws, err := st.CreateWorkspace(ctx, store.Workspace{OrganizationID: org.ID, Title: "ops"})
	if err != nil {
		t.Fatal(err)
	}
	return &env{st: st, eng: engine.New(st, opts), org: org.ID, ws: ws.ID}
}

// start runs the engine until the test ends.
func (e *env) start(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = e.eng.Run(ctx, 5*time.Second); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	deadline := testtime.Deadline(testtime.Wait)
	for !e.eng.Running() {
		if time.Now().After(deadline) {
			t.Fatal("the engine never started running")
		}
		time.Sleep(time.Millisecond)
	}
}

func (e *env) automation(t *testing.T, code string) store.Automation {
	t.Helper()
	a, err := e.st.CreateAutomation(context.Background(), store.Automation{OrganizationID: e.org, WorkspaceID: e.ws, DisplayName: "a", Code: code})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// waitState polls the store until the run leaves the given transient states.
func (e *env) waitFor(t *testing.T, a store.Automation, id string, want store.RunState) store.Run {
	t.Helper()
	deadline := testtime.Deadline(testtime.Wait)
	for {
		r, err := e.st.GetRun(context.Background(), e.org, e.ws, a.ID, id)
		if err != nil {
			t.Fatal(err)
		}
		if r.State == want {
			return r
		}
		if r.State.Terminal() || time.Now().After(deadline) {
			t.Fatalf("run %s is %s (%s), want %s", id, r.State, r.Description, want)
		}
		e.eng.Wake()
		time.Sleep(time.Millisecond)
	}
}

func text(s string) *platformv1.Value {
	return &platformv1.Value{Kind: &platformv1.Value_Text{Text: s}}
}

func TestRunCompletes(t *testing.T) {
	e := newEnv(t, engine.Options{})
	e.start(t)
	a := e.automation(t, "the output greeting is \"Hello, \" + the name\n")
	r, created, err := e.eng.Invoke(context.Background(), engine.InvokeRequest{
		OrganizationID: e.org, WorkspaceID: e.ws, AutomationID: a.ID, Stage: store.StageDraft,
		Inputs: map[string]*platformv1.Value{"name": text("Ana")}, RequestID: "req-1",
	})
	if err != nil || !created {
		t.Fatal(err, created)
	}
	done := e.waitFor(t, a, r.ID, store.RunCompleted)
	d, err := codec.DecodeRun(done)
	if err != nil {
		t.Fatal(err)
	}
	if got := d.Outputs["output greeting"].GetText(); got != "Hello, Ana" {
		t.Fatalf("output greeting = %q", got)
	}
	// The same request id returns the first run.
	again, created, err := e.eng.Invoke(context.Background(), engine.InvokeRequest{
		OrganizationID: e.org, WorkspaceID: e.ws, AutomationID: a.ID, Stage: store.StageDraft, RequestID: "req-1",
	})
	if err != nil || created || again.ID != r.ID {
		t.Fatalf("retry: %v created=%v id=%s want %s", err, created, again.ID, r.ID)
	}
	// The same request id for another automation is an error.
	b := e.automation(t, "the output is 1\n")
	if _, _, err := e.eng.Invoke(context.Background(), engine.InvokeRequest{
		OrganizationID: e.org, WorkspaceID: e.ws, AutomationID: b.ID, Stage: store.StageDraft, RequestID: "req-1",
	}); !errors.Is(err, store.ErrAlreadyExists) {
		t.Fatalf("request id reused for another automation: %v", err)
	}
}

func TestMissingValueIsGuided(t *testing.T) {
	e := newEnv(t, engine.Options{})
	e.start(t)
	code := "get the invoice total\nthe output total is the invoice total * 2\n"
	a := e.automation(t, code)
	r, _, err := e.eng.Invoke(context.Background(), engine.InvokeRequest{OrganizationID: e.org, WorkspaceID: e.ws, AutomationID: a.ID, Stage: store.StageDraft})
	if err != nil {
		t.Fatal(err)
	}
	w := e.waitFor(t, a, r.ID, store.RunAwaitingGuidance)
	if w.Location != (store.Location{Start: 0, End: 21}) || w.Description != "Please provide the invoice total" {
		t.Fatalf("awaiting: %+v %q", w.Location, w.Description)
	}
	ctx := context.Background()
	// Values for another fact do not fit.
	bad := engine.Guidance{Kind: engine.GuidanceProvideValues, Values: map[string]lang.Value{"the customer": lang.Text("x")}}
	if _, err := e.eng.Resolve(ctx, e.org, e.ws, w.ExceptionID, "users/u", bad); err == nil {
		t.Fatal("values for another fact were accepted")
	}
	good := engine.Guidance{Kind: engine.GuidanceProvideValues, Values: map[string]lang.Value{"the invoice total": lang.Num(lang.MustNumber("12.50"))}}
	x, err := e.eng.Resolve(ctx, e.org, e.ws, w.ExceptionID, "users/u", good)
	if err != nil || x.State != store.ExceptionResolved || x.Resolver != "users/u" {
		t.Fatalf("resolve: %v %+v", err, x)
	}
	// A second resolution loses.
	if _, err := e.eng.Resolve(ctx, e.org, e.ws, w.ExceptionID, "users/u", good); err == nil {
		t.Fatal("a resolved exception was resolved again")
	}
	done := e.waitFor(t, a, r.ID, store.RunCompleted)
	d, _ := codec.DecodeRun(done)
	if got := d.Outputs["output total"].GetNumber(); got.GetLo() != 2500 || got.GetFlags() != 2<<16 {
		t.Fatalf("output total = %v", got)
	}
}
