package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/proserun/prose/internal/lang"
	"github.com/proserun/prose/store"
	"github.com/proserun/prose/store/statemachine"
)

// The engine owns every transition of runs and exceptions a client asks
// for: pause, continue, resolve, archive, unarchive, assign. Each is one
// store transaction; a rule that depends on what is stored (guidance that
// must fit its exception, an exception that must be pending) is checked
// inside it, on the row the transaction locked (store.ResolveCheck), and
// the workers (here and on the other replicas) are woken when a run
// becomes pending.

// GuidanceKind is the kind of guidance that resolves an exception.
type GuidanceKind int

// The kinds of guidance (zero: none given).
const (
	GuidanceNone GuidanceKind = iota
	// GuidanceProvideValues gives values for facts (Guidance.Values).
	GuidanceProvideValues
	// GuidanceSkip goes on after the statement.
	GuidanceSkip
	// GuidanceRetry runs the statement again.
	GuidanceRetry
	// GuidanceReplaceStep runs Guidance.Code instead of the statement.
	GuidanceReplaceStep
	// GuidanceAnswer answers the exception's question (Guidance.Answer).
	GuidanceAnswer
)

// Guidance is how a person or an agent resolves an exception: the
// engine's own vocabulary, whatever API it came from.
type Guidance struct {
	Kind   GuidanceKind
	Values map[string]lang.Value
	// Expressions are values computed over the run's facts when the
	// guidance is applied, by fact name (GuidanceProvideValues; a guide
	// entry's).
	Expressions map[string]string
	Code        string
	Answer      lang.Value
	// Unreadable, when set, is why the caller could not read the guidance
	// it was given (a value the language cannot hold). Resolve reports it
	// as a GuidanceError on field "guidance", once it has found the
	// exception pending (as it would any guidance that does not fit).
	Unreadable error
}

func (g Guidance) resolution() (lang.Resolution, error) {
	if g.Unreadable != nil {
		return lang.Resolution{}, g.Unreadable
	}
	switch g.Kind {
	case GuidanceProvideValues:
		return lang.Resolution{Kind: lang.ProvideValues, Values: g.Values, Expressions: g.Expressions}, nil
	case GuidanceSkip:
		return lang.Resolution{Kind: lang.Skip}, nil
	case GuidanceRetry:
		return lang.Resolution{Kind: lang.Retry}, nil
	case GuidanceReplaceStep:
		return lang.Resolution{Kind: lang.ReplaceStep, Code: g.Code}, nil
	case GuidanceAnswer:
		return lang.Resolution{Kind: lang.Answer, Answer: g.Answer}, nil
	}
	return lang.Resolution{}, errors.New("no guidance given")
}

// Resolve resolves a pending exception with guidance and lets its run
// continue. In one store transaction, on the exception row it locked and
// read once, it checks that the exception is pending and that the guidance
// fits it. ErrInvalidArgument (a *GuidanceError) when the guidance does not
// fit (values for another fact, an answer to no question, code that does
// not parse); ErrFailedPrecondition when the exception is not pending
// (exactly one of concurrent resolutions wins); ErrNotFound.
func (e *Engine) Resolve(ctx context.Context, org, ws, id, resolver string, g Guidance) (store.Exception, error) {
	out, err := e.st.ResolveException(ctx, org, ws, id, func(x store.Exception) (store.Resolution, error) {
		if !statemachine.Exceptions.Allows(statemachine.Resolve, x.State, store.ExceptionResolved) {
			return store.Resolution{}, fmt.Errorf("exception %q is %s; only a pending exception can be resolved: %w", id, x.State, store.ErrFailedPrecondition)
		}
		details, err := decodeException(x.Details)
		if err != nil {
			return store.Resolution{}, err
		}
		if err := CheckGuidance(details, g); err != nil {
			return store.Resolution{}, err
		}
		data, err := encodeGuidance(g)
		if err != nil {
			return store.Resolution{}, err
		}
		return store.Resolution{Resolver: resolver, Data: data}, nil
	})
	if err != nil {
		return out, err
	}
	e.opts.Metrics.ExceptionResolved(out.Group, resolver)
	e.announce(ctx)
	e.Changed(org, ws)
	return out, nil
}

// Archive archives a pending exception: its run is abandoned (stopped).
// ErrFailedPrecondition from other states. The state is checked inside the
// store's transaction, on the row it locked and read once.
func (e *Engine) Archive(ctx context.Context, org, ws, id string) (store.Exception, error) {
	return e.changedException(e.st.ArchiveException(ctx, org, ws, id, inState(statemachine.Archive)))
}

// Unarchive makes an archived exception pending again and its run, still
// stopped on it, waits for guidance again: no worker is needed until it is
// resolved, so what is woken is what shows the run and the exception
// (Options.Changed). ErrFailedPrecondition from other states and when the
// run has moved on since.
func (e *Engine) Unarchive(ctx context.Context, org, ws, id string) (store.Exception, error) {
	return e.changedException(e.st.UnarchiveException(ctx, org, ws, id, inState(statemachine.Unarchive)))
}

// Assign assigns an exception to assignee (users/{user}; the caller checks
// membership), or unassigns it (""). ErrFailedPrecondition for a resolved
// exception, which is final.
func (e *Engine) Assign(ctx context.Context, org, ws, id, assignee string) (store.Exception, error) {
	return e.changedException(e.st.AssignException(ctx, org, ws, id, assignee, func(x store.Exception) error {
		if x.State == store.ExceptionResolved {
			return fmt.Errorf("exception %q is RESOLVED, which is final: %w", x.ID, store.ErrFailedPrecondition)
		}
		return nil
	}))
}

// inState is the check of an exception's transition on ev: the exception
// is in the state the table (store/statemachine) moves on ev.
func inState(ev statemachine.Event) store.ExceptionCheck {
	from := statemachine.Exceptions.From(ev)
	return func(x store.Exception) error {
		if !slices.Contains(from, x.State) {
			return fmt.Errorf("exception %q is %s, not %s: %w", x.ID, x.State, from[0], store.ErrFailedPrecondition)
		}
		return nil
	}
}

// changedException tells Options.Changed of an exception that changed.
func (e *Engine) changedException(x store.Exception, err error) (store.Exception, error) {
	if err == nil {
		e.Changed(x.OrganizationID, x.WorkspaceID)
	}
	return x, err
}

// Pause pauses a run with a reason for actor (users/{u},
// organizations/{o}/apiKeys/{k}; kept in the run's history): executing →
// stopping, and this engine, or the replica executing it, stops it at its
// next statement; pending, waiting or awaiting_guidance → stopped.
// ErrFailedPrecondition from other states (from completed or failed:
// saying the pause came too late). The state is checked inside the store's
// transaction, on the row it locked and read once, so a pause and the
// run's finish are serialised: a pause that commits first always takes
// effect (the finish ends the run stopped, see store.Runs.FinishRun), one
// that comes after is too late.
func (e *Engine) Pause(ctx context.Context, org, ws, automation, id, reason, actor string) (store.Run, error) {
	r, err := e.st.ChangeRun(ctx, org, ws, automation, id, func(r store.Run, _ string) (store.RunChange, error) {
		// The state a pause leads to is the table's (store/statemachine).
		if to, ok := statemachine.Runs.Next(statemachine.Pause, r.State); ok {
			return store.RunChange{State: to, Reason: reason, Actor: actor}, nil
		}
		if statemachine.Runs.Terminal(r.State) {
			return store.RunChange{}, fmt.Errorf("run %q is already %s: the pause came too late: %w", id, r.State, store.ErrFailedPrecondition)
		}
		return store.RunChange{}, fmt.Errorf("run %q is %s: only a run that is %s can be paused: %w", id, r.State, states(statemachine.Runs.From(statemachine.Pause)), store.ErrFailedPrecondition)
	})
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

// PauseNoticed is told of a pause committed by any replica
// (store.Notifier.OnRunPause): when this engine executes the run, it stops
// it at its next statement now rather than at its next lease renewal
// (every LeaseDuration/3). "" (notices may have been missed) renews the
// leases at once, which reports every pause. It does not block.
func (e *Engine) PauseNoticed(runID string) {
	if runID == "" {
		select {
		case e.renewNow <- struct{}{}:
		default:
		}
		return
	}
	e.mu.Lock()
	f := e.inflight[runID]
	e.mu.Unlock()
	if f != nil {
		f.pause(errPaused)
	}
}

// Pausing reports whether this engine executes the run and has been told
// to pause it (by Pause, a notice or a lease renewal): it stops at its next
// statement.
func (e *Engine) Pausing(runID string) bool {
	e.mu.Lock()
	f := e.inflight[runID]
	e.mu.Unlock()
	return f != nil && f.soft.Err() != nil && errors.Is(context.Cause(f.soft), errPaused)
}

// Continue continues a stopped run for actor (kept in the run's history):
// it awaits guidance again when one of its exceptions is pending (the
// newest), else it is pending and the workers are woken.
// ErrFailedPrecondition from other states. Decided inside the store's
// transaction, on the run it locked and read once.
func (e *Engine) Continue(ctx context.Context, org, ws, automation, id, actor string) (store.Run, error) {
	r, err := e.st.ChangeRun(ctx, org, ws, automation, id, func(r store.Run, pending string) (store.RunChange, error) {
		// A continue awaits guidance again while an exception of the run is
		// pending; the table (store/statemachine) says from which states.
		ch := store.RunChange{State: store.RunPending, Actor: actor}
		if pending != "" {
			ch.State, ch.ExceptionID = store.RunAwaitingGuidance, pending
		}
		if !statemachine.Runs.Allows(statemachine.Continue, r.State, ch.State) {
			return store.RunChange{}, fmt.Errorf("run %q is %s: only a run that is %s can be continued: %w", id, r.State, states(statemachine.Runs.From(statemachine.Continue)), store.ErrFailedPrecondition)
		}
		return ch, nil
	})
	if err != nil {
		return r, err
	}
	if r.State == store.RunPending {
		e.announce(ctx)
	}
	e.Changed(org, ws)
	return r, nil
}

// states lists states for a message: "a, b or c".
func states(ss []store.RunState) string {
	var b strings.Builder
	for i, s := range ss {
		switch {
		case i == 0:
		case i == len(ss)-1:
			b.WriteString(" or ")
		default:
			b.WriteString(", ")
		}
		b.WriteString(string(s))
	}
	return b.String()
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
func CheckGuidance(x *lang.Exception, g Guidance) error {
	res, err := g.resolution()
	if err != nil {
		return &GuidanceError{Field: "guidance", Msg: "give exactly one of provide_values, skip, retry, replace_step, answer: " + err.Error()}
	}
	switch res.Kind {
	case lang.ProvideValues:
		field := "provide_values.values"
		names := make([]string, 0, len(res.Values)+len(res.Expressions))
		for name := range res.Values {
			names = append(names, name)
		}
		if len(res.Expressions) > 0 {
			field = "provide_expressions.expressions"
			if len(res.Values) > 0 {
				return &GuidanceError{Field: "guidance", Msg: "give values or expressions, not both"}
			}
			for name, src := range res.Expressions {
				if err := lang.CheckExpression(src); err != nil {
					return &GuidanceError{Field: field, Msg: fmt.Sprintf("the expression for %s does not parse: %v", name, err)}
				}
				names = append(names, name)
			}
		}
		if len(names) == 0 {
			return &GuidanceError{Field: field, Msg: "provide at least one value"}
		}
		if x.Question != "" {
			return &GuidanceError{Field: "provide_values", Msg: "this exception asks a question: resolve it with an answer"}
		}
		if x.Fact != "" {
			want := lang.FactName(x.Fact)
			found := false
			var given []string
			for _, name := range names {
				if lang.FactName(name) == want {
					found = true
				}
				given = append(given, name)
			}
			if !found {
				return &GuidanceError{Field: field, Msg: fmt.Sprintf("this exception asks for %s; the values given are for %s", x.Fact, strings.Join(given, ", "))}
			}
		}
	case lang.Answer:
		if x.Question == "" {
			return &GuidanceError{Field: "answer", Msg: "this exception asks no question: an answer does not resolve it"}
		}
		if err := lang.CheckQuestionAnswer(x, res.Answer); err != nil {
			return &GuidanceError{Field: "answer.value", Msg: err.Error()}
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
