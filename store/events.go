package store

import (
	"context"
	"time"
)

// EventState is the generation state of a conversation event.
//
//	(created) → STREAMING → COMPLETE (terminal)
//	(created) → COMPLETE
type EventState string

// The event states.
const (
	EventStreaming EventState = "STREAMING"
	EventComplete  EventState = "COMPLETE"
)

// Thread identifies the conversation of one agent about one run.
type Thread struct {
	OrganizationID string
	WorkspaceID    string
	AutomationID   string
	RunID          string
	AgentID        string
}

// Key is a short key of the thread, unique in the store (run ids are).
func (t Thread) Key() string { return t.RunID + "/" + t.AgentID }

// Event is one event of a thread. Payload is the marshalled
// prose.persist.v1.Event (agent.ToStore writes it), opaque to the store; the indexed columns
// (ExceptionID, State, times) are the store's and win over the payload.
type Event struct {
	Thread
	ID          string
	ExceptionID string
	State       EventState
	Payload     []byte
	// Seq orders the events of a thread (1, 2, …), assigned on create.
	Seq int64
	// Revision counts the writes of the event (1 on create), so a reader
	// can tell a changed event from one it has seen.
	Revision int64
	// Offset is the event's place in its thread's stream of changes: every
	// create and update gives the event the thread's next offset (1, 2, …),
	// and an offset becomes visible only after every smaller one of the
	// thread, so a reader that has seen the thread up to n reads what
	// changed since with ListEventsAfter(n).
	Offset     int64
	CreateTime time.Time
	UpdateTime time.Time
}

// ListEventsRequest lists the events of a thread, oldest first.
//
// Filter fields (store.Filter): exception (the exception id; "" for events
// about no exception; = !=).
type ListEventsRequest struct {
	Thread
	Filter    Filter
	PageSize  int
	PageToken string
}

// Events stores the conversation events of runs with agents.
type Events interface {
	// CreateEvent inserts e in its thread (ID generated when empty; State
	// COMPLETE when empty) with the next sequence number. ErrNotFound if the
	// run is not a run of that automation of that workspace;
	// ErrAlreadyExists if the id is taken in the thread; ErrInvalidArgument
	// for an unknown state.
	CreateEvent(ctx context.Context, e Event) (Event, error)
	// GetEvent: ErrNotFound if absent from the thread.
	GetEvent(ctx context.Context, t Thread, id string) (Event, error)
	// ListEvents pages through a thread's events oldest first, with the
	// number of events of the thread matching the filter across all pages.
	// ErrInvalidArgument for a bad token. An unknown thread is empty.
	ListEvents(ctx context.Context, req ListEventsRequest) (Page[Event], int, error)
	// UpdateEvent replaces the state, payload and exception of a STREAMING
	// event, bumps its revision and update_time. ErrNotFound if absent;
	// ErrFailedPrecondition if it is already COMPLETE (complete events
	// never change; a cancelled generation finds out this way).
	UpdateEvent(ctx context.Context, e Event) (Event, error)
	// ListEventsSince returns the thread's events whose update_time is at or
	// after since, in sequence order (for streams: the caller keeps the
	// revisions it has sent).
	ListEventsSince(ctx context.Context, t Thread, since time.Time) ([]Event, error)
	// ListEventsAfter returns at most limit events of the thread whose
	// Offset is greater than after, in offset order: each event as it
	// stands, once, however many times it changed (for streams, which
	// resume from the last offset they sent). limit <= 0: 100.
	ListEventsAfter(ctx context.Context, t Thread, after int64, limit int) ([]Event, error)
}
