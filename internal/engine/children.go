package engine

import (
	"context"
	"fmt"
	"strconv"

	"github.com/proserun/prose/internal/codec"
	"github.com/proserun/prose/internal/codec/protovalue"
	"github.com/proserun/prose/internal/lang"
	"github.com/proserun/prose/internal/names"
	"github.com/proserun/prose/store"
)

// childRuns starts the runs of a run's `start a run` as child runs in the
// store (lang.Runs): pending runs of the parent's automation and stage,
// with a parent link, executed by any worker like other runs. The parent
// waits for them in state waiting, without a worker (see store.RunWaiting).
type childRuns struct {
	e      *Engine
	parent store.Run
	step   int
	// ctx is the flight's context (a lost lease or a shutdown, never a pause).
	ctx context.Context
	// maxDepth is lang.Limits.MaxRunDepth; depth the parent's (-1 until
	// looked up).
	maxDepth int
	depth    int
	// hist records the runs started in the parent's history.
	hist *history
}

// parentDepth is how many runs up the parent's chain of parents goes (0: no
// run started it), looked up once per flight and at most maxDepth+1 deep.
func (c *childRuns) parentDepth() (int, error) {
	if c.depth >= 0 {
		return c.depth, nil
	}
	d, up := 0, c.parent.ParentRun
	for up != "" && d <= c.maxDepth {
		r, err := c.e.st.GetRunByID(c.ctx, up)
		if err != nil {
			return 0, err
		}
		d++
		up = r.ParentRun
	}
	c.depth = d
	return d, nil
}

// Start creates the child run. Its request id is the parent's id, step and
// journal position, so that a parent recovered before its checkpoint gets
// the same child back instead of a second one.
func (c *childRuns) Start(ctx context.Context, req lang.RunRequest) (string, error) {
	idx, ok := lang.JournalIndex(ctx)
	if !ok {
		return "", fmt.Errorf("start a run: no journal position")
	}
	d, err := c.parentDepth()
	if err != nil {
		return "", err
	}
	if d >= c.maxDepth {
		return "", fmt.Errorf("this run is a child run %d deep, and runs nest at most %d deep (serve --max-run-depth)", d, c.maxDepth)
	}
	in, err := protovalue.MapToProto(req.Inputs)
	if err != nil {
		return "", fmt.Errorf("the inputs of the run: %w", err)
	}
	steps, err := encodeSteps(c.ctx, in, []Step{{Code: req.Code, Phase: PhaseMain}})
	if err != nil {
		return "", err
	}
	userIn, err := encodeValues(in)
	if err != nil {
		return "", err
	}
	p := c.parent
	r, created, err := c.e.st.CreateRun(c.ctx, store.Run{
		OrganizationID: p.OrganizationID, WorkspaceID: p.WorkspaceID, AutomationID: p.AutomationID,
		Stage: p.Stage, StageVersion: p.StageVersion, Steps: steps, UserInputs: userIn,
		InvocationDetails: p.InvocationDetails, ParentRun: p.ID,
		RequestID: "child:" + p.ID + ":" + strconv.Itoa(c.step) + ":" + strconv.Itoa(idx),
	})
	if err != nil {
		return "", err
	}
	if r.ParentRun != p.ID {
		return "", fmt.Errorf("request id of the child run is taken by run %s", r.ID)
	}
	at, _ := lang.CallSpan(ctx)
	c.hist.childRun(r.ID, at)
	if created {
		c.e.opts.Metrics.RunStarted(r.AutomationID)
	}
	c.e.announce(c.ctx) // any replica may run it
	return childName(r), nil
}

// Settled reads the child runs: settled when each is completed or failed.
// A completed child's result is its output `output`.
func (c *childRuns) Settled(ctx context.Context, names []string) ([]lang.RunOutcome, bool, error) {
	out := make([]lang.RunOutcome, len(names))
	for i, name := range names {
		r, err := c.e.st.GetRunByID(c.ctx, store.LastSegment(name))
		if err != nil {
			return nil, false, err
		}
		if r.ParentRun != c.parent.ID || r.OrganizationID != c.parent.OrganizationID {
			return nil, false, fmt.Errorf("%s is not a run that this run started", name)
		}
		switch r.State {
		case store.RunCompleted:
			outs, err := codec.DecodeOutputs(r)
			if err != nil {
				return nil, false, err
			}
			v := lang.Null()
			if p, ok := outs["output"]; ok {
				if v, err = protovalue.FromProto(p); err != nil {
					return nil, false, err
				}
			}
			out[i] = lang.RunOutcome{Status: "completed", Result: v}
		case store.RunFailed:
			out[i] = lang.RunOutcome{Status: "failed", Error: r.Description}
		default:
			return nil, false, nil
		}
	}
	return out, true, nil
}

// childName is the resource name of a child run, as the parent's program
// reads it (`the run` of each record of `the runs`).
func childName(r store.Run) string {
	return names.Run(r.OrganizationID, r.WorkspaceID, r.AutomationID, r.ID)
}
