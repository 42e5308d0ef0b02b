package engine

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/lang"
	"github.com/proserun/prose/lang/protovalue"
	"github.com/proserun/prose/store"
)

// InvokeRequest starts a run of an automation stage.
type InvokeRequest struct {
	OrganizationID string
	WorkspaceID    string
	AutomationID   string
	Stage          store.Stage
	Inputs         map[string]*platformv1.Value
	// PreviousRun is the id or resource name of a run of the same automation
	// whose journaled results may be reused.
	PreviousRun string
	RequestID   string
	Name        string
	FileIDs     []string
	Invocation  *platformv1.InvocationDetails
}

// Invoke creates a pending run of the automation's stage and wakes the
// workers. It returns the run and whether it was created (false: a retry
// with the same request id). Errors wrap store sentinels: ErrNotFound (no
// such automation, or deleted), ErrFailedPrecondition (the published stage
// was never published), ErrInvalidArgument (inputs that are not values).
// Nothing is created on error.
func (e *Engine) Invoke(ctx context.Context, req InvokeRequest) (store.Run, bool, error) {
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
	if _, err := protovalue.MapFromProto(req.Inputs); err != nil {
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
			return store.Run{}, false, fmt.Errorf("%w: previous_run %q is not a run of this automation", store.ErrInvalidArgument, req.PreviousRun)
		}
	}
	userIn, err := EncodeValues(req.Inputs)
	if err != nil {
		return store.Run{}, false, err
	}
	var inv []byte
	if req.Invocation != nil {
		if inv, err = marshal.Marshal(req.Invocation); err != nil {
			return store.Run{}, false, err
		}
	}
	var r store.Run
	var created bool
	for attempt := 1; ; attempt++ {
		steps := &platformv1.ExecutableSteps{
			Inputs:      req.Inputs,
			Executables: []*platformv1.ExecutableStep{{Code: code, PhaseType: platformv1.AutomationPhaseType_AUTOMATION_PHASE_TYPE_MAIN}},
		}
		stepsB, err := EncodeSteps(steps)
		if err != nil {
			return store.Run{}, false, err
		}
		r, created, err = e.create(ctx, store.Run{
			OrganizationID: req.OrganizationID, WorkspaceID: req.WorkspaceID, AutomationID: req.AutomationID,
			Name: req.Name, Stage: req.Stage, StageVersion: version, CurrentStage: true, Steps: stepsB, UserInputs: userIn,
			InvocationDetails: inv, FileIDs: req.FileIDs, PreviousRun: prev, RequestID: req.RequestID,
		})
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
		e.announce(ctx)
		e.Changed(r.OrganizationID, r.WorkspaceID)
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

// Pause pauses a run (see store.Runs.PauseRun) and, when this engine is
// executing it, stops it at its next statement.
func (e *Engine) Pause(ctx context.Context, org, ws, automation, id, reason string) (store.Run, error) {
	r, err := e.st.PauseRun(ctx, org, ws, automation, id, reason)
	if err != nil {
		return r, err
	}
	e.Changed(org, ws)
	if r.State == store.RunStopping {
		e.mu.Lock()
		f := e.inflight[id]
		e.mu.Unlock()
		if f != nil {
			f.pause(errPaused)
		}
	}
	return r, nil
}

// Continue continues a stopped run and wakes the workers.
func (e *Engine) Continue(ctx context.Context, org, ws, automation, id string) (store.Run, error) {
	r, err := e.st.ContinueRun(ctx, org, ws, automation, id)
	if err == nil && r.State == store.RunPending {
		e.announce(ctx)
	}
	if err == nil {
		e.Changed(org, ws)
	}
	return r, err
}

// Resolve checks that guidance fits a pending exception, resolves it and
// lets its run continue. ErrInvalidArgument when the guidance does not fit
// (values for another fact, an answer to no question, code that does not
// parse); ErrFailedPrecondition when the exception is not pending (exactly
// one of concurrent resolutions wins).
func (e *Engine) Resolve(ctx context.Context, org, ws, id, resolver string, req *platformv1.ResolveExceptionRequest) (store.Exception, error) {
	x, err := e.st.GetException(ctx, org, ws, id)
	if err != nil {
		return x, err
	}
	if x.State != store.ExceptionPending {
		return x, fmt.Errorf("exception %q is %s; only a pending exception can be resolved: %w", id, x.State, store.ErrFailedPrecondition)
	}
	details, err := DecodeException(x.Details)
	if err != nil {
		return x, err
	}
	if err := CheckGuidance(details, req); err != nil {
		return x, err
	}
	data, err := EncodeGuidance(req)
	if err != nil {
		return x, err
	}
	out, err := e.st.ResolveException(ctx, org, ws, id, store.Resolution{Resolver: resolver, Data: data})
	if err != nil {
		return out, err
	}
	e.announce(ctx)
	e.Changed(org, ws)
	return out, nil
}

// GuidanceError is guidance that does not fit its exception; Field names the
// request field at fault.
type GuidanceError struct {
	Field string
	Msg   string
	Span  *lang.Span
}

func (g *GuidanceError) Error() string { return g.Msg }

// Unwrap makes a GuidanceError an invalid argument.
func (g *GuidanceError) Unwrap() error { return store.ErrInvalidArgument }

// CheckGuidance reports whether guidance fits the exception the interpreter
// raised.
func CheckGuidance(x *lang.Exception, req *platformv1.ResolveExceptionRequest) error {
	res, err := guidanceToLang(req)
	if err != nil {
		return &GuidanceError{Field: "guidance", Msg: "give exactly one of provide_values, skip, retry, replace_step, answer: " + err.Error()}
	}
	switch res.Kind {
	case lang.ProvideValues:
		if len(res.Values) == 0 {
			return &GuidanceError{Field: "provide_values.values", Msg: "provide at least one value"}
		}
		if x.Question != "" {
			return &GuidanceError{Field: "provide_values", Msg: "this exception asks a question: resolve it with an answer"}
		}
		if x.Fact != "" {
			want := lang.FactName(x.Fact)
			found := false
			var given []string
			for name := range res.Values {
				if lang.FactName(name) == want {
					found = true
				}
				given = append(given, name)
			}
			if !found {
				return &GuidanceError{Field: "provide_values.values", Msg: fmt.Sprintf("this exception asks for %s; the values given are for %s", x.Fact, strings.Join(given, ", "))}
			}
		}
	case lang.Answer:
		if x.Question == "" {
			return &GuidanceError{Field: "answer", Msg: "this exception asks no question: an answer does not resolve it"}
		}
		if len(x.Choices) > 0 {
			ok := false
			for _, c := range x.Choices {
				if lang.Equal(c, res.Answer) {
					ok = true
				}
			}
			if !ok {
				var cs []string
				for _, c := range x.Choices {
					b, _ := lang.AppendPlain(nil, c)
					cs = append(cs, string(b))
				}
				return &GuidanceError{Field: "answer.value", Msg: "the answer must be one of " + strings.Join(cs, ", ")}
			}
		}
	case lang.ReplaceStep:
		if strings.TrimSpace(res.Code) == "" {
			return &GuidanceError{Field: "replace_step.code", Msg: "the replacement code is empty"}
		}
		if _, err := lang.Parse(res.Code); err != nil {
			g := &GuidanceError{Field: "replace_step.code", Msg: "the replacement code does not parse: " + err.Error()}
			var se *lang.SyntaxError
			if errors.As(err, &se) {
				g.Span = &se.Span
			}
			return g
		}
	}
	return nil
}

// RunName is the resource name of a run.
func RunName(r store.Run) string {
	return "organizations/" + r.OrganizationID + "/workspaces/" + r.WorkspaceID + "/automations/" + r.AutomationID + "/runs/" + r.ID
}

// StageToProto converts a stage.
func StageToProto(s store.Stage) platformv1.AutomationStage {
	switch s {
	case store.StageDraft:
		return platformv1.AutomationStage_AUTOMATION_STAGE_DRAFT
	case store.StagePublished:
		return platformv1.AutomationStage_AUTOMATION_STAGE_PUBLISHED
	}
	return platformv1.AutomationStage_AUTOMATION_STAGE_UNSPECIFIED
}

// ExceptionName is the resource name of an exception.
func ExceptionName(x store.Exception) string {
	return "organizations/" + x.OrganizationID + "/workspaces/" + x.WorkspaceID + "/exceptions/" + x.ID
}

// versionString renders a stage version.
func versionString(v int64) string { return strconv.FormatInt(v, 10) }

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
