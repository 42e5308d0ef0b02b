package metrics_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/proserun/prose/metrics"
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
