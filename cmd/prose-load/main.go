// Command prose-load is a load generator for prose serve: it creates an
// automation of ten statements, starts runs of it over HTTP/JSON from
// several connections, waits until they all ended and reports the invoke
// rate, the completed runs per second and the create→completed latency
// (p50, p90, p99, max; from the runs' create_time and state update_time,
// both stamped by the server), and each invoke's round trip as the client
// saw it.
//
//	prose init --json --data /tmp/p > /tmp/p.json
//	prose serve --data /tmp/p --addr 127.0.0.1:8080 &
//	prose-load --addr 127.0.0.1:8080 --init /tmp/p.json --runs 20000 --concurrency 32
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/proserun/prose/internal/loadprog"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8080", "host:port of prose serve")
	initFile := flag.String("init", "", "the output of `prose init --json` (api_key and workspace)")
	key := flag.String("key", "", "API key (overrides --init)")
	workspace := flag.String("workspace", "", "workspace resource name organizations/{o}/workspaces/{w} (overrides --init)")
	runs := flag.Int("runs", 10000, "runs to start")
	conc := flag.Int("concurrency", 32, "concurrent invoke requests")
	rate := flag.Float64("rate", 0, "invokes per second (0: as fast as the server takes them)")
	timeout := flag.Duration("timeout", 5*time.Minute, "give up after this long")
	guided := flag.Bool("guided", false, "add a statement that needs a fact nobody gives (`the output total is the grand total`) and an approved guide entry that provides it: every run raises an exception the entry resolves")
	say := flag.Int("say", 0, "lines the automation says (say statements before its ten statements)")
	printProgram := flag.Bool("print-automation", false, "print the automation the load runs (with --say and --guided) and exit")
	flag.Parse()
	src := strings.Repeat("say \"a line of the run\"\n", *say) + loadprog.Short
	if *guided {
		src += "the output total is the grand total\n"
	}
	if *printProgram {
		fmt.Print(src)
		return
	}
	if *initFile != "" {
		readInit(*initFile, key, workspace)
	}
	if *key == "" || *workspace == "" {
		fatal(errors.New("give --init or --key and --workspace"))
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	c := &client{base: "http://" + *addr, key: *key, hc: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: *conc + 4}}}

	var a struct{ Name string }
	if err := c.do(ctx, "POST", "/api/v1/"+*workspace+"/automations", map[string]any{"display_name": "load", "english_code": src}, &a); err != nil {
		fatal(err)
	}
	auto := "/api/v1/" + a.Name
	prefix := a.Name[strings.LastIndexByte(a.Name, '/')+1:] // request ids are unique per organization
	seed := ""
	if *guided {
		seed = teach(ctx, c, *workspace, auto, prefix)
	}
	start := time.Now()
	failed, rts := invokeAll(ctx, c, auto, prefix, *runs, *conc, *rate)
	invoked := time.Since(start)
	waitFinished(ctx, c, auto)
	wall := time.Since(start)
	t := readRuns(ctx, c, auto, seed)
	slices.Sort(t.lat)
	slices.Sort(rts)
	span := t.last.Sub(t.first)
	fmt.Printf("runs: %d started (%d invoke errors), %d completed, %d not completed\n", *runs, failed, t.completed, t.other)
	fmt.Printf("invoke: %.0f runs/s over %s (%d connections)\n", float64(*runs)/invoked.Seconds(), invoked.Round(time.Millisecond), *conc)
	fmt.Printf("completed: %.0f runs/s (first create → last completion %s; wall %s)\n", float64(t.completed)/span.Seconds(), span.Round(time.Millisecond), wall.Round(time.Millisecond))
	fmt.Printf("latency create→completed: p50 %s  p90 %s  p99 %s  max %s\n",
		pctOf(t.lat, 0.50), pctOf(t.lat, 0.90), pctOf(t.lat, 0.99), pctOf(t.lat, 1))
	// A run may complete before its invoke is answered (executed at its
	// creation): the client's round trip bounds when it learns of it.
	fmt.Printf("invoke round trip (client): p50 %s  p90 %s  p99 %s  max %s\n",
		pctOf(rts, 0.50), pctOf(rts, 0.90), pctOf(rts, 0.99), pctOf(rts, 1))
}

// readInit sets key and workspace, where not given, from the output of
// `prose init --json`.
func readInit(initFile string, key, workspace *string) {
	data, err := os.ReadFile(initFile) //nolint:gosec // the file the operator names on the command line
	if err != nil {
		fatal(err)
	}
	var ini struct {
		APIKey    string `json:"api_key"`
		Workspace string `json:"workspace"`
	}
	if err := json.Unmarshal(data, &ini); err != nil {
		fatal(fmt.Errorf("%s: %w", initFile, err))
	}
	if *key == "" {
		*key = ini.APIKey
	}
	if *workspace == "" {
		*workspace = ini.Workspace
	}
}

// invokeAll invokes the automation runs times from conc clients (at rate
// a second, if not 0) and returns the invokes that failed and each
// invoke's round trip, as this client saw it.
func invokeAll(ctx context.Context, c *client, auto, prefix string, runs, conc int, rate float64) (failed int64, rts []time.Duration) {
	var next, nfailed atomic.Int64
	var tick <-chan time.Time
	if rate > 0 {
		t := time.NewTicker(time.Duration(float64(time.Second) / rate))
		defer t.Stop()
		tick = t.C
	}
	var wg sync.WaitGroup
	var rtMu sync.Mutex
	for range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1)
				if i > int64(runs) {
					return
				}
				if tick != nil {
					<-tick
				}
				t0 := time.Now()
				err := c.do(ctx, "POST", auto+":invoke", map[string]any{"stage": "AUTOMATION_STAGE_DRAFT", "request_id": fmt.Sprintf("load-%s-%d", prefix, i)}, nil)
				rt := time.Since(t0)
				rtMu.Lock()
				rts = append(rts, rt)
				rtMu.Unlock()
				if err != nil {
					if nfailed.Add(1) <= 5 {
						fmt.Fprintln(os.Stderr, "invoke:", err)
					}
				}
			}
		}()
	}
	wg.Wait()
	return nfailed.Load(), rts
}

// waitFinished waits until no run of the automation is left unfinished.
func waitFinished(ctx context.Context, c *client, auto string) {
	for {
		var page struct {
			Runs []json.RawMessage `json:"runs"`
		}
		q := url.Values{"page_size": {"1"}, "filter": {`state != "completed" AND state != "failed"`}}
		if err := c.do(ctx, "GET", auto+"/runs?"+q.Encode(), nil, &page); err != nil {
			fatal(err)
		}
		if len(page.Runs) == 0 {
			return
		}
		select {
		case <-ctx.Done():
			fatal(ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// runTimes are the runs of a load: each completed run's latency from its
// creation to its completion, the first creation and the last completion.
type runTimes struct {
	lat              []time.Duration
	first, last      time.Time
	completed, other int
}

// readRuns reads every run's create and completion times (but the run
// seed, the one the guide entry was taught on).
func readRuns(ctx context.Context, c *client, auto, seed string) runTimes {
	var t runTimes
	token := ""
	for {
		var page struct {
			Runs []struct {
				Name       string    `json:"name"`
				CreateTime time.Time `json:"create_time"`
				State      struct {
					UpdateTime time.Time       `json:"update_time"`
					Completed  json.RawMessage `json:"completed"`
				} `json:"state"`
			} `json:"runs"`
			NextPageToken string `json:"next_page_token"`
		}
		q := url.Values{"page_size": {"1000"}}
		if token != "" {
			q.Set("page_token", token)
		}
		if err := c.do(ctx, "GET", auto+"/runs?"+q.Encode(), nil, &page); err != nil {
			fatal(err)
		}
		for _, r := range page.Runs {
			if seed != "" && strings.HasSuffix(r.Name, "/runs/"+seed) {
				continue
			}
			if r.State.Completed == nil {
				t.other++
				continue
			}
			t.completed++
			t.lat = append(t.lat, r.State.UpdateTime.Sub(r.CreateTime))
			if t.first.IsZero() || r.CreateTime.Before(t.first) {
				t.first = r.CreateTime
			}
			if r.State.UpdateTime.After(t.last) {
				t.last = r.State.UpdateTime
			}
		}
		if token = page.NextPageToken; token == "" {
			return t
		}
	}
}

// pctOf is the p-th quantile of the sorted xs.
func pctOf(xs []time.Duration, p float64) time.Duration {
	if len(xs) == 0 {
		return 0
	}
	return xs[min(len(xs)-1, int(p*float64(len(xs))))].Round(time.Microsecond)
}

// teach runs the automation once, resolves the exception its run raises
// with "remember", approves the guide entry made, and returns the run's id.
func teach(ctx context.Context, c *client, workspace, auto, prefix string) string {
	var inv struct {
		RunID string `json:"run_id"`
	}
	if err := c.do(ctx, "POST", auto+":invoke", map[string]any{"stage": "AUTOMATION_STAGE_DRAFT", "request_id": "seed-" + prefix}, &inv); err != nil {
		fatal(err)
	}
	var x string
	for x == "" {
		var page struct {
			Exceptions []struct {
				Name string `json:"name"`
			} `json:"exceptions"`
		}
		q := url.Values{"filter": {`state = PENDING AND run = "` + inv.RunID + `"`}}
		if err := c.do(ctx, "GET", "/api/v1/"+workspace+"/exceptions?"+q.Encode(), nil, &page); err != nil {
			fatal(err)
		}
		if len(page.Exceptions) > 0 {
			x = page.Exceptions[0].Name
			break
		}
		select {
		case <-ctx.Done():
			fatal(ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
	var res struct {
		Extra map[string]string `json:"extra"`
	}
	body := map[string]any{"remember": true, "provide_values": map[string]any{"values": map[string]any{"the grand total": map[string]any{"number": map[string]any{"lo": 42}}}}}
	if err := c.do(ctx, "POST", "/api/v1/"+x+":resolve", body, &res); err != nil {
		fatal(err)
	}
	entry := res.Extra["remembered_guide_entry"]
	if err := c.do(ctx, "POST", "/api/v1/"+entry+":approve", map[string]any{}, nil); err != nil {
		fatal(err)
	}
	fmt.Println("guide entry:", entry)
	return inv.RunID
}

type client struct {
	base, key string
	hc        *http.Client
}

func (c *client) do(ctx context.Context, method, path string, body, out any) error {
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
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
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
		return fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, strings.TrimSpace(string(data)))
	}
	if out != nil {
		return json.Unmarshal(data, out)
	}
	return nil
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "prose-load:", err)
	os.Exit(1)
}
