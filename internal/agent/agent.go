// Package agent holds the agents that converse with people about a run's
// exceptions, and the Runner that executes their generations.
//
// An agent answers the user messages of a thread (one run, one agent). It
// writes its events through a Writer (agent messages streamed as
// STATE_STREAMING then STATE_COMPLETE) and acts on the run only through
// Tools, which record every call as tool_call_request / tool_call_result
// events. The Runner ends every generation with a completion_response.
// See README.md.
package agent

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/proserun/prose/internal/codec"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/internal/engine"
	"github.com/proserun/prose/internal/lang"
	"github.com/proserun/prose/internal/names"
	"github.com/proserun/prose/store"
)

// Agent converses about the exceptions of runs.
type Agent interface {
	// ID is the agent's id in resource names (agents/{id}).
	ID() string
	// Respond answers c.Message. It writes its events with w and acts on the
	// run only through c.Tools. It returns the final text of the generation
	// (the completion_response content) or an error (recorded as the
	// completion_response error). When ctx is cancelled (CancelGeneration,
	// shutdown) it stops and returns ctx's error.
	Respond(ctx context.Context, c *Conversation, w *Writer) (string, error)
}

// Conversation is what an agent knows when it answers a message.
type Conversation struct {
	Thread store.Thread
	Run    store.Run
	// Exception is the run's pending exception (nil when it waits on none);
	// Details is what the interpreter asks for in it, and Statement the code
	// of the statement where it happened (Line is 1-based).
	Exception *store.Exception
	Details   *lang.Exception
	Statement string
	Line      int
	// History is the thread, oldest first, ending with Message.
	History []*platformv1.Event
	Message *platformv1.Event
	Tools   Tools
}

// Text is the text of the user message (content and the text items of its
// content list).
func (c *Conversation) Text() string {
	m := c.Message.GetUserMessage()
	parts := []string{}
	if s := strings.TrimSpace(m.GetContent()); s != "" {
		parts = append(parts, s)
	}
	for _, it := range m.GetContentList().GetItems() {
		if s := strings.TrimSpace(it.GetText()); s != "" {
			parts = append(parts, s)
		}
	}
	return strings.Join(parts, "\n")
}

// ExceptionName is the resource name of the conversation's exception ("" if
// none).
func (c *Conversation) ExceptionName() string {
	if c.Exception == nil {
		return ""
	}
	x := c.Exception
	return names.Exception(x.OrganizationID, x.WorkspaceID, x.ID)
}

// Tools are the actions an agent may take on the run. Every call is
// recorded in the thread.
type Tools interface {
	// Resolve resolves the conversation's exception with guidance. The
	// error wraps store sentinels: ErrInvalidArgument (an
	// *engine.GuidanceError) when the guidance does not fit the exception,
	// ErrFailedPrecondition when it is no longer pending.
	Resolve(ctx context.Context, g engine.Guidance) (store.Exception, error)
	// Explain returns the exception as JSON: where the run stopped (line,
	// code, byte span, step), the message, what it needs (fact, question,
	// choices), the failed checks, the run's facts and what reply resolves
	// it.
	Explain(ctx context.Context) (string, error)
	// ProposeGuideEntry makes a guide entry from the conversation's
	// exception and guidance g, pending approval (engine.CreateGuideEntry,
	// the path of GuideEntryService). Errors as Resolve's.
	ProposeGuideEntry(ctx context.Context, g engine.Guidance, txt engine.GuideEntryText) (store.GuideEntry, error)
}

// ---------------------------------------------------------------------------
// Event codec shared with the service.

// EventName is the resource name of an event.
func EventName(t store.Thread, id string) string {
	return names.Event(t.OrganizationID, t.WorkspaceID, t.AutomationID, t.RunID, t.AgentID, id)
}

// ToStore encodes an event of thread t for the store: the payload is the
// stored shape (codec.EventPayload), without the fields the store keeps in
// columns.
func ToStore(t store.Thread, ev *platformv1.Event) (store.Event, error) {
	b, err := codec.EventPayload(ev)
	if err != nil {
		return store.Event{}, err
	}
	state := store.EventComplete
	if ev.GetState() == platformv1.Event_STATE_STREAMING {
		state = store.EventStreaming
	}
	return store.Event{Thread: t, ID: names.ID(ev.GetName()), ExceptionID: names.ID(ev.GetException()), State: state, Payload: b}, nil
}

// FromStore decodes a stored event.
func FromStore(e store.Event) (*platformv1.Event, error) {
	ev, err := codec.EventFromPayload(e.Payload)
	if err != nil {
		return nil, err
	}
	ev.Name = EventName(e.Thread, e.ID)
	ev.State = platformv1.Event_STATE_COMPLETE
	if e.State == store.EventStreaming {
		ev.State = platformv1.Event_STATE_STREAMING
	}
	ev.CreateTime, ev.UpdateTime = timestamppb.New(e.CreateTime), timestamppb.New(e.UpdateTime)
	return ev, nil
}

// ---------------------------------------------------------------------------
// Writer

// errSuperseded reports that an event this generation streams was completed
// by someone else: the generation was cancelled (perhaps from another
// replica).
var errSuperseded = errors.New("the generation was cancelled")

// Writer writes the events of one generation into its thread.
type Writer struct {
	st        store.Store
	thread    store.Thread
	exception string // resource name put on every event
	onChange  func(store.Thread)
	open      map[string]*platformv1.Event // streaming events by id
	pace      time.Duration
	// maxEvent and maxMessage are the caps of Options (checkSize; 0: none).
	maxEvent, maxMessage int
}

// StreamText writes an agent message as it is "generated": a streaming
// event growing a few words at a time, then complete. It returns the text.
func (w *Writer) StreamText(ctx context.Context, text string) (string, error) {
	words := strings.SplitAfter(text, " ")
	const chunk = 6
	ev, err := w.Begin(ctx, agentMessage(""))
	if err != nil {
		return "", err
	}
	for i := 0; i < len(words); i += chunk {
		if err := w.wait(ctx); err != nil {
			return "", err
		}
		end := min(i+chunk, len(words))
		ev.Payload = agentMessage(strings.Join(words[:end], "")).Payload
		if end < len(words) {
			if ev, err = w.Update(ctx, ev); err != nil {
				return "", err
			}
		}
	}
	if _, err := w.Complete(ctx, ev); err != nil {
		return "", err
	}
	return text, nil
}

func (w *Writer) wait(ctx context.Context) error {
	if w.pace <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(w.pace)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func agentMessage(s string) *platformv1.Event {
	return &platformv1.Event{Payload: &platformv1.Event_AgentMessage{AgentMessage: &platformv1.AgentMessage{Content: s}}}
}

func (w *Writer) save(ctx context.Context, ev *platformv1.Event, create bool) (*platformv1.Event, error) {
	if ev.GetException() == "" {
		ev.Exception = w.exception
	}
	if err := checkSize(ev, w.maxMessage, w.maxEvent); err != nil {
		return nil, err
	}
	se, err := ToStore(w.thread, ev)
	if err != nil {
		return nil, err
	}
	var out store.Event
	if create {
		out, err = w.st.CreateEvent(ctx, se)
	} else {
		out, err = w.st.UpdateEvent(ctx, se)
		if errors.Is(err, store.ErrFailedPrecondition) {
			delete(w.open, se.ID)
			return nil, errSuperseded
		}
	}
	if err != nil {
		return nil, err
	}
	if w.onChange != nil {
		w.onChange(w.thread)
	}
	saved, err := FromStore(out)
	if err != nil {
		return nil, err
	}
	if saved.GetState() == platformv1.Event_STATE_STREAMING {
		w.open[out.ID] = saved
	} else {
		delete(w.open, out.ID)
	}
	return saved, nil
}

// Emit adds a complete event.
func (w *Writer) Emit(ctx context.Context, ev *platformv1.Event) (*platformv1.Event, error) {
	ev = proto.CloneOf(ev)
	ev.Name, ev.State = "", platformv1.Event_STATE_COMPLETE
	return w.save(ctx, ev, true)
}

// Begin adds a streaming event; Update changes it and Complete finishes it.
func (w *Writer) Begin(ctx context.Context, ev *platformv1.Event) (*platformv1.Event, error) {
	ev = proto.CloneOf(ev)
	ev.Name, ev.State = "", platformv1.Event_STATE_STREAMING
	return w.save(ctx, ev, true)
}

// Update writes a new payload of a streaming event (ev.Name set), still
// streaming.
func (w *Writer) Update(ctx context.Context, ev *platformv1.Event) (*platformv1.Event, error) {
	ev = proto.CloneOf(ev)
	ev.State = platformv1.Event_STATE_STREAMING
	return w.save(ctx, ev, false)
}

// Complete writes the final payload of a streaming event.
func (w *Writer) Complete(ctx context.Context, ev *platformv1.Event) (*platformv1.Event, error) {
	ev = proto.CloneOf(ev)
	ev.State = platformv1.Event_STATE_COMPLETE
	return w.save(ctx, ev, false)
}

// closeOpen completes the events left streaming (a generation that
// stopped), as they stand.
func (w *Writer) closeOpen(ctx context.Context) {
	for _, ev := range w.open {
		_, _ = w.Complete(ctx, ev)
	}
}
