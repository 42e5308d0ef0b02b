package engine_test

import (
	"context"
	"testing"
	"time"

	"github.com/pressly/goose/v3"
	"google.golang.org/protobuf/proto"

	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/internal/codec"
	"github.com/proserun/prose/internal/engine"
	"github.com/proserun/prose/store"
	"github.com/proserun/prose/store/migratetest"
	persistv1 "github.com/proserun/prose/store/persist/v1"
)

// TestRowsOfVersion13ReadBack: runs written before migration 00014, when
// they kept the public API's messages (ExecutableSteps, CompletedRunState,
// InvocationDetails, ResolveExceptionRequest), read back the same after
// it: a resolved run goes on with its guidance, a completed run renders its
// steps, inputs, outputs and invocation, a journal keeps its results.
func TestRowsOfVersion13ReadBack(t *testing.T) {
	migratetest.ForEachBackend(t, func(t *testing.T, b migratetest.Backend) {
		ctx := context.Background()
		// The rows are written by today's store code, which writes the
		// columns later migrations add: the schema is the latest with 00014
		// taken down, as if the rows were written before it.
		if err := b.MigrateTo(ctx, goose.MaxVersion); err != nil {
			t.Fatal(err)
		}
		if err := b.Apply(ctx, 14, false); err != nil {
			t.Fatal(err)
		}
		old, err := b.Open(ctx, store.WithoutMigrations())
		if err != nil {
			t.Fatal(err)
		}
		e := newEnvOn(t, old, engine.Options{PollInterval: time.Millisecond})
		a := e.automation(t, "get the invoice total\nthe output total is the invoice total * 2\n")
		num := func(lo uint32) *platformv1.Value {
			return &platformv1.Value{Kind: &platformv1.Value_Number{Number: &platformv1.Number{Lo: lo, Flags: 2 << 16}}}
		}
		mustMarshal := func(m proto.Message) []byte {
			b, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
			if err != nil {
				t.Fatal(err)
			}
			return b
		}
		inputs := map[string]*platformv1.Value{"customer": text("Ana"), "limit": num(1250)}
		v13Steps := mustMarshal(&platformv1.ExecutableSteps{Inputs: inputs, Executables: []*platformv1.ExecutableStep{{
			Code: a.Code, PhaseType: platformv1.AutomationPhaseType_AUTOMATION_PHASE_TYPE_MAIN,
		}}})
		v13Inputs := mustMarshal(&platformv1.ExecutableSteps{Inputs: inputs})
		v13Inv := mustMarshal(&platformv1.InvocationDetails{UserId: "u1", InvocationSource: platformv1.InvocationSource_INVOCATION_SOURCE_MANUAL})
		create := func() store.Run {
			r, _, err := old.CreateRun(ctx, store.Run{
				OrganizationID: e.org, WorkspaceID: e.ws, AutomationID: a.ID, Stage: store.StageDraft, StageVersion: a.Version,
				Steps: v13Steps, UserInputs: v13Inputs, InvocationDetails: v13Inv,
			})
			if err != nil {
				t.Fatal(err)
			}
			return r
		}

		// A run completed with outputs in the old shape, and a journal
		// entry in the old shape.
		done := create()
		claimed, err := old.ClaimRuns(ctx, "w-old", 10, time.Now().Add(time.Hour))
		if err != nil || len(claimed) != 1 || claimed[0].ID != done.ID {
			t.Fatalf("claim: %v %v", claimed, err)
		}
		outputs := map[string]*platformv1.Value{"output total": num(2500)}
		v13Data := mustMarshal(&platformv1.ExecutableSteps{Inputs: map[string]*platformv1.Value{"price": num(999)}})
		if err := old.SaveProgress(ctx, "w-old", done.ID, store.Progress{Journal: []store.JournalEntry{{Kind: "book", Key: "k", Data: v13Data}}}); err != nil {
			t.Fatal(err)
		}
		if _, err := old.FinishRun(ctx, "w-old", done.ID, store.RunOutcome{
			State: store.RunCompleted, Outputs: mustMarshal(&platformv1.CompletedRunState{Outputs: outputs}), Step: 1,
		}); err != nil {
			t.Fatal(err)
		}
		// A run that waits for guidance, resolved in the old shape.
		waiting := create()
		stop := startEngine(e)
		w := e.waitFor(t, a, waiting.ID, store.RunAwaitingGuidance)
		stop()
		v13Guidance := mustMarshal(&platformv1.ResolveExceptionRequest{Guidance: &platformv1.ResolveExceptionRequest_ProvideValues{
			ProvideValues: &platformv1.ProvideValues{Values: map[string]*platformv1.Value{"the invoice total": num(1250)}}}})
		if _, err := old.ResolveException(ctx, e.org, e.ws, w.ExceptionID, func(store.Exception) (store.Resolution, error) {
			return store.Resolution{Resolver: "users/u1", Data: v13Guidance}, nil
		}); err != nil {
			t.Fatal(err)
		}

		if err := old.Close(); err != nil {
			t.Fatal(err)
		}

		// Migrate (00014 up) and read back.
		if err := b.Apply(ctx, 14, true); err != nil {
			t.Fatal(err)
		}
		st, err := b.Open(ctx)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = st.Close() })
		e2 := &env{st: st, eng: engine.New(st, engine.Options{PollInterval: time.Millisecond}), org: e.org, ws: e.ws}
		e2.start(t)
		resumed := e2.waitFor(t, a, waiting.ID, store.RunCompleted)
		d, err := codec.DecodeRun(resumed)
		if err != nil {
			t.Fatal(err)
		}
		if got := d.Outputs["output total"]; !proto.Equal(got, num(2500)) {
			t.Fatalf("resumed run's output total = %v, want 25.00 (the old guidance 12.50 × 2)", got)
		}

		r, err := st.GetRun(ctx, e.org, e.ws, a.ID, done.ID)
		if err != nil {
			t.Fatal(err)
		}
		d, err = codec.DecodeRun(r)
		if err != nil {
			t.Fatal(err)
		}
		want := codec.RunData{
			Steps:       []engine.Step{{Code: a.Code, Phase: engine.PhaseMain}},
			StepsInputs: inputs, Inputs: inputs, Outputs: outputs,
			Invocation: &engine.Invocation{UserID: "u1", Source: engine.SourceManual},
		}
		if !sameRunData(d, want) {
			t.Fatalf("completed run reads back as\n%+v\nwant\n%+v", d, want)
		}
		j, err := st.ListJournal(ctx, done.ID)
		if err != nil || len(j) != 1 {
			t.Fatalf("journal: %v %v", j, err)
		}
		vals := &persistv1.Values{}
		if err := proto.Unmarshal(j[0].Data, vals); err != nil || vals.GetValues()["price"].GetNumber().GetLo() != 999 {
			t.Fatalf("journal entry reads back as %v (%v)", vals, err)
		}
	})
}

// startEngine runs e's engine until the returned function is called.
func startEngine(e *env) func() {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = e.eng.Run(ctx, 5*time.Second); close(done) }()
	return func() { cancel(); <-done }
}

func sameRunData(a, b codec.RunData) bool {
	sameVals := func(x, y map[string]*platformv1.Value) bool {
		return proto.Equal(&platformv1.CompletedRunState{Outputs: x}, &platformv1.CompletedRunState{Outputs: y})
	}
	if len(a.Steps) != len(b.Steps) || (a.Invocation == nil) != (b.Invocation == nil) ||
		a.Invocation != nil && *a.Invocation != *b.Invocation {
		return false
	}
	for i := range a.Steps {
		if a.Steps[i].Code != b.Steps[i].Code || a.Steps[i].Phase != b.Steps[i].Phase {
			return false
		}
	}
	return sameVals(a.StepsInputs, b.StepsInputs) && sameVals(a.Inputs, b.Inputs) && sameVals(a.Outputs, b.Outputs)
}
