package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"
	"google.golang.org/protobuf/proto"

	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/internal/testtime"
	"github.com/proserun/prose/server/app"
	"github.com/proserun/prose/server/testenv"
	"github.com/proserun/prose/store"
)

// streamLine is one message of an ndjson event stream.
type streamLine struct {
	offset int64
	kind   string
	state  string
	event  map[string]any
}

// ndjsonStream opens events:stream over HTTP (after the given offset when
// after > 0) and returns its messages; cancel ctx to leave.
func (e *testEnv) ndjsonStream(t *testing.T, ctx context.Context, f eventFixture, after int64) <-chan streamLine {
	t.Helper()
	u := e.Srv.URL + f.path(e) + ":stream"
	if after > 0 {
		u += "?after_offset=" + strconv.FormatInt(after, 10)
	}
	req, _ := http.NewRequestWithContext(ctx, "GET", u, nil)
	req.Header.Set("Authorization", "Bearer "+e.Init.APIKey)
	out := make(chan streamLine)
	go func() {
		defer close(out)
		// The gateway answers with its first message: on an empty thread
		// Do returns once something is written.
		resp, err := e.Srv.Client().Do(req)
		if err != nil {
			return
		}
		defer resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("stream: HTTP %d", resp.StatusCode)
			return
		}
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 4<<20)
		for sc.Scan() {
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) != nil {
				return
			}
			ev, _ := testenv.Field(m, "result.event").(map[string]any)
			off, _ := strconv.ParseInt(fmt.Sprint(testenv.Field(m, "result.offset")), 10, 64)
			state, _ := ev["state"].(string)
			select {
			case out <- streamLine{offset: off, kind: payloadKind(ev), state: state, event: ev}:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out
}

// nextLine waits for the next message (the deadline only ends a hung test).
func nextLine(t *testing.T, lines <-chan streamLine) streamLine {
	t.Helper()
	select {
	case l, ok := <-lines:
		if !ok {
			t.Fatal("the stream ended")
		}
		return l
	case <-time.After(testtime.Limit(testtime.Wait)):
		t.Fatalf("no message within %v", testtime.Limit(testtime.Wait))
	}
	return streamLine{}
}

// waitStreams waits until n event streams are open on the app.
func (e *testEnv) waitStreams(t *testing.T, n int) {
	t.Helper()
	deadline := testtime.Deadline(testtime.Wait)
	for e.events().Streams() != n {
		if time.Now().After(deadline) {
			t.Fatalf("%d streams open, want %d", e.events().Streams(), n)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestEventStreamResumeHTTP reads a thread over the ndjson stream with the
// offset of every message, leaves (the stream's subscription is released),
// and resumes after the last offset it saw: only what was written since
// comes, in increasing offsets.
func TestEventStreamResumeHTTP(t *testing.T) {
	e := newTestEnv(t)
	f := e.awaitingRun(t)
	if code, _, raw := e.DoHTTP(t, "POST", f.path(e), `{"user_message":{"content":"hello?"}}`, e.Bearer()); code != 200 {
		t.Fatalf("create: %d %s", code, raw)
	}
	e.events().Runner().Wait()

	ctx, cancel := context.WithCancel(context.Background())
	lines := e.ndjsonStream(t, ctx, f, 0)
	var last int64
	var kinds []string
	for len(kinds) < 3 {
		l := nextLine(t, lines)
		if l.offset <= last {
			t.Fatalf("offset %d after %d", l.offset, last)
		}
		last = l.offset
		kinds = append(kinds, l.kind)
	}
	if got := strings.Join(kinds, ","); got != "user_message,agent_message,completion_response" {
		t.Fatalf("the thread: %s", got)
	}
	e.waitStreams(t, 1)
	cancel()
	for range lines {
	}
	e.waitStreams(t, 0) // the client left: its subscription is gone

	// Written while nobody listened.
	if code, _, raw := e.DoHTTP(t, "POST", f.path(e), `{"user_message":{"content":"what is missing?"}}`, e.Bearer()); code != 200 {
		t.Fatalf("create: %d %s", code, raw)
	}
	e.events().Runner().Wait()
	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	lines = e.ndjsonStream(t, ctx, f, last)
	first := nextLine(t, lines)
	if first.kind != "user_message" || testenv.Field(first.event, "user_message.content") != "what is missing?" || first.offset <= last {
		t.Fatalf("first message after resuming at %d: %+v", last, first)
	}
	for l := first; l.kind != "completion_response"; {
		l = nextLine(t, lines)
		if l.offset <= last || l.kind == "user_message" {
			t.Fatalf("resumed stream sent %+v (resumed after %d)", l, last)
		}
	}

	// A negative offset is the client's mistake.
	code, m, _ := e.DoHTTP(t, "GET", f.path(e)+":stream?after_offset=-1", "", e.Bearer())
	if code != http.StatusBadRequest || !strings.Contains(fmt.Sprint(m), "after_offset") {
		t.Errorf("negative offset: %d %v", code, m)
	}
}

// TestEventMessageCap: a user message over the cap is INVALID_ARGUMENT
// naming the field, over HTTP and gRPC; one at the cap is stored.
func TestEventMessageCap(t *testing.T) {
	cfg := testenv.Config(t)
	cfg.MaxEventMessage = 1000
	e, _ := startApp(t, cfg, app.InitResult{}, "")
	e.Email = "owner-" + store.NewID() + "@example.test"
	var err error
	e.Init, err = app.Bootstrap(context.Background(), e.Store, app.InitOptions{Organization: "Cap org", Email: e.Email, Workspace: "Ops"})
	if err != nil {
		t.Fatal(err)
	}
	f := e.awaitingRun(t)
	big := strings.Repeat("x", 1000)
	code, m, raw := e.DoHTTP(t, "POST", f.path(e), `{"user_message":{"content":"`+big+`"}}`, e.Bearer())
	if code != http.StatusBadRequest || !strings.Contains(string(raw), `"event.user_message.content"`) || !strings.Contains(string(raw), "EVENT_MESSAGE_TOO_LARGE") {
		t.Fatalf("over the cap: %d %v", code, m)
	}
	code, _, raw = e.DoHTTP(t, "POST", f.path(e), `{"user_message":{"content_list":{"items":[{"text":"`+big+`"}]}}}`, e.Bearer())
	if code != http.StatusBadRequest || !strings.Contains(string(raw), `"event.user_message.content_list"`) {
		t.Fatalf("content_list over the cap: %d %s", code, raw)
	}
	if code, _, raw := e.DoHTTP(t, "POST", f.path(e), `{"user_message":{"content":"`+big[:990]+`"}}`, e.Bearer()); code != 200 {
		t.Fatalf("under the cap: %d %s", code, raw)
	}

	c := platformv1.NewEventServiceClient(grpcConn(t, e))
	_, err = c.CreateEvent(evCtx(e.Init.APIKey), &platformv1.CreateEventRequest{OrganizationId: e.Init.OrganizationID, WorkspaceId: e.Init.WorkspaceID,
		AutomationId: f.automation, RunId: f.run, AgentId: "prose",
		Event: &platformv1.Event{Payload: &platformv1.Event_UserMessage{UserMessage: &platformv1.UserMessage{Content: big}}}})
	st := status.Convert(err)
	if st.Code() != codes.InvalidArgument || !hasViolation(st, "event.user_message.content") {
		t.Fatalf("gRPC over the cap: %v", err)
	}
	e.events().Runner().Wait()
}

func hasViolation(st *status.Status, field string) bool {
	for _, d := range st.Details() {
		if br, ok := d.(*errdetails.BadRequest); ok {
			for _, v := range br.GetFieldViolations() {
				if v.GetField() == field {
					return true
				}
			}
		}
	}
	return false
}

// TestEventStreamResumeGRPC: the gRPC stream carries offsets, resumes
// after one, and releases its subscription when the client cancels.
func TestEventStreamResumeGRPC(t *testing.T) {
	e := newTestEnv(t)
	f := e.awaitingRun(t)
	org, ws, a, r := f.grpcThread(e)
	c := platformv1.NewEventServiceClient(e.Conn)
	create := func(text string) {
		t.Helper()
		if _, err := c.CreateEvent(evCtx(e.Init.APIKey), &platformv1.CreateEventRequest{OrganizationId: org, WorkspaceId: ws, AutomationId: a, RunId: r, AgentId: "prose",
			Event: &platformv1.Event{Payload: &platformv1.Event_UserMessage{UserMessage: &platformv1.UserMessage{Content: text}}}}); err != nil {
			t.Fatal(err)
		}
		e.events().Runner().Wait()
	}
	create("hello?")
	ctx, cancel := context.WithCancel(evCtx(e.Init.APIKey))
	s, err := c.StreamEvents(ctx, &platformv1.StreamEventsRequest{OrganizationId: org, WorkspaceId: ws, AutomationId: a, RunId: r, AgentId: "prose"})
	if err != nil {
		t.Fatal(err)
	}
	var last int64
	for {
		m, err := s.Recv()
		if err != nil {
			t.Fatal(err)
		}
		if m.GetOffset() <= last {
			t.Fatalf("offset %d after %d", m.GetOffset(), last)
		}
		last = m.GetOffset()
		if m.GetEvent().GetCompletionResponse() != nil {
			break
		}
	}
	e.waitStreams(t, 1)
	cancel()
	if _, err := s.Recv(); status.Code(err) != codes.Canceled {
		t.Fatalf("after cancel: %v", err)
	}
	e.waitStreams(t, 0)

	create("the invoice total is 120.50")
	ctx, cancel = context.WithCancel(evCtx(e.Init.APIKey))
	defer cancel()
	s, err = c.StreamEvents(ctx, &platformv1.StreamEventsRequest{OrganizationId: org, WorkspaceId: ws, AutomationId: a, RunId: r, AgentId: "prose", AfterOffset: last})
	if err != nil {
		t.Fatal(err)
	}
	m, err := s.Recv()
	if err != nil {
		t.Fatal(err)
	}
	if m.GetOffset() <= last || m.GetEvent().GetUserMessage().GetContent() != "the invoice total is 120.50" {
		t.Fatalf("first after resuming at %d: %v", last, m)
	}
	s2, err := c.StreamEvents(ctx, &platformv1.StreamEventsRequest{OrganizationId: org, WorkspaceId: ws, AutomationId: a, RunId: r, AgentId: "prose", AfterOffset: -1})
	if err == nil {
		_, err = s2.Recv() // a server stream's error comes with its first message
	}
	if status.Code(err) != codes.InvalidArgument {
		t.Errorf("negative offset: %v", err)
	}
}

// TestEventStreamAcrossReplicas: a stream on replica B receives the events
// written on replica A (LISTEN/NOTIFY); B's safety re-read is off, so
// only the notices can bring them.
func TestEventStreamAcrossReplicas(t *testing.T) {
	newReplica := testenv.PGReplica(t)
	replica := func() app.Config {
		cfg := newReplica()
		cfg.EventPoll = -1
		return cfg
	}
	a, _ := startApp(t, replica(), app.InitResult{}, "")
	a.Email = "owner-" + store.NewID() + "@example.test"
	var err error
	a.Init, err = app.Bootstrap(context.Background(), a.Store, app.InitOptions{Organization: "Stream replicas org", Email: a.Email, Workspace: "Ops"})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := startApp(t, replica(), a.Init, a.Email)
	f := a.awaitingRun(t)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	lines := b.ndjsonStream(t, ctx, f, 0)
	b.waitStreams(t, 1)
	if code, _, raw := a.DoHTTP(t, "POST", f.path(a), `{"user_message":{"content":"written on A"}}`, a.Bearer()); code != 200 {
		t.Fatalf("create on A: %d %s", code, raw)
	}
	first := nextLine(t, lines)
	if first.kind != "user_message" || testenv.Field(first.event, "user_message.content") != "written on A" {
		t.Fatalf("B streamed %+v", first)
	}
	// The agent's answer, written on A as it streams, follows.
	for l := first; l.kind != "completion_response"; {
		l = nextLine(t, lines)
	}
	a.events().Runner().Wait()
}

// grpcConn serves the app of e over an in-memory listener and connects.
func grpcConn(t *testing.T, e *testEnv) *grpc.ClientConn {
	t.Helper()
	lis := bufconn.Listen(1 << 20)
	go func() { _ = e.App.GRPC.Serve(lis) }()
	conn, err := grpc.NewClient("passthrough:///prose",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// TestAgentEventsObeyTheCaps: the agent's events have the caps of the
// clients' (--max-event-message-bytes, and the size of an event). A user
// message at the cap that the agent would echo past it (a quoted value of
// 4,080 bytes: "I will provide the invoice total = …") ends the generation
// with an INVALID_ARGUMENT error naming event.agent_message.content; the
// over-long message is never stored, the exception is not resolved, and
// the agent's events are all within the caps. Written and read over HTTP,
// then over gRPC.
func TestAgentEventsObeyTheCaps(t *testing.T) {
	const capBytes = 4096
	e := newTestEnvWith(t, func(c *app.Config) { c.MaxEventMessage = capBytes })
	value := `"` + strings.Repeat("x", capBytes-16) + `"`
	forEachTransport(t, func(t *testing.T, tr apiTransport) {
		f := e.awaitingRun(t)
		org, ws, a, r := f.grpcThread(e)
		e.mustCall(t, tr, eventSvc+"CreateEvent", &platformv1.CreateEventRequest{OrganizationId: org, WorkspaceId: ws, AutomationId: a, RunId: r, AgentId: "prose",
			Event: &platformv1.Event{Payload: &platformv1.Event_UserMessage{UserMessage: &platformv1.UserMessage{Content: value}}}})
		e.events().Runner().Wait()
		var l platformv1.ListEventsResponse
		decodeInto(t, e.mustCall(t, tr, eventSvc+"ListEvents", &platformv1.ListEventsRequest{OrganizationId: org, WorkspaceId: ws, AutomationId: a, RunId: r, AgentId: "prose"}), &l)
		events := l.GetEvents()
		var end *platformv1.CompletionResponse
		for _, ev := range events {
			if n := len(ev.GetAgentMessage().GetContent()); n > capBytes {
				t.Errorf("an agent message of %d bytes was stored (cap %d)", n, capBytes)
			}
			if n := len(ev.GetCompletionResponse().GetContent()); n > capBytes {
				t.Errorf("a completion of %d bytes was stored (cap %d)", n, capBytes)
			}
			if n := proto.Size(ev); n > store.MaxEventBytes {
				t.Errorf("an event of %d bytes was stored", n)
			}
			if ev.GetCompletionResponse() != nil {
				end = ev.GetCompletionResponse()
			}
		}
		if end == nil || !strings.Contains(end.GetError(), "invalid argument: event.agent_message.content is") ||
			!strings.Contains(end.GetError(), "may be at most 4096 bytes") {
			t.Fatalf("the generation's end: %.300v (events %d)", end, len(events))
		}
		if r := e.WaitRunState(t, f.automation, f.run, store.RunAwaitingGuidance); r.ExceptionID != f.exception {
			t.Errorf("the exception changed: %+v", r)
		}
	})
}
