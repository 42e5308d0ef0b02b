package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protojson"

	bookv1 "github.com/proserun/prose/gen/prose/book/v1"
	"github.com/proserun/prose/internal/testtime"
	"github.com/proserun/prose/server/app"
)

// proseInit runs `prose init --json` on a store (--data DIR or --database URL).
func proseInit(t *testing.T, bin string, storeArgs ...string) app.InitResult {
	t.Helper()
	out, err := exec.Command(bin, append([]string{"init", "--json"}, storeArgs...)...).Output()
	if err != nil {
		t.Fatalf("prose init: %v", err)
	}
	var r app.InitResult
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("prose init output %q: %v", out, err)
	}
	return r
}

// proseProc is a `prose serve` child process.
type proseProc struct {
	cmd  *exec.Cmd
	addr string // host:port it serves on
	// grpcAddr is the gRPC-only port's (--grpc-addr), logged before addr.
	grpcAddr string
	done     chan struct{}

	mu   sync.Mutex
	tail []string // its last log lines
}

// startProse starts `prose serve --addr 127.0.0.1:0 args…` and waits (at most
// until deadline) for it to log the address it listens on. The binary is
// built beforehand (proseBinary): the deadline is the server's alone. The
// tests' books listen on loopback: the server may reach private networks.
func startProse(t *testing.T, bin string, deadline time.Time, args ...string) *proseProc {
	t.Helper()
	// The address is read from the "serving" line, logged at info level.
	cmd := exec.Command(bin, append([]string{"serve", "--addr", "127.0.0.1:0", "--log-level", "info", "--allow-private-networks"}, args...)...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &proseProc{cmd: cmd, done: make(chan struct{})}
	addrCh := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			var m struct{ Msg, Addr string }
			if json.Unmarshal([]byte(line), &m) == nil && m.Msg == "serving gRPC only" {
				p.grpcAddr = m.Addr // read after addr arrives on addrCh
			}
			if json.Unmarshal([]byte(line), &m) == nil && m.Msg == "serving" && m.Addr != "" {
				select {
				case addrCh <- m.Addr:
				default:
				}
			}
			p.mu.Lock()
			if len(p.tail) == 40 {
				p.tail = p.tail[1:]
			}
			p.tail = append(p.tail, line)
			p.mu.Unlock()
		}
		_ = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() { p.kill() })
	select {
	case p.addr = <-addrCh:
	case <-p.done:
		t.Fatalf("prose serve exited:\n%s", p.logTail())
	case <-time.After(time.Until(deadline)):
		t.Fatalf("prose serve did not start in time:\n%s", p.logTail())
	}
	return p
}

// kill sends SIGKILL and waits for the process to be gone.
func (p *proseProc) kill() {
	_ = p.cmd.Process.Kill()
	<-p.done
}

func (p *proseProc) logTail() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.tail, "\n")
}

// apiClient calls the HTTP/JSON API with an API key.
type apiClient struct {
	base string
	key  string
	hc   *http.Client
}

func newAPIClient(addr, key string) *apiClient {
	return &apiClient{base: "http://" + addr, key: key, hc: &http.Client{Timeout: testtime.Limit(20 * time.Second)}}
}

// do sends body (JSON) and decodes the answer into out; a non-2xx answer is
// an error.
func (c *apiClient) do(ctx context.Context, method, path string, body, out any) error {
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, r)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+c.key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, data)
	}
	if out != nil {
		return json.Unmarshal(data, out)
	}
	return nil
}

// createAutomation creates an automation with code in the workspace (a
// resource name) and returns its id.
func (c *apiClient) createAutomation(ctx context.Context, workspace, code string) (string, error) {
	var a struct{ Name string }
	if err := c.do(ctx, "POST", "/api/v1/"+workspace+"/automations", map[string]any{"display_name": "crash test", "english_code": code}, &a); err != nil {
		return "", err
	}
	i := strings.LastIndexByte(a.Name, '/')
	if i < 0 {
		return "", fmt.Errorf("automation name %q", a.Name)
	}
	return a.Name[i+1:], nil
}

// invoke starts a run of the automation's draft with text inputs; requestID
// makes it idempotent.
func (c *apiClient) invoke(ctx context.Context, workspace, automation, requestID string, inputs map[string]string) (string, error) {
	in := map[string]any{}
	for k, v := range inputs {
		in[k] = map[string]string{"text": v}
	}
	var resp struct {
		RunID  string `json:"run_id"`
		RunID2 string `json:"runId"`
	}
	err := c.do(ctx, "POST", "/api/v1/"+workspace+"/automations/"+automation+":invoke",
		map[string]any{"stage": "AUTOMATION_STAGE_DRAFT", "inputs": in, "request_id": requestID}, &resp)
	if resp.RunID == "" {
		resp.RunID = resp.RunID2
	}
	return resp.RunID, err
}

// writeBookFile writes a --books file registering book in workspace.
func writeBookFile(t *testing.T, workspace string, b *bookv1.Book) string {
	t.Helper()
	raw, err := protojson.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	data, err := json.Marshal([]map[string]any{{"workspace": workspace, "book": json.RawMessage(raw)}})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "books.json")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// bookCall is one call the counting book received.
type bookCall struct {
	replica int // which server made it (the endpoint path /r{replica})
	phase   int // 1: before the victim was killed; 2: after
	ticket  string
	held    bool // held unanswered until the victim was dead
}

// countingBook is an external book (protocol v1) that records every call
// by its call id (the Idempotency-Key), answers a repeated call id with its
// first answer, and can hold the calls of one replica unanswered while the
// test kills it.
type countingBook struct {
	srv *httptest.Server

	mu        sync.Mutex
	calls     map[string][]bookCall // by call id
	answers   map[string]string
	total     int
	phase     int
	gate      chan struct{} // calls wait for it to be closed
	victim    int           // the replica whose calls are held after killAt
	killAt    int           // the total at which the kill is asked for
	killNow   chan struct{} // closed when the first victim call past killAt is held
	killAsked bool
	dead      chan struct{} // closed when the victim is gone
	badCalls  []string
}

func newCountingBook(t *testing.T, killAt int) *countingBook {
	b := &countingBook{
		calls: map[string][]bookCall{}, answers: map[string]string{}, phase: 1,
		gate: make(chan struct{}), killAt: killAt, killNow: make(chan struct{}), dead: make(chan struct{}),
	}
	b.srv = httptest.NewServer(http.HandlerFunc(b.serve))
	t.Cleanup(b.srv.Close)
	return b
}

// endpoint is the book's endpoint for a replica.
func (b *countingBook) endpoint(replica int) string { return fmt.Sprintf("%s/r%d", b.srv.URL, replica) }

func (b *countingBook) serve(w http.ResponseWriter, r *http.Request) {
	var replica int
	if _, err := fmt.Sscanf(r.URL.Path, "/r%d/procedures/stamp:call", &replica); err != nil {
		http.Error(w, "no such procedure", http.StatusNotFound)
		return
	}
	var req struct {
		CallID string `json:"call_id"`
		Inputs struct {
			Ticket string `json:"ticket"`
		} `json:"inputs"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	b.mu.Lock()
	if req.CallID == "" || r.Header.Get("Idempotency-Key") != req.CallID {
		b.badCalls = append(b.badCalls, fmt.Sprintf("call id %q, Idempotency-Key %q", req.CallID, r.Header.Get("Idempotency-Key")))
	}
	b.total++
	c := bookCall{replica: replica, phase: b.phase, ticket: req.Inputs.Ticket}
	c.held = b.phase == 1 && b.total >= b.killAt && replica == b.victim
	if c.held && !b.killAsked {
		// The kill is asked for once a call of the victim is held, so that
		// at least one call is certainly in flight when it dies (with two
		// replicas, the call reaching killAt may be the survivor's).
		b.killAsked = true
		close(b.killNow)
	}
	b.calls[req.CallID] = append(b.calls[req.CallID], c)
	gate, dead := b.gate, b.dead
	b.mu.Unlock()

	if c.held {
		// The victim is being killed: this call is never answered.
		select {
		case <-dead:
		case <-r.Context().Done():
		}
		return
	}
	select {
	case <-gate:
	case <-r.Context().Done():
		return
	}
	b.mu.Lock()
	out, ok := b.answers[req.CallID]
	if !ok {
		out = "S:" + req.Inputs.Ticket
		b.answers[req.CallID] = out
	}
	b.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"outputs": map[string]string{"stamp": out}})
}

// open lets held-back calls through.
func (b *countingBook) open() {
	b.mu.Lock()
	defer b.mu.Unlock()
	select {
	case <-b.gate:
	default:
		close(b.gate)
	}
}

// closeGate makes new calls wait until open.
func (b *countingBook) closeGate() {
	b.mu.Lock()
	defer b.mu.Unlock()
	select {
	case <-b.gate:
		b.gate = make(chan struct{})
	default:
	}
}

// victimDead starts phase 2: calls from now on are after the kill.
func (b *countingBook) victimDead() {
	b.mu.Lock()
	defer b.mu.Unlock()
	close(b.dead)
	b.phase = 2
}

func (b *countingBook) snapshot() (map[string][]bookCall, []string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make(map[string][]bookCall, len(b.calls))
	for k, v := range b.calls {
		out[k] = append([]bookCall(nil), v...)
	}
	return out, append([]string(nil), b.badCalls...)
}
