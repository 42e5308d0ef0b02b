package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/internal/agent"
	"github.com/proserun/prose/server/app"
	"github.com/proserun/prose/server/testenv"
	"github.com/proserun/prose/store"
)

// fakeModel is an OpenAI-compatible chat-completions endpoint that answers
// each request with the next step of its script: server-sent events
// (`data: {chunk}` lines ending with `data: [DONE]`), a whole JSON answer,
// an HTTP error, a slow answer or a connection dropped mid-stream. It keeps
// the requests it received.
type fakeModel struct {
	t   *testing.T
	srv *httptest.Server

	mu       sync.Mutex
	steps    []fakeStep
	requests []fakeRequest
}

type fakeRequest struct {
	Auth string
	Body map[string]any
	Raw  string
}

// fakeStep answers one request.
type fakeStep func(w http.ResponseWriter, r *http.Request)

const fakeKey = "sk-test-SECRET-4242"

func newFakeModel(t *testing.T) *fakeModel {
	f := &fakeModel{t: t}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		var body map[string]any
		_ = json.Unmarshal(raw, &body)
		f.mu.Lock()
		f.requests = append(f.requests, fakeRequest{Auth: r.Header.Get("Authorization"), Body: body, Raw: string(raw)})
		var step fakeStep
		if len(f.steps) > 0 {
			step, f.steps = f.steps[0], f.steps[1:]
		}
		f.mu.Unlock()
		if r.URL.Path != "/v1/chat/completions" || r.Method != http.MethodPost {
			http.Error(w, `{"error":{"message":"no such path","type":"invalid_request_error"}}`, http.StatusNotFound)
			return
		}
		if step == nil {
			http.Error(w, `{"error":{"message":"the script is over","type":"server_error"}}`, http.StatusInternalServerError)
			return
		}
		step(w, r)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeModel) script(steps ...fakeStep) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.steps, f.requests = steps, nil
}

func (f *fakeModel) reqs() []fakeRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]fakeRequest(nil), f.requests...)
}

// chunk is one chat.completion.chunk with a delta (and a finish reason).
func chunk(delta map[string]any, finish string) string {
	ch := map[string]any{"index": 0, "delta": delta, "finish_reason": nil}
	if finish != "" {
		ch["finish_reason"] = finish
	}
	b, _ := json.Marshal(map[string]any{"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "fake", "choices": []any{ch}})
	return string(b)
}

func text(s string) string { return chunk(map[string]any{"content": s}, "") }

func finish(reason string) string { return chunk(map[string]any{}, reason) }

// toolPiece is a piece of a streamed tool call: the first piece of a call
// carries its id and type, later ones only the index.
func toolPiece(index int, id, name, args string) string {
	fn := map[string]any{}
	if name != "" {
		fn["name"] = name
	}
	fn["arguments"] = args
	tc := map[string]any{"index": index, "function": fn}
	if id != "" {
		tc["id"], tc["type"] = id, "function"
	}
	return chunk(map[string]any{"tool_calls": []any{tc}}, "")
}

// sse streams the chunks, each flushed; gate (if any) is waited on after
// the second chunk; drop closes the connection before [DONE].
func sse(gate chan struct{}, drop bool, chunks ...string) fakeStep {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		fl := w.(http.Flusher)
		for i, c := range chunks {
			_, _ = fmt.Fprintf(w, "data: %s\n\n", c)
			fl.Flush()
			if i == 1 && gate != nil {
				select {
				case <-gate:
				case <-r.Context().Done():
					return
				}
			}
		}
		if drop {
			conn, _, err := http.NewResponseController(w).Hijack()
			if err == nil {
				_ = conn.Close()
			}
			return
		}
		_, _ = io.WriteString(w, "data: [DONE]\n\n")
		fl.Flush()
	}
}

func stream(chunks ...string) fakeStep { return sse(nil, false, chunks...) }

func httpStatus(code int, headers map[string]string, body string) fakeStep {
	return func(w http.ResponseWriter, _ *http.Request) {
		for k, v := range headers {
			w.Header().Set(k, v)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_, _ = io.WriteString(w, body)
	}
}

func slow(d time.Duration) fakeStep {
	return func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(d):
		case <-r.Context().Done():
		}
		stream(text("too late"), finish("stop"))(w, r)
	}
}

// whole is a non-streamed answer: a message with content and tool calls.
func whole(content string, calls ...map[string]any) fakeStep {
	msg := map[string]any{"role": "assistant", "content": content}
	if len(calls) > 0 {
		msg["tool_calls"] = calls
	}
	b, _ := json.Marshal(map[string]any{"id": "chatcmpl-2", "object": "chat.completion", "created": 1, "model": "fake",
		"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": "stop"}}})
	return httpStatus(200, nil, string(b))
}

func modelEnv(t *testing.T, f *fakeModel, edit func(*app.ModelConfig)) *testEnv {
	t.Setenv("PROSE_TEST_MODEL_KEY", fakeKey)
	return newTestEnvWith(t, func(c *app.Config) {
		c.Model = app.ModelConfig{URL: f.srv.URL + "/v1", Model: "fake-1", ID: "model", KeyEnv: "PROSE_TEST_MODEL_KEY",
			RequestTimeout: 2 * time.Second, MaxToolRounds: 2, MaxStreamBytes: 4096}
		if edit != nil {
			edit(&c.Model)
		}
	})
}

// thread reads a thread from the store, oldest first.
func (e *testEnv) thread(t *testing.T, th store.Thread) []*platformv1.Event {
	t.Helper()
	evs, err := e.Store.ListEventsSince(context.Background(), th, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	var out []*platformv1.Event
	for _, se := range evs {
		ev, err := agent.FromStore(se)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, ev)
	}
	return out
}

func kinds(evs []*platformv1.Event) string {
	var ks []string
	for _, ev := range evs {
		ks = append(ks, string(ev.ProtoReflect().WhichOneof(ev.ProtoReflect().Descriptor().Oneofs().ByName("payload")).Name()))
	}
	return strings.Join(ks, ",")
}

// postToModel writes a user message into the run's thread with the model
// agent over tr.
func (e *testEnv) postToModel(t *testing.T, tr apiTransport, fx eventFixture, content string) {
	t.Helper()
	e.mustCall(t, tr, eventSvc+"CreateEvent", &platformv1.CreateEventRequest{
		OrganizationId: e.Init.OrganizationID, WorkspaceId: e.Init.WorkspaceID, AutomationId: fx.automation, RunId: fx.run, AgentId: "model",
		Event: &platformv1.Event{Payload: &platformv1.Event_UserMessage{UserMessage: &platformv1.UserMessage{Content: content}}}})
}

func modelThread(fx eventFixture) store.Thread {
	th := fx.thread
	th.AgentID = "model"
	return th
}

func noKey(t *testing.T, evs []*platformv1.Event) {
	t.Helper()
	for _, ev := range evs {
		b, _ := json.Marshal(ev)
		if strings.Contains(string(b), fakeKey) {
			t.Fatalf("the key is in the thread: %s", b)
		}
	}
}

// TestModelAgentResolves: a run waits for the invoice total; a person asks
// the model agent (over HTTP and gRPC); the fake model streams an
// explanation (seen STATE_STREAMING while it streams), then a resolve tool
// call in pieces; the run completes, resolved by agents/model.
func TestModelAgentResolves(t *testing.T) {
	f := newFakeModel(t)
	e := modelEnv(t, f, nil)
	forEachTransport(t, func(t *testing.T, tr apiTransport) {
		fx := e.awaitingRun(t)
		th := modelThread(fx)
		gate := make(chan struct{})
		f.script(
			sse(gate, false,
				chunk(map[string]any{"role": "assistant", "content": ""}, ""),
				text("The run needs "), text("the invoice total; "), text("I will provide it."),
				toolPiece(0, "call_abc", "resolve_", ""),
				toolPiece(0, "", "exception", `{"kind":"provide_`),
				toolPiece(0, "", "", `values","values":{"the invoice total":`),
				toolPiece(0, "", "", `120.50}}`),
				finish("tool_calls")),
			stream(text("Done: "), text("the run goes on."), finish("stop")),
		)
		e.postToModel(t, tr, fx, "the invoice total is 120.50, please fix it")
		// The first chunk is in the thread, streaming, before the rest is sent.
		e.Poll(t, func() (bool, bool, string) {
			evs := e.thread(t, th)
			for _, ev := range evs {
				if ev.GetState() == platformv1.Event_STATE_STREAMING && ev.GetAgentMessage() != nil {
					return true, false, ""
				}
			}
			return false, false, kinds(evs)
		})
		close(gate)
		e.events().Runner().Wait()
		evs := e.thread(t, th)
		if got := kinds(evs); got != "user_message,agent_message,tool_call_request,tool_call_result,agent_message,completion_response" {
			t.Fatalf("thread: %s", got)
		}
		if c := evs[1].GetAgentMessage().GetContent(); c != "The run needs the invoice total; I will provide it." || evs[1].GetState() != platformv1.Event_STATE_COMPLETE {
			t.Errorf("first message: %q %v", c, evs[1].GetState())
		}
		if in := evs[2].GetToolCallRequest().GetInput(); !strings.Contains(in, `"provide_values"`) || !strings.Contains(in, `"lo":12050`) {
			t.Errorf("tool call: %s", in)
		}
		if r := evs[3].GetToolCallResult().GetResult(); !strings.Contains(r, "resolved by agents/model") {
			t.Errorf("tool result: %s", r)
		}
		if cr := evs[5].GetCompletionResponse(); cr.GetError() != "" || cr.GetContent() != "Done: the run goes on." {
			t.Errorf("completion: %v", cr)
		}
		noKey(t, evs)
		e.WaitRunState(t, fx.automation, fx.run, store.RunCompleted)
		x, err := e.Store.GetException(context.Background(), e.Init.OrganizationID, e.Init.WorkspaceID, fx.exception)
		if err != nil || x.State != store.ExceptionResolved || x.Resolver != "agents/model" {
			t.Fatalf("exception: %v %+v", err, x)
		}
		// The protocol: bearer key, the model, streaming, the tools; the
		// second request carries the call and its result.
		rs := f.reqs()
		if len(rs) != 2 {
			t.Fatalf("requests: %d", len(rs))
		}
		if rs[0].Auth != "Bearer "+fakeKey || rs[0].Body["model"] != "fake-1" || rs[0].Body["stream"] != true {
			t.Errorf("request: %s %s", rs[0].Auth, rs[0].Raw)
		}
		for _, tool := range []string{"explain_exception", "resolve_exception", "propose_guide_entry"} {
			if !strings.Contains(rs[0].Raw, `"name":"`+tool+`"`) {
				t.Errorf("tool %s not offered: %s", tool, rs[0].Raw)
			}
		}
		if !strings.Contains(rs[0].Raw, "the invoice total is 120.50, please fix it") || !strings.Contains(rs[0].Raw, "get the invoice total") {
			t.Errorf("the prompt lacks the message or the statement: %s", rs[0].Raw)
		}
		if !strings.Contains(rs[1].Raw, `"tool_call_id":"call_abc"`) || !strings.Contains(rs[1].Raw, `"arguments":"{\"kind\":\"provide_values\",\"values\":{\"the invoice total\":120.50}}"`) {
			t.Errorf("second request: %s", rs[1].Raw)
		}
	})
}

// TestModelAgentProposesGuideEntry: the model explains (a tool), then asks
// for two tools in one answer (indexes 0 and 1): propose a guide entry and
// resolve; the entry appears pending approval in ListGuideEntries.
func TestModelAgentProposesGuideEntry(t *testing.T) {
	f := newFakeModel(t)
	e := modelEnv(t, f, nil)
	forEachTransport(t, func(t *testing.T, tr apiTransport) {
		fx := e.awaitingRun(t)
		f.script(
			stream(toolPiece(0, "call_1", "explain_exception", "{}"), finish("tool_calls")),
			stream(text("I will remember it."),
				toolPiece(0, "call_2", "propose_guide_entry", `{"kind":"provide_values","values":{"the invoice total":0},`),
				toolPiece(1, "call_3", "resolve_exception", `{"kind":"provide_values",`),
				toolPiece(0, "", "", `"title":"No invoice total: use 0","root_cause":"the invoice has no total"}`),
				toolPiece(1, "", "", `"values":{"the invoice total":0}}`),
				finish("tool_calls")),
			stream(text("Proposed and resolved."), finish("stop")),
		)
		e.postToModel(t, tr, fx, "use 0 and remember it")
		e.events().Runner().Wait()
		evs := e.thread(t, modelThread(fx))
		want := "user_message,tool_call_request,tool_call_result,agent_message,tool_call_request,tool_call_result,tool_call_request,tool_call_result,agent_message,completion_response"
		if got := kinds(evs); got != want {
			t.Fatalf("thread: %s", got)
		}
		if r := evs[2].GetToolCallResult().GetResult(); !strings.Contains(r, `"fact":"the invoice total"`) || !strings.Contains(r, `"statement":"get the invoice total"`) || !strings.Contains(r, `"line":1`) {
			t.Errorf("explain: %s", r)
		}
		if r := evs[5].GetToolCallResult().GetResult(); !strings.Contains(r, "proposed organizations/") {
			t.Errorf("propose: %s", r)
		}
		// The explanation went to the model as the tool's answer.
		if rs := f.reqs(); len(rs) != 3 || !strings.Contains(rs[1].Raw, `"role":"tool"`) || !strings.Contains(rs[1].Raw, `the invoice total`) {
			t.Errorf("requests: %d", len(rs))
		}
		e.WaitRunState(t, fx.automation, fx.run, store.RunCompleted)
		l := e.mustCall(t, tr, guideSvc+"ListGuideEntries", &platformv1.ListGuideEntriesRequest{OrganizationId: e.Init.OrganizationID, WorkspaceId: e.Init.WorkspaceID, AutomationId: fx.automation})
		list, _ := l["guide_entries"].([]any)
		if len(list) != 1 {
			t.Fatalf("entries: %v", l)
		}
		g := list[0].(map[string]any)
		if g["state"] != "STATE_PENDING_APPROVAL" || g["title"] != "No invoice total: use 0" || g["root_cause"] != "the invoice has no total" ||
			!strings.HasSuffix(fmt.Sprint(g["source_exception"]), fx.exception) {
			t.Errorf("entry: %v", g)
		}
	})
}

// TestModelAgentProtocol: what an endpoint may do wrong, and what the
// agent makes of it. Each case ends its turn with a completion_response
// (its error as the case wants) and never crashes.
func TestModelAgentProtocol(t *testing.T) {
	f := newFakeModel(t)
	e := modelEnv(t, f, func(m *app.ModelConfig) { m.RequestTimeout = 400 * time.Millisecond })
	big := strings.Repeat("x", 5000)
	for _, c := range []struct {
		name     string
		steps    []fakeStep
		wantErr  string // "" : no error
		resolved bool
		requests int
		check    func(t *testing.T, rs []fakeRequest, evs []*platformv1.Event)
	}{
		{name: "401", steps: []fakeStep{httpStatus(401, nil, `{"error":{"message":"Incorrect API key provided: sk-te***42","type":"invalid_request_error","code":"invalid_api_key"}}`)},
			wantErr: "answered 401 Unauthorized: Incorrect API key", requests: 1},
		{name: "401 echoing the key", steps: []fakeStep{httpStatus(401, nil, `{"error":{"message":"Incorrect API key provided: `+fakeKey+`","type":"invalid_request_error"}}`)},
			wantErr: "Incorrect API key provided: [redacted]", requests: 1},
		{name: "429 then success", steps: []fakeStep{
			httpStatus(429, map[string]string{"Retry-After": "1"}, `{"error":{"message":"Rate limit reached","type":"requests"}}`),
			stream(text("ok"), finish("stop"))}, requests: 2},
		{name: "429 too long", steps: []fakeStep{httpStatus(429, map[string]string{"Retry-After": "120"}, `{"error":{"message":"Rate limit reached","type":"requests"}}`)},
			wantErr: "429 Too Many Requests: Rate limit reached (retry after 120)", requests: 1},
		{name: "500", steps: []fakeStep{httpStatus(500, nil, `{"error":{"message":"The server had an error","type":"server_error"}}`)},
			wantErr: "answered 500 Internal Server Error: The server had an error", requests: 1},
		{name: "500 not JSON", steps: []fakeStep{httpStatus(500, nil, `upstream exploded`)}, wantErr: "answered 500", requests: 1},
		{name: "slow", steps: []fakeStep{slow(3 * time.Second)}, wantErr: "did not answer within 400ms", requests: 1},
		{name: "dropped mid-stream", steps: []fakeStep{sse(nil, true, text("Half an "), text("answer"))}, wantErr: "the model endpoint failed", requests: 1,
			check: func(t *testing.T, _ []fakeRequest, evs []*platformv1.Event) {
				if m := evs[1].GetAgentMessage(); m.GetContent() != "Half an answer" || evs[1].GetState() != platformv1.Event_STATE_COMPLETE {
					t.Errorf("the partial message: %v", evs[1])
				}
			}},
		{name: "ends without finish", steps: []fakeStep{stream(text("Half"))}, wantErr: "ended before the answer did", requests: 1},
		{name: "malformed arguments", steps: []fakeStep{
			stream(toolPiece(0, "call_1", "resolve_exception", `{"kind": "skip"`), finish("tool_calls")),
			stream(text("Sorry."), finish("stop"))}, requests: 2,
			check: func(t *testing.T, rs []fakeRequest, _ []*platformv1.Event) {
				if !strings.Contains(rs[1].Raw, "the arguments are not a valid JSON object") {
					t.Errorf("the model was not told: %s", rs[1].Raw)
				}
			}},
		{name: "guidance that does not fit", steps: []fakeStep{
			stream(toolPiece(0, "call_1", "resolve_exception", `{"kind":"answer","answer":"yes"}`), finish("tool_calls")),
			stream(text("I see."), finish("stop"))}, requests: 2,
			check: func(t *testing.T, rs []fakeRequest, evs []*platformv1.Event) {
				if !strings.Contains(rs[1].Raw, `"role":"tool"`) || !strings.Contains(rs[1].Raw, "error: ") || !strings.Contains(kinds(evs), "tool_call_result") {
					t.Errorf("the model was not told: %s", rs[1].Raw)
				}
			}},
		{name: "unknown tool", steps: []fakeStep{
			stream(toolPiece(0, "call_1", "delete_everything", `{}`), finish("tool_calls")),
			stream(text("I cannot."), finish("stop"))}, requests: 2,
			check: func(t *testing.T, rs []fakeRequest, _ []*platformv1.Event) {
				if !strings.Contains(rs[1].Raw, `there is no tool \"delete_everything\"`) {
					t.Errorf("the model was not told: %s", rs[1].Raw)
				}
			}},
		{name: "too many tool rounds", steps: []fakeStep{
			stream(toolPiece(0, "c1", "explain_exception", `{}`), finish("tool_calls")),
			stream(toolPiece(0, "c2", "explain_exception", `{}`), finish("tool_calls")),
			stream(toolPiece(0, "c3", "explain_exception", `{}`), finish("tool_calls"))},
			wantErr: "more than 2 rounds", requests: 3},
		{name: "too many bytes", steps: []fakeStep{stream(text("Start. "), text(big), finish("stop"))}, wantErr: "more than 4096 bytes", requests: 1},
		{name: "retry", steps: []fakeStep{
			stream(toolPiece(0, "c1", "resolve_exception", `{"kind":"retry"}`), finish("tool_calls")),
			stream(text("Retried."), finish("stop"))}, resolved: true, requests: 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			fx := e.awaitingRun(t)
			f.script(c.steps...)
			e.postToModel(t, overHTTP, fx, "please help")
			e.events().Runner().Wait()
			evs := e.thread(t, modelThread(fx))
			last := evs[len(evs)-1].GetCompletionResponse()
			if last == nil {
				t.Fatalf("the turn has no end: %s", kinds(evs))
			}
			if c.wantErr == "" && last.GetError() != "" || !strings.Contains(last.GetError(), c.wantErr) {
				t.Errorf("error %q, want %q", last.GetError(), c.wantErr)
			}
			for _, ev := range evs {
				if ev.GetState() != platformv1.Event_STATE_COMPLETE {
					t.Errorf("left streaming: %v", ev)
				}
			}
			noKey(t, evs)
			rs := f.reqs()
			if len(rs) != c.requests {
				t.Errorf("requests: %d, want %d", len(rs), c.requests)
			}
			x, err := e.Store.GetException(context.Background(), e.Init.OrganizationID, e.Init.WorkspaceID, fx.exception)
			if err != nil || (x.State == store.ExceptionResolved) != c.resolved {
				t.Errorf("exception: %v %s", err, x.State)
			}
			if c.check != nil {
				c.check(t, rs, evs)
			}
		})
	}
}

// TestModelAgentWholeAnswers: an endpoint asked for whole answers (no
// stream) replaces the step; the run completes.
func TestModelAgentWholeAnswers(t *testing.T) {
	f := newFakeModel(t)
	e := modelEnv(t, f, func(m *app.ModelConfig) { m.NoStream = true })
	fx := e.awaitingRun(t)
	f.script(
		whole("I will use 10.", map[string]any{"id": "call_1", "type": "function", "function": map[string]any{
			"name": "resolve_exception", "arguments": `{"kind":"replace_step","code":"the invoice total is 10"}`}}),
		whole("Replaced."),
	)
	e.postToModel(t, overGRPC, fx, "use 10")
	e.events().Runner().Wait()
	evs := e.thread(t, modelThread(fx))
	if got := kinds(evs); got != "user_message,agent_message,tool_call_request,tool_call_result,agent_message,completion_response" {
		t.Fatalf("thread: %s", got)
	}
	if rs := f.reqs(); len(rs) != 2 || rs[0].Body["stream"] == true {
		t.Errorf("requests: %v", rs)
	}
	if cr := evs[5].GetCompletionResponse(); cr.GetContent() != "Replaced." || cr.GetError() != "" {
		t.Errorf("completion: %v", cr)
	}
	e.WaitRunState(t, fx.automation, fx.run, store.RunCompleted)
}

// TestModelAgentCancel: CancelGeneration stops a model that is streaming;
// the built-in agent stays the default (its thread still answers).
func TestModelAgentCancel(t *testing.T) {
	f := newFakeModel(t)
	e := modelEnv(t, f, func(m *app.ModelConfig) { m.RequestTimeout = 30 * time.Second })
	fx := e.awaitingRun(t)
	gate := make(chan struct{})
	defer close(gate)
	f.script(sse(gate, false, text("Thinking about "), text("it")))
	e.postToModel(t, overHTTP, fx, "help")
	th := modelThread(fx)
	e.Poll(t, func() (bool, bool, string) {
		evs := e.thread(t, th)
		return len(evs) >= 2 && evs[1].GetAgentMessage().GetContent() == "Thinking about it" && evs[1].GetState() == platformv1.Event_STATE_STREAMING, false, kinds(evs)
	})
	p := strings.Replace(fx.path(e), "/agents/prose/", "/agents/model/", 1)
	if code, _, raw := e.DoHTTP(t, "POST", p+":cancelGeneration", `{}`, e.Bearer()); code != 200 {
		t.Fatalf("cancel: %d %s", code, raw)
	}
	evs := e.thread(t, th)
	if last := evs[len(evs)-1].GetCompletionResponse(); last.GetError() != "cancelled" || evs[1].GetAgentMessage().GetContent() != "Thinking about it" || evs[1].GetState() != platformv1.Event_STATE_COMPLETE {
		t.Fatalf("thread: %s %v", kinds(evs), evs)
	}
	// The built-in agent is there as before.
	if code, _, raw := e.DoHTTP(t, "POST", fx.path(e), `{"user_message":{"content":"help"}}`, e.Bearer()); code != 200 {
		t.Fatalf("prose: %d %s", code, raw)
	}
	e.events().Runner().Wait()
	if got := kinds(e.thread(t, fx.thread)); got != "user_message,agent_message,completion_response" {
		t.Errorf("prose thread: %s", got)
	}
}

// TestModelAgentActsWithTheWritersAuthority: the agent resolves with the
// authority of the person who wrote to it, checked at the tool call: a
// workspace member's request is carried out; once she is removed from the
// workspace (while the model streams), the same call is refused and the
// model is told.
func TestModelAgentActsWithTheWritersAuthority(t *testing.T) {
	f := newFakeModel(t)
	e := modelEnv(t, f, nil)
	ctx := context.Background()
	ana, err := e.Store.CreateUser(ctx, store.User{DisplayName: "Ana", Email: "ana-" + store.NewID() + "@example.test"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Store.AddOrganizationMember(ctx, e.Init.OrganizationID, ana.ID, []string{"member"}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Store.AddWorkspaceMember(ctx, e.Init.OrganizationID, e.Init.WorkspaceID, ana.ID, []string{"workspace_member"}); err != nil {
		t.Fatal(err)
	}
	key := map[string]string{"Authorization": "Bearer " + e.NewKey(t, testenv.KeySpec{User: ana.ID})}
	for _, removed := range []bool{false, true} {
		fx := e.awaitingRun(t)
		gate := make(chan struct{})
		f.script(
			sse(gate, false, text("Replacing "), text("the step."),
				toolPiece(0, "c1", "resolve_exception", `{"kind":"replace_step","code":"the invoice total is 10"}`), finish("tool_calls")),
			stream(text("ok"), finish("stop")))
		p := strings.Replace(fx.path(e), "/agents/prose/", "/agents/model/", 1)
		if code, _, raw := e.DoHTTP(t, "POST", p, `{"user_message":{"content":"use 10"}}`, key); code != 200 {
			t.Fatalf("post: %d %s", code, raw)
		}
		th := modelThread(fx)
		e.Poll(t, func() (bool, bool, string) {
			evs := e.thread(t, th)
			return len(evs) >= 2 && evs[1].GetState() == platformv1.Event_STATE_STREAMING, false, kinds(evs)
		})
		if removed {
			if err := e.Store.RemoveWorkspaceMember(ctx, e.Init.OrganizationID, e.Init.WorkspaceID, ana.ID); err != nil {
				t.Fatal(err)
			}
		}
		close(gate)
		e.events().Runner().Wait()
		evs := e.thread(t, th)
		if got := kinds(evs); got != "user_message,agent_message,tool_call_request,tool_call_result,agent_message,completion_response" {
			t.Fatalf("thread: %s", got)
		}
		res := evs[3].GetToolCallResult().GetResult()
		x, err := e.Store.GetException(ctx, e.Init.OrganizationID, e.Init.WorkspaceID, fx.exception)
		if err != nil {
			t.Fatal(err)
		}
		if removed {
			if !strings.Contains(res, "lacks the permission exceptions.resolve") || x.State != store.ExceptionPending {
				t.Errorf("after removal: %s, exception %s", res, x.State)
			}
			if rs := f.reqs(); len(rs) != 2 || !strings.Contains(rs[1].Raw, "lacks the permission") {
				t.Errorf("the model was not told")
			}
		} else if !strings.Contains(res, "resolved by agents/model") || x.State != store.ExceptionResolved || x.Resolver != "agents/model" {
			t.Errorf("member: %s, exception %s by %s", res, x.State, x.Resolver)
		}
	}
}

// TestModelAgentStreamCost measures a turn whose answer arrives in n
// chunks (each one written to the thread as it arrives) against the same
// text in one chunk: what streaming costs the store. Set
// PROSE_BENCH_MODEL=1 to run it (BENCHMARKS.md, "The model-backed agent").
func TestModelAgentStreamCost(t *testing.T) {
	if os.Getenv("PROSE_BENCH_MODEL") == "" {
		t.Skip("PROSE_BENCH_MODEL is not set")
	}
	f := newFakeModel(t)
	e := modelEnv(t, f, func(m *app.ModelConfig) { m.MaxStreamBytes = 1 << 20; m.RequestTimeout = time.Minute })
	const n, word = 1000, "token "
	turn := func(chunks []string) time.Duration {
		fx := e.awaitingRun(t)
		f.script(stream(append(chunks, finish("stop"))...))
		start := time.Now()
		e.postToModel(t, overHTTP, fx, "explain")
		e.events().Runner().Wait()
		d := time.Since(start)
		evs := e.thread(t, modelThread(fx))
		if got := evs[1].GetAgentMessage().GetContent(); len(got) != n*len(word) {
			t.Fatalf("content of %d bytes", len(got))
		}
		return d
	}
	many := make([]string, n)
	for i := range many {
		many[i] = text(word)
	}
	one := []string{text(strings.Repeat(word, n))}
	turn(one) // warm up
	var dm, d1 time.Duration
	const reps = 3
	for range reps {
		dm += turn(many)
		d1 += turn(one)
	}
	backend := "sqlite"
	if os.Getenv("PROSE_TEST_POSTGRES_URL") != "" {
		backend = "postgres"
	}
	t.Logf("%s: a turn of %d chunks %v (%v per chunk); the same text in 1 chunk %v; ratio %.1f",
		backend, n, dm/reps, (dm-d1)/reps/n, d1/reps, float64(dm)/float64(d1))
}
