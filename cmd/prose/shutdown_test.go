package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/proserun/prose/internal/names"
	"github.com/proserun/prose/internal/testtime"
	"github.com/proserun/prose/server/app"
	"github.com/proserun/prose/server/testenv"
	"github.com/proserun/prose/store"
)

// On SIGTERM, prose serve finishes a request in flight, lets the book call
// in flight complete, hands the run back to the queue (pending, unleased,
// its book call journaled) and exits 0; the next server continues the run
// without calling the book again for the journaled call.
func TestServeGracefulShutdown(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	ctx := context.Background()
	bin := proseBinary(t)
	deadline := testtime.Deadline(90 * time.Second)
	data := t.TempDir()
	ini := proseInit(t, bin, "--data", data)
	book := testenv.NewHeldBook(t)
	books := writeBookFile(t, ini.Workspace, testenv.StampBook(book.Srv.URL))
	// A lease far longer than the test: a run left leased would not be
	// continued in time.
	p := startProse(t, bin, deadline, "--data", data, "--books", books, "--lease", "10m", "--shutdown-timeout", "30s", "--inline-window", "-1ns")
	c := newAPIClient(p.addr, ini.APIKey)
	automation, err := c.createAutomation(ctx, ini.Workspace, "stamp the key + \"/1\"\nthe output a is the above\nstamp the key + \"/2\"\nthe output b is the above\n")
	if err != nil {
		t.Fatal(err)
	}
	runID, err := c.invoke(ctx, ini.Workspace, automation, "r1", map[string]string{"key": "k"})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-book.Held:
	case <-time.After(time.Until(deadline)):
		t.Fatalf("the book was not called:\n%s", p.logTail())
	}

	// A request in flight: the server is reading its body when SIGTERM
	// arrives. Its headers ask for 100 Continue, which the server sends when
	// the handler starts reading the body: the event the test waits for
	// (a fixed 200 ms could pass before a loaded server accepted the
	// connection, and the request then found the listener closed).
	conn, err := net.Dial("tcp", p.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := conn.SetDeadline(deadline); err != nil {
		t.Fatal(err)
	}
	body1, body2 := `{"display_name": "sent across a shutdown", `, `"english_code": "the output x is 1"}`
	if _, err := fmt.Fprintf(conn, "POST /api/v1/%s/automations HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\n"+
		"Content-Type: application/json\r\nContent-Length: %d\r\nExpect: 100-continue\r\n\r\n",
		ini.Workspace, p.addr, ini.APIKey, len(body1)+len(body2)); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(conn)
	cont, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("the headers of the request in flight: %v\n%s", err, p.logTail())
	}
	cont.Body.Close() // a 1xx answer has no body
	if cont.StatusCode != http.StatusContinue {
		t.Fatalf("the headers of the request in flight: %s, want 100 Continue\n%s", cont.Status, p.logTail())
	}
	if _, err := io.WriteString(conn, body1); err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	// The rest of the body is sent once the server is shutting down.
	testtime.Until(t, testtime.Wait, func() (bool, string) {
		return strings.Contains(p.logTail(), `"shutting down"`), "no 'shutting down' in the log:\n" + p.logTail()
	})
	if _, err := io.WriteString(conn, body2); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("the request in flight: %v\n%s", err, p.logTail())
	}
	answer, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("the request in flight: %d %s\n%s", resp.StatusCode, answer, p.logTail())
	}

	// The book call in flight completes; the run goes back to the queue.
	close(book.Release)
	select {
	case <-p.done:
	case <-time.After(time.Until(deadline)):
		t.Fatalf("prose serve did not exit after SIGTERM:\n%s", p.logTail())
	}
	if code := p.cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("exit code %d:\n%s", code, p.logTail())
	}
	if !strings.Contains(p.logTail(), "run handed back") {
		t.Errorf("no 'run handed back' in the log:\n%s", p.logTail())
	}
	org, ws, _ := names.ParseWorkspace(ini.Workspace)
	st, err := app.OpenStore(ctx, data, "")
	if err != nil {
		t.Fatal(err)
	}
	r, err := st.GetRun(ctx, org, ws, automation, runID)
	if err != nil {
		t.Fatal(err)
	}
	journal, err := st.ListJournal(ctx, r.ID)
	st.Close()
	if err != nil {
		t.Fatal(err)
	}
	if r.State != store.RunPending || r.LeaseOwner != "" || len(journal) != 1 {
		t.Fatalf("after the shutdown the run is %s leased to %q with %d journal entries; want pending, unleased, 1", r.State, r.LeaseOwner, len(journal))
	}

	// The next server continues it at once; "k/1" is not stamped again.
	p2 := startProse(t, bin, deadline, "--data", data, "--books", books)
	st, err = app.OpenStore(ctx, data, "")
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for {
		r, err := st.GetRun(ctx, org, ws, automation, runID)
		if err != nil {
			t.Fatal(err)
		}
		if r.State == store.RunCompleted {
			break
		}
		if r.State.Terminal() || time.Now().After(deadline) {
			t.Fatalf("the run is %s (%s):\n%s", r.State, r.Description, p2.logTail())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if calls := book.Calls(); calls["k/1"] != 1 || calls["k/2"] != 1 {
		t.Errorf("book calls %v, want each ticket once", calls)
	}
}

// heldByTicketBook answers `stamp a ticket (the stamp)` with "S:" and the ticket,
// holding the calls whose ticket has a gate until that gate is opened.
type heldByTicketBook struct {
	srv   *httptest.Server
	gates map[string]chan struct{} // by ticket prefix
	calls chan string              // every ticket, as its call arrives
}

func newHeldByTicketBook(t *testing.T, prefixes ...string) *heldByTicketBook {
	b := &heldByTicketBook{gates: map[string]chan struct{}{}, calls: make(chan string, 100)}
	for _, p := range prefixes {
		b.gates[p] = make(chan struct{})
	}
	b.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Inputs struct{ Ticket string } `json:"inputs"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		b.calls <- req.Inputs.Ticket
		for p, gate := range b.gates {
			if strings.HasPrefix(req.Inputs.Ticket, p) {
				select {
				case <-gate:
				case <-r.Context().Done():
					return
				}
			}
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"outputs": map[string]string{"stamp": "S:" + req.Inputs.Ticket}})
	}))
	t.Cleanup(func() {
		for _, g := range b.gates {
			select {
			case <-g:
			default:
				close(g)
			}
		}
		b.srv.Close()
	})
	return b
}

// waitCall waits for the book's call of a ticket with prefix and returns it.
func (b *heldByTicketBook) waitCall(t *testing.T, p *proseProc, deadline time.Time, prefix string) string {
	t.Helper()
	for {
		select {
		case ticket := <-b.calls:
			if strings.HasPrefix(ticket, prefix) {
				return ticket
			}
		case <-time.After(time.Until(deadline)):
			t.Fatalf("the book was not called with %s…:\n%s", prefix, p.logTail())
		}
	}
}

// On SIGTERM, the runs a server claimed in a batch beyond its free workers
// (SQLite claims a whole batch while runs queue) and never started go back
// to the queue at once, in one write, not after their lease: the next
// server (or another replica) takes them straight away. The run in flight
// is handed back as before, after its book call.
func TestServeShutdownReleasesClaimedRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	ctx := context.Background()
	bin := proseBinary(t)
	deadline := testtime.Deadline(90 * time.Second)
	data := t.TempDir()
	ini := proseInit(t, bin, "--data", data)
	book := newHeldByTicketBook(t, "H", "R")
	books := writeBookFile(t, ini.Workspace, testenv.StampBook(book.srv.URL))
	// One worker; a lease far longer than the test (a run left leased
	// would not be taken over in time); no run executed at its creation;
	// no turns (a run held in a book call would give its worker up and
	// the claims would be fair, one run at a time).
	args := []string{"--data", data, "--books", books, "--lease", "10m", "--inline-window", "-1ns", "--time-slice", "-1ns", "--workers", "1"}
	p := startProse(t, bin, deadline, append(args, "--shutdown-timeout", "30s")...)
	c := newAPIClient(p.addr, ini.APIKey)
	automation, err := c.createAutomation(ctx, ini.Workspace, "stamp the key\nthe output a is the above\n")
	if err != nil {
		t.Fatal(err)
	}
	invoke := func(key string) string {
		t.Helper()
		id, err := c.invoke(ctx, ini.Workspace, automation, key, map[string]string{"key": key})
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	// H takes the only worker (its claim took all it asked for); the runs
	// invoked meanwhile queue.
	h := invoke("H")
	book.waitCall(t, p, deadline, "H")
	queued := []string{invoke("Q")}
	for i := range 6 {
		queued = append(queued, invoke(fmt.Sprintf("R%d", i)))
	}
	// H ends: the engine claims the whole queue in one batch; Q runs and
	// ends, R0 runs and is held, R1…R5 wait for the worker.
	close(book.gates["H"])
	book.waitCall(t, p, deadline, "R")
	org, ws, _ := names.ParseWorkspace(ini.Workspace)
	st, err := app.OpenStore(ctx, data, "")
	if err != nil {
		t.Fatal(err)
	}
	// Q's end is written after its worker is free (R0 may call the book
	// first), so wait for it before counting the claimed Rs.
	testtime.Until(t, testtime.Wait, func() (bool, string) {
		r, err := st.GetRun(ctx, org, ws, automation, queued[0])
		if err != nil {
			t.Fatal(err)
		}
		return r.State == store.RunCompleted, fmt.Sprintf("Q is %s, want completed\n%s", r.State, p.logTail())
	})
	executing := 0
	for _, id := range queued[1:] {
		r, err := st.GetRun(ctx, org, ws, automation, id)
		if err != nil {
			t.Fatal(err)
		}
		if r.State == store.RunExecuting {
			executing++
		}
	}
	st.Close()
	if executing != 6 {
		t.Fatalf("%d of the queued runs claimed before the shutdown, want 6 (R0 held, R1…R5 waiting for the worker)\n%s", executing, p.logTail())
	}

	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	// The runs waiting for the worker are handed back as soon as the
	// engine stops (R0 still holds the worker): only then does R0's book
	// call end (had it ended before, its worker would have gone to R1).
	testtime.Until(t, testtime.Wait, func() (bool, string) {
		return strings.Contains(p.logTail(), "claimed runs not started handed back"), "no 'claimed runs not started handed back' in the log:\n" + p.logTail()
	})
	// The run in flight finishes its book call and is handed back.
	close(book.gates["R"])
	select {
	case <-p.done:
	case <-time.After(time.Until(deadline)):
		t.Fatalf("prose serve did not exit after SIGTERM:\n%s", p.logTail())
	}
	if code := p.cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("exit code %d:\n%s", code, p.logTail())
	}
	if !strings.Contains(p.logTail(), "claimed runs not started handed back") {
		t.Errorf("no 'claimed runs not started handed back' in the log:\n%s", p.logTail())
	}
	st, err = app.OpenStore(ctx, data, "")
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for _, id := range queued[1:] {
		r, err := st.GetRun(ctx, org, ws, automation, id)
		if err != nil {
			t.Fatal(err)
		}
		if r.State != store.RunPending || r.LeaseOwner != "" {
			t.Errorf("after the shutdown run %s is %s leased to %q; want pending, unleased\n%s", id, r.State, r.LeaseOwner, p.logTail())
		}
	}

	// The next server takes them at once (their leases would last 10 min).
	p2 := startProse(t, bin, deadline, args...)
	for _, id := range append([]string{h}, queued...) {
		for {
			r, err := st.GetRun(ctx, org, ws, automation, id)
			if err != nil {
				t.Fatal(err)
			}
			if r.State == store.RunCompleted {
				break
			}
			if r.State.Terminal() || time.Now().After(deadline) {
				t.Fatalf("run %s is %s (%s):\n%s", id, r.State, r.Description, p2.logTail())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}
