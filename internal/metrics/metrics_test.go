package metrics_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/proserun/prose/internal/metrics"
)

// The automation label names the first MaxAutomations automations; the
// others count under "other", so the series stay bounded.
func TestAutomationLabelIsCapped(t *testing.T) {
	reg := prometheus.NewRegistry()
	w, err := metrics.New(reg, metrics.Options{MaxAutomations: 3, PendingRuns: func(context.Context) (int64, error) { return 7, nil }})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		w.RunStarted(fmt.Sprintf("a%d", i))
		w.RunEnded(fmt.Sprintf("a%d", i), metrics.OutcomeCompleted, time.Second)
	}
	w.LeaseTakeovers(2)
	if n := testutil.CollectAndCount(reg, "prose_runs_started_total"); n != 4 {
		t.Errorf("%d series of prose_runs_started_total, want 3 automations and other", n)
	}
	if got := testutil.ToFloat64(w2c(t, reg, "prose_lease_takeovers_total")); got != 2 {
		t.Errorf("takeovers %v", got)
	}
	if got := testutil.ToFloat64(w2c(t, reg, "prose_runs_pending")); got != 7 {
		t.Errorf("pending %v", got)
	}
}

// w2c finds the collector of a metric in reg (via a gatherer filter).
func w2c(t *testing.T, reg *prometheus.Registry, name string) prometheus.Collector {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			v := mf.GetMetric()[0]
			g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "x"})
			switch {
			case v.Counter != nil:
				g.Set(v.Counter.GetValue())
			case v.Gauge != nil:
				g.Set(v.Gauge.GetValue())
			}
			return g
		}
	}
	t.Fatalf("no %s", name)
	return nil
}

// A nil *Work counts nothing and does not panic (the engine without
// metrics).
func TestNilWork(t *testing.T) {
	var w *metrics.Work
	w.RunStarted("a")
	w.RunEnded("a", metrics.OutcomeFailed, time.Second)
	w.QueueWait(time.Second)
	w.LeaseTakeovers(1)
	w.ExceptionRaised("k")
	w.ExceptionResolved("k", "users/u")
	w.BookCall("b", time.Second, nil)
}

// prose_exceptions_pending names the MaxAutomations automations with the
// most pending exceptions; the others count as "other" in their workspace,
// and past MaxAutomations workspaces in workspace "other". The sum is kept.
func TestPendingExceptionsAreCapped(t *testing.T) {
	rows := []metrics.PendingCount{
		{Workspace: "w1", Automation: "big", Group: "missing_values", N: 9},
		{Workspace: "w1", Automation: "big", Group: "", N: 1},
		{Workspace: "w1", Automation: "small", Group: "missing_values", N: 1},
		{Workspace: "w2", Automation: "mid", Group: "missing_values", N: 5},
		{Workspace: "w2", Automation: "tiny", Group: "missing_values", N: 2},
		{Workspace: "w3", Automation: "lone", Group: "missing_values", N: 1},
	}
	reg := prometheus.NewRegistry()
	if _, err := metrics.New(reg, metrics.Options{MaxAutomations: 2,
		PendingExceptions: func(context.Context) ([]metrics.PendingCount, error) { return rows, nil }}); err != nil {
		t.Fatal(err)
	}
	want := `
# HELP prose_exceptions_pending Exceptions pending now (awaiting guidance), in the database (all replicas), by workspace, automation (id; the --metrics-automations automations with the most, the others as "other") and group.
# TYPE prose_exceptions_pending gauge
prose_exceptions_pending{automation="big",group="missing_values",workspace="w1"} 9
prose_exceptions_pending{automation="big",group="other",workspace="w1"} 1
prose_exceptions_pending{automation="mid",group="missing_values",workspace="w2"} 5
prose_exceptions_pending{automation="other",group="missing_values",workspace="w1"} 1
prose_exceptions_pending{automation="other",group="missing_values",workspace="w2"} 2
prose_exceptions_pending{automation="other",group="missing_values",workspace="other"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "prose_exceptions_pending"); err != nil {
		t.Error(err)
	}
}

// A store that does not answer leaves the gauge without samples, and the
// scrape without an error.
func TestPendingExceptionsReadError(t *testing.T) {
	reg := prometheus.NewRegistry()
	if _, err := metrics.New(reg, metrics.Options{
		PendingExceptions: func(context.Context) ([]metrics.PendingCount, error) { return nil, context.DeadlineExceeded }}); err != nil {
		t.Fatal(err)
	}
	if n, err := testutil.GatherAndCount(reg, "prose_exceptions_pending"); err != nil || n != 0 {
		t.Errorf("gauge of an unreadable store: %d samples, %v", n, err)
	}
}
