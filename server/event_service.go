package server

import (
	"github.com/proserun/prose/internal/names"

	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"

	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/internal/agent"
	"github.com/proserun/prose/internal/engine"
	"github.com/proserun/prose/server/transport"
	"github.com/proserun/prose/store"
	"github.com/proserun/prose/store/sqlfilter"
)

// DefaultMaxEventMessageBytes is the default cap on the size of a user
// message (its content, or its content_list, as a protobuf message): the
// size of a whole event (store.MaxEventBytes), which the request limits
// check first.
const DefaultMaxEventMessageBytes = store.MaxEventBytes

// DefaultEventStreamPoll is the default period of a stream's safety
// re-read of its thread (see EventOptions.Poll).
const DefaultEventStreamPoll = 30 * time.Second

// streamBatch bounds the events a stream reads from the store at once (so
// at most streamBatch messages, each capped, are held per stream).
const streamBatch = 8

// EventService implements prose.platform.v1.EventService: the conversation
// threads of runs with agents. User messages are stored complete and handed
// to the thread's agent, which answers in the background; streams follow a
// thread through an in-process broker and a poll of the store (for events
// written by other replicas).
type EventService struct {
	platformv1.UnimplementedEventServiceServer
	st     store.Store
	runner *agent.Runner
	broker *broker
	// poll is the period of a stream's safety re-read (0: none).
	poll time.Duration
	// maxMessage caps the size of a user message.
	maxMessage int
}

// EventOptions configure the event service.
type EventOptions struct {
	// Agents answer user messages; nil: the built-in agent (agent.Prose).
	Agents []agent.Agent
	// Runner options (OnChange is set by the service).
	Runner agent.Options
	// Poll is how often an idle stream re-reads its thread after its last
	// offset (one indexed query that finds nothing), in case a wake-up was
	// lost; default DefaultEventStreamPoll, negative: never.
	Poll time.Duration
	// MaxMessageBytes caps the size of a user message (its content or
	// content_list as a protobuf message); default (and at most)
	// MaxEventBytes.
	MaxMessageBytes int
	// MaxEventBytes is the size of an event (store.Sizes.EventBytes; the
	// request limits check the clients' events); it caps the events the
	// agents write. Default store.MaxEventBytes.
	MaxEventBytes int
}

// NewEventService returns the event service with the built-in agent.
func NewEventService(st store.Store, eng *engine.Engine) *EventService {
	return NewEventServiceWith(st, eng, EventOptions{})
}

// NewEventServiceWith returns the event service with options.
func NewEventServiceWith(st store.Store, eng *engine.Engine, o EventOptions) *EventService {
	s := &EventService{st: st, broker: newBroker(), poll: o.Poll, maxMessage: o.MaxMessageBytes}
	switch {
	case s.poll == 0:
		s.poll = DefaultEventStreamPoll
	case s.poll < 0:
		s.poll = 0
	}
	maxEvent := o.MaxEventBytes
	if maxEvent <= 0 {
		maxEvent = store.MaxEventBytes
	}
	if s.maxMessage <= 0 || s.maxMessage > maxEvent {
		s.maxMessage = maxEvent
	}
	agents := o.Agents
	if agents == nil {
		agents = []agent.Agent{agent.Prose{}}
	}
	ro := o.Runner
	ro.OnChange = func(t store.Thread) { s.broker.notify(t.Key()) }
	// The agents' events have the caps of the clients' (agent.SizeError).
	if ro.MaxMessageBytes <= 0 {
		ro.MaxMessageBytes = s.maxMessage
	}
	if ro.MaxEventBytes <= 0 {
		ro.MaxEventBytes = maxEvent
	}
	if ro.Authorize == nil {
		// The agent acts with the authority of the person who wrote to it:
		// the permission a person's resolution needs, checked again at each
		// tool call.
		ro.Authorize = func(ctx context.Context, t store.Thread) error {
			return transport.RequireWorkspace(ctx, t.WorkspaceID, store.PermExceptionsResolve)
		}
	}
	s.runner = agent.NewRunner(st, eng, ro, agents...)
	return s
}

// EventChanged wakes the streams of the thread with the given key
// (store.Thread.Key) after a write of another replica; key "": every
// stream (notices may have been missed). It does not block; it is given to
// store/postgres.Store.OnEventChange.
func (s *EventService) EventChanged(threadKey string, _ int64) { s.broker.notify(threadKey) }

// Streams is the number of event streams open on this process.
func (s *EventService) Streams() int { return s.broker.count() }

// Runner is the runner of the agents' generations (tests wait on it).
func (s *EventService) Runner() *agent.Runner { return s.runner }

// Close cancels the running generations and waits for them.
func (s *EventService) Close() error { return s.runner.Close() }

func eventThreadName(t store.Thread) string {
	return names.Agent(t.OrganizationID, t.WorkspaceID, t.AutomationID, t.RunID, t.AgentID)
}

// thread checks that the run and the agent exist.
func (s *EventService) thread(ctx context.Context, org, ws, automation, run, agentID string) (store.Thread, store.Run, error) {
	t := store.Thread{OrganizationID: org, WorkspaceID: ws, AutomationID: automation, RunID: run, AgentID: agentID}
	if strings.TrimSpace(agentID) == "" {
		return t, store.Run{}, transport.InvalidArgument(transport.ReasonRequiredFieldMissing, "agent_id is required", transport.Violation("agent_id", "required"))
	}
	r, err := s.st.GetRun(ctx, org, ws, automation, run)
	if err != nil {
		return t, r, runErr(err, org, ws, automation, run)
	}
	if _, ok := s.runner.Agent(agentID); !ok {
		return t, r, transport.NotFound(ReasonAgentNotFound, eventThreadName(t))
	}
	return t, r, nil
}

func eventErr(err error, t store.Thread, id string) error {
	return storeStatus(err, ReasonEventNotFound, ReasonEventNotFound, agent.EventName(t, id))
}

// ListEvents lists a thread's events oldest first. Filter: exception (=,
// !=, AND, OR, NOT).
func (s *EventService) ListEvents(ctx context.Context, req *platformv1.ListEventsRequest) (*platformv1.ListEventsResponse, error) {
	lp, err := parseFiltered(req, sqlfilter.Events)
	if err != nil {
		return nil, err
	}
	t, _, err := s.thread(ctx, req.GetOrganizationId(), req.GetWorkspaceId(), req.GetAutomationId(), req.GetRunId(), req.GetAgentId())
	if err != nil {
		return nil, err
	}
	page, total, err := s.st.ListEvents(ctx, store.ListEventsRequest{Thread: t, Filter: lp.Filter, PageSize: lp.Size, PageToken: lp.Token})
	if err != nil {
		return nil, eventErr(err, t, "")
	}
	out := &platformv1.ListEventsResponse{NextPageToken: page.NextPageToken, TotalSize: int32(min(total, 1<<31-1))}
	if out.Events, err = mapItems(page.Items, agent.FromStore); err != nil {
		return nil, err
	}
	return out, nil
}

// GetEvent gets an event.
func (s *EventService) GetEvent(ctx context.Context, req *platformv1.GetEventRequest) (*platformv1.Event, error) {
	t, _, err := s.thread(ctx, req.GetOrganizationId(), req.GetWorkspaceId(), req.GetAutomationId(), req.GetRunId(), req.GetAgentId())
	if err != nil {
		return nil, err
	}
	e, err := s.st.GetEvent(ctx, t, req.GetEventId())
	if err != nil {
		return nil, eventErr(err, t, req.GetEventId())
	}
	return agent.FromStore(e)
}

// CreateEvent adds a user message to a thread (stored complete; user is the
// caller) and hands it to the thread's agent. Exactly one payload member,
// user_message, with content or content_list. exception defaults to the
// run's pending exception; a given one must be an exception of the run.
func (s *EventService) CreateEvent(ctx context.Context, req *platformv1.CreateEventRequest) (*platformv1.Event, error) {
	in := req.GetEvent()
	if in == nil {
		return nil, transport.InvalidArgument(transport.ReasonRequiredFieldMissing, "event is required", transport.Violation("event", "required"))
	}
	um := in.GetUserMessage()
	if um == nil {
		return nil, transport.InvalidArgument(ReasonInvalidField, "only user_message events can be created: set exactly one payload member, user_message (the agent writes the other kinds)",
			transport.Violation("event.user_message", "required"))
	}
	hasText := strings.TrimSpace(um.GetContent()) != ""
	for _, it := range um.GetContentList().GetItems() {
		if it.GetContent() == nil {
			return nil, transport.InvalidArgument(ReasonInvalidField, "every content_list item needs text or file", transport.Violation("event.user_message.content_list.items", "an item is empty"))
		}
		hasText = true
	}
	if !hasText {
		return nil, transport.InvalidArgument(transport.ReasonRequiredFieldMissing, "user_message needs content or content_list", transport.Violation("event.user_message.content", "required"))
	}
	if n := proto.Size(um); n > s.maxMessage {
		field := "event.user_message.content"
		if len(um.GetContentList().GetItems()) > 0 {
			field = "event.user_message.content_list"
		}
		return nil, transport.InvalidArgument(ReasonEventMessageTooLarge,
			fmt.Sprintf("the message is %d bytes; a message may have at most %d bytes", n, s.maxMessage),
			transport.Violation(field, fmt.Sprintf("at most %d bytes", s.maxMessage)))
	}
	org, ws := req.GetOrganizationId(), req.GetWorkspaceId()
	t, run, err := s.thread(ctx, org, ws, req.GetAutomationId(), req.GetRunId(), req.GetAgentId())
	if err != nil {
		return nil, err
	}
	const method = "EventService/CreateEvent"
	if id := req.GetRequestId(); id != "" {
		if name, err := s.st.LookupRequest(ctx, org, method, id); err == nil {
			e, err := s.st.GetEvent(ctx, t, names.ID(name))
			if err != nil {
				return nil, eventErr(err, t, names.ID(name))
			}
			return agent.FromStore(e)
		}
	}
	ev := &platformv1.Event{State: platformv1.Event_STATE_COMPLETE, Payload: &platformv1.Event_UserMessage{UserMessage: proto.CloneOf(um)}}
	ev.GetUserMessage().User = ""
	if p, ok := transport.PrincipalFrom(ctx); ok && p.UserID != "" {
		ev.GetUserMessage().User = names.User(p.UserID)
	}
	excID := names.ID(in.GetException())
	if excID == "" {
		excID = run.ExceptionID
	}
	if excID != "" {
		x, err := s.st.GetException(ctx, org, ws, excID)
		// A resource name must name this run's exception whole.
		if err != nil || x.RunID != run.ID || strings.Contains(in.GetException(), "/") && in.GetException() != names.Exception(x.OrganizationID, x.WorkspaceID, x.ID) {
			if in.GetException() != "" {
				return nil, transport.InvalidArgument(ReasonInvalidField, "exception is not an exception of this run", transport.Violation("event.exception", "not an exception of the run"))
			}
		} else {
			ev.Exception = names.Exception(x.OrganizationID, x.WorkspaceID, x.ID)
		}
	}
	se, err := agent.ToStore(t, ev)
	if err != nil {
		return nil, err
	}
	se.ID = ""
	created, err := s.st.CreateEvent(ctx, se)
	if err != nil {
		return nil, eventErr(err, t, "")
	}
	out, err := agent.FromStore(created)
	if err != nil {
		return nil, err
	}
	if id := req.GetRequestId(); id != "" {
		name, err := s.st.RecordRequest(ctx, org, method, id, out.GetName())
		if err == nil && name != out.GetName() {
			// A concurrent retry recorded first: its event is the answer.
			if e, err := s.st.GetEvent(ctx, t, names.ID(name)); err == nil {
				return agent.FromStore(e)
			}
		}
	}
	s.broker.notify(t.Key())
	s.runner.Start(ctx, t, out)
	return out, nil
}

// CancelGeneration stops the agent's ongoing generation in the thread: its
// streaming events are completed as they stand and a completion_response
// with error "cancelled" ends it. Nothing ongoing is not an error.
func (s *EventService) CancelGeneration(ctx context.Context, req *platformv1.CancelGenerationRequest) (*platformv1.CancelGenerationResponse, error) {
	t, _, err := s.thread(ctx, req.GetOrganizationId(), req.GetWorkspaceId(), req.GetAutomationId(), req.GetRunId(), req.GetAgentId())
	if err != nil {
		return nil, err
	}
	if _, err := s.runner.Cancel(ctx, t); err != nil {
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return nil, err
		}
		return nil, eventErr(err, t, "")
	}
	return &platformv1.CancelGenerationResponse{}, nil
}

// StreamEvents sends the thread's events after the request's after_offset
// (each as it stands, in the order of their last change), then every
// change until the client goes away. The stream subscribes before it
// reads, so no change is missed; it holds no events while idle, and
// unsubscribes when the client leaves.
func (s *EventService) StreamEvents(req *platformv1.StreamEventsRequest, stream platformv1.EventService_StreamEventsServer) error {
	ctx := stream.Context()
	offset := req.GetAfterOffset() // 0 or more: its protovalidate constraint
	t, _, err := s.thread(ctx, req.GetOrganizationId(), req.GetWorkspaceId(), req.GetAutomationId(), req.GetRunId(), req.GetAgentId())
	if err != nil {
		return err
	}
	wake, unsubscribe := s.broker.subscribeWith(t.Key(), func(ctx context.Context, after int64) ([]*platformv1.StreamEventsResponse, error) {
		return s.streamBatch(ctx, t, after)
	})
	defer unsubscribe()
	// The headers now, not with the first event: a client (the HTTP
	// gateway among them) knows at once that the stream is open, even on a
	// thread with nothing to send yet.
	if err := stream.SendHeader(nil); err != nil {
		return nil //nolint:nilerr // the client went away
	}
	var tick <-chan time.Time
	if s.poll > 0 {
		ticker := time.NewTicker(s.poll)
		defer ticker.Stop()
		tick = ticker.C
	}
	fresh := false // woken by the safety re-read: ask the store
	for {
		for {
			msgs, err := s.broker.read(ctx, t.Key(), offset, fresh, func(ctx context.Context) ([]*platformv1.StreamEventsResponse, error) {
				return s.streamBatch(ctx, t, offset)
			})
			fresh = false
			if err != nil {
				if ctx.Err() != nil {
					return nil
				}
				return err
			}
			for _, m := range msgs {
				if err := stream.Send(m); err != nil {
					return nil //nolint:nilerr // the client went away
				}
				offset = m.GetOffset()
			}
			if len(msgs) < streamBatch {
				break
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-wake:
		case <-tick:
			fresh = true
		}
	}
}

// streamBatch reads the messages of the thread's events after offset, at
// most streamBatch of them.
func (s *EventService) streamBatch(ctx context.Context, t store.Thread, offset int64) ([]*platformv1.StreamEventsResponse, error) {
	events, err := s.st.ListEventsAfter(ctx, t, offset, streamBatch)
	if err != nil {
		return nil, eventErr(err, t, "")
	}
	out := make([]*platformv1.StreamEventsResponse, len(events))
	for i, e := range events {
		ev, err := agent.FromStore(e)
		if err != nil {
			return nil, err
		}
		out[i] = &platformv1.StreamEventsResponse{Event: ev, Offset: e.Offset}
	}
	return out, nil
}
