package lang_test

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/proserun/prose/internal/lang"
	"github.com/proserun/prose/internal/loadprog"
)

const sumProgram = `the total is 0
process each amount as follows
  add the amount to the total
the output total is the total
`

// amounts returns n decimals 0.01 … 1.00 with scale 2.
func amounts(n int) lang.Value {
	items := make([]lang.Value, n)
	for i := range items {
		k := i%100 + 1
		items[i] = lang.Num(lang.MustNumber(fmt.Sprintf("%d.%02d", k/100, k%100)))
	}
	return lang.ListValue(items...)
}

// BenchmarkSumLoop runs a loop that adds 1,000,000 decimals: one `add`
// statement per item. stmts/s counts the statements of the loop body.
func BenchmarkSumLoop(b *testing.B) {
	const n = 1_000_000
	prog, err := lang.Parse(sumProgram)
	if err != nil {
		b.Fatal(err)
	}
	in := map[string]lang.Value{"amounts": amounts(n)}
	var ms0, ms1 runtime.MemStats
	b.ReportAllocs()
	b.ResetTimer()
	runtime.ReadMemStats(&ms0)
	start := time.Now()
	for i := 0; i < b.N; i++ {
		res := lang.Start(context.Background(), prog, in, lang.Options{})
		if res.Status != lang.Completed {
			b.Fatal(res.Status)
		}
		if got := res.Outputs["output total"].AsNumber().String(); got != "505000.00" {
			b.Fatal(got)
		}
	}
	elapsed := time.Since(start)
	runtime.ReadMemStats(&ms1)
	stmts := float64(b.N) * n
	b.ReportMetric(stmts/elapsed.Seconds(), "stmts/s")
	b.ReportMetric(float64(elapsed.Nanoseconds())/stmts, "ns/stmt")
	b.ReportMetric(float64(ms1.Mallocs-ms0.Mallocs)/stmts, "allocs/stmt")
}

// BenchmarkStatements runs a mix of simple statements in a loop body:
// an assignment with arithmetic, a comparison in an if, and an add.
func BenchmarkStatements(b *testing.B) {
	const n = 200_000
	prog, err := lang.Parse(`the total is 0
the count is 0
process each amount as follows
  the doubled is the amount * 2
  if the doubled is greater than 1 then
    add 1 to the count
  add the doubled to the total
the output total is the total
the output count is the count
`)
	if err != nil {
		b.Fatal(err)
	}
	in := map[string]lang.Value{"amounts": amounts(n)}
	var ms0, ms1 runtime.MemStats
	b.ReportAllocs()
	b.ResetTimer()
	runtime.ReadMemStats(&ms0)
	start := time.Now()
	for i := 0; i < b.N; i++ {
		res := lang.Start(context.Background(), prog, in, lang.Options{})
		if res.Status != lang.Completed {
			b.Fatal(res.Status)
		}
	}
	elapsed := time.Since(start)
	runtime.ReadMemStats(&ms1)
	// per item: assignment, if, add (and add 1 for half of the items)
	stmts := float64(b.N) * n * 3.5
	b.ReportMetric(stmts/elapsed.Seconds(), "stmts/s")
	b.ReportMetric(float64(ms1.Mallocs-ms0.Mallocs)/stmts, "allocs/stmt")
}

// program10k is a 10,000-line program using most statement forms.
func program10k() string {
	var sb strings.Builder
	sb.WriteString("to compute the tax of an amount\n  the result is the amount * 0.07\n\n")
	lines := 3
	for i := 0; lines < 10_000; i++ {
		fmt.Fprintf(&sb, "the value%d is (the base + %d.50) * 2 - 1 / 3\n", i, i)
		fmt.Fprintf(&sb, "if the value%d is greater than 100 and the flag is not empty then\n", i)
		fmt.Fprintf(&sb, "  add \"item %d\" to the items   # a comment\n", i)
		sb.WriteString("else\n")
		fmt.Fprintf(&sb, "  say \"small \" + the value%d in uppercase\n", i)
		fmt.Fprintf(&sb, "process each line in the invoice's lines as follows\n  add the line's amount to the total\n")
		fmt.Fprintf(&sb, "compute the tax of the value%d\n", i)
		fmt.Fprintf(&sb, "the output r%d is the sum of the amounts\n", i)
		lines += 9
	}
	return sb.String()
}

// BenchmarkParse10k parses a 10,000-line program.
func BenchmarkParse10k(b *testing.B) {
	src := program10k()
	b.SetBytes(int64(len(src)))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := lang.Parse(src); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkShortRun starts and completes a ten-statement run: what one run
// of the load generator costs the interpreter (allocations included).
func BenchmarkShortRun(b *testing.B) {
	prog, err := lang.Parse(loadprog.Short)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		res := lang.Start(context.Background(), prog, nil, lang.Options{})
		if res.Status != lang.Completed {
			b.Fatal(res.Status)
		}
		if got := res.Outputs["output result"].AsNumber().String(); got != "526" {
			b.Fatal(got)
		}
	}
}
