package engine_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/internal/codec"
	"github.com/proserun/prose/internal/engine"
	"github.com/proserun/prose/store"
)

const factsCode = "the total is 120.50\nthe names are \"a\", \"b\"\nthe big is the items\nthe count is 0\nprocess each item as follows\n  add 1 to the count\nthe output is the count\n"

// TestHistoryFacts: each fact a statement sets is in the run's history at
// its statement, with its value while it is small (a list over
// MaxFactItems keeps its kind alone); a loop's statement once (its first
// value); past MaxFactEvents entries the run's facts are no longer
// recorded. The run itself is not affected. Inline and on a worker.
func TestHistoryFacts(t *testing.T) {
	for _, inline := range []bool{true, false} {
		for _, limit := range []int{0, 4} {
			name := "worker"
			if inline {
				name = "inline"
			}
			t.Run(name, func(t *testing.T) {
				opts := engine.Options{History: engine.HistoryLimits{MaxFactEvents: limit, MaxFactItems: 10}}
				if !inline {
					opts.InlineWindow = -1
				}
				facts, at := runFacts(t, opts)
				want := 6
				if limit > 0 {
					want = limit
				}
				if len(facts) != want {
					t.Fatalf("%d facts recorded, want %d", len(facts), want)
				}
				if f := facts[0]; f.Name != "total" || f.Values["total"].GetNumber().GetLo() != 12050 || at[0] != "the total is 120.50" {
					t.Errorf("first fact %+v at %q", f, at[0])
				}
				if f := facts[1]; f.Name != "names" || len(f.Values["names"].GetList().GetItems()) != 2 {
					t.Errorf("names: %+v", f)
				}
				if f := facts[2]; f.Name != "big" || f.Kind != "list" || len(f.Values) != 0 {
					t.Errorf("a list of 100 items: %+v, want its kind alone", f)
				}
				if limit == 0 {
					if f := facts[4]; f.Name != "count" || at[4] != "add 1 to the count" || f.Values["count"].GetNumber().GetLo() != 1 {
						t.Errorf("the loop's fact %+v at %q, want its first value", f, at[4])
					}
					if f := facts[5]; f.Name != "output" || f.Values["output"].GetNumber().GetLo() != 100 {
						t.Errorf("output %+v", f)
					}
				}
			})
		}
	}
}

// runFacts runs factsCode to its end and returns the facts its history
// records, with the code of their statements.
func runFacts(t *testing.T, opts engine.Options) ([]codec.FactEvent, []string) {
	t.Helper()
	e := newEnv(t, opts)
	e.start(t)
	a := e.automation(t, factsCode)
	items := &platformv1.List{}
	for i := range 100 {
		items.Items = append(items.Items, &platformv1.Value{Kind: &platformv1.Value_Number{Number: &platformv1.Number{Lo: uint32(i)}}})
	}
	r, _, err := e.eng.Invoke(context.Background(), engine.InvokeRequest{OrganizationID: e.org, WorkspaceID: e.ws, AutomationID: a.ID, Stage: store.StageDraft,
		Inputs: map[string]*platformv1.Value{"items": {Kind: &platformv1.Value_List{List: items}}}})
	if err != nil {
		t.Fatal(err)
	}
	e.waitFor(t, a, r.ID, store.RunCompleted)
	p, err := e.st.ListRunEvents(context.Background(), store.ListRunEventsRequest{RunID: r.ID, PageSize: 1000})
	if err != nil {
		t.Fatal(err)
	}
	var facts []codec.FactEvent
	var at []string
	entries := 0
	for _, ev := range p.Items {
		if ev.Kind != store.RunEventEngine {
			continue
		}
		h, err := codec.DecodeHistoryEvent(ev.Data)
		if err != nil || len(h.Facts) == 0 || ev.NodeKind != engine.NodeKindSetFact {
			t.Fatalf("entry %+v: %v", h, err)
		}
		// consecutive facts are one entry, its span theirs
		entries++
		if first, last := h.Facts[0], h.Facts[len(h.Facts)-1]; ev.Location.Start != first.Start || ev.Location.End != last.End {
			t.Errorf("entry at %+v, its facts from %d to %d", ev.Location, first.Start, last.End)
		}
		for _, f := range h.Facts {
			facts, at = append(facts, f), append(at, factsCode[f.Start:f.End])
		}
	}
	// inline, the run is one segment: its facts one entry (on a worker a
	// checkpoint may end the entry early)
	if entries == 0 || opts.InlineWindow >= 0 && entries != 1 {
		t.Errorf("%d entries of facts, want one (no other entry between them)", entries)
	}
	return facts, at
}

// TestHistoryFactsEntries: facts set in a row are one stored entry; a say
// ends it (the facts after are another); the history's entry limit counts
// each fact (a limit of 2: the first two facts, then HistoryTruncated).
func TestHistoryFactsEntries(t *testing.T) {
	const code = "the a is 1\nthe b is 2\nsay \"x\"\nthe c is 3\nthe d is 4\n"
	for limit, want := range map[int]string{0: "SetFact[a b] Say SetFact[c d]", 2: "SetFact[a b] HistoryTruncated"} {
		e := newEnv(t, engine.Options{History: engine.HistoryLimits{MaxEvents: limit}})
		e.start(t)
		a := e.automation(t, code)
		r, _, err := e.eng.Invoke(context.Background(), engine.InvokeRequest{OrganizationID: e.org, WorkspaceID: e.ws, AutomationID: a.ID, Stage: store.StageDraft})
		if err != nil {
			t.Fatal(err)
		}
		e.waitFor(t, a, r.ID, store.RunCompleted)
		p, err := e.st.ListRunEvents(context.Background(), store.ListRunEventsRequest{RunID: r.ID, PageSize: 100})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, ev := range p.Items {
			if ev.Kind != store.RunEventEngine {
				continue
			}
			h, err := codec.DecodeHistoryEvent(ev.Data)
			if err != nil {
				t.Fatal(err)
			}
			d := ev.NodeKind
			if len(h.Facts) > 0 {
				var names []string
				for _, f := range h.Facts {
					names = append(names, f.Name)
				}
				d += fmt.Sprint(names)
			}
			got = append(got, d)
		}
		if strings.Join(got, " ") != want {
			t.Errorf("limit %d: entries %v, want %s", limit, got, want)
		}
	}
}
