package storetest

import (
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/proserun/prose/store"
)

// testAutomationSlugs: an automation created without an id is named by its
// display name's slug, the first free one in its workspace, also when
// creates race.
func testAutomationSlugs(t *testing.T, s *suite) {
	s.org(t, "acme")
	s.ws(t, "acme", "ops", "Ops")
	s.ws(t, "acme", "dev", "Dev")
	create := func(ws, name string) string {
		t.Helper()
		return of(s.st.CreateAutomation(s.ctx, store.Automation{OrganizationID: "acme", WorkspaceID: ws, DisplayName: name})).must(t).ID
	}
	var got []string
	for _, n := range []string{"Invoices", "invoices!", "Invoices", "Invoices report", "Счета", "!!!", "¿?", "2024 Q1"} {
		got = append(got, create("ops", n))
	}
	want := []string{"invoices", "invoices-2", "invoices-3", "invoices-report", "scheta", "automation", "automation-2", "automation-2024-q1"}
	if !slices.Equal(got, want) {
		t.Errorf("ids %q, want %q", got, want)
	}
	if id := create("dev", "Invoices"); id != "invoices" {
		t.Errorf("another workspace: %q, want invoices", id)
	}
	// A deleted automation keeps its id; an explicit id stays a conflict.
	of(s.st.DeleteAutomation(s.ctx, "acme", "ops", "invoices-3")).must(t)
	if id := create("ops", "Invoices"); id != "invoices-4" {
		t.Errorf("after a delete: %q, want invoices-4", id)
	}
	_, err := s.st.CreateAutomation(s.ctx, store.Automation{OrganizationID: "acme", WorkspaceID: "ops", ID: "invoices", DisplayName: "x"})
	wantErr(t, err, store.ErrAlreadyExists, "explicit id taken")

	// Concurrent creates of one name: every one succeeds, with its own id.
	const n = 8
	ids := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			a, err := s.st.CreateAutomation(s.ctx, store.Automation{OrganizationID: "acme", WorkspaceID: "dev", DisplayName: "Race"})
			ids[i], errs[i] = a.ID, err
		})
	}
	wg.Wait()
	for _, err := range errs {
		noErr(t, err)
	}
	slices.Sort(ids)
	wantRace := []string{"race"}
	for i := 2; i <= n; i++ {
		wantRace = append(wantRace, fmt.Sprintf("race-%d", i))
	}
	slices.Sort(wantRace)
	if !slices.Equal(ids, wantRace) {
		t.Errorf("concurrent ids %q, want %q", ids, wantRace)
	}
}

// testRunNumbers: RunNumbers on one store.
func testRunNumbers(t *testing.T, s *suite) { RunNumbers(t, s.st) }

// RunNumbers checks that the runs of an automation are numbered 1, 2, 3,
// … when they are created concurrently, one by one and in batches naming
// several automations, through each of replicas (stores on one database);
// a retry with a request id keeps its run's number.
func RunNumbers(t *testing.T, replicas ...store.Store) {
	s := &suite{st: replicas[0], ctx: t.Context()}
	s.org(t, "num")
	s.ws(t, "num", "w", "W")
	autos := []string{"a", "b"}
	for _, id := range autos {
		of(s.st.CreateAutomation(s.ctx, store.Automation{OrganizationID: "num", WorkspaceID: "w", ID: id, DisplayName: id, Code: "the output x is 1\n"})).must(t)
	}
	run := func(a, req string) store.Run {
		return store.Run{OrganizationID: "num", WorkspaceID: "w", AutomationID: a, Stage: store.StageDraft, StageVersion: 1, RequestID: req}
	}
	const workers, rounds = 4, 6
	var mu sync.Mutex
	given := map[string]map[int64]string{"a": {}, "b": {}} // automation → number → run id
	var wg sync.WaitGroup
	for w := range workers * len(replicas) {
		st := replicas[w%len(replicas)]
		wg.Go(func() {
			for i := range rounds {
				batch := []store.Run{run("a", ""), run("b", fmt.Sprintf("w%d-%d", w, i)), run("a", ""), run(autos[i%2], "")}
				runs, created, errs, err := st.CreateRuns(s.ctx, batch[:1+(w+i)%len(batch)])
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				for j, r := range runs {
					if errs[j] != nil || !created[j] {
						t.Errorf("run %d: created %v, %v", j, created[j], errs[j])
						continue
					}
					if prev, dup := given[r.AutomationID][r.Number]; dup {
						t.Errorf("%s #%d given to %s and %s", r.AutomationID, r.Number, prev, r.ID)
					}
					given[r.AutomationID][r.Number] = r.ID
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	for _, a := range autos {
		stored, _ := all(t, 100, func(tok string) (store.Page[store.Run], error) {
			return s.st.ListRuns(s.ctx, store.ListRunsRequest{OrganizationID: "num", WorkspaceID: "w", AutomationID: a, PageSize: 100, PageToken: tok})
		})
		for _, r := range stored {
			if given[a][r.Number] != r.ID {
				t.Errorf("%s: stored run %s has #%d, given to %q", a, r.ID, r.Number, given[a][r.Number])
			}
		}
		for n := int64(1); n <= int64(len(stored)); n++ {
			if _, ok := given[a][n]; !ok {
				t.Errorf("%s: %d runs, #%d missing (numbers not dense)", a, len(stored), n)
			}
		}
		if len(given[a]) != len(stored) {
			t.Errorf("%s: %d numbers given, %d runs stored", a, len(given[a]), len(stored))
		}
	}
	// A retry with a request id answers the first run, its number too.
	first, created, err := s.st.CreateRun(s.ctx, run("b", "w0-1")) // w0-1: round 1 of worker 0 had a batch of 2
	noErr(t, err)
	if created || first.Number != numberOf(given["b"], first.ID) {
		t.Errorf("retry: created %v, #%d", created, first.Number)
	}
	got := of(s.st.GetRun(s.ctx, "num", "w", "b", first.ID)).must(t)
	if got.Number != first.Number {
		t.Errorf("get: #%d, created as #%d", got.Number, first.Number)
	}
	// A run is found by its number (the CLI's "b #3"), in its automation
	// or in every automation of the workspace.
	for _, a := range []string{"b", "-"} {
		page := of(s.st.ListRuns(s.ctx, store.ListRunsRequest{OrganizationID: "num", WorkspaceID: "w", AutomationID: a,
			Filter: store.Cond{Field: "run_number", Op: store.OpEq, Value: int64(3)}, PageSize: 10})).must(t)
		var found []string
		for _, r := range page.Items {
			found = append(found, fmt.Sprintf("%s #%d", r.AutomationID, r.Number))
		}
		want := []string{"b #3"}
		if a == "-" {
			want = []string{"a #3", "b #3"}
		}
		slices.Sort(found)
		if !slices.Equal(found, want) {
			t.Errorf("automation %s, run_number = 3: %q, want %q", a, found, want)
		}
	}
}

func numberOf(given map[int64]string, id string) int64 {
	for n, x := range given {
		if x == id {
			return n
		}
	}
	return -1
}
