package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/proserun/prose/internal/codec"
	"github.com/proserun/prose/store"
)

// InvokeRequest starts a run of an automation stage.
type InvokeRequest struct {
	OrganizationID string
	WorkspaceID    string
	AutomationID   string
	Stage          store.Stage
	// Inputs are the run's inputs as the client gave them.
	Inputs codec.Values
	// PreviousRun is the id or resource name of a run of the same automation
	// whose journaled results may be reused.
	PreviousRun string
	RequestID   string
	Name        string
	FileIDs     []string
	// Invocation is how the run was started (nil: not recorded).
	Invocation *Invocation
}

// Invoke creates a pending run of the automation's stage and wakes the
// workers. It returns the run and whether it was created (false: a retry
// with the same request id). Errors wrap store sentinels: ErrNotFound (no
// such automation, or deleted), ErrFailedPrecondition (the published stage
// was never published), ErrInvalidArgument (inputs that are not values).
// Nothing is created on error.
func (e *Engine) Invoke(ctx context.Context, req InvokeRequest) (store.Run, bool, error) {
	// The organization has work in progress: other organizations' long
	// runs leave it a processor (cpu.go).
	e.cpu.enter(req.OrganizationID)
	defer e.cpu.leave(req.OrganizationID)
	if req.Stage != store.StageDraft && req.Stage != store.StagePublished {
		return store.Run{}, false, fmt.Errorf("%w: stage must be draft or published", store.ErrInvalidArgument)
	}
	// The automation may come from the cache: the run is created only if
	// the stage is still at the version read (Run.CurrentStage); when it
	// moved on, it is read again and the create retried.
	code, version, err := e.stage(ctx, req, false)
	if err != nil {
		return store.Run{}, false, err
	}
	if err := codec.CheckValues(req.Inputs); err != nil {
		return store.Run{}, false, fmt.Errorf("%w: inputs: %w", store.ErrInvalidArgument, err)
	}
	for name := range req.Inputs {
		if strings.TrimSpace(name) == "" {
			return store.Run{}, false, fmt.Errorf("%w: inputs: an input has an empty name", store.ErrInvalidArgument)
		}
	}
	prev := ""
	if req.PreviousRun != "" {
		prev = store.LastSegment(req.PreviousRun)
		p, err := e.st.GetRunByID(ctx, prev)
		if err != nil || p.OrganizationID != req.OrganizationID || p.WorkspaceID != req.WorkspaceID || p.AutomationID != req.AutomationID {
			return store.Run{}, false, store.InvalidField("previous_run", "previous_run %q is not a run of this automation", req.PreviousRun)
		}
	}
	userIn, err := encodeValues(req.Inputs)
	if err != nil {
		return store.Run{}, false, err
	}
	inv, err := encodeInvocation(req.Invocation)
	if err != nil {
		return store.Run{}, false, err
	}
	var r store.Run
	var created bool
	for attempt := 1; ; attempt++ {
		stepsB, err := encodeSteps(ctx, req.Inputs, []Step{{Code: code, Phase: PhaseMain}})
		if err != nil {
			return store.Run{}, false, err
		}
		in := store.Run{
			OrganizationID: req.OrganizationID, WorkspaceID: req.WorkspaceID, AutomationID: req.AutomationID,
			Name: req.Name, Stage: req.Stage, StageVersion: version, CurrentStage: true, Steps: stepsB, UserInputs: userIn,
			InvocationDetails: inv, FileIDs: req.FileIDs, PreviousRun: prev, RequestID: req.RequestID,
		}
		executed := false
		if prev == "" {
			// A run reusing a previous run's journal is left to a worker.
			in, executed = e.executeInline(ctx, in, code)
		}
		var pool *workerPool
		if !executed {
			var ok bool
			if pool, ok = e.reserveSlot(req.OrganizationID); ok {
				in.State, in.LeaseOwner, in.LeaseExpireTime = store.RunExecuting, e.opts.Owner, e.opts.Clock().Add(e.opts.LeaseDuration)
			}
		}
		r, created, err = e.create(ctx, in)
		if err == nil && created && in.State != "" && in.State != store.RunPending && r.State == store.RunPending {
			// Executed (or to start leased) but created pending: runs of
			// the organization wait in the queue. Until a claim empties
			// it, the organization's invokes create their runs pending
			// without executing them first (see queued).
			e.setQueued(req.OrganizationID)
		}
		if pool != nil {
			switch {
			case err != nil || !created || r.State != store.RunExecuting:
				e.unreserve(pool, req.OrganizationID)
			case !e.launch(pool, r):
				e.log.Info("run left to its lease: the engine stopped", "run", r.ID)
			}
		}
		if errors.Is(err, store.ErrStageChanged) && attempt < maxStageAttempts {
			if code, version, err = e.stage(ctx, req, true); err != nil {
				return store.Run{}, false, err
			}
			continue
		}
		if err != nil {
			return store.Run{}, false, err
		}
		break
	}
	if !created && (r.WorkspaceID != req.WorkspaceID || r.AutomationID != req.AutomationID) {
		// AIP-155: a request id names one request; reusing it for another is
		// an error, never someone else's run.
		return store.Run{}, false, fmt.Errorf("request_id %q was already used to start a run of another automation: %w", req.RequestID, store.ErrAlreadyExists)
	}
	if created {
		e.Changed(r.OrganizationID, r.WorkspaceID)
		e.opts.Metrics.RunStarted(r.AutomationID)
		if r.State.Terminal() {
			// Executed at its creation (inline.go).
			e.countEnded(r, r.State)
		}
	}
	if created && (r.State.Terminal() || r.State == store.RunExecuting) {
		// Executed at its creation, or created leased to this engine
		// (inline.go): no work for the other workers.
		return asCreated(r), true, nil
	}
	if created {
		e.announce(ctx)
	}
	return r, created, nil
}

// maxStageAttempts bounds the re-reads of an automation whose stage keeps
// changing while a run of it is being created.
const maxStageAttempts = 3

// stage returns the code and version of the requested stage of the
// automation, read from the cache unless fresh. An answer that refuses the
// invoke (no such automation, deleted, never published) is always read
// fresh.
func (e *Engine) stage(ctx context.Context, req InvokeRequest, fresh bool) (string, int64, error) {
	k := autoKey{req.OrganizationID, req.WorkspaceID, req.AutomationID}
	a, hit := store.Automation{}, false
	if !fresh {
		a, hit = e.autos.get(k)
	}
	if !hit {
		var err error
		if a, err = e.st.GetAutomation(ctx, req.OrganizationID, req.WorkspaceID, req.AutomationID); err != nil {
			return "", 0, err
		}
		e.autos.put(k, a)
	}
	if !a.DeleteTime.IsZero() {
		if hit {
			return e.stage(ctx, req, true)
		}
		return "", 0, fmt.Errorf("automation %q is deleted: %w", a.ID, store.ErrNotFound)
	}
	if req.Stage == store.StagePublished {
		if a.PublishedVersion == 0 {
			if hit {
				return e.stage(ctx, req, true)
			}
			return "", 0, fmt.Errorf("automation %q has never been published: invoke its draft stage or publish it first: %w", a.ID, store.ErrFailedPrecondition)
		}
		return a.PublishedCode, a.PublishedVersion, nil
	}
	return a.Code, a.Version, nil
}

// autoKey names an automation.
type autoKey struct{ org, ws, id string }

// autoCacheMax bounds the automations cached (beyond it, the cache starts
// again empty); autoCacheTTL bounds how long one is kept.
const (
	autoCacheMax = 1024
	autoCacheTTL = time.Minute
)

// autoCache keeps the automations Invoke read. Entries may be stale: runs
// are created with Run.CurrentStage, so the store refuses a stage that
// moved on and Invoke reads it again.
type autoCache struct {
	mu sync.Mutex
	m  map[autoKey]cachedAuto
}

type cachedAuto struct {
	a  store.Automation
	at time.Time
}

func (c *autoCache) get(k autoKey) (store.Automation, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[k]
	if !ok || time.Since(e.at) >= autoCacheTTL {
		return store.Automation{}, false
	}
	return e.a, true
}

func (c *autoCache) put(k autoKey, a store.Automation) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= autoCacheMax {
		c.m = map[autoKey]cachedAuto{}
	}
	c.m[k] = cachedAuto{a: a, at: time.Now()}
}
