package server_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/proserun/prose/internal/testtime"
	"github.com/proserun/prose/server/app"
	"github.com/proserun/prose/store"
	"github.com/proserun/prose/store/backend"
)

// cutProxy forwards TCP connections to target until cut: then it closes
// every connection and refuses new ones (the database away, as during a
// restart or a failover's switch) until restored on the same address.
type cutProxy struct {
	target string
	addr   string
	mu     sync.Mutex
	lis    net.Listener
	conns  map[net.Conn]bool
}

func newCutProxy(t *testing.T, target string) *cutProxy {
	p := &cutProxy{target: target, conns: map[net.Conn]bool{}}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p.addr = lis.Addr().String()
	p.serve(lis)
	t.Cleanup(p.cut)
	return p
}

func (p *cutProxy) serve(lis net.Listener) {
	p.mu.Lock()
	p.lis = lis
	p.mu.Unlock()
	go func() {
		for {
			c, err := lis.Accept()
			if err != nil {
				return
			}
			go p.pipe(c)
		}
	}()
}

func (p *cutProxy) pipe(c net.Conn) {
	up, err := net.Dial("tcp", p.target)
	if err != nil {
		c.Close()
		return
	}
	p.mu.Lock()
	p.conns[c], p.conns[up] = true, true
	p.mu.Unlock()
	go func() { _, _ = io.Copy(up, c); up.Close() }()
	_, _ = io.Copy(c, up)
	c.Close()
}

// cut closes the listener and every connection.
func (p *cutProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.lis != nil {
		p.lis.Close()
		p.lis = nil
	}
	for c := range p.conns {
		c.Close()
	}
	clear(p.conns)
}

// restore listens again on the same address.
func (p *cutProxy) restore(t *testing.T) {
	lis, err := net.Listen("tcp", p.addr)
	if err != nil {
		t.Fatalf("listen again on %s: %v", p.addr, err)
	}
	p.serve(lis)
}

// TestDatabaseAwayUnderLoad (issue 26): PostgreSQL goes away for five
// seconds (every connection cut, new ones refused, as in a restart) under a
// steady stream of invokes. No answer is a 500: the server rides through
// the first seconds (statements that never reached the database are sent
// again, about 3 s in all), a call it then cannot serve is 503 UNAVAILABLE
// with Retry-After, and /readyz says not-ready meanwhile; a client that
// retries with the same request_id gets every run created once, and every
// acknowledged run completes.
func TestDatabaseAwayUnderLoad(t *testing.T) {
	base := os.Getenv("PROSE_TEST_POSTGRES_URL")
	if base == "" {
		t.Skip("PROSE_TEST_POSTGRES_URL is not set: the database outage test needs PostgreSQL")
	}
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	proxy := newCutProxy(t, u.Host)
	u.Host = proxy.addr
	st, err := backend.Open(context.Background(), u.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	e := newTestEnvWith(t, func(c *app.Config) { c.Store = st })
	a := e.MkAutomation(t, "Steady", "the output x is 1\n", false)

	type answer struct {
		code       int
		retryAfter string
		run        string
	}
	invoke := func(req string) answer {
		body := `{"stage":"AUTOMATION_STAGE_DRAFT","request_id":"` + req + `"}`
		r, _ := http.NewRequest("POST", e.Srv.URL+e.AutomationsPath()+"/"+a.ID+":invoke", strings.NewReader(body))
		r.Header.Set("Authorization", "Bearer "+e.Init.APIKey)
		r.Header.Set("Content-Type", "application/json")
		resp, err := e.Srv.Client().Do(r)
		if err != nil {
			t.Error(err)
			return answer{}
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		run := ""
		if resp.StatusCode == 200 {
			if i := strings.Index(string(raw), `"run_id":"`); i >= 0 {
				run = strings.SplitN(string(raw)[i+10:], `"`, 2)[0]
			}
		}
		if resp.StatusCode >= 500 && resp.StatusCode != 503 {
			t.Errorf("invoke %s: %d %s", req, resp.StatusCode, raw)
		}
		return answer{resp.StatusCode, resp.Header.Get("Retry-After"), run}
	}

	stop := make(chan struct{})
	var mu sync.Mutex
	runs := map[string]string{} // request id → run id
	unavailable := 0
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				req := fmt.Sprintf("w%d-%d", w, i)
				for try := 0; ; try++ { // a client retrying a 503 with the same request_id
					ans := invoke(req)
					if ans.code == 503 {
						mu.Lock()
						unavailable++
						mu.Unlock()
						if ans.retryAfter == "" {
							t.Errorf("a 503 without Retry-After")
						}
						time.Sleep(100 * time.Millisecond)
						continue
					}
					if ans.code == 200 {
						mu.Lock()
						runs[req] = ans.run
						mu.Unlock()
					}
					break
				}
			}
		})
	}
	count := func() int { mu.Lock(); defer mu.Unlock(); return len(runs) }
	waitFor(t, "invokes before the outage", func() bool { return count() >= 20 })
	proxy.cut()
	readyDown := false
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if code, _, _ := e.DoHTTP(t, "GET", "/readyz", "", nil); code == 503 {
			readyDown = true
		}
		time.Sleep(100 * time.Millisecond)
	}
	proxy.restore(t)
	before := count()
	waitFor(t, "invokes after the outage", func() bool { return count() >= before+20 })
	close(stop)
	wg.Wait()
	if !readyDown {
		t.Error("/readyz never said not-ready while the database was away")
	}
	if unavailable == 0 {
		t.Error("no invoke was answered 503 in five seconds without the database")
	}
	t.Logf("%d runs acknowledged, %d answers 503 during the outage", len(runs), unavailable)
	seen := map[string]string{}
	for req, run := range runs {
		if other, dup := seen[run]; dup {
			t.Errorf("requests %s and %s made one run %s", req, other, run)
		}
		seen[run] = req
		e.WaitRun(t, a.ID, run, "completed")
	}
	stored, token := 0, ""
	for {
		page, err := e.Store.ListRuns(context.Background(), store.ListRunsRequest{OrganizationID: e.Init.OrganizationID,
			WorkspaceID: e.Init.WorkspaceID, AutomationID: a.ID, PageSize: 1000, PageToken: token})
		if err != nil {
			t.Fatal(err)
		}
		stored += len(page.Items)
		if token = page.NextPageToken; token == "" {
			break
		}
	}
	if stored != len(runs) {
		t.Errorf("%d runs stored, %d acknowledged: none lost, none doubled", stored, len(runs))
	}
}

// waitFor waits (at most a scaled minute) until cond holds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(testtime.Limit(time.Minute))
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited too long for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
