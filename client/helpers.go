package client

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"go.einride.tech/aip/resourcename"

	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/internal/codec/protovalue"
	"github.com/proserun/prose/internal/lang"
	"github.com/proserun/prose/internal/names"
)

// Value converts a plain value to the API's Value: nil, bool, string,
// numbers (float64, int, json.Number; a json.Number keeps its digits:
// "120.50" stays 120.50), []any and map[string]any, or anything
// encoding/json renders as those. A *platformv1.Value is returned as is.
func Value(v any) (*platformv1.Value, error) {
	if pv, ok := v.(*platformv1.Value); ok {
		return pv, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return ValueFromJSON(b)
}

// ValueFromJSON converts one plain JSON value (`120.50`, `"ACME"`,
// `{"a": [1, 2]}`) to the API's Value; numbers keep their digits.
func ValueFromJSON(b []byte) (*platformv1.Value, error) {
	lv, err := lang.DecodePlain(b)
	if err != nil {
		return nil, err
	}
	return protovalue.ToProto(lv)
}

// Values converts a map of plain values (see Value).
func Values(m map[string]any) (map[string]*platformv1.Value, error) {
	out := make(map[string]*platformv1.Value, len(m))
	for k, v := range m {
		pv, err := Value(v)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", k, err)
		}
		out[k] = pv
	}
	return out, nil
}

// PlainJSON renders a Value as plain JSON (numbers with their digits:
// 128.9350).
func PlainJSON(v *platformv1.Value) (json.RawMessage, error) {
	lv, err := protovalue.FromProto(v)
	if err != nil {
		return nil, err
	}
	return lang.AppendPlain(nil, lv)
}

// Plain converts a Value to a plain Go value as encoding/json decodes it
// with UseNumber (numbers are json.Number, keeping their digits).
func Plain(v *platformv1.Value) (any, error) {
	b, err := PlainJSON(v)
	if err != nil {
		return nil, err
	}
	return decodeNumber(b)
}

// PlainMap converts a map of Values (a run's inputs or outputs) to plain
// JSON values.
func PlainMap(m map[string]*platformv1.Value) (map[string]json.RawMessage, error) {
	out := make(map[string]json.RawMessage, len(m))
	for k, v := range m {
		b, err := PlainJSON(v)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", k, err)
		}
		out[k] = b
	}
	return out, nil
}

// Outputs returns a completed run's outputs as plain Go values (see Plain),
// by output name ("output total"); nil when the run has not completed.
func Outputs(r *platformv1.Run) (map[string]any, error) {
	c := r.GetState().GetCompleted()
	if c == nil {
		return nil, nil
	}
	out := make(map[string]any, len(c.GetOutputs()))
	for k, v := range c.GetOutputs() {
		p, err := Plain(v)
		if err != nil {
			return nil, fmt.Errorf("output %s: %w", k, err)
		}
		out[k] = p
	}
	return out, nil
}

func decodeNumber(b []byte) (any, error) {
	var v any
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

// StateName is the name of a run's state as the API's JSON writes its
// member: "pending", "executing", "stopping", "stopped",
// "awaiting_guidance", "completed" or "failed" ("" when unset).
func StateName(r *platformv1.Run) string {
	switch r.GetState().GetState().(type) {
	case *platformv1.RunState_Pending:
		return "pending"
	case *platformv1.RunState_Executing:
		return "executing"
	case *platformv1.RunState_Stopping:
		return "stopping"
	case *platformv1.RunState_Stopped:
		return "stopped"
	case *platformv1.RunState_AwaitingGuidance:
		return "awaiting_guidance"
	case *platformv1.RunState_Completed:
		return "completed"
	case *platformv1.RunState_Failed:
		return "failed"
	}
	return ""
}

// Settled reports whether a run waits for nobody but a person: completed,
// failed, stopped or awaiting guidance.
func Settled(r *platformv1.Run) bool {
	switch StateName(r) {
	case "completed", "failed", "stopped", "awaiting_guidance":
		return true
	}
	return false
}

// InvokeOption changes an Invoke.
type InvokeOption func(*platformv1.InvokeAutomationRequest)

// Draft runs the automation's draft instead of its published stage.
func Draft() InvokeOption {
	return func(r *platformv1.InvokeAutomationRequest) {
		r.Stage = platformv1.AutomationStage_AUTOMATION_STAGE_DRAFT
	}
}

// RequestID sets the idempotency key (default: a random one per Invoke, so
// the retries of the service config start one run).
func RequestID(id string) InvokeOption {
	return func(r *platformv1.InvokeAutomationRequest) { r.RequestId = id }
}

// PreviousRun lets the run reuse the journaled results of a previous run
// (its name or id) for unchanged steps.
func PreviousRun(run string) InvokeOption {
	return func(r *platformv1.InvokeAutomationRequest) { r.PreviousRun = run }
}

// Invoke starts a run of an automation
// (organizations/{o}/workspaces/{w}/automations/{a}) with plain inputs (see
// Value) and returns the run's name. It runs the published stage unless
// Draft is given.
func (c *Client) Invoke(ctx context.Context, automation string, inputs map[string]any, opts ...InvokeOption) (string, error) {
	var org, ws, a string
	if err := resourcename.Sscan(automation, names.AutomationPattern, &org, &ws, &a); err != nil {
		return "", fmt.Errorf("client: %q is not an automation's name (%s)", automation, names.AutomationPattern)
	}
	in, err := Values(inputs)
	if err != nil {
		return "", fmt.Errorf("client: input %w", err)
	}
	req := &platformv1.InvokeAutomationRequest{
		OrganizationId: org, WorkspaceId: ws, AutomationId: a, Inputs: in,
		Stage: platformv1.AutomationStage_AUTOMATION_STAGE_PUBLISHED, RequestId: rand.Text(),
	}
	for _, o := range opts {
		o(req)
	}
	resp, err := c.Automations.InvokeAutomation(ctx, req)
	if err != nil {
		return "", err
	}
	return names.Run(org, ws, a, resp.GetRunId()), nil
}

// GetRun reads a run by name (organizations/…/automations/{a}/runs/{r};
// the automation may be "-").
func (c *Client) GetRun(ctx context.Context, run string) (*platformv1.Run, error) {
	org, ws, a, r, ok := names.ParseRun(run)
	if !ok {
		return nil, fmt.Errorf("client: %q is not a run's name (%s)", run, names.RunPattern)
	}
	return c.Runs.GetRun(ctx, &platformv1.GetRunRequest{OrganizationId: org, WorkspaceId: ws, AutomationId: a, RunId: r})
}

// ExceptionOf is the name of the exception a run awaiting guidance waits on
// (organizations/{o}/workspaces/{w}/exceptions/{e}), for ResolveException;
// "" when the run waits for nothing.
func ExceptionOf(r *platformv1.Run) string {
	id := r.GetState().GetAwaitingGuidance().GetException()
	org, ws, _, _, ok := names.ParseRun(r.GetName())
	if id == "" || !ok {
		return ""
	}
	return names.Exception(org, ws, names.ID(id))
}

// WaitForRun reads a run until it is settled (see Settled): completed,
// failed, stopped, or awaiting guidance (ExceptionOf names the exception it
// waits on). It polls, from every 20 ms up to every second, until ctx ends.
func (c *Client) WaitForRun(ctx context.Context, run string) (*platformv1.Run, error) {
	wait := 20 * time.Millisecond
	for {
		r, err := c.GetRun(ctx, run)
		if err != nil {
			return nil, err
		}
		if Settled(r) {
			return r, nil
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return r, ctx.Err()
		case <-t.C:
		}
		if wait = wait * 3 / 2; wait > time.Second {
			wait = time.Second
		}
	}
}

// Guidance is how a person resolves an exception: ProvideValues, Answer,
// Skip, Retry or ReplaceStep.
type Guidance struct {
	set func(*platformv1.ResolveExceptionRequest) error
}

// ProvideValues gives the values of the facts the run misses, by fact name
// ("invoice total") and plain value (see Value).
func ProvideValues(values map[string]any) Guidance {
	return Guidance{func(r *platformv1.ResolveExceptionRequest) error {
		v, err := Values(values)
		if err != nil {
			return err
		}
		r.Guidance = &platformv1.ResolveExceptionRequest_ProvideValues{ProvideValues: &platformv1.ProvideValues{Values: v}}
		return nil
	}}
}

// Answer answers the question the run asked.
func Answer(value any) Guidance {
	return Guidance{func(r *platformv1.ResolveExceptionRequest) error {
		v, err := Value(value)
		if err != nil {
			return err
		}
		r.Guidance = &platformv1.ResolveExceptionRequest_Answer{Answer: &platformv1.Answer{Value: v}}
		return nil
	}}
}

// Skip goes on past the step that raised the exception.
func Skip() Guidance {
	return Guidance{func(r *platformv1.ResolveExceptionRequest) error {
		r.Guidance = &platformv1.ResolveExceptionRequest_Skip{Skip: &platformv1.Skip{}}
		return nil
	}}
}

// Retry executes the step that raised the exception again.
func Retry() Guidance {
	return Guidance{func(r *platformv1.ResolveExceptionRequest) error {
		r.Guidance = &platformv1.ResolveExceptionRequest_Retry{Retry: &platformv1.Retry{}}
		return nil
	}}
}

// ReplaceStep replaces the step that raised the exception with code.
func ReplaceStep(code string) Guidance {
	return Guidance{func(r *platformv1.ResolveExceptionRequest) error {
		r.Guidance = &platformv1.ResolveExceptionRequest_ReplaceStep{ReplaceStep: &platformv1.ReplaceStep{Code: code}}
		return nil
	}}
}

// ResolveException resolves an exception
// (organizations/{o}/workspaces/{w}/exceptions/{e}) with guidance; the run
// goes on.
func (c *Client) ResolveException(ctx context.Context, exception string, g Guidance) (*platformv1.Exception, error) {
	var org, ws, e string
	if err := resourcename.Sscan(exception, names.ExceptionPattern, &org, &ws, &e); err != nil {
		return nil, fmt.Errorf("client: %q is not an exception's name (%s)", exception, names.ExceptionPattern)
	}
	if g.set == nil {
		return nil, errors.New("client: no guidance")
	}
	req := &platformv1.ResolveExceptionRequest{OrganizationId: org, WorkspaceId: ws, ExceptionId: e}
	if err := g.set(req); err != nil {
		return nil, fmt.Errorf("client: guidance: %w", err)
	}
	return c.Exceptions.ResolveException(ctx, req)
}

// StreamEvents follows the conversation of a run with an agent (the
// built-in one is "prose") from after the offset after (0: the start),
// calling fn with each event as it is written, until ctx ends, the server
// ends the stream, or fn returns an error (returned as is; io.EOF from fn
// ends the stream without error).
func (c *Client) StreamEvents(ctx context.Context, run, agent string, after int64, fn func(*platformv1.StreamEventsResponse) error) error {
	org, ws, a, r, ok := names.ParseRun(run)
	if !ok {
		return fmt.Errorf("client: %q is not a run's name (%s)", run, names.RunPattern)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := c.Events.StreamEvents(ctx, &platformv1.StreamEventsRequest{
		OrganizationId: org, WorkspaceId: ws, AutomationId: a, RunId: r, AgentId: agent, AfterOffset: after,
	})
	if err != nil {
		return err
	}
	for {
		ev, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := fn(ev); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
	}
}
