package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	openai "github.com/sashabaranov/go-openai"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/internal/engine"
	"github.com/proserun/prose/internal/lang"
	"github.com/proserun/prose/store"
)

// Defaults of ModelOptions.
const (
	DefaultModelID             = "model"
	DefaultModelRequestTimeout = 60 * time.Second
	DefaultModelToolRounds     = 4
	DefaultModelStreamBytes    = 64 << 10
	// maxRetryAfter bounds the wait a 429 or 503's Retry-After may ask for
	// before the request is tried again (once per round); longer waits fail.
	maxRetryAfter = 30 * time.Second
)

// ModelOptions configure a Model.
type ModelOptions struct {
	// ID is the agent's id (default "model").
	ID string
	// URL is the endpoint's base URL, up to /v1 (the client adds
	// /chat/completions), and Model the model's name.
	URL, Model string
	// APIKey is sent as the bearer token ("": none). It is never logged
	// or written into the thread.
	APIKey string
	// RequestTimeout bounds one request to the endpoint, reading its
	// streamed answer included (default 60s).
	RequestTimeout time.Duration
	// MaxToolRounds bounds the rounds of tool calls in one turn: after that
	// many, the model's further tool calls end the turn with an error
	// (default 4).
	MaxToolRounds int
	// MaxStreamBytes bounds the bytes the model may stream in one turn
	// (content and tool-call arguments, every round; default 64 KiB).
	MaxStreamBytes int
	// NoStream asks for whole answers ("stream": false) instead of
	// server-sent events.
	NoStream bool
	// HTTPClient is the client used (default: a new one).
	HTTPClient *http.Client
}

// Model is an agent backed by an OpenAI-compatible chat-completions
// endpoint. It streams the model's answer into the thread and acts only
// through the conversation's Tools, which it offers to the model as
// functions: explain_exception, resolve_exception and propose_guide_entry.
type Model struct {
	o ModelOptions
}

// NewModel returns the agent; URL and Model are required.
func NewModel(o ModelOptions) (*Model, error) {
	if strings.TrimSpace(o.URL) == "" || strings.TrimSpace(o.Model) == "" {
		return nil, errors.New("a model-backed agent needs the endpoint's URL and the model's name")
	}
	if o.ID == "" {
		o.ID = DefaultModelID
	}
	if o.RequestTimeout <= 0 {
		o.RequestTimeout = DefaultModelRequestTimeout
	}
	if o.MaxToolRounds <= 0 {
		o.MaxToolRounds = DefaultModelToolRounds
	}
	if o.MaxStreamBytes <= 0 {
		o.MaxStreamBytes = DefaultModelStreamBytes
	}
	if o.HTTPClient == nil {
		o.HTTPClient = &http.Client{}
	}
	return &Model{o: o}, nil
}

// ID implements Agent.
func (m *Model) ID() string { return m.o.ID }

// headerDoer sends requests with the client and keeps the Retry-After of
// the last answer (go-openai's errors do not carry headers).
type headerDoer struct {
	c          *http.Client
	mu         sync.Mutex
	retryAfter string
}

func (d *headerDoer) Do(req *http.Request) (*http.Response, error) {
	resp, err := d.c.Do(req) //nolint:gosec // G704: the URL is the operator's --agent-url
	d.mu.Lock()
	defer d.mu.Unlock()
	d.retryAfter = ""
	if resp != nil {
		d.retryAfter = resp.Header.Get("Retry-After")
	}
	return resp, err
}

func (d *headerDoer) lastRetryAfter() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.retryAfter
}

// ModelError is a failure of the endpoint, as the completion_response
// error tells it (the key never appears in it).
type ModelError struct {
	Status     int // HTTP status (0: the connection failed)
	Msg        string
	RetryAfter time.Duration
}

func (e *ModelError) Error() string {
	if e.Status != 0 {
		return fmt.Sprintf("the model endpoint answered %d %s: %s", e.Status, http.StatusText(e.Status), e.Msg)
	}
	return "the model endpoint failed: " + e.Msg
}

// errTooMuch ends a turn whose stream passed MaxStreamBytes.
type errTooMuch struct{ max int }

func (e errTooMuch) Error() string {
	return fmt.Sprintf("the model streamed more than %d bytes in one turn (--agent-max-stream-bytes)", e.max)
}

const systemPrompt = `You are the assistant of Prose, a platform that runs automations written in a plain-English programming language. A run stopped on an exception and waits for guidance; a person is talking to you about it. Explain what happened and, when the person tells you what to do (or it is certain), act ONLY through the tools:
- explain_exception: the exception, where the run stopped (line, code, byte span), what it needs, and the run's facts (names and values) at the exception.
- resolve_exception: resolve it with exactly one kind: provide_values (values: {fact: JSON value}), answer (answer: JSON value), skip, retry, replace_step (code: Prose code that runs instead of the statement).
- propose_guide_entry: propose that the platform remember guidance for the next runs (a person approves it).
Values are plain JSON: numbers are kept exactly, text in quotes. Be brief.`

var guidanceProps = map[string]any{
	"kind":   map[string]any{"type": "string", "enum": []string{"provide_values", "answer", "skip", "retry", "replace_step"}},
	"values": map[string]any{"type": "object", "description": "provide_values: the value of each fact, by the fact's name, as plain JSON"},
	"answer": map[string]any{"description": "answer: the answer, as plain JSON"},
	"code":   map[string]any{"type": "string", "description": "replace_step: Prose code that runs instead of the statement"},
}

func modelTools() []openai.Tool {
	propose := map[string]any{}
	for k, v := range guidanceProps {
		propose[k] = v
	}
	propose["title"] = map[string]any{"type": "string"}
	propose["root_cause"] = map[string]any{"type": "string"}
	propose["resolution_notes"] = map[string]any{"type": "string"}
	return []openai.Tool{
		{Type: openai.ToolTypeFunction, Function: &openai.FunctionDefinition{Name: "explain_exception",
			Description: "The run's pending exception: where it stopped, what it needs, the failed checks.",
			Parameters:  map[string]any{"type": "object", "properties": map[string]any{}}}},
		{Type: openai.ToolTypeFunction, Function: &openai.FunctionDefinition{Name: "resolve_exception",
			Description: "Resolve the run's pending exception; the run continues.",
			Parameters:  map[string]any{"type": "object", "properties": guidanceProps, "required": []string{"kind"}}}},
		{Type: openai.ToolTypeFunction, Function: &openai.FunctionDefinition{Name: "propose_guide_entry",
			Description: "Propose a guide entry: the platform applies the guidance to the same exception in the next runs once a person approves it (retry cannot be remembered).",
			Parameters:  map[string]any{"type": "object", "properties": propose, "required": []string{"kind"}}}},
	}
}

// messages renders the thread for the model: the system prompt with the
// exception, then the people's and the agent's messages, oldest first.
func messages(c *Conversation) []openai.ChatCompletionMessage {
	sys := systemPrompt
	if c.Exception != nil {
		if j, err := explainJSON(c); err == nil {
			sys += "\n\nThe exception:\n" + j
		}
	} else {
		sys += fmt.Sprintf("\n\nThe run is %s and waits on no exception.", c.Run.State)
	}
	out := []openai.ChatCompletionMessage{{Role: openai.ChatMessageRoleSystem, Content: sys}}
	for _, ev := range c.History {
		switch p := ev.GetPayload().(type) {
		case *platformv1.Event_UserMessage:
			txt := (&Conversation{Message: ev}).Text()
			if txt != "" {
				out = append(out, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleUser, Content: txt})
			}
		case *platformv1.Event_AgentMessage:
			if p.AgentMessage.GetContent() != "" {
				out = append(out, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleAssistant, Content: p.AgentMessage.GetContent()})
			}
		case *platformv1.Event_ToolCallResult:
			// Earlier actions, told as the assistant's notes.
			out = append(out, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleAssistant, Content: "(tool result: " + p.ToolCallResult.GetResult() + ")"})
		}
	}
	return out
}

// explainJSON is the explain_exception tool's answer.
func explainJSON(c *Conversation) (string, error) {
	x := c.Exception
	d := c.Details
	if d == nil {
		d = &lang.Exception{}
	}
	out := map[string]any{
		"exception": c.ExceptionName(), "state": string(x.State), "group": x.Group, "message": x.Message,
		"statement": c.Statement, "line": c.Line, "step": x.Step + 1,
		"span":        map[string]int64{"start": x.Location.Start, "end": x.Location.End},
		"explanation": explain(c, d),
	}
	if d.Fact != "" {
		out["fact"] = d.Fact
	}
	if d.Question != "" {
		out["question"] = d.Question
	}
	if len(d.Choices) > 0 {
		var cs []json.RawMessage
		for _, v := range d.Choices {
			if b, err := lang.AppendPlain(nil, v); err == nil {
				cs = append(cs, b)
			}
		}
		out["choices"] = cs
	}
	if len(d.Failed) > 0 {
		out["failed_checks"] = d.Failed
	}
	if facts, omitted, ok := runFacts(c); ok {
		out["facts"] = facts
		if omitted > 0 {
			out["facts_omitted"] = omitted
		}
	}
	b, err := json.Marshal(out)
	return string(b), err
}

// Respond implements Agent: rounds of requests to the model, each streamed
// into an agent_message, and the tool calls the model asks for, until it
// answers without one (or MaxToolRounds).
func (m *Model) Respond(ctx context.Context, c *Conversation, w *Writer) (string, error) {
	doer := &headerDoer{c: m.o.HTTPClient}
	cfg := openai.DefaultConfig(m.o.APIKey)
	cfg.BaseURL = strings.TrimRight(m.o.URL, "/")
	cfg.HTTPClient = doer
	client := openai.NewClientWithConfig(cfg)
	msgs := messages(c)
	tools := modelTools()
	budget := m.o.MaxStreamBytes
	final := ""
	for round := 0; ; round++ {
		req := openai.ChatCompletionRequest{Model: m.o.Model, Messages: msgs, Tools: tools}
		text, calls, err := m.request(ctx, client, doer, req, w, &budget)
		if text != "" {
			final = text
		}
		if err != nil {
			return final, m.redact(err)
		}
		if len(calls) == 0 {
			return final, nil
		}
		if round >= m.o.MaxToolRounds {
			return final, fmt.Errorf("the model asked for tools in more than %d rounds of one turn (--agent-max-tool-rounds)", m.o.MaxToolRounds)
		}
		msgs = append(msgs, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleAssistant, Content: text, ToolCalls: calls})
		for _, call := range calls {
			result, err := m.tool(ctx, c, call)
			if err != nil {
				return final, err
			}
			msgs = append(msgs, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleTool, ToolCallID: call.ID, Name: call.Function.Name, Content: result})
		}
	}
}

// redact removes the key from an error's text, should an endpoint echo it.
func (m *Model) redact(err error) error {
	if err == nil || m.o.APIKey == "" || !strings.Contains(err.Error(), m.o.APIKey) {
		return err
	}
	return errors.New(strings.ReplaceAll(err.Error(), m.o.APIKey, "[redacted]"))
}

// request makes one request (retried once after a 429 or 503 whose
// Retry-After is short), streaming the content into an agent_message. It
// returns the text and the tool calls.
func (m *Model) request(ctx context.Context, client *openai.Client, doer *headerDoer, req openai.ChatCompletionRequest, w *Writer, budget *int) (string, []openai.ToolCall, error) {
	for attempt := 0; ; attempt++ {
		text, calls, err := m.once(ctx, client, doer, req, w, budget)
		var me *ModelError
		if attempt == 0 && errors.As(err, &me) && me.RetryAfter > 0 && me.RetryAfter <= maxRetryAfter && text == "" {
			t := time.NewTimer(me.RetryAfter)
			select {
			case <-ctx.Done():
				t.Stop()
				return "", nil, ctx.Err()
			case <-t.C:
			}
			continue
		}
		return text, calls, err
	}
}

func (m *Model) once(ctx context.Context, client *openai.Client, doer *headerDoer, req openai.ChatCompletionRequest, w *Writer, budget *int) (string, []openai.ToolCall, error) {
	rctx, cancel := context.WithTimeoutCause(ctx, m.o.RequestTimeout,
		fmt.Errorf("the model endpoint did not answer within %s (--agent-request-timeout)", m.o.RequestTimeout))
	defer cancel()
	fail := func(err error) error {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if rctx.Err() != nil {
			return context.Cause(rctx)
		}
		return m.endpointErr(err, doer)
	}
	if m.o.NoStream {
		return m.onceWhole(ctx, rctx, client, req, w, budget, fail)
	}
	req.Stream = true
	stream, err := client.CreateChatCompletionStream(rctx, req)
	if err != nil {
		return "", nil, fail(err)
	}
	recv := receive(rctx, stream)
	defer func() {
		cancel()
		_ = stream.Close()
		for range recv { //nolint:revive // drained until the reader has returned
		}
	}()
	a := &streamedAnswer{ctx: ctx, w: w, budget: budget, maxBytes: m.o.MaxStreamBytes, fail: fail, byIndex: map[int]int{}}
	defer func() { _ = a.closeMsg() }()
	return a.read(rctx, recv)
}

// onceWhole is once without streaming: the answer in one response.
func (m *Model) onceWhole(ctx, rctx context.Context, client *openai.Client, req openai.ChatCompletionRequest, w *Writer, budget *int,
	fail func(error) error) (string, []openai.ToolCall, error) {
	resp, err := client.CreateChatCompletion(rctx, req)
	if err != nil {
		return "", nil, fail(err)
	}
	if len(resp.Choices) == 0 {
		return "", nil, &ModelError{Msg: "the answer has no choices"}
	}
	msg := resp.Choices[0].Message
	n := len(msg.Content)
	for _, tc := range msg.ToolCalls {
		n += len(tc.Function.Arguments)
	}
	if *budget -= n; *budget < 0 {
		return "", nil, errTooMuch{m.o.MaxStreamBytes}
	}
	if msg.Content != "" {
		if _, err := w.Emit(ctx, agentMessage(msg.Content)); err != nil {
			return "", nil, err
		}
	}
	return msg.Content, msg.ToolCalls, nil
}

// received is a chunk of a streamed answer, or the error that ended it.
type received struct {
	chunk openai.ChatCompletionStreamResponse
	err   error
}

// receive reads the stream in its own goroutine, so that the chunks that
// arrive while a write is in flight are written together with the next
// one: each write shows everything received so far, and a fast model
// costs one write per store round trip, not one per chunk. The channel
// closes after the stream's last chunk or error, or when rctx ends.
func receive(rctx context.Context, stream *openai.ChatCompletionStream) chan received {
	recv := make(chan received, 256)
	go func() {
		defer close(recv)
		for {
			c, err := stream.Recv()
			select {
			case recv <- received{c, err}:
			case <-rctx.Done():
				return
			}
			if err != nil {
				return
			}
		}
	}()
	return recv
}

// streamedAnswer gathers a streamed answer: its text, written as an event
// begun at the first text and updated as more arrives, and its tool calls.
type streamedAnswer struct {
	ctx      context.Context
	w        *Writer
	budget   *int
	maxBytes int
	fail     func(error) error

	text     strings.Builder
	ev       *platformv1.Event
	calls    []openai.ToolCall
	byIndex  map[int]int
	finished bool
	dirty    bool // text not written yet
	closed   bool
}

// read takes the chunks until the stream ends and returns the answer.
func (a *streamedAnswer) read(rctx context.Context, recv chan received) (string, []openai.ToolCall, error) {
	for end := false; !end; {
		r, ok := <-recv
		if !ok {
			return a.text.String(), nil, a.fail(context.Cause(rctx))
		}
		var err error
		if end, err = a.take(r); err != nil {
			return a.text.String(), nil, err
		}
		// What else has arrived meanwhile.
		for more := !end; more; {
			select {
			case r, ok := <-recv:
				if !ok {
					more = false
					break
				}
				if end, err = a.take(r); err != nil {
					return a.text.String(), nil, err
				}
				more = !end
			default:
				more = false
			}
		}
		if !end {
			if err := a.write(); err != nil {
				return a.text.String(), nil, err
			}
		}
	}
	if err := a.closeMsg(); err != nil {
		return a.text.String(), nil, err
	}
	for i := range a.calls {
		if a.calls[i].ID == "" {
			a.calls[i].ID = "call_" + strconv.Itoa(i)
		}
	}
	return a.text.String(), a.calls, nil
}

// closeMsg writes the message complete, as it stands (once).
func (a *streamedAnswer) closeMsg() error {
	if a.closed {
		return nil
	}
	a.closed = true
	if a.ev == nil {
		if a.text.Len() == 0 {
			return nil
		}
		_, err := a.w.Emit(a.ctx, agentMessage(a.text.String()))
		return err
	}
	a.ev.Payload = agentMessage(a.text.String()).Payload
	_, err := a.w.Complete(a.ctx, a.ev)
	a.ev = nil
	return err
}

// take applies one chunk; end is true at the end of the stream.
func (a *streamedAnswer) take(r received) (end bool, err error) {
	if errors.Is(r.err, io.EOF) {
		if !a.finished {
			return true, &ModelError{Msg: "the stream ended before the answer did (no finish_reason)"}
		}
		return true, nil
	}
	if r.err != nil {
		return true, a.fail(r.err)
	}
	for _, ch := range r.chunk.Choices {
		if ch.Index != 0 {
			continue
		}
		if ch.FinishReason != "" {
			a.finished = true
		}
		d := ch.Delta
		n := len(d.Content)
		for _, tc := range d.ToolCalls {
			n += len(tc.Function.Arguments) + len(tc.Function.Name)
		}
		if *a.budget -= n; *a.budget < 0 {
			return true, errTooMuch{a.maxBytes}
		}
		if d.Content != "" {
			a.text.WriteString(d.Content)
			a.dirty = true
		}
		for _, tc := range d.ToolCalls {
			a.addCall(tc)
		}
	}
	return false, nil
}

// addCall adds a piece of a tool call to the call of its index.
func (a *streamedAnswer) addCall(tc openai.ToolCall) {
	idx := len(a.calls)
	if tc.Index != nil {
		idx = *tc.Index
	}
	i, ok := a.byIndex[idx]
	if !ok {
		i = len(a.calls)
		a.byIndex[idx] = i
		a.calls = append(a.calls, openai.ToolCall{Type: openai.ToolTypeFunction})
	}
	if tc.ID != "" {
		a.calls[i].ID = tc.ID
	}
	a.calls[i].Function.Name += tc.Function.Name
	a.calls[i].Function.Arguments += tc.Function.Arguments
}

// write writes the text received so far, if any is new.
func (a *streamedAnswer) write() error {
	if !a.dirty {
		return nil
	}
	a.dirty = false
	var err error
	if a.ev == nil {
		a.ev, err = a.w.Begin(a.ctx, agentMessage(a.text.String()))
	} else {
		a.ev.Payload = agentMessage(a.text.String()).Payload
		a.ev, err = a.w.Update(a.ctx, a.ev)
	}
	return err
}

// endpointErr tells a failed request.
func (m *Model) endpointErr(err error, doer *headerDoer) error {
	var api *openai.APIError
	var re *openai.RequestError
	out := &ModelError{Msg: err.Error()}
	switch {
	case errors.As(err, &api):
		out.Status, out.Msg = api.HTTPStatusCode, api.Message
	case errors.As(err, &re):
		out.Status = re.HTTPStatusCode
		out.Msg = strings.TrimSpace(string(re.Body))
		if len(out.Msg) > 512 {
			out.Msg = out.Msg[:512] + "…"
		}
		if out.Msg == "" && re.Err != nil {
			out.Msg = re.Err.Error()
		}
	}
	if out.Status == http.StatusTooManyRequests || out.Status == http.StatusServiceUnavailable {
		if s := doer.lastRetryAfter(); s != "" {
			if n, err := strconv.Atoi(strings.TrimSpace(s)); err == nil && n >= 0 {
				out.RetryAfter = time.Duration(n) * time.Second
			} else if t, err := http.ParseTime(s); err == nil {
				out.RetryAfter = time.Until(t)
			}
			out.Msg += " (retry after " + s + ")"
		}
	}
	return out
}

// toolArgs are the arguments of resolve_exception and propose_guide_entry.
type toolArgs struct {
	Kind            string                     `json:"kind"`
	Values          map[string]json.RawMessage `json:"values"`
	Answer          json.RawMessage            `json:"answer"`
	Code            string                     `json:"code"`
	Title           string                     `json:"title"`
	RootCause       string                     `json:"root_cause"`
	ResolutionNotes string                     `json:"resolution_notes"`
}

func (a toolArgs) guidance() (engine.Guidance, error) {
	switch a.Kind {
	case "skip":
		return engine.Guidance{Kind: engine.GuidanceSkip}, nil
	case "retry":
		return engine.Guidance{Kind: engine.GuidanceRetry}, nil
	case "replace_step":
		if strings.TrimSpace(a.Code) == "" {
			return engine.Guidance{}, errors.New("replace_step needs code")
		}
		if _, err := lang.Parse(a.Code); err != nil {
			return engine.Guidance{}, fmt.Errorf("the code does not parse: %w", err)
		}
		return engine.Guidance{Kind: engine.GuidanceReplaceStep, Code: a.Code}, nil
	case "answer":
		if len(a.Answer) == 0 {
			return engine.Guidance{}, errors.New("answer needs answer, a JSON value")
		}
		v, err := lang.DecodePlain(a.Answer)
		if err != nil {
			return engine.Guidance{}, fmt.Errorf("answer: %w", err)
		}
		return engine.Guidance{Kind: engine.GuidanceAnswer, Answer: v}, nil
	case "provide_values":
		if len(a.Values) == 0 {
			return engine.Guidance{}, errors.New("provide_values needs values, an object of facts and values")
		}
		vals := map[string]lang.Value{}
		for k, raw := range a.Values {
			v, err := lang.DecodePlain(raw)
			if err != nil {
				return engine.Guidance{}, fmt.Errorf("values.%s: %w", k, err)
			}
			vals[k] = v
		}
		return engine.Guidance{Kind: engine.GuidanceProvideValues, Values: vals}, nil
	}
	return engine.Guidance{}, fmt.Errorf("kind must be one of provide_values, answer, skip, retry, replace_step; not %q", a.Kind)
}

// tool makes one tool call the model asked for and returns what the model
// is told. A call the agent cannot make (an unknown tool, arguments that
// are not JSON, guidance that does not fit) is told to the model, which may
// try again; only a failure of the thread's store ends the turn.
func (m *Model) tool(ctx context.Context, c *Conversation, call openai.ToolCall) (string, error) {
	args, refusal := readArgs(call.Function.Arguments)
	if refusal != "" {
		return refusal, nil
	}
	switch call.Function.Name {
	case "explain_exception":
		out, err := c.Tools.Explain(ctx)
		return toolResult(ctx, out, err)
	case "resolve_exception":
		g, refusal := args.guidanceOrRefusal()
		if refusal != "" {
			return refusal, nil
		}
		_, err := c.Tools.Resolve(ctx, g)
		return toolResult(ctx, "resolved; the run continues", err)
	case "propose_guide_entry":
		g, refusal := args.guidanceOrRefusal()
		if refusal != "" {
			return refusal, nil
		}
		en, err := c.Tools.ProposeGuideEntry(ctx, g, engine.GuideEntryText{Title: args.Title, RootCause: args.RootCause, ResolutionNotes: args.ResolutionNotes})
		return toolResult(ctx, fmt.Sprintf("proposed guide entry %q; it waits for a person's approval", en.ID), err)
	}
	return fmt.Sprintf("error: there is no tool %q; the tools are explain_exception, resolve_exception and propose_guide_entry", call.Function.Name), nil
}

// readArgs reads a tool call's arguments; refusal tells the model why they
// cannot be read.
func readArgs(s string) (args toolArgs, refusal string) {
	if s = strings.TrimSpace(s); s == "" {
		return args, ""
	}
	if err := json.Unmarshal([]byte(s), &args); err != nil {
		return args, "error: the arguments are not a valid JSON object: " + err.Error()
	}
	return args, ""
}

// guidanceOrRefusal is guidance, or what the model is told instead.
func (a toolArgs) guidanceOrRefusal() (engine.Guidance, string) {
	g, err := a.guidance()
	if err != nil {
		return g, "error: " + err.Error()
	}
	return g, ""
}

// toolResult tells the model a tool's outcome; errors of the store that are
// not the model's doing (and cancellation) end the turn.
func toolResult(ctx context.Context, ok string, err error) (string, error) {
	if err == nil {
		return ok, nil
	}
	var size *SizeError
	switch {
	case ctx.Err() != nil:
		return "", ctx.Err()
	case errors.Is(err, errSuperseded), errors.As(err, &size):
		return "", err
	case errors.Is(err, store.ErrInvalidArgument), errors.Is(err, store.ErrFailedPrecondition), errors.Is(err, store.ErrNotFound), isDenied(err):
		return "error: " + err.Error(), nil
	}
	return "", err
}

// isDenied reports a refusal of Options.Authorize (a PERMISSION_DENIED
// status).
func isDenied(err error) bool {
	return status.Code(err) == codes.PermissionDenied
}
