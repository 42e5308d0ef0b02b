package server_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/proserun/prose/internal/books"
	"github.com/proserun/prose/server/app"
	"github.com/proserun/prose/server/testenv"
	"github.com/proserun/prose/store"
)

// scrape returns GET /metrics.
func (e *testEnv) scrape(t *testing.T) string {
	t.Helper()
	resp, err := http.Get(e.Srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/metrics: %d", resp.StatusCode)
	}
	return string(b)
}

// metricSum sums the samples of name whose labels include every k="v" of
// labels (pairs); found tells whether any matched.
func metricSum(body, name string, labels ...string) (sum float64, found bool) {
	for _, line := range strings.Split(body, "\n") {
		if !strings.HasPrefix(line, name+"{") && !strings.HasPrefix(line, name+" ") {
			continue
		}
		ok := true
		for i := 0; i+1 < len(labels); i += 2 {
			if !strings.Contains(line, labels[i]+`="`+labels[i+1]+`"`) {
				ok = false
			}
		}
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		if err == nil {
			sum += v
			found = true
		}
	}
	return sum, found
}

// The work's metrics move: runs started and ended by automation and
// outcome, their duration and queue wait, exceptions raised and resolved,
// book calls, the queue and the workers.
func TestWorkMetricsMove(t *testing.T) {
	book := testenv.NewHeldBook(t)
	close(book.Release)
	e := newTestEnvWith(t, func(c *app.Config) { c.InlineWindow = -1 })
	ws := books.Workspace{OrganizationID: e.Init.OrganizationID, WorkspaceID: e.Init.WorkspaceID}
	if _, err := books.NewRegistry(books.WithStore(app.NewDBBooks(e.Store))).Register(t.Context(), ws, testenv.StampBook(book.Srv.URL), ""); err != nil {
		t.Fatal(err)
	}
	before := e.scrape(t)
	for _, name := range []string{"prose_runs_pending", "prose_workers_busy", "prose_workers", "prose_lease_takeovers_total"} {
		if _, ok := metricSum(before, name); !ok {
			t.Errorf("/metrics lacks %s", name)
		}
	}

	done := e.MkAutomation(t, "done", greetCode, false)
	r1 := fmt.Sprint(e.API(t, "POST", e.AutomationsPath()+"/"+done.ID+":invoke",
		`{"stage":"AUTOMATION_STAGE_DRAFT","inputs":{"amount":{"number":{"lo":2}},"customer_name":{"text":"Ana"}}}`, 200)["run_id"])
	e.WaitRun(t, done.ID, r1, "completed")

	guided := e.MkAutomation(t, "guided", guidedCode, false)
	r2 := e.invokeAPI(t, guided.ID)
	m := e.WaitRun(t, guided.ID, r2, "awaiting_guidance")
	xid := store.LastSegment(fmt.Sprint(testenv.Field(m, "state.awaiting_guidance.exception")))
	e.API(t, "POST", e.WsPath()+"/exceptions/"+xid+":resolve", `{"provide_values":{"values":{"the invoice total":{"number":{"lo":3}}}}}`, 200)
	e.WaitRun(t, guided.ID, r2, "completed")

	stamped := e.MkAutomation(t, "stamped", "stamp \"t1\"\nthe output s is the above\n", false)
	r3 := e.invokeAPI(t, stamped.ID)
	e.WaitRun(t, stamped.ID, r3, "completed")

	// A run's outcome is counted just after it is committed, so the API
	// may show it completed a moment before: scrape until every metric
	// moved (or the harness's poll gives up).
	type want struct {
		name   string
		labels []string
		min    float64
	}
	wants := []want{
		{"prose_runs_started_total", []string{"automation", done.ID}, 1},
		{"prose_runs_started_total", []string{"automation", guided.ID}, 1},
		{"prose_runs_ended_total", []string{"automation", done.ID, "outcome", "completed"}, 1},
		{"prose_runs_ended_total", []string{"automation", guided.ID, "outcome", "awaiting_guidance"}, 1},
		{"prose_runs_ended_total", []string{"automation", guided.ID, "outcome", "completed"}, 1},
		{"prose_run_duration_seconds_count", []string{"outcome", "completed"}, 3},
		{"prose_run_queue_wait_seconds_count", nil, 3},
		{"prose_exceptions_raised_total", nil, 1},
		{"prose_exceptions_resolved_total", []string{"resolver", "user"}, 1},
		{"prose_book_call_duration_seconds_count", []string{"book", "test.stamps@1.0.0", "outcome", "ok"}, 1},
	}
	var after string
	e.Poll(t, func() (bool, bool, string) {
		after = e.scrape(t)
		for _, c := range wants {
			got, _ := metricSum(after, c.name, c.labels...)
			was, _ := metricSum(before, c.name, c.labels...)
			if got-was < c.min {
				return false, false, fmt.Sprintf("%s%v moved by %v, want at least %v:\n%s", c.name, c.labels, got-was, c.min, after)
			}
		}
		return true, false, ""
	})
	if t.Failed() {
		t.Logf("/metrics:\n%s", after)
	}
}

// Every prose_ metric the Grafana dashboard (docs/grafana-prose.json)
// queries is one the server exports.
func TestGrafanaDashboardUsesServedMetrics(t *testing.T) {
	raw, err := os.ReadFile("../docs/grafana-prose.json")
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Panels []struct {
			Title   string
			Targets []struct{ Expr string }
		}
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatalf("the dashboard is not JSON: %v", err)
	}
	e := newTestEnv(t)
	served := map[string]bool{}
	for _, n := range e.App.Work.Names() {
		served[n] = true
	}
	re := regexp.MustCompile(`prose_[a-z_]+`)
	n := 0
	for _, p := range d.Panels {
		for _, tg := range p.Targets {
			for _, name := range re.FindAllString(tg.Expr, -1) {
				n++
				if !served[strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(name, "_bucket"), "_count"), "_sum")] {
					t.Errorf("panel %q queries %s, which /metrics does not export", p.Title, name)
				}
			}
		}
	}
	if n < 10 {
		t.Errorf("the dashboard queries %d prose_ metrics", n)
	}
}
