package console

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/store"
)

// Live updates. A page that shows something changing (the inbox, the runs,
// a run, an exception's conversation) holds a server-sent event stream
// (GET /w/{ws}/live, text/event-stream): the server sends an event named
// "change" when what the page shows may have changed, and the page's
// script asks htmx to fetch the changed part again (data-live in the
// templates, static/console.js). The events carry no data: what the page
// fetches goes through the interceptor chain like every page.
//
// What wakes a stream:
//   - topic=exceptions and topic=runs: the Hub, told by the engine
//     (engine.Options.Changed) after every change of a run or an exception
//     of the workspace made by this process; with several replicas sharing
//     a PostgreSQL database (Options.Replicas), the Hub also tells the
//     other replicas which workspaces changed (store.Notifier.NotifyChanges:
//     LISTEN/NOTIFY), and wakes its streams on their notices, so a change
//     made on replica B shows on a page served by replica A as it would on
//     B (a notice per replica at most every changeSpacing; a reconnected
//     listener wakes every stream, as notices may have been missed);
//   - topic=conversation: the run's agent thread (EventService.StreamEvents
//     on the in-process connection, pushed by the event broker on every
//     replica).
//
// Wake-ups are coalesced: at most one event per liveSpacing per stream.

// Limits of the live streams.
const (
	// MaxLiveStreams bounds the live streams open on one process; another
	// is refused with 503 (the browser's EventSource tries again later).
	MaxLiveStreams = 2000
	// liveSpacing is the least time between two events of a stream.
	liveSpacing = 100 * time.Millisecond
	// liveHeartbeat is how often an idle stream sends a comment (proxies
	// close silent connections) and checks that its session still holds.
	liveHeartbeat = 25 * time.Second
)

// Hub wakes the live streams of a workspace when its runs or exceptions
// change. The zero value is not usable: use NewHub.
type Hub struct {
	mu     sync.Mutex
	topics map[string]map[chan struct{}]struct{} // org/ws → streams
	n      int
	// pending are the workspaces changed here and not yet told to the
	// other replicas (nil: no replicas; see share); kick wakes the sender.
	pending map[string]struct{}
	kick    chan struct{}
}

// Replicas carries the changes between the replicas sharing a database
// (store.Notifier on PostgreSQL).
type Replicas interface {
	NotifyChanges(ctx context.Context, origin string, keys []string)
	OnChanges(fn func(origin string, keys []string))
}

// changeSpacing is the least time between two notices of changes a
// replica sends (a burst of changes is one notice; a page takes at most
// one event per liveSpacing anyway).
const changeSpacing = 50 * time.Millisecond

// share tells the other replicas of the changes made here and wakes the
// streams open here on theirs, until ctx ends.
func (h *Hub) share(ctx context.Context, r Replicas) {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	origin := hex.EncodeToString(b)
	h.mu.Lock()
	h.pending, h.kick = map[string]struct{}{}, make(chan struct{}, 1)
	kick := h.kick
	h.mu.Unlock()
	r.OnChanges(func(from string, keys []string) {
		switch {
		case from == "" && keys == nil:
			h.ChangedAll() // the listener (re)connected: notices may have been missed
		case from != origin:
			h.mu.Lock()
			for _, k := range keys {
				for ch := range h.topics[k] {
					wake(ch)
				}
			}
			h.mu.Unlock()
		}
	})
	go func() {
		var last time.Time
		for {
			select {
			case <-ctx.Done():
				return
			case <-kick:
			}
			if wait := changeSpacing - time.Since(last); wait > 0 {
				select {
				case <-ctx.Done():
					return
				case <-time.After(wait):
				}
			}
			h.mu.Lock()
			keys := make([]string, 0, len(h.pending))
			for k := range h.pending {
				keys = append(keys, k)
			}
			clear(h.pending)
			h.mu.Unlock()
			if len(keys) > 0 {
				r.NotifyChanges(ctx, origin, keys)
				last = time.Now()
			}
		}
	}()
}

// NewHub returns an empty hub.
func NewHub() *Hub { return &Hub{topics: map[string]map[chan struct{}]struct{}{}} }

func hubKey(org, ws string) string { return org + "/" + ws }

// Changed wakes the streams open on the workspace; it never blocks (use it
// as engine.Options.Changed).
func (h *Hub) Changed(org, ws string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	k := hubKey(org, ws)
	for ch := range h.topics[k] {
		wake(ch)
	}
	if h.pending != nil {
		h.pending[k] = struct{}{}
		select {
		case h.kick <- struct{}{}:
		default:
		}
	}
}

// ChangedAll wakes every open stream.
func (h *Hub) ChangedAll() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, subs := range h.topics {
		for ch := range subs {
			wake(ch)
		}
	}
}

func wake(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// subscribe returns a channel woken after changes in the workspace and the
// function that ends the subscription; false when MaxLiveStreams are open.
func (h *Hub) subscribe(org, ws string) (chan struct{}, func(), bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.n >= MaxLiveStreams {
		return nil, nil, false
	}
	k := hubKey(org, ws)
	ch := make(chan struct{}, 1)
	if h.topics[k] == nil {
		h.topics[k] = map[chan struct{}]struct{}{}
	}
	h.topics[k][ch] = struct{}{}
	h.n++
	var once sync.Once
	return ch, func() {
		once.Do(func() {
			h.mu.Lock()
			defer h.mu.Unlock()
			delete(h.topics[k], ch)
			if len(h.topics[k]) == 0 {
				delete(h.topics, k)
			}
			h.n--
		})
	}, true
}

// Streams is the number of live streams open.
func (h *Hub) Streams() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.n
}

// live serves GET /w/{ws}/live?topic=exceptions|runs|conversation
// (conversation: &exception={id}).
func (c *Console) live(w http.ResponseWriter, r *http.Request, s *sess) {
	ws := r.PathValue("ws")
	topic := r.URL.Query().Get("topic")
	// The caller must be able to read what the stream announces: checked
	// once through the chain, as a page would.
	var wakeups <-chan struct{}
	var end func()
	switch topic {
	case "exceptions", "runs":
		perms, err := c.orgs.GetCurrentUserPermissions(s.ctx, &platformv1.GetCurrentUserPermissionsRequest{OrganizationId: s.OrganizationID, WorkspaceId: ws})
		if err != nil {
			c.grpcFail(w, r, s, err)
			return
		}
		need := store.PermExceptionsGet
		if topic == "runs" {
			need = store.PermRunsGet
		}
		if !containsString(perms.GetPermissions(), need) {
			c.fail(w, r, s, http.StatusForbidden, "You cannot read the "+topic+" of this workspace.")
			return
		}
		ch, unsubscribe, ok := c.hub.subscribe(s.OrganizationID, ws)
		if !ok {
			c.fail(w, r, s, http.StatusServiceUnavailable, fmt.Sprintf("Too many live pages are open on this server (at most %d): this page will try again.", MaxLiveStreams))
			return
		}
		wakeups, end = ch, unsubscribe
	case "conversation":
		ch, stop, err := c.watchConversation(r.Context(), s, ws, r.URL.Query().Get("exception"))
		if err != nil {
			c.grpcFail(w, r, s, err)
			return
		}
		wakeups, end = ch, stop
	default:
		c.fail(w, r, s, http.StatusBadRequest, "topic must be exceptions, runs or conversation.")
		return
	}
	defer end()
	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	// retry: how long the browser waits before it reconnects.
	if _, err := io.WriteString(w, "retry: 2000\n\n"); err != nil || rc.Flush() != nil {
		return
	}
	heartbeat := time.NewTicker(liveHeartbeat)
	defer heartbeat.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-c.done:
			return
		case <-heartbeat.C:
			if _, err := c.opts.Auth.Session(r.Context(), s.token); err != nil {
				return // signed out or expired: the next page load signs in
			}
			if _, err := io.WriteString(w, ": still here\n\n"); err != nil || rc.Flush() != nil {
				return
			}
		case _, ok := <-wakeups:
			if !ok {
				return
			}
			if _, err := io.WriteString(w, "event: change\ndata:\n\n"); err != nil || rc.Flush() != nil {
				return
			}
			// Coalesce: what changes within liveSpacing is one event.
			select {
			case <-time.After(liveSpacing):
			case <-r.Context().Done():
				return
			}
		}
	}
}

func containsString(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// watchConversation streams the agent thread of an exception's run
// (StreamEvents: the thread, then every event created or updated) and
// returns a channel woken on each message (closed when the stream ends).
func (c *Console) watchConversation(ctx context.Context, s *sess, ws, excID string) (chan struct{}, func(), error) {
	a, run, err := c.runOf(s, ws, excID)
	if err != nil {
		return nil, nil, err
	}
	// A refusal is answered now (a stream reports it only at its first
	// read, after the page's stream has begun).
	if _, err := c.events.ListEvents(s.ctx, &platformv1.ListEventsRequest{
		OrganizationId: s.OrganizationID, WorkspaceId: ws, AutomationId: a, RunId: run, AgentId: agentID, PageSize: 1,
	}); err != nil {
		return nil, nil, err
	}
	sctx, cancel := context.WithCancel(c.opts.Auth.ConsoleContext(ctx, s.token))
	stream, err := c.events.StreamEvents(sctx, &platformv1.StreamEventsRequest{
		OrganizationId: s.OrganizationID, WorkspaceId: ws, AutomationId: a, RunId: run, AgentId: agentID,
	})
	if err != nil {
		cancel()
		return nil, nil, err
	}
	ch := make(chan struct{}, 1)
	go func() {
		defer close(ch)
		for {
			if _, err := stream.Recv(); err != nil {
				return
			}
			wake(ch)
		}
	}()
	return ch, cancel, nil
}
