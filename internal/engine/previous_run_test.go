package engine_test

import (
	"context"
	"sync/atomic"
	"testing"

	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/internal/codec"
	"github.com/proserun/prose/internal/engine"
	"github.com/proserun/prose/internal/lang"
	"github.com/proserun/prose/store"
)

// countingBooks offers one procedure and counts its calls.
type countingBooks struct{ calls atomic.Int64 }

func (b *countingBooks) Lookup(context.Context, string) ([]lang.BookProcedure, error) {
	return []lang.BookProcedure{{Book: "test@1", Name: "price", Signature: "look up the price of an item (the price)"}}, nil
}

func (b *countingBooks) Call(_ context.Context, _ lang.BookProcedure, in map[string]lang.Value) (map[string]lang.Value, error) {
	b.calls.Add(1)
	return map[string]lang.Value{"price": lang.Num(lang.MustNumber("9.99"))}, nil
}

// A run that names a previous run of the same code and inputs reuses its
// journaled book results: the book is not called again. With other inputs it
// is.
func TestPreviousRunReusesJournal(t *testing.T) {
	bk := &countingBooks{}
	e := newEnv(t, engine.Options{Books: func(string, string) lang.Books { return bk }})
	e.start(t)
	a := e.automation(t, "look up the price of the item\nthe output price is the above\n")
	ctx := context.Background()
	invoke := func(item, prev string) store.Run {
		t.Helper()
		r, _, err := e.eng.Invoke(ctx, engine.InvokeRequest{OrganizationID: e.org, WorkspaceID: e.ws, AutomationID: a.ID, Stage: store.StageDraft,
			Inputs: map[string]*platformv1.Value{"item": text(item)}, PreviousRun: prev})
		if err != nil {
			t.Fatal(err)
		}
		return e.waitFor(t, a, r.ID, store.RunCompleted)
	}
	first := invoke("tea", "")
	if n := bk.calls.Load(); n != 1 {
		t.Fatalf("first run: %d book calls, want 1", n)
	}
	second := invoke("tea", first.ID)
	if n := bk.calls.Load(); n != 1 {
		t.Fatalf("a run reusing the previous run called the book again (%d calls)", n)
	}
	d, err := codec.DecodeRun(second)
	if err != nil {
		t.Fatal(err)
	}
	if got := d.Outputs["output price"].GetNumber(); got.GetLo() != 999 {
		t.Fatalf("output price from the journal: %v", got)
	}
	invoke("coffee", first.ID) // other inputs: the journal does not apply
	if n := bk.calls.Load(); n != 2 {
		t.Fatalf("a run with other inputs: %d book calls, want 2", n)
	}
}
