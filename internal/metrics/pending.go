package metrics

import (
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// PendingCount is how many exceptions of one automation and group are
// pending now (Options.PendingExceptions).
type PendingCount struct {
	// Workspace is the workspace's resource name
	// (organizations/{o}/workspaces/{w}); Automation the automation's id;
	// Group the exception's group.
	Workspace, Automation, Group string
	N                            int64
}

// pendingExceptions is prose_exceptions_pending: a gauge of the database's
// state read at each scrape, so that every replica of one database reports
// the same values.
type pendingExceptions struct {
	desc *prometheus.Desc
	read func(ctx context.Context) ([]PendingCount, error)
	max  int
}

func newPendingExceptions(read func(ctx context.Context) ([]PendingCount, error), max int) *pendingExceptions {
	return &pendingExceptions{
		desc: prometheus.NewDesc("prose_exceptions_pending",
			"Exceptions pending now (awaiting guidance), in the database (all replicas), by workspace, automation (id; the --metrics-automations automations with the most, the others as \"other\") and group.",
			[]string{"workspace", "automation", "group"}, nil),
		read: read,
		max:  max,
	}
}

func (p *pendingExceptions) Describe(ch chan<- *prometheus.Desc) { ch <- p.desc }

// Collect reads the counts (with a 2s timeout). When the database does not
// answer the gauge has no samples in that scrape: a failed read must not
// fail the whole scrape, nor read as zero.
func (p *pendingExceptions) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	rows, err := p.read(ctx)
	if err != nil {
		return
	}
	for _, c := range capPending(rows, p.max) {
		ch <- prometheus.MustNewConstMetric(p.desc, prometheus.GaugeValue, float64(c.N), c.Workspace, c.Automation, c.Group)
	}
}

// capPending bounds the label sets: the max automations with the most
// pending exceptions keep their labels; the others count under automation
// "other" of their workspace, and of the workspaces, the max with the most
// pending keep their label, the others count under workspace "other". So
// there are at most (2·max + 1) series per group.
func capPending(rows []PendingCount, max int) []PendingCount {
	type key struct{ ws, a string }
	perAuto, perWS := map[key]int64{}, map[string]int64{}
	for _, r := range rows {
		perAuto[key{r.Workspace, r.Automation}] += r.N
		perWS[r.Workspace] += r.N
	}
	keptA := topKeys(perAuto, max, func(a, b key) int { return cmp.Or(cmp.Compare(a.ws, b.ws), cmp.Compare(a.a, b.a)) })
	keptW := topKeys(perWS, max, cmp.Compare[string])
	sums := map[PendingCount]int64{}
	for _, r := range rows {
		k := PendingCount{Workspace: r.Workspace, Automation: r.Automation, Group: kindLabel(r.Group)}
		if !keptA[key{r.Workspace, r.Automation}] {
			k.Automation = Other
			if !keptW[r.Workspace] {
				k.Workspace = Other
			}
		}
		sums[k] += r.N
	}
	out := make([]PendingCount, 0, len(sums))
	for k, n := range sums {
		k.N = n
		out = append(out, k)
	}
	return out
}

// topKeys is the set of the max keys of m with the largest values (ties by
// order; max < 0: none).
func topKeys[K comparable](m map[K]int64, max int, order func(a, b K) int) map[K]bool {
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b K) int { return cmp.Or(cmp.Compare(m[b], m[a]), order(a, b)) })
	kept := map[K]bool{}
	for i := 0; i < max && i < len(keys); i++ {
		kept[keys[i]] = true
	}
	return kept
}
