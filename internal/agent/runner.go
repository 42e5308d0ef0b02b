package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/proserun/prose/internal/codec"
	"google.golang.org/protobuf/encoding/protojson"

	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/internal/engine"
	"github.com/proserun/prose/internal/names"
	"github.com/proserun/prose/store"
)

// ErrCancelled is the cause of a generation stopped by CancelGeneration; its
// text is the completion_response error.
var ErrCancelled = errors.New("cancelled")

// errShutdown is the cause of generations stopped by Close.
var errShutdown = errors.New("the service is shutting down")

// Options configure a Runner.
type Options struct {
	// OnChange is called after every event the runner writes (the service
	// wakes the streams of the thread).
	OnChange func(store.Thread)
	// Timeout bounds one generation (default 2 minutes).
	Timeout time.Duration
	// Pace is the pause between the streamed chunks of an agent message
	// (default 10ms; negative: none).
	Pace   time.Duration
	Logger *slog.Logger
	// MaxEventBytes and MaxMessageBytes are the caps of the events the
	// agents write, those of the events clients write: the protobuf size
	// of a whole event (default store.MaxEventBytes) and the content of a
	// message, agent_message or completion_response (default
	// MaxEventBytes). An agent's write over one fails with a *SizeError
	// (INVALID_ARGUMENT), which ends its generation with that error.
	MaxEventBytes   int
	MaxMessageBytes int
	// Authorize is asked before every tool call that changes something
	// (resolve, propose a guide entry), with the context of the user
	// message the generation answers (its caller): an agent may do only
	// what the person who wrote to it may do. nil: everything is allowed.
	Authorize func(ctx context.Context, t store.Thread) error
}

// Runner runs the generations of agents: one at a time per thread, in the
// background, each ended by a completion_response.
type Runner struct {
	st     store.Store
	eng    *engine.Engine
	opts   Options
	agents map[string]Agent

	mu      sync.Mutex
	running map[string][]*generation // by thread key, oldest first
	closed  bool
	wg      sync.WaitGroup
}

type generation struct {
	cancel context.CancelCauseFunc
	done   chan struct{}
}

// NewRunner returns a runner of the given agents.
func NewRunner(st store.Store, eng *engine.Engine, opts Options, agents ...Agent) *Runner {
	if opts.Timeout <= 0 {
		opts.Timeout = 2 * time.Minute
	}
	if opts.Pace == 0 {
		opts.Pace = 10 * time.Millisecond
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.MaxEventBytes <= 0 {
		opts.MaxEventBytes = store.MaxEventBytes
	}
	if opts.MaxMessageBytes <= 0 || opts.MaxMessageBytes > opts.MaxEventBytes {
		opts.MaxMessageBytes = opts.MaxEventBytes
	}
	r := &Runner{st: st, eng: eng, opts: opts, agents: map[string]Agent{}, running: map[string][]*generation{}}
	for _, a := range agents {
		r.agents[a.ID()] = a
	}
	return r
}

// Agent returns the agent with that id.
func (r *Runner) Agent(id string) (Agent, bool) {
	a, ok := r.agents[id]
	return a, ok
}

// Start answers msg (a stored user message of thread t) in the background,
// after the generations already running in the thread. The values of ctx
// (the caller of the request that wrote msg) are kept for Authorize; its
// cancellation is not.
func (r *Runner) Start(ctx context.Context, t store.Thread, msg *platformv1.Event) {
	a, ok := r.agents[t.AgentID]
	if !ok {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return
	}
	ctx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	g := &generation{cancel: cancel, done: make(chan struct{})}
	key := t.Key()
	var prev *generation
	if q := r.running[key]; len(q) > 0 {
		prev = q[len(q)-1]
	}
	r.running[key] = append(r.running[key], g)
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		defer r.finish(key, g)
		defer cancel(nil)
		if prev != nil {
			select {
			case <-prev.done:
			case <-ctx.Done():
			}
		}
		r.generate(ctx, a, t, msg)
	}()
}

func (r *Runner) finish(key string, g *generation) {
	r.mu.Lock()
	defer r.mu.Unlock()
	q := r.running[key]
	for i, x := range q {
		if x == g {
			q = append(q[:i:i], q[i+1:]...)
			break
		}
	}
	if len(q) == 0 {
		delete(r.running, key)
	} else {
		r.running[key] = q
	}
	close(g.done)
}

// Cancel stops the generations of thread t and waits until they have
// recorded their end (or ctx ends). Events another replica is streaming in
// the thread are completed as they stand, so its generation stops at its
// next write. It reports whether anything was generating.
func (r *Runner) Cancel(ctx context.Context, t store.Thread) (bool, error) {
	r.mu.Lock()
	gs := append([]*generation(nil), r.running[t.Key()]...)
	r.mu.Unlock()
	for _, g := range gs {
		g.cancel(ErrCancelled)
	}
	for _, g := range gs {
		select {
		case <-g.done:
		case <-ctx.Done():
			return true, ctx.Err()
		}
	}
	// Streaming events of generations elsewhere.
	events, err := r.st.ListEventsSince(ctx, t, time.Time{})
	if err != nil {
		return len(gs) > 0, err
	}
	w := r.writer(t, "")
	remote := false
	for _, e := range events {
		if e.State != store.EventStreaming {
			continue
		}
		ev, err := FromStore(e)
		if err != nil {
			return true, err
		}
		if _, err := w.Complete(ctx, ev); err == nil {
			remote = true
			w.exception = ev.GetException()
		}
	}
	if remote {
		if _, err := w.Emit(ctx, completion("", ErrCancelled.Error())); err != nil {
			return true, err
		}
	}
	return len(gs) > 0 || remote, nil
}

// Wait waits for the running generations to end.
func (r *Runner) Wait() { r.wg.Wait() }

// Close cancels every generation and waits for them.
func (r *Runner) Close() error {
	r.mu.Lock()
	r.closed = true
	for _, q := range r.running {
		for _, g := range q {
			g.cancel(errShutdown)
		}
	}
	r.mu.Unlock()
	r.wg.Wait()
	return nil
}

func (r *Runner) writer(t store.Thread, exception string) *Writer {
	return &Writer{st: r.st, thread: t, exception: exception, onChange: r.opts.OnChange, open: map[string]*platformv1.Event{}, pace: r.opts.Pace,
		maxEvent: r.opts.MaxEventBytes, maxMessage: r.opts.MaxMessageBytes}
}

func completion(content, errText string) *platformv1.Event {
	return &platformv1.Event{Payload: &platformv1.Event_CompletionResponse{CompletionResponse: &platformv1.CompletionResponse{Content: content, Error: errText}}}
}

// generate runs one generation and records its end.
func (r *Runner) generate(ctx context.Context, a Agent, t store.Thread, msg *platformv1.Event) {
	ctx, cancel := context.WithTimeoutCause(ctx, r.opts.Timeout, errors.New("the generation took too long"))
	defer cancel()
	c, err := r.conversation(ctx, t, msg)
	w := r.writer(t, "")
	if c != nil {
		w.exception = c.ExceptionName()
		c.Tools = &tools{r: r, c: c, w: w}
	}
	text := ""
	if err == nil {
		text, err = a.Respond(ctx, c, w)
	}
	// The end is recorded even when ctx is done.
	end, endCancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer endCancel()
	w.closeOpen(end)
	errText := ""
	switch {
	case errors.Is(err, errSuperseded):
		// Completed elsewhere (a cancel from another replica), which also
		// recorded the end.
		return
	case ctx.Err() != nil:
		errText = context.Cause(ctx).Error()
	case err != nil:
		r.opts.Logger.Error("agent generation", "agent", a.ID(), "run", t.RunID, "err", err)
		errText = err.Error()
	}
	var big *SizeError
	if _, err := w.Emit(end, completion(text, errText)); errors.As(err, &big) {
		// The end over a cap: it is recorded without the final text, with
		// the error (and the original one if it is short).
		if errText == "" || len(errText) > 4<<10 {
			errText = big.Error()
		} else {
			errText += "; " + big.Error()
		}
		_, _ = w.Emit(end, completion("", errText))
	}
}

// conversation loads what the agent needs to know.
func (r *Runner) conversation(ctx context.Context, t store.Thread, msg *platformv1.Event) (*Conversation, error) {
	run, err := r.st.GetRun(ctx, t.OrganizationID, t.WorkspaceID, t.AutomationID, t.RunID)
	if err != nil {
		return nil, err
	}
	c := &Conversation{Thread: t, Run: run, Message: msg}
	events, err := r.st.ListEventsSince(ctx, t, time.Time{})
	if err != nil {
		return nil, err
	}
	for _, e := range events {
		ev, err := FromStore(e)
		if err != nil {
			return nil, err
		}
		c.History = append(c.History, ev)
		if ev.GetName() == msg.GetName() {
			break
		}
	}
	excID := names.ID(msg.GetException())
	if excID == "" {
		excID = run.ExceptionID
	}
	if excID == "" {
		return c, nil
	}
	x, err := r.st.GetException(ctx, t.OrganizationID, t.WorkspaceID, excID)
	if errors.Is(err, store.ErrNotFound) || (err == nil && x.RunID != run.ID) {
		return c, nil // about no exception of this run
	}
	if err != nil {
		return nil, err
	}
	c.Exception = &x
	if c.Details, err = codec.ExceptionDetails(x); err != nil {
		return nil, err
	}
	if code, ok := codec.StepCode(run, x.Step); ok {
		if s, e := int(x.Location.Start), int(x.Location.End); s >= 0 && s <= e && e <= len(code) {
			c.Statement = code[s:e]
			c.Line = strings.Count(code[:s], "\n") + 1
		}
	}
	return c, nil
}

// tools implements Tools for one generation.
type tools struct {
	r *Runner
	c *Conversation
	w *Writer
	n int
}

// call records one tool call: a tool_call_request with input, then what do
// returns as its tool_call_result ("error: …" when it fails). The result is
// recorded even when the generation is being cancelled: the call was made.
func (t *tools) call(ctx context.Context, display, input string, do func() (string, error)) error {
	t.n++
	callID := fmt.Sprintf("call-%s-%d", t.c.Message.GetName()[strings.LastIndexByte(t.c.Message.GetName(), '/')+1:], t.n)
	if _, err := t.w.Emit(ctx, &platformv1.Event{Payload: &platformv1.Event_ToolCallRequest{ToolCallRequest: &platformv1.ToolCallRequest{
		ToolCallId: callID, DisplayName: display, Input: input}}}); err != nil {
		return err
	}
	result, derr := do()
	if derr != nil {
		result = "error: " + derr.Error()
	}
	end, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if _, err := t.w.Emit(end, &platformv1.Event{Payload: &platformv1.Event_ToolCallResult{ToolCallResult: &platformv1.ToolCallResult{
		ToolCallId: callID, Result: result}}}); err != nil && derr == nil {
		return err
	}
	return derr
}

// authorize asks Options.Authorize.
func (t *tools) authorize(ctx context.Context) error {
	if t.r.opts.Authorize == nil {
		return nil
	}
	return t.r.opts.Authorize(ctx, t.c.Thread)
}

func (t *tools) Resolve(ctx context.Context, g engine.Guidance) (store.Exception, error) {
	if t.c.Exception == nil {
		return store.Exception{}, fmt.Errorf("the run waits on no exception: %w", store.ErrFailedPrecondition)
	}
	x := t.c.Exception
	// The call is recorded as the platform's resolve request would be.
	req, err := resolveRequest(g)
	if err != nil {
		return store.Exception{}, err
	}
	req.OrganizationId, req.WorkspaceId, req.ExceptionId = x.OrganizationID, x.WorkspaceID, x.ID
	input, err := protojson.MarshalOptions{UseProtoNames: true}.Marshal(req)
	if err != nil {
		return store.Exception{}, err
	}
	var out store.Exception
	err = t.call(ctx, "Resolve exception", string(input), func() (string, error) {
		if err := t.authorize(ctx); err != nil {
			return "", err
		}
		if t.r.eng == nil {
			return "", errors.New("no engine is configured")
		}
		var err error
		if out, err = t.r.eng.Resolve(ctx, x.OrganizationID, x.WorkspaceID, x.ID, "agents/"+t.c.Thread.AgentID, g); err != nil {
			return "", err
		}
		t.c.Exception = &out
		return fmt.Sprintf("resolved by agents/%s; the run continues", t.c.Thread.AgentID), nil
	})
	return out, err
}

func (t *tools) Explain(ctx context.Context) (string, error) {
	var out string
	err := t.call(ctx, "Explain exception", "{}", func() (string, error) {
		if t.c.Exception == nil {
			return "", fmt.Errorf("the run waits on no exception: %w", store.ErrFailedPrecondition)
		}
		var err error
		out, err = explainJSON(t.c)
		return out, err
	})
	return out, err
}

func (t *tools) ProposeGuideEntry(ctx context.Context, g engine.Guidance, txt engine.GuideEntryText) (store.GuideEntry, error) {
	if t.c.Exception == nil {
		return store.GuideEntry{}, fmt.Errorf("the run has no exception to learn from: %w", store.ErrFailedPrecondition)
	}
	x := t.c.Exception
	req, err := resolveRequest(g)
	if err != nil {
		return store.GuideEntry{}, err
	}
	in := map[string]any{"source_exception": names.Exception(x.OrganizationID, x.WorkspaceID, x.ID),
		"title": txt.Title, "root_cause": txt.RootCause, "resolution_notes": txt.ResolutionNotes}
	if gj, err := (protojson.MarshalOptions{UseProtoNames: true}).Marshal(req); err == nil {
		in["guidance"] = json.RawMessage(gj)
	}
	input, err := json.Marshal(in)
	if err != nil {
		return store.GuideEntry{}, err
	}
	var out store.GuideEntry
	err = t.call(ctx, "Propose guide entry", string(input), func() (string, error) {
		if err := t.authorize(ctx); err != nil {
			return "", err
		}
		if t.r.eng == nil {
			return "", errors.New("no engine is configured")
		}
		var err error
		if out, err = t.r.eng.CreateGuideEntry(ctx, *x, g, txt); err != nil {
			return "", err
		}
		return fmt.Sprintf("proposed %s; it waits for a person's approval", names.GuideEntry(out.OrganizationID, out.WorkspaceID, out.AutomationID, out.ID)), nil
	})
	return out, err
}

// resolveRequest renders guidance as the platform's resolve request (the
// input a tool call records; an empty one for no guidance).
func resolveRequest(g engine.Guidance) (*platformv1.ResolveExceptionRequest, error) {
	res, err := g.Resolution()
	if err != nil {
		return &platformv1.ResolveExceptionRequest{}, nil //nolint:nilerr // no guidance renders as none
	}
	return codec.ResolveRequest(res)
}
