package lang_test

import (
	"context"
	"errors"
	"strconv"
	"testing"

	"github.com/proserun/prose/internal/lang"
)

// hostRuns is a test double of the run engine's child runs: each started
// run is kept, and settles when the test runs it (with lang.Start on its
// own code, as a worker would).
type hostRuns struct {
	t       *testing.T
	started []lang.RunRequest
	index   []int // lang.JournalIndex of each start
	done    map[string]lang.RunOutcome
	err     error // of Settled
}

func (h *hostRuns) Start(ctx context.Context, req lang.RunRequest) (string, error) {
	idx, ok := lang.JournalIndex(ctx)
	if !ok {
		h.t.Error("Start without a journal index")
	}
	h.index = append(h.index, idx)
	h.started = append(h.started, req)
	return "runs/r" + strconv.Itoa(len(h.started)), nil
}

func (h *hostRuns) Settled(_ context.Context, names []string) ([]lang.RunOutcome, bool, error) {
	if h.err != nil {
		return nil, false, h.err
	}
	var out []lang.RunOutcome
	for _, n := range names {
		o, ok := h.done[n]
		if !ok {
			return nil, false, nil
		}
		out = append(out, o)
	}
	return out, true, nil
}

// runChild executes started run i from its code and inputs alone.
func (h *hostRuns) runChild(i int) {
	h.t.Helper()
	req := h.started[i]
	prog, err := lang.Parse(req.Code)
	if err != nil {
		h.t.Fatalf("child code does not parse: %v\n%s", err, req.Code)
	}
	res := lang.Start(context.Background(), prog, req.Inputs, lang.Options{})
	if res.Status != lang.Completed {
		h.t.Fatalf("child %d: %v %+v", i, res.Status, res.Exception)
	}
	if h.done == nil {
		h.done = map[string]lang.RunOutcome{}
	}
	h.done["runs/r"+strconv.Itoa(i+1)] = lang.RunOutcome{Status: "completed", Result: res.Outputs["output"]}
}

const parallelProgram = `the rate is 0.2
start a run where
  the procedure is "compute the tax of the amount"
  the amount is 200
  the rate is 1
say "started"
start a run where
  the procedure is "compute the tax of the amount"
  the amount is 100
  the note is "second"
the output record is the above's run
wait for the runs
the total is 0
process each run in the runs as follows
  if the run's status is "completed" then
    add the run's result to the total
the output total is the total
the output second is the second run's status
the output error is the second run's error
to compute the tax of an amount
  the result is the amount * 0.2 + the rate
`

// With Options.Runs, `start a run` starts runs of their own (with code
// that runs the procedure alone), and `wait for the runs` waits (Waiting)
// until they have settled, across a resume from the saved state.
func TestStartRunWithHost(t *testing.T) {
	h := &hostRuns{t: t}
	prog := parse(t, parallelProgram)
	res := lang.Start(context.Background(), prog, nil, lang.Options{Runs: h})
	if res.Status != lang.Waiting || res.State == nil {
		t.Fatalf("got %v %+v, want waiting", res.Status, res.Exception)
	}
	if len(h.started) != 2 || h.index[0] == h.index[1] {
		t.Fatalf("started %d runs at %v", len(h.started), h.index)
	}
	if got := plain(t, h.started[1].Inputs); got != `{"amount":100,"note":"second"}` {
		t.Errorf("inputs %s", got)
	}
	if got := plain(t, h.started[0].Inputs); got != `{"amount":200,"rate":1}` {
		t.Errorf("inputs %s", got)
	}
	if h.started[0].Procedure != "compute the tax of the amount" {
		t.Errorf("procedure %q", h.started[0].Procedure)
	}
	// Still waiting while one run has not settled: a resume waits again
	// and starts nothing more.
	h.runChild(0)
	res, err := lang.Resume(context.Background(), parse(t, parallelProgram), res.State, lang.Resolution{}, lang.Options{Runs: h})
	if err != nil || res.Status != lang.Waiting {
		t.Fatalf("got %v %v, want waiting", res.Status, err)
	}
	// The second run fails; the first completed.
	h.done["runs/r2"] = lang.RunOutcome{Status: "failed", Error: "Internal error: boom"}
	res, err = lang.Resume(context.Background(), parse(t, parallelProgram), res.State, lang.Resolution{}, lang.Options{Runs: h})
	if err != nil || res.Status != lang.Completed {
		t.Fatalf("got %v %v %+v", res.Status, err, res.Exception)
	}
	if len(h.started) != 2 {
		t.Fatalf("%d runs started, want 2 (a resume must not start them again)", len(h.started))
	}
	if got := plain(t, res.Outputs); got != `{"output error":"Internal error: boom","output record":"runs/r2","output second":"failed","output total":41.0}` {
		t.Errorf("outputs %s", got)
	}
	// The first child, run from its code alone, gives the inline result.
	// (the second has no rate: it would ask for it, as inline)
	if got := plain(t, map[string]lang.Value{"a": h.done["runs/r1"].Result}); got != `{"a":41.0}` {
		t.Errorf("child results %s", got)
	}
}

// A checkpoint after each start: a run recovered from it takes the started
// run's name from the journal instead of starting it again.
func TestStartRunJournaled(t *testing.T) {
	h := &hostRuns{t: t}
	var cps [][]byte
	res := lang.Start(context.Background(), parse(t, parallelProgram), nil, lang.Options{Runs: h,
		Checkpoint: func(s []byte) error { cps = append(cps, s); return nil }})
	if res.Status != lang.Waiting || len(cps) != 2 {
		t.Fatalf("got %v with %d checkpoints", res.Status, len(cps))
	}
	h2 := &hostRuns{t: t}
	res, err := lang.Resume(context.Background(), parse(t, parallelProgram), cps[1], lang.Resolution{}, lang.Options{Runs: h2})
	if err != nil || res.Status != lang.Waiting {
		t.Fatalf("got %v %v", res.Status, err)
	}
	if len(h2.started) != 0 {
		t.Fatalf("the recovered run started %d runs again", len(h2.started))
	}
	// An error reading the runs is an internal error at the wait.
	h2.err = errors.New("store down")
	res, err = lang.Resume(context.Background(), parse(t, parallelProgram), res.State, lang.Resolution{}, lang.Options{Runs: h2})
	if err != nil || res.Status != lang.Suspended || res.Exception.Group != lang.GroupInternalError {
		t.Fatalf("got %v %v %+v", res.Status, err, res.Exception)
	}
}
