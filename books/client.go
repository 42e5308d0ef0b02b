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
	"strings"
	"time"

	"github.com/proserun/prose/lang"
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

// NewClient returns a Client with http.DefaultClient's transport and
// DefaultCallTimeout.
func NewClient() *Client { return &Client{HTTP: &http.Client{}, Timeout: DefaultCallTimeout} }

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

type callRequest struct {
	CallID string                `json:"call_id,omitempty"`
	Inputs map[string]lang.Value `json:"inputs"`
}

type callResponse struct {
	Outputs map[string]json.RawMessage `json:"outputs"`
	Error   *struct {
		Message string `json:"message"`
	} `json:"error"`
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
// plain JSON and returns its outputs. A book's own error is *BookError; any
// other failure is *CallError.
func (c *Client) Call(ctx context.Context, endpoint, procedureID, callID string, inputs map[string]lang.Value) (map[string]lang.Value, error) {
	fail := func(err error) error { return &CallError{Procedure: procedureID, Err: err} }
	u, err := CallURL(endpoint, procedureID)
	if err != nil {
		return nil, fail(fmt.Errorf("endpoint %q %w", endpoint, err))
	}
	if inputs == nil {
		inputs = map[string]lang.Value{}
	}
	body, err := json.Marshal(callRequest{CallID: callID, Inputs: inputs})
	if err != nil {
		return nil, fail(fmt.Errorf("encoding inputs: %w", err))
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
	if callID != "" {
		req.Header.Set("Idempotency-Key", callID)
	}
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
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
