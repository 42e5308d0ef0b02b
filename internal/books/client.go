package books

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/proserun/prose/internal/lang"
)

// DefaultCallTimeout bounds one call of an external book unless the client
// says otherwise.
const DefaultCallTimeout = 30 * time.Second

// maxResponseBytes bounds the body read from an external book.
const maxResponseBytes = 16 << 20

// Client calls external books over HTTP with JSON (see README.md).
type Client struct {
	// HTTP is the client used; nil means a client with no timeout of its own.
	HTTP *http.Client
	// Timeout bounds each call (on top of the context's deadline); zero means
	// DefaultCallTimeout.
	Timeout time.Duration
}

// NewClient returns a Client that reaches every address (plainClient) with
// DefaultCallTimeout.
func NewClient() *Client { return &Client{HTTP: plainClient(0), Timeout: DefaultCallTimeout} }

// BookError is an error a book reported for a call (its `error` member): a
// user error of the run, not a fault of the platform.
type BookError struct {
	Procedure string
	Message   string
}

func (e *BookError) Error() string {
	return fmt.Sprintf("book procedure %s: %s", e.Procedure, e.Message)
}

// CallError is a failure to talk to a book: unreachable, timed out, an HTTP
// status without a book error, or a malformed answer.
type CallError struct {
	Procedure string
	Err       error
}

func (e *CallError) Error() string {
	return fmt.Sprintf("calling book procedure %s: %v", e.Procedure, e.Err)
}
func (e *CallError) Unwrap() error { return e.Err }

// ProtocolVersion is the version of the external book protocol this client
// speaks (README.md); it also understands books that speak version 1.
const ProtocolVersion = 2

// ProtocolHeader carries the protocol version: the version of a call on a
// request, the version of the answer on a response.
const ProtocolHeader = "Prose-Book-Protocol"

// CallRequest is one call of a procedure (protocol version 2).
type CallRequest struct {
	// CallID identifies the run's step (the Idempotency-Key); may be empty.
	CallID string
	// Inputs are keyed by input concept name.
	Inputs map[string]lang.Value
	// Answers are the answers given to the questions the book asked for
	// this call, by question id (lang.BookAnswers).
	Answers map[string]lang.Value
	// Connection is the workspace connection the call uses, with its
	// credentials; nil: none.
	Connection *Connection
}

type callRequest struct {
	Protocol   int                   `json:"protocol"`
	CallID     string                `json:"call_id,omitempty"`
	Inputs     map[string]lang.Value `json:"inputs"`
	Answers    map[string]lang.Value `json:"answers,omitempty"`
	Connection *wireConnection       `json:"connection,omitempty"`
}

// wireConnection is a connection as the protocol sends it.
type wireConnection struct {
	ID             string                `json:"id"`
	Name           string                `json:"name"`
	Authentication string                `json:"authentication,omitempty"`
	Credentials    map[string]string     `json:"credentials,omitempty"`
	Configuration  map[string]lang.Value `json:"configuration,omitempty"`
}

type callResponse struct {
	Outputs map[string]json.RawMessage `json:"outputs"`
	Error   *struct {
		Message string `json:"message"`
	} `json:"error"`
	Question *struct {
		ID      string            `json:"id"`
		Prompt  string            `json:"prompt"`
		Choices []json.RawMessage `json:"choices"`
		Type    string            `json:"type"`
	} `json:"question"`
}

// CallURL is where a procedure of a book at endpoint is called:
// {endpoint}/procedures/{id}:call, the id path-escaped.
func CallURL(endpoint, procedureID string) (string, error) {
	if err := checkEndpoint(endpoint); err != nil {
		return "", err
	}
	return strings.TrimRight(endpoint, "/") + "/procedures/" + url.PathEscape(procedureID) + ":call", nil
}

func checkEndpoint(endpoint string) error {
	u, err := url.Parse(endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return errors.New("must be an absolute http or https URL")
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return errors.New("must not have a query or a fragment")
	}
	return nil
}

// Call calls procedure procedureID of the book at endpoint with inputs in
// plain JSON and returns its outputs. A book's own error is *BookError; a
// book's question is *lang.BookQuestion; any other failure is *CallError.
func (c *Client) Call(ctx context.Context, endpoint, procedureID, callID string, inputs map[string]lang.Value) (map[string]lang.Value, error) {
	return c.Do(ctx, endpoint, procedureID, CallRequest{CallID: callID, Inputs: inputs})
}

// Do makes the call r of procedure procedureID of the book at endpoint, as
// Call does, with the answers and the connection of protocol version 2.
func (c *Client) Do(ctx context.Context, endpoint, procedureID string, r CallRequest) (map[string]lang.Value, error) {
	fail := func(err error) error { return &CallError{Procedure: procedureID, Err: err} }
	u, err := CallURL(endpoint, procedureID)
	if err != nil {
		return nil, fail(fmt.Errorf("endpoint %q %w", endpoint, err))
	}
	wire := callRequest{Protocol: ProtocolVersion, CallID: r.CallID, Inputs: r.Inputs, Answers: r.Answers}
	if wire.Inputs == nil {
		wire.Inputs = map[string]lang.Value{}
	}
	if cn := r.Connection; cn != nil {
		wire.Connection = &wireConnection{ID: cn.ID, Name: cn.Name, Authentication: cn.AuthID, Credentials: cn.Credentials, Configuration: cn.Config}
	}
	body, err := json.Marshal(wire)
	if err != nil {
		// (no value in the message: it may hold a credential)
		return nil, fail(errors.New("the inputs or the connection cannot be written as plain JSON"))
	}
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = DefaultCallTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(body))
	if err != nil {
		return nil, fail(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	req.Header.Set(ProtocolHeader, strconv.Itoa(ProtocolVersion))
	if r.CallID != "" {
		req.Header.Set("Idempotency-Key", r.CallID)
	}
	hc := c.HTTP
	if hc == nil {
		hc = plainClient(0)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fail(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes+1))
	if err != nil {
		return nil, fail(err)
	}
	if len(raw) > maxResponseBytes {
		return nil, fail(fmt.Errorf("response larger than %d bytes", maxResponseBytes))
	}
	var cr callResponse
	jsonErr := json.Unmarshal(raw, &cr)
	if jsonErr == nil && cr.Error != nil {
		msg := cr.Error.Message
		if msg == "" {
			msg = "the book reported an error without a message"
		}
		return nil, &BookError{Procedure: procedureID, Message: msg}
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, fail(fmt.Errorf("HTTP status %d", resp.StatusCode))
	}
	if jsonErr != nil {
		return nil, fail(fmt.Errorf("malformed response: %w", jsonErr))
	}
	if q := cr.Question; q != nil {
		return nil, question(procedureID, q.ID, q.Prompt, q.Type, q.Choices)
	}
	out := make(map[string]lang.Value, len(cr.Outputs))
	for k, rv := range cr.Outputs {
		v, err := lang.DecodePlain(rv)
		if err != nil {
			return nil, fail(fmt.Errorf("output %q: %w", k, err))
		}
		out[k] = v
	}
	return out, nil
}

// Limits of a book's question (protocol version 2).
const (
	// MaxQuestionPromptBytes bounds a question's prompt.
	MaxQuestionPromptBytes = 4 << 10
	// MaxQuestionChoices bounds a question's choices.
	MaxQuestionChoices = 100
)

// question checks a book's question and makes it the run's.
func question(procedureID, id, prompt, typ string, choices []json.RawMessage) error {
	bad := func(format string, args ...any) error {
		return &CallError{Procedure: procedureID, Err: fmt.Errorf("malformed question: "+format, args...)}
	}
	switch {
	case strings.TrimSpace(id) == "" || strings.TrimSpace(prompt) == "":
		return bad("it needs an id and a prompt")
	case len(prompt) > MaxQuestionPromptBytes:
		return bad("its prompt has %d bytes, more than %d", len(prompt), MaxQuestionPromptBytes)
	case len(choices) > MaxQuestionChoices:
		return bad("it has %d choices, more than %d", len(choices), MaxQuestionChoices)
	case !lang.IsAnswerType(typ):
		return bad("its type %q is not one of text, number, boolean, date, datetime, time", typ)
	}
	q := &lang.BookQuestion{ID: id, Prompt: prompt, Type: typ}
	for i, raw := range choices {
		v, err := lang.DecodePlain(raw)
		if err != nil {
			return bad("choice %d: %v", i, err)
		}
		if err := lang.CheckAnswer(typ, v); err != nil {
			return bad("choice %d: %v", i, err)
		}
		q.Choices = append(q.Choices, v)
	}
	return q
}

// Versions asks the book at endpoint which versions of the protocol it
// speaks (GET {endpoint}/protocol). A book that does not answer that path
// (404) speaks version 1 only.
func (c *Client) Versions(ctx context.Context, endpoint string) ([]int, error) {
	if err := checkEndpoint(endpoint); err != nil {
		return nil, fmt.Errorf("endpoint %q %w", endpoint, err)
	}
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = DefaultCallTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(endpoint, "/")+"/protocol", nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	hc := c.HTTP
	if hc == nil {
		hc = plainClient(0)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound {
		return []int{1}, nil
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /protocol: HTTP status %d", resp.StatusCode)
	}
	var body struct {
		Versions []int `json:"versions"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<10)).Decode(&body); err != nil || len(body.Versions) == 0 {
		return nil, errors.New(`GET /protocol: the answer is not {"versions": [1, 2]} or the like`)
	}
	return body.Versions, nil
}
