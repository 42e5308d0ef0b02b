package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/internal/agent"
	"github.com/proserun/prose/internal/engine"
	"github.com/proserun/prose/internal/testtime"
	"github.com/proserun/prose/server"
	"github.com/proserun/prose/server/testenv"
	"github.com/proserun/prose/store"
)

const eventSvc = "/prose.platform.v1.EventService/"

// eventFixture is a run waiting for the invoice total, and its thread with
// the built-in agent.
type eventFixture struct {
	automation, run, exception string
	thread                     store.Thread
}

const invoiceCode = "get the invoice total\nthe output total is the invoice total * 2\n"

// awaitingRun creates an automation with the store, starts it with the
// engine and waits until it asks for the invoice total.
func (e *testEnv) awaitingRun(t *testing.T) eventFixture {
	t.Helper()
	ctx := context.Background()
	a, err := e.Store.CreateAutomation(ctx, store.Automation{
		OrganizationID: e.Init.OrganizationID, WorkspaceID: e.Init.WorkspaceID, ID: "inv-" + store.NewID()[:8],
		DisplayName: "Invoice", Code: invoiceCode, AuthorID: e.Init.UserID,
	})
	if err != nil {
		t.Fatal(err)
	}
	r, _, err := e.App.Engine.Invoke(ctx, engine.InvokeRequest{
		OrganizationID: e.Init.OrganizationID, WorkspaceID: e.Init.WorkspaceID, AutomationID: a.ID, Stage: store.StageDraft,
	})
	if err != nil {
		t.Fatal(err)
	}
	w := e.WaitRunState(t, a.ID, r.ID, store.RunAwaitingGuidance)
	return eventFixture{automation: a.ID, run: r.ID, exception: w.ExceptionID, thread: store.Thread{
		OrganizationID: e.Init.OrganizationID, WorkspaceID: e.Init.WorkspaceID, AutomationID: a.ID, RunID: r.ID, AgentID: "prose"}}
}

func (e *testEnv) events() *server.EventService {
	return e.App.Services.Events.(*server.EventService)
}

func (f eventFixture) path(e *testEnv) string {
	return "/api/v1/organizations/" + e.Init.OrganizationID + "/workspaces/" + e.Init.WorkspaceID + "/automations/" + f.automation +
		"/runs/" + f.run + "/agents/prose/events"
}

func (f eventFixture) exceptionName(e *testEnv) string {
	return "organizations/" + e.Init.OrganizationID + "/workspaces/" + e.Init.WorkspaceID + "/exceptions/" + f.exception
}

func (f eventFixture) grpcThread(e *testEnv) (org, ws, a, r string) {
	return e.Init.OrganizationID, e.Init.WorkspaceID, f.automation, f.run
}

func payloadKind(ev map[string]any) string {
	for _, k := range []string{"user_message", "agent_message", "tool_call_request", "tool_call_result", "thinking", "system_message", "completion_response"} {
		if _, ok := ev[k]; ok {
			return k
		}
	}
	return ""
}

func eventKinds(m map[string]any) []string {
	var out []string
	list, _ := m["events"].([]any)
	for _, x := range list {
		out = append(out, payloadKind(x.(map[string]any)))
	}
	return out
}

// TestEventEndpoints makes every unary call over HTTP and gRPC.
func TestEventEndpoints(t *testing.T) {
	e := newTestEnv(t)
	f := e.awaitingRun(t)
	p := f.path(e)
	h := e.Bearer()

	// HTTP: create, get, list.
	code, m, raw := e.DoHTTP(t, "POST", p, `{"user_message":{"content":"what do you need?","user":"users/somebody-else"}}`, h)
	if code != 200 {
		t.Fatalf("create: %d %s", code, raw)
	}
	if m["state"] != "STATE_COMPLETE" || testenv.Field(m, "user_message.user") != "users/"+e.Init.UserID ||
		m["exception"] != f.exceptionName(e) || !strings.HasPrefix(m["name"].(string), strings.TrimPrefix(p, "/api/v1/")+"/") ||
		m["create_time"] == nil {
		t.Fatalf("created: %s", raw)
	}
	name := m["name"].(string)
	id := name[strings.LastIndexByte(name, '/')+1:]
	e.events().Runner().Wait()

	code, g, raw := e.DoHTTP(t, "GET", p+"/"+id, "", h)
	if code != 200 || g["name"] != name || testenv.Field(g, "user_message.content") != "what do you need?" {
		t.Fatalf("get: %d %s", code, raw)
	}
	code, l, raw := e.DoHTTP(t, "GET", p, "", h)
	if code != 200 || strings.Join(eventKinds(l), ",") != "user_message,agent_message,completion_response" || l["total_size"] != float64(3) {
		t.Fatalf("list: %d %s", code, raw)
	}
	msg := testenv.Field(l, "events").([]any)[1].(map[string]any)
	content := testenv.Field(msg, "agent_message.content").(string)
	for _, want := range []string{"line 1", "`get the invoice total`", "Please provide the invoice total", "120.50", "skip", "retry"} {
		if !strings.Contains(content, want) {
			t.Errorf("explanation lacks %q: %s", want, content)
		}
	}
	if msg["state"] != "STATE_COMPLETE" || msg["exception"] != f.exceptionName(e) {
		t.Errorf("agent message: %v", msg)
	}
	// Pages of one, and the filter.
	code, l1, _ := e.DoHTTP(t, "GET", p+"?page_size=1", "", h)
	tok, _ := l1["next_page_token"].(string)
	if code != 200 || len(eventKinds(l1)) != 1 || tok == "" || l1["total_size"] != float64(3) {
		t.Fatalf("page 1: %v", l1)
	}
	code, l2, _ := e.DoHTTP(t, "GET", p+"?page_size=1&page_token="+tok, "", h)
	if code != 200 || strings.Join(eventKinds(l2), ",") != "agent_message" {
		t.Fatalf("page 2: %v", l2)
	}
	for filter, n := range map[string]float64{
		`exception = "` + f.exception + `"`:                           3,
		`exception != "` + f.exception + `"`:                          0,
		`exception = "` + f.exceptionName(e) + `" OR exception = "x"`: 3,
		`NOT (exception = "` + f.exception + `")`:                     0,
	} {
		code, lf, raw := e.DoHTTP(t, "GET", p+"?filter="+url.QueryEscape(filter), "", h)
		if code != 200 || lf["total_size"] != n && !(n == 0 && lf["total_size"] == nil) {
			t.Errorf("filter %s: %d %s", filter, code, raw)
		}
	}

	// gRPC: create, get, list.
	org, ws, a, r := f.grpcThread(e)
	md := evAuth(e.Init.APIKey)
	cm, err := e.DoGRPC(t, eventSvc+"CreateEvent", &platformv1.CreateEventRequest{OrganizationId: org, WorkspaceId: ws, AutomationId: a, RunId: r, AgentId: "prose",
		Event: &platformv1.Event{Payload: &platformv1.Event_UserMessage{UserMessage: &platformv1.UserMessage{
			ContentList: &platformv1.InputContentList{Items: []*platformv1.InputContent{{Content: &platformv1.InputContent_Text{Text: "help"}}}}}}}}, md)
	if err != nil || testenv.Field(cm, "user_message.user") != "users/"+e.Init.UserID || cm["state"] != "STATE_COMPLETE" {
		t.Fatalf("grpc create: %v %v", err, cm)
	}
	e.events().Runner().Wait()
	gid := cm["name"].(string)[strings.LastIndexByte(cm["name"].(string), '/')+1:]
	gm, err := e.DoGRPC(t, eventSvc+"GetEvent", &platformv1.GetEventRequest{OrganizationId: org, WorkspaceId: ws, AutomationId: a, RunId: r, AgentId: "prose", EventId: gid}, md)
	if err != nil || gm["name"] != cm["name"] {
		t.Fatalf("grpc get: %v %v", err, gm)
	}
	lm, err := e.DoGRPC(t, eventSvc+"ListEvents", &platformv1.ListEventsRequest{OrganizationId: org, WorkspaceId: ws, AutomationId: a, RunId: r, AgentId: "prose"}, md)
	if err != nil || lm["total_size"] != float64(6) || len(eventKinds(lm)) != 6 {
		t.Fatalf("grpc list: %v %v", err, lm)
	}
	// Cancel with nothing ongoing is fine.
	if code, _, raw := e.DoHTTP(t, "POST", p+":cancelGeneration", `{}`, h); code != 200 {
		t.Fatalf("cancel: %d %s", code, raw)
	}
	if _, err := e.DoGRPC(t, eventSvc+"CancelGeneration", &platformv1.CancelGenerationRequest{OrganizationId: org, WorkspaceId: ws, AutomationId: a, RunId: r, AgentId: "prose"}, md); err != nil {
		t.Fatalf("grpc cancel: %v", err)
	}

	// Errors.
	for _, c := range []struct {
		name, method, path, body string
		status                   int
		reason                   string
	}{
		{"agent message", "POST", p, `{"agent_message":{}}`, 400, "INVALID_FIELD"},
		{"no payload", "POST", p, `{}`, 400, "INVALID_FIELD"},
		{"empty message", "POST", p, `{"user_message":{"content":" "}}`, 400, "REQUIRED_FIELD_MISSING"},
		{"exception of another run", "POST", p, `{"user_message":{"content":"hi"},"exception":"nope"}`, 400, "INVALID_FIELD"},
		{"unknown event", "GET", p + "/nope", "", 404, "EVENT_NOT_FOUND"},
		{"unknown agent", "GET", strings.Replace(p, "/agents/prose/", "/agents/nobody/", 1), "", 404, "AGENT_NOT_FOUND"},
		{"unknown run", "GET", strings.Replace(p, "/runs/"+f.run+"/", "/runs/nope/", 1), "", 404, "RUN_NOT_FOUND"},
		{"bad filter", "GET", p + "?filter=" + url.QueryEscape(`state = "x"`), "", 400, "INVALID_FILTER"},
		{"bad token", "GET", p + "?page_token=zzz", "", 400, "INVALID_PAGE_TOKEN"},
	} {
		code, m, raw := e.DoHTTP(t, c.method, c.path, c.body, h)
		if code != c.status || testenv.HTTPReason(m) != c.reason {
			t.Errorf("%s: %d %s, want %d %s", c.name, code, raw, c.status, c.reason)
		}
	}
	_, err = e.DoGRPC(t, eventSvc+"GetEvent", &platformv1.GetEventRequest{OrganizationId: org, WorkspaceId: ws, AutomationId: a, RunId: r, AgentId: "prose", EventId: "nope"}, md)
	if status.Code(err) != codes.NotFound || testenv.GRPCReason(err) != "EVENT_NOT_FOUND" {
		t.Errorf("grpc unknown event: %v", err)
	}
	_, err = e.DoGRPC(t, eventSvc+"CreateEvent", &platformv1.CreateEventRequest{OrganizationId: org, WorkspaceId: ws, AutomationId: a, RunId: r, AgentId: "prose",
		Event: &platformv1.Event{Payload: &platformv1.Event_Thinking{Thinking: &platformv1.Thinking{Content: "x"}}}}, md)
	if status.Code(err) != codes.InvalidArgument {
		t.Errorf("grpc create thinking: %v", err)
	}
	// The exception is untouched by conversation alone.
	x, err := e.Store.GetException(context.Background(), org, ws, f.exception)
	if err != nil || x.State != store.ExceptionPending {
		t.Fatalf("exception: %v %+v", err, x)
	}
}

// TestEventAgentResolvesMissingValue: the user gives the invoice total in
// the run's thread; the built-in agent resolves the exception and the run
// completes with the exact value.
func TestEventAgentResolvesMissingValue(t *testing.T) {
	// The user's words differ by transport: a sentence, then the bare value.
	text := map[string]string{"http": "the invoice total is 120.50", "grpc": "120.50"}
	forEachTransport(t, func(t *testing.T, tr apiTransport) {
		e := newTestEnv(t)
		f := e.awaitingRun(t)
		org, ws, a, r := f.grpcThread(e)
		e.mustCall(t, tr, eventSvc+"CreateEvent", &platformv1.CreateEventRequest{OrganizationId: org, WorkspaceId: ws, AutomationId: a, RunId: r, AgentId: "prose",
			Event: &platformv1.Event{Payload: &platformv1.Event_UserMessage{UserMessage: &platformv1.UserMessage{Content: text[tr.name]}}}})
		e.events().Runner().Wait()
		x, err := e.Store.GetException(context.Background(), org, ws, f.exception)
		if err != nil || x.State != store.ExceptionResolved || x.Resolver != "agents/prose" {
			t.Fatalf("exception: %v %+v", err, x)
		}
		done := e.WaitRunState(t, a, r, store.RunCompleted)
		pr, err := server.RunToProto(done)
		if err != nil {
			t.Fatal(err)
		}
		// 120.50 * 2 = 241.00 exactly: lo 24100, scale 2.
		if got := pr.GetState().GetCompleted().GetOutputs()["output total"].GetNumber(); got.GetLo() != 24100 || got.GetFlags() != 2<<16 {
			t.Fatalf("output total = %v", got)
		}
		_, l, raw := e.DoHTTP(t, "GET", f.path(e), "", e.Bearer())
		if got := strings.Join(eventKinds(l), ","); got != "user_message,agent_message,tool_call_request,tool_call_result,completion_response" {
			t.Fatalf("events: %s\n%s", got, raw)
		}
		evs := l["events"].([]any)
		req := evs[2].(map[string]any)
		res := evs[3].(map[string]any)
		if testenv.Field(req, "tool_call_request.tool_call_id") != testenv.Field(res, "tool_call_result.tool_call_id") ||
			!strings.Contains(testenv.Field(req, "tool_call_request.input").(string), `"provide_values"`) ||
			!strings.Contains(testenv.Field(res, "tool_call_result.result").(string), "resolved by agents/prose") {
			t.Fatalf("tool call: %s", raw)
		}
		if c := evs[4].(map[string]any); testenv.Field(c, "completion_response.error") != nil || !strings.Contains(testenv.Field(c, "completion_response.content").(string), "120.50") {
			t.Fatalf("completion: %v", c)
		}
	})
}

// TestEventAgentReplacesStep: "replace it with: <code>" resolves the
// exception with replace_step; the code runs instead of the statement and
// the run goes on. Code that does not parse is refused with the reason.
func TestEventAgentReplacesStep(t *testing.T) {
	e := newTestEnv(t)
	f := e.awaitingRun(t)
	post := func(text string) {
		t.Helper()
		body, _ := json.Marshal(map[string]any{"user_message": map[string]any{"content": text}})
		if code, _, raw := e.DoHTTP(t, "POST", f.path(e), string(body), e.Bearer()); code != 200 {
			t.Fatalf("create: %d %s", code, raw)
		}
		e.events().Runner().Wait()
	}
	post("replace it with: the the")
	x, err := e.Store.GetException(context.Background(), e.Init.OrganizationID, e.Init.WorkspaceID, f.exception)
	if err != nil || x.State != store.ExceptionPending {
		t.Fatalf("after code that does not parse: %v %s", err, x.State)
	}
	if _, _, raw := e.DoHTTP(t, "GET", f.path(e), "", e.Bearer()); !strings.Contains(string(raw), "does not parse") {
		t.Fatalf("no reason given: %s", raw)
	}
	post("Replace it with:\n```prose\nthe invoice total is 60.25\n```")
	x, err = e.Store.GetException(context.Background(), e.Init.OrganizationID, e.Init.WorkspaceID, f.exception)
	if err != nil || x.State != store.ExceptionResolved || x.Resolver != "agents/prose" {
		t.Fatalf("exception: %v %+v", err, x)
	}
	done := e.WaitRunState(t, f.automation, f.run, store.RunCompleted)
	pr, err := server.RunToProto(done)
	if err != nil {
		t.Fatal(err)
	}
	// 60.25 * 2 = 120.50 exactly: lo 12050, scale 2.
	if got := pr.GetState().GetCompleted().GetOutputs()["output total"].GetNumber(); got.GetLo() != 12050 || got.GetFlags() != 2<<16 {
		t.Fatalf("output total = %v", got)
	}
	_, _, raw := e.DoHTTP(t, "GET", f.path(e), "", e.Bearer())
	if !strings.Contains(string(raw), `replace_step`) {
		t.Fatalf("no replace_step tool call: %s", raw)
	}
}

// TestEventAgentDoesNotGuess: a reply the agent cannot read gets an account
// of what it needs, and the exception stays pending.
func TestEventAgentDoesNotGuess(t *testing.T) {
	e := newTestEnv(t)
	f := e.awaitingRun(t)
	for _, text := range []string{"I'm not sure, maybe ask Bob", "the customer is \"ACME\""} {
		body, _ := json.Marshal(map[string]any{"user_message": map[string]any{"content": text}})
		if code, _, raw := e.DoHTTP(t, "POST", f.path(e), string(body), e.Bearer()); code != 200 {
			t.Fatalf("create: %d %s", code, raw)
		}
	}
	e.events().Runner().Wait()
	_, l, raw := e.DoHTTP(t, "GET", f.path(e), "", e.Bearer())
	// Two answers (the messages may interleave with the first answer).
	count := map[string]int{}
	for _, k := range eventKinds(l) {
		count[k]++
	}
	if len(count) != 3 || count["user_message"] != 2 || count["agent_message"] != 2 || count["completion_response"] != 2 {
		t.Fatalf("events: %v", eventKinds(l))
	}
	if !strings.Contains(string(raw), "needs a value for the invoice total") {
		t.Fatalf("no account of what is needed: %s", raw)
	}
	x, _ := e.Store.GetException(context.Background(), e.Init.OrganizationID, e.Init.WorkspaceID, f.exception)
	if x.State != store.ExceptionPending {
		t.Fatalf("exception %s", x.State)
	}
}

// TestEventStreamHTTP reads the ndjson stream: the existing events, then the
// agent's answer as it streams, and ends cleanly when the client goes away.
func TestEventStreamHTTP(t *testing.T) {
	e := newTestEnv(t)
	f := e.awaitingRun(t)
	if code, _, raw := e.DoHTTP(t, "POST", f.path(e), `{"user_message":{"content":"hello?"}}`, e.Bearer()); code != 200 {
		t.Fatalf("create: %d %s", code, raw)
	}
	e.events().Runner().Wait()
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", e.Srv.URL+f.path(e)+":stream", nil)
	req.Header.Set("Authorization", "Bearer "+e.Init.APIKey)
	resp, err := e.Srv.Client().Do(req) //nolint:bodyclose // closed by the deferred Close below
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != 200 || !strings.HasPrefix(ct, "application/x-ndjson") {
		t.Fatalf("stream: %d %s", resp.StatusCode, ct)
	}
	lines := make(chan map[string]any)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) != nil {
				return
			}
			select {
			case lines <- m:
			case <-ctx.Done():
				return
			}
		}
	}()
	next := func() map[string]any {
		t.Helper()
		select {
		case m, ok := <-lines:
			if !ok {
				t.Fatal("the stream ended")
			}
			ev, _ := testenv.Field(m, "result.event").(map[string]any)
			if ev == nil {
				t.Fatalf("line without result.event: %v", m)
			}
			return ev
		case <-time.After(testtime.Limit(testtime.Wait)):
			t.Fatalf("no line within %v", testtime.Limit(testtime.Wait))
		}
		return nil
	}
	// The existing thread.
	for _, want := range []string{"user_message", "agent_message", "completion_response"} {
		if ev := next(); payloadKind(ev) != want || ev["state"] != "STATE_COMPLETE" {
			t.Fatalf("existing: %v, want %s", ev, want)
		}
	}
	// A new message: the agent's answer streams, then completes.
	if code, _, raw := e.DoHTTP(t, "POST", f.path(e), `{"user_message":{"content":"what is missing?"}}`, e.Bearer()); code != 200 {
		t.Fatalf("create: %d %s", code, raw)
	}
	if ev := next(); payloadKind(ev) != "user_message" {
		t.Fatalf("new: %v", ev)
	}
	streaming, complete := 0, false
	for !complete {
		ev := next()
		switch {
		case payloadKind(ev) == "agent_message" && ev["state"] == "STATE_STREAMING":
			streaming++
		case payloadKind(ev) == "agent_message" && ev["state"] == "STATE_COMPLETE":
		case payloadKind(ev) == "completion_response":
			complete = true
		default:
			t.Fatalf("unexpected %v", ev)
		}
	}
	if streaming == 0 {
		t.Error("no STATE_STREAMING update was streamed")
	}
	cancel()
	resp.Body.Close()
	for range lines {
	}
	e.Srv.Client().CloseIdleConnections()
	e.Srv.CloseClientConnections()
}

// TestEventStreamGRPC follows a thread over gRPC and ends cleanly on cancel.
func TestEventStreamGRPC(t *testing.T) {
	e := newTestEnv(t)
	f := e.awaitingRun(t)
	org, ws, a, r := f.grpcThread(e)
	c := platformv1.NewEventServiceClient(e.Conn)
	// Connect first: the client connection's goroutines are not the stream's.
	if _, err := c.ListEvents(evCtx(e.Init.APIKey), &platformv1.ListEventsRequest{OrganizationId: org, WorkspaceId: ws, AutomationId: a, RunId: r, AgentId: "prose"}); err != nil {
		t.Fatal(err)
	}
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	ctx, cancel := context.WithCancel(evCtx(e.Init.APIKey))
	defer cancel()
	s, err := c.StreamEvents(ctx, &platformv1.StreamEventsRequest{OrganizationId: org, WorkspaceId: ws, AutomationId: a, RunId: r, AgentId: "prose"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateEvent(ctx, &platformv1.CreateEventRequest{OrganizationId: org, WorkspaceId: ws, AutomationId: a, RunId: r, AgentId: "prose",
		Event: &platformv1.Event{Payload: &platformv1.Event_UserMessage{UserMessage: &platformv1.UserMessage{Content: "the invoice total is 120.50"}}}}); err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for {
		m, err := s.Recv()
		if err != nil {
			t.Fatal(err)
		}
		ev := m.GetEvent()
		if ev.GetState() == platformv1.Event_STATE_STREAMING {
			continue
		}
		switch ev.GetPayload().(type) {
		case *platformv1.Event_UserMessage:
			kinds = append(kinds, "user_message")
		case *platformv1.Event_AgentMessage:
			kinds = append(kinds, "agent_message")
		case *platformv1.Event_ToolCallRequest:
			kinds = append(kinds, "tool_call_request")
		case *platformv1.Event_ToolCallResult:
			kinds = append(kinds, "tool_call_result")
		case *platformv1.Event_CompletionResponse:
			kinds = append(kinds, "completion_response")
		}
		if len(kinds) == 5 {
			break
		}
	}
	if got := strings.Join(kinds, ","); got != "user_message,agent_message,tool_call_request,tool_call_result,completion_response" {
		t.Fatalf("streamed %s", got)
	}
	cancel()
	if _, err := s.Recv(); status.Code(err) != codes.Canceled {
		t.Fatalf("after cancel: %v", err)
	}
	e.events().Runner().Wait()
}

// TestEventCancelGeneration: a generation streaming in the thread (here one
// left by another replica) is completed as it stands and ended with a
// completion_response carrying error "cancelled".
func TestEventCancelGeneration(t *testing.T) {
	e := newTestEnv(t)
	f := e.awaitingRun(t)
	ctx := context.Background()
	ev := &platformv1.Event{State: platformv1.Event_STATE_STREAMING, Exception: f.exceptionName(e),
		Payload: &platformv1.Event_AgentMessage{AgentMessage: &platformv1.AgentMessage{Content: "The run stopped at"}}}
	se, err := agent.ToStore(f.thread, ev)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Store.CreateEvent(ctx, se); err != nil {
		t.Fatal(err)
	}
	org, ws, a, r := f.grpcThread(e)
	// Over HTTP, then over gRPC: the second cancel finds nothing ongoing.
	for i, tr := range []apiTransport{overHTTP, overGRPC} {
		e.mustCall(t, tr, eventSvc+"CancelGeneration", &platformv1.CancelGenerationRequest{OrganizationId: org, WorkspaceId: ws, AutomationId: a, RunId: r, AgentId: "prose"})
		_, l, raw := e.DoHTTP(t, "GET", f.path(e), "", e.Bearer())
		// The second cancel finds nothing ongoing and adds nothing.
		if got := strings.Join(eventKinds(l), ","); got != "agent_message,completion_response" {
			t.Fatalf("after cancel %d: %s", i, raw)
		}
		evs := l["events"].([]any)
		if m := evs[0].(map[string]any); m["state"] != "STATE_COMPLETE" || testenv.Field(m, "agent_message.content") != "The run stopped at" {
			t.Fatalf("cancelled message: %v", m)
		}
		if c := evs[1].(map[string]any); testenv.Field(c, "completion_response.error") != "cancelled" || c["exception"] != f.exceptionName(e) {
			t.Fatalf("completion: %v", c)
		}
	}
}

func evAuth(key string) metadata.MD { return metadata.Pairs("authorization", "Bearer "+key) }

func evCtx(key string) context.Context {
	return metadata.NewOutgoingContext(context.Background(), evAuth(key))
}
