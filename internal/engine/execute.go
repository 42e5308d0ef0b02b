package engine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/proserun/prose/internal/codec/protovalue"
	"github.com/proserun/prose/internal/lang"
	"github.com/proserun/prose/internal/logctx"
	"github.com/proserun/prose/internal/metrics"
	"github.com/proserun/prose/store"
	persistv1 "github.com/proserun/prose/store/persist/v1"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// execute runs r, leased to this engine, until it completes, fails, waits
// for guidance or stops.
func (e *Engine) execute(ctx context.Context, f *flight, r store.Run) {
	ctx = runLogContext(ctx, r)
	start := time.Now()
	err := e.executeSteps(ctx, f, r)
	e.log.DebugContext(ctx, "run executed", "duration", time.Since(start), "err", err)
	if err != nil {
		if errors.Is(err, store.ErrConflict) || f.lost.Load() {
			e.log.InfoContext(ctx, "run dropped: lease lost", "run", r.ID)
			return
		}
		if ctx.Err() != nil {
			// The engine is shutting down (or the lease was lost): the run
			// is not at fault. Its lease expires and a worker goes on from
			// its last checkpoint.
			e.log.InfoContext(ctx, "run left to its lease", "run", r.ID, "cause", context.Cause(ctx))
			return
		}
		e.log.ErrorContext(ctx, "run failed internally", "run", r.ID, "err", err)
		// A fault of the platform: the run fails with an internal error, so
		// it is not retried forever.
		_, ferr := e.st.FinishRun(context.WithoutCancel(ctx), e.opts.Owner, r.ID, store.RunOutcome{
			State: store.RunFailed, ErrorID: store.NewID(), Description: "Internal error: " + err.Error(),
		})
		if ferr != nil && !errors.Is(ferr, store.ErrConflict) {
			e.log.ErrorContext(ctx, "fail run", "run", r.ID, "err", ferr)
		}
	}
}

func (e *Engine) executeSteps(ctx context.Context, f *flight, r store.Run) (err error) {
	steps, err := decodeSteps(r.Steps)
	if err != nil {
		return err
	}
	// The run's log lines name the request that started it; its span links
	// to the request's.
	origin := steps.GetOrigin()
	logctx.Set(ctx, logctx.RequestID, origin.GetRequestId())
	var runSpan trace.Span
	ctx, runSpan = e.startRunSpan(ctx, r, origin.GetTraceparent(), origin.GetTracestate())
	defer func() { endSpan(runSpan, err) }()
	if len(steps.GetSteps()) == 0 {
		return fmt.Errorf("run has no steps")
	}
	stepInputs, err := firstStepInputs(r, steps)
	if err != nil {
		return err
	}
	if r.PreviousRun != "" && r.Step == 0 && r.Checkpoint == nil {
		if err := e.reusePrevious(ctx, r, steps.GetSteps()[0].GetCode(), stepInputs); err != nil {
			e.log.WarnContext(ctx, "reuse previous run", "run", r.ID, "previous", r.PreviousRun, "err", err)
		}
	}
	if r.Step >= len(steps.GetSteps()) {
		// Paused as its last step completed: the store kept the outputs
		// (see store.Runs.FinishRun); continuing completes it.
		return e.finishRun(ctx, f, r, store.RunOutcome{State: store.RunCompleted, Outputs: r.Outputs, Step: r.Step})
	}
	x := e.newStepExec(ctx, f, r, runSpan)
	checkpoint, guidance := r.Checkpoint, r.Resolution
	for step := r.Step; step < len(steps.GetSteps()); step++ {
		res, note, done, err := x.run(step, steps.GetSteps()[step].GetCode(), stepInputs, checkpoint, guidance)
		if done || err != nil {
			return err
		}
		checkpoint, guidance = nil, nil
		if stepInputs, done, err = x.end(step, step == len(steps.GetSteps())-1, res, note, stepInputs); done || err != nil {
			return err
		}
	}
	return nil
}

// firstStepInputs are the inputs of the step the run is at: those saved
// with its progress, else the run's inputs.
func firstStepInputs(r store.Run, steps *persistv1.Steps) ([]byte, error) {
	if r.StepInputs != nil {
		return r.StepInputs, nil
	}
	b, err := encodeStoredValues(steps.GetInputs())
	if err != nil {
		return nil, err
	}
	if b == nil {
		b = []byte{}
	}
	return b, nil
}

// stepExec executes the steps of one run (executeSteps).
type stepExec struct {
	e   *Engine
	ctx context.Context
	// soft is the interpreter's context: a pause cancels it, not ctx.
	soft    context.Context
	f       *flight
	r       store.Run
	runSpan trace.Span
	h       *history
	bk      *journalBooks
	start   time.Time
	turn    *cpuTurn // its processor turns (cpu.go)
}

func (e *Engine) newStepExec(ctx context.Context, f *flight, r store.Run, runSpan trace.Span) *stepExec {
	soft := f.soft
	if soft == nil {
		soft = ctx
	}
	h := newHistory(e.opts.History, r.HistoryEvents)
	bk := &journalBooks{e: e, run: r.ID, ctx: ctx, hist: h}
	if e.opts.Books != nil {
		bk.inner = e.opts.Books(r.OrganizationID, r.WorkspaceID)
	}
	return &stepExec{e: e, ctx: ctx, soft: soft, f: f, r: r, runSpan: runSpan, h: h, bk: bk, start: time.Now(),
		turn: &cpuTurn{s: e.cpu, org: r.OrganizationID, ctx: soft}}
}

// run parses and executes (or resumes, from checkpoint with guidance) the
// step, and lets the guide entries resolve what it suspends on (see
// guide.go): note says why one that matched did not. done: the run has
// finished (the step does not parse).
func (x *stepExec) run(step int, code string, inBytes, checkpoint, guidance []byte) (res *lang.Result, note string, done bool, err error) {
	e, ctx, r := x.e, x.ctx, x.r
	prog, perr := e.progs.parse(code)
	if perr != nil {
		var se *lang.SyntaxError
		desc, loc := perr.Error(), store.Location{}
		if errors.As(perr, &se) {
			desc, loc = se.Msg, store.Location{Start: int64(se.Span.Start), End: int64(se.Span.End)}
		}
		return nil, "", true, e.finishRun(ctx, x.f, r, store.RunOutcome{
			State: store.RunFailed, ErrorID: store.NewID(), Description: "Could not parse step " + strconv.Itoa(step+1) + ": " + desc, Location: loc,
		})
	}
	x.bk.step, x.h.step = step, step
	// The step's span, in the interpreter's context: the book calls'
	// spans are its children.
	stepCtx := x.soft
	var stepSpan trace.Span
	if x.runSpan != nil {
		stepCtx, stepSpan = e.opts.Tracer.Start(trace.ContextWithSpan(x.soft, x.runSpan), "prose.run.step",
			trace.WithAttributes(attribute.Int("prose.step", step+1)))
	}
	opts := x.langOptions(step, inBytes)
	x.turn.interpret()
	defer x.turn.wait()
	if checkpoint != nil {
		g, err := decodeGuidance(guidance)
		if err != nil {
			return nil, "", false, err
		}
		if res, err = lang.Resume(stepCtx, prog, checkpoint, g, opts); err != nil {
			return nil, "", false, fmt.Errorf("resume step %d: %w", step+1, err)
		}
	} else {
		inputs, err := decodeLangValues(inBytes)
		if err != nil {
			return nil, "", false, err
		}
		if inputs == nil {
			inputs = map[string]lang.Value{}
		}
		res = lang.Start(stepCtx, prog, inputs, opts)
	}
	if stepSpan != nil {
		stepSpan.SetAttributes(attribute.String("prose.status", res.Status.String()))
		stepSpan.End()
	}
	for res.Status == lang.Suspended {
		x.turn.wait() // the guide entries are read and written outside a turn
		next, ok, n, err := e.guide(ctx, x.soft, r, step, code, prog, res, opts)
		if err != nil {
			return nil, "", false, err
		}
		if !ok {
			return res, n, false, nil
		}
		res = next
	}
	return res, "", false, nil
}

// langOptions are the interpreter's options for the step.
func (x *stepExec) langOptions(step int, inBytes []byte) lang.Options {
	e, r := x.e, x.r
	return x.turn.options(lang.Options{
		Clock:  e.opts.Clock,
		Books:  x.bk,
		Limits: e.opts.Limits,
		Yield:  func() bool { x.turn.yield(); return e.yield(x.f, x.start) },
		Runs:   &childRuns{e: e, parent: r, step: step, ctx: x.ctx, maxDepth: e.opts.Limits.Effective().MaxRunDepth, depth: -1, hist: x.h},
		SayAt:  x.h.say,
		SetAt:  x.h.setFact,
		Checkpoint: func(state []byte) error {
			return e.st.SaveProgress(x.ctx, e.opts.Owner, r.ID, store.Progress{
				Step: step, StepInputs: inBytes, Checkpoint: state, Journal: x.bk.flush(), Events: x.h.flush(),
			})
		},
	})
}

// end records how the step ended. A completed step that is not the last
// gives the next step's inputs; done: the run has finished, suspended,
// stopped or gone back to the queue.
func (x *stepExec) end(step int, last bool, res *lang.Result, note string, inBytes []byte) (next []byte, done bool, err error) {
	e, ctx, r, h := x.e, x.ctx, x.r, x.h
	switch res.Status {
	case lang.Completed:
		out, err := protovalue.MapToProto(res.Outputs)
		if err != nil {
			return nil, true, err
		}
		if last {
			b, err := encodeValues(out)
			if err != nil {
				return nil, true, err
			}
			// Step is past the last one: if the run is being paused, the
			// store keeps it stopped there with its outputs.
			return nil, true, e.finishRun(ctx, x.f, r, store.RunOutcome{State: store.RunCompleted, Outputs: b, Step: step + 1, Events: h.flush()})
		}
		if next, err = encodeValues(out); err != nil {
			return nil, true, err
		}
		if next == nil {
			next = []byte{}
		}
		return next, false, e.st.SaveProgress(ctx, e.opts.Owner, r.ID, store.Progress{Step: step + 1, StepInputs: next, Journal: x.bk.flush(), Events: h.flush()})
	case lang.Suspended:
		return nil, true, x.suspend(step, res, note, inBytes)
	case lang.Waiting:
		// Waits for its child runs without a worker: waiting, or
		// pending at once when they have all settled meanwhile.
		w, err := e.st.FinishRun(ctx, e.opts.Owner, r.ID, store.RunOutcome{
			State: store.RunWaiting, Checkpoint: res.State, Step: step, StepInputs: inBytes, Events: h.flush(),
		})
		if err == nil && w.State == store.RunPending {
			e.Wake()
		}
		return nil, true, err
	case lang.Failed:
		fl := res.Failure
		return nil, true, e.finishRun(ctx, x.f, r, store.RunOutcome{
			State: store.RunFailed, ErrorID: store.NewID(), Description: fl.Description,
			Location: store.Location{Start: int64(fl.Span.Start), End: int64(fl.Span.End)}, Events: h.flush(),
		})
	case lang.Stopped:
		return nil, true, x.stopped(step, res, inBytes)
	default:
		return nil, true, fmt.Errorf("step %d ended with status %v", step+1, res.Status)
	}
}

// suspend leaves the run awaiting guidance on the exception it raised.
func (x *stepExec) suspend(step int, res *lang.Result, note string, inBytes []byte) error {
	e := x.e
	ex := res.Exception
	details, err := encodeException(ex)
	if err != nil {
		return err
	}
	_, err = e.st.FinishRun(x.ctx, e.opts.Owner, x.r.ID, store.RunOutcome{
		State: store.RunAwaitingGuidance,
		Exception: &store.Exception{
			Step: step, Group: string(ex.Group), Message: ex.Message, Details: details,
			Location: store.Location{Start: int64(ex.Span.Start), End: int64(ex.Span.End)},
			State:    store.ExceptionPending, Description: strings.TrimSpace(describe(ex) + " " + note),
		},
		Checkpoint: res.State, Step: step, StepInputs: inBytes, Events: x.h.flush(),
	})
	if err == nil {
		e.opts.Metrics.ExceptionRaised(string(ex.Group))
		e.countEnded(x.r, store.RunAwaitingGuidance)
	}
	return err
}

// stopped records a step the interpreter stopped: the run yielded its
// worker, lost its lease, is handed back or left by a shutdown, or is
// paused.
func (x *stepExec) stopped(step int, res *lang.Result, inBytes []byte) error {
	e, ctx, r := x.e, x.ctx, x.r
	if x.f.yielded && x.soft.Err() == nil {
		// Gave its worker up for a turn: back to the queue.
		_, err := e.st.FinishRun(ctx, e.opts.Owner, r.ID, store.RunOutcome{
			State: store.RunPending, Checkpoint: res.State, Step: step, StepInputs: inBytes, Events: x.h.flush(),
		})
		e.Wake()
		return err
	}
	cause := context.Cause(x.soft)
	if x.f.lost.Load() || errors.Is(cause, errLeaseLost) {
		return store.ErrConflict
	}
	if errors.Is(cause, errHandBack) {
		// This replica shuts down: back to the queue, for another
		// replica at once.
		_, err := e.st.FinishRun(ctx, e.opts.Owner, r.ID, store.RunOutcome{
			State: store.RunPending, Checkpoint: res.State, Step: step, StepInputs: inBytes,
		})
		if err == nil {
			e.log.InfoContext(ctx, "run handed back", "run", r.ID)
			e.announce(ctx)
		}
		return err
	}
	if errors.Is(cause, errShutdown) {
		// Leave the run leased: its lease expires and a worker goes on
		// from its last checkpoint.
		return nil
	}
	_, err := e.st.FinishRun(ctx, e.opts.Owner, r.ID, store.RunOutcome{
		State: store.RunStopped, Checkpoint: res.State, Step: step, StepInputs: inBytes, Events: x.h.flush(),
	})
	return err
}

// reusePrevious copies the journal of the previous run's first step when its
// code and inputs are those of this run's first step, so its book calls are
// not made again.
func (e *Engine) reusePrevious(ctx context.Context, r store.Run, code string, inputs []byte) error {
	prev, err := e.st.GetRunByID(ctx, r.PreviousRun)
	if err != nil {
		return err
	}
	ps, err := decodeSteps(prev.Steps)
	if err != nil || len(ps.GetSteps()) == 0 {
		return err
	}
	if ps.GetSteps()[0].GetCode() != code {
		return nil
	}
	pin, err := encodeStoredValues(ps.GetInputs())
	if err != nil {
		return err
	}
	if !proto.Equal(valuesForCompare(pin), valuesForCompare(inputs)) {
		return nil
	}
	return e.st.CopyJournal(ctx, prev.ID, r.ID, []int{0})
}

// valuesForCompare decodes encoded values for proto.Equal (an empty map
// equals a nil one; a blob that does not decode equals nothing but
// another such).
func valuesForCompare(b []byte) proto.Message {
	s := &persistv1.Values{}
	_ = proto.Unmarshal(b, s)
	return s
}

// encodeStoredValues encodes values already in their stored form (a run's
// first step inputs: its user inputs); nil for nil.
func encodeStoredValues(m map[string]*persistv1.Value) ([]byte, error) {
	if m == nil {
		return nil, nil
	}
	return marshal.Marshal(&persistv1.Values{Values: m})
}

// describe is the human-friendly description of an exception.
func describe(x *lang.Exception) string {
	switch {
	case x.Question != "":
		return "The automation asks a question and waits for your answer: " + x.Question
	case len(x.Failed) > 0:
		return "Some facts did not pass their checks. Fix the facts, or accept them by skipping the check."
	case x.Fact != "":
		return "The automation needs " + x.Fact + " and nobody gave it. Provide the value and the run goes on."
	case x.Group == lang.GroupUserSystemError:
		return "The automation could not go on: " + x.Message + ". Provide corrected values, skip the statement, or replace it."
	}
	return x.Message
}

// journalBooks wraps a run's books: a call the journal already holds is
// answered from it; a new result is kept until the next checkpoint writes it
// with the interpreter state.
type journalBooks struct {
	e     *Engine
	inner lang.Books
	run   string
	step  int
	// ctx is the flight's context: a call (and the journal read) is
	// cancelled by a lost lease or a shutdown, never by a pause.
	ctx context.Context
	// hist records the calls made in the run's history.
	hist *history

	once    sync.Once
	loadErr error
	known   map[[2]int]store.JournalEntry
	pending []store.JournalEntry
}

func (b *journalBooks) Lookup(ctx context.Context, sentence string) ([]lang.BookProcedure, error) {
	if b.inner == nil {
		return nil, nil
	}
	return b.inner.Lookup(ctx, sentence)
}

func (b *journalBooks) Call(ctx context.Context, proc lang.BookProcedure, inputs map[string]lang.Value) (map[string]lang.Value, error) {
	idx, _ := lang.JournalIndex(ctx)
	if b.ctx != nil {
		// The call has the values of the interpreter's context (its call
		// index) and the cancellation of the flight's, with the flight's
		// cause (a lost lease, a shutdown). Its own cancelCtx, made here,
		// is what context.Cause finds: it is cancelled with the flight's
		// cause, never first by the interpreter's contexts.
		cctx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
		stop := context.AfterFunc(b.ctx, func() { cancel(context.Cause(b.ctx)) })
		defer func() { stop(); cancel(nil) }()
		ctx = cctx
	}
	key, err := callKey(proc, inputs)
	if err != nil {
		return nil, err
	}
	b.once.Do(func() {
		entries, err := b.e.st.ListJournal(ctx, b.run)
		b.loadErr = err
		b.known = map[[2]int]store.JournalEntry{}
		for _, e := range entries {
			b.known[[2]int{e.Step, e.Seq}] = e
		}
	})
	if b.loadErr != nil {
		return nil, fmt.Errorf("read the journal: %w", b.loadErr)
	}
	if e, ok := b.known[[2]int{b.step, idx}]; ok && e.Key == key {
		return decodeLangValues(e.Data)
	}
	if b.inner == nil {
		return nil, fmt.Errorf("no book offers %s", proc.Name)
	}
	var span trace.Span
	if b.e.opts.Tracer != nil {
		ctx, span = b.e.opts.Tracer.Start(ctx, "prose.book.call", trace.WithSpanKind(trace.SpanKindClient),
			trace.WithAttributes(attribute.String("prose.book", proc.Book), attribute.String("prose.procedure", proc.Name)))
	}
	start := time.Now()
	out, err := b.inner.Call(withCallID(ctx, b.run, b.step, idx), proc, inputs)
	b.e.opts.Metrics.BookCall(proc.Book, time.Since(start), err)
	endSpan(span, err)
	if err != nil {
		return nil, err
	}
	data, err := encodeLangValues(out)
	if err != nil {
		return nil, err
	}
	at, _ := lang.CallSpan(ctx)
	b.hist.bookCall(proc, CallID(withCallID(ctx, b.run, b.step, idx)), inputs, out, at)
	e := store.JournalEntry{Step: b.step, Seq: idx, Kind: "book", Key: key, Data: data}
	b.pending = append(b.pending, e)
	b.known[[2]int{b.step, idx}] = e
	return out, nil
}

func (b *journalBooks) flush() []store.JournalEntry {
	p := b.pending
	b.pending = nil
	return p
}

// callKey identifies a call: the procedure and a hash of its inputs.
func callKey(proc lang.BookProcedure, inputs map[string]lang.Value) (string, error) {
	names := make([]string, 0, len(inputs))
	for n := range inputs {
		names = append(names, n)
	}
	sort.Strings(names)
	h := sha256.New()
	for _, n := range names {
		b, err := lang.AppendPlain(nil, inputs[n])
		if err != nil {
			return "", err
		}
		h.Write([]byte(n))
		h.Write([]byte{0})
		h.Write(b)
		h.Write([]byte{0})
	}
	return proc.Book + "/" + proc.Name + "#" + hex.EncodeToString(h.Sum(nil)[:12]), nil
}

// programCache keeps parsed programs by their code; a program serves many
// runs at once.
type programCache struct {
	mu    sync.Mutex
	max   int
	progs map[string]*progEntry
}

type progEntry struct {
	prog *lang.Program
	err  error
}

func newProgramCache(max int) programCache {
	return programCache{max: max, progs: map[string]*progEntry{}}
}

func (c *programCache) parse(code string) (*lang.Program, error) {
	c.mu.Lock()
	if p, ok := c.progs[code]; ok {
		c.mu.Unlock()
		return p.prog, p.err
	}
	c.mu.Unlock()
	prog, err := lang.Parse(code)
	c.mu.Lock()
	if len(c.progs) >= c.max {
		for k := range c.progs { // evict an arbitrary entry
			delete(c.progs, k)
			break
		}
	}
	c.progs[code] = &progEntry{prog: prog, err: err}
	c.mu.Unlock()
	return prog, err
}

// finishRun finishes a run that completed or failed. A child run finishes
// at once (not in a batch), so that its parent, waiting for it, is woken in
// the same call (see store.Runs.FinishRun).
func (e *Engine) finishRun(ctx context.Context, f *flight, r store.Run, o store.RunOutcome) error {
	var err error
	if r.ParentRun == "" {
		err = e.finish(ctx, r.ID, o, f.free)
	} else if _, err = e.st.FinishRun(ctx, e.opts.Owner, r.ID, o); err == nil {
		e.Wake()
	}
	if err == nil {
		e.countEnded(r, o.State)
	}
	return err
}

// countEnded counts a run's outcome in the metrics.
func (e *Engine) countEnded(r store.Run, s store.RunState) {
	if e.opts.Metrics == nil {
		return
	}
	outcome := ""
	switch s {
	case store.RunCompleted:
		outcome = metrics.OutcomeCompleted
	case store.RunFailed:
		outcome = metrics.OutcomeFailed
	case store.RunAwaitingGuidance:
		outcome = metrics.OutcomeAwaitingGuidance
	default:
		return
	}
	e.opts.Metrics.RunEnded(r.AutomationID, outcome, e.opts.Clock().Sub(r.CreateTime))
}
