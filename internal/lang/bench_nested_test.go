//go:build unix

package lang_test

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/proserun/prose/internal/lang"
)

// The nested loops of issue 29's speed goal: a 1,000-item list gone
// through inside a loop over it, so 1,000,000 runs of the inner body,
// against testdata/bench/nested_decimal.py (the same work with Python's
// Decimal). ns/inner is the wall time of one run of the inner body,
// cpu-ns/inner its CPU time (user and system, as Python's process_time
// counts it): on a shared machine only the latter compares.
var nestedPrograms = []struct {
	name, src, output, want string
}{
	{"Add1", `the counter is 0
process each i in the items as follows
  process each j in the items as follows
    add 1 to the counter
the output is the counter
`, "output", "1000000"},
	{"Expression", `the total is 0
process each i in the items as follows
  process each j in the items as follows
    the total is the total + the j * 2 - 1
the output is the total
`, "output", "1000000000"},
	{"CallAndField", `to double a value
  the result is the value * 2

the row's price is 1.50
the total is 0
process each i in the items as follows
  process each j in the items as follows
    double the row's price
    add the above to the total
the output is the total
`, "output", "3000000.00"},
}

func BenchmarkNested(b *testing.B) {
	items := make([]lang.Value, 1000)
	for i := range items {
		items[i] = lang.Int(int64(i + 1))
	}
	for _, np := range nestedPrograms {
		b.Run(np.name, func(b *testing.B) {
			prog, err := lang.Parse(np.src)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			cpu0 := cpuTime()
			start := time.Now()
			for b.Loop() {
				res := lang.Start(context.Background(), prog, map[string]lang.Value{"items": lang.ListValue(items...)}, lang.Options{})
				if res.Status != lang.Completed {
					b.Fatal(res.Status, res.Exception)
				}
				if got := res.Outputs[np.output].String(); got != np.want {
					b.Fatalf("output %s, want %s", got, np.want)
				}
			}
			b.ReportMetric(float64(time.Since(start).Nanoseconds())/float64(b.N)/1e6, "ns/inner")
			b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/float64(b.N)/1e6, "cpu-ns/inner")
		})
	}
}

// cpuTime is the CPU time the process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
