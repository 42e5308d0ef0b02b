package lang_test

import (
	"context"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/proserun/prose/internal/lang"
)

// numbers writes "1, 2, …, n" as a program writes a list.
func numbers(n int) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = strconv.Itoa(i + 1)
	}
	return strings.Join(parts, ", ")
}

// doubling is the program that crashed a server: a text doubled 40 times.
var doubling = "the t is \"abcdefgh\"\nthe rounds are " + numbers(40) + "\nprocess each round as follows\n  the t is the t + the t\n"

// spanOf is the span of the first line of src that starts (after
// indentation) with stmt.
func spanOf(t *testing.T, src, stmt string) lang.Span {
	t.Helper()
	i := strings.Index(src, stmt)
	if i < 0 {
		t.Fatalf("%q is not in the program", stmt)
	}
	return lang.Span{Start: i, End: i + len(stmt)}
}

func TestMemoryLimits(t *testing.T) {
	cases := []struct {
		name    string
		src     string
		limits  lang.Limits
		at      string // the statement the exception stands at
		message string // in the exception's message
	}{
		{"text doubling", doubling, lang.Limits{}, "the t is the t + the t", "the text would be 8 MiB, more than the run's limit of 4 MiB"},
		{"text doubling, smaller limit", doubling, lang.Limits{MaxTextBytes: 1000}, "the t is the t + the t", "more than the run's limit of 1,000 bytes"},
		{"add text to itself", "the t is \"abcdefgh\"\nthe rounds are " + numbers(40) + "\nprocess each round as follows\n  add the t to the t\n",
			lang.Limits{MaxTextBytes: 1 << 16}, "add the t to the t", "the text would be 128 KiB, more than the run's limit of 64 KiB"},
		{"text repeated", "the t is \"ab\" * 100000000\n", lang.Limits{}, `the t is "ab" * 100000000`, "more than the run's limit of 4 MiB"},
		{"list doubling", "the l is (1, 2)\nthe rounds are " + numbers(40) + "\nprocess each round as follows\n  the l is the l + the l\n",
			lang.Limits{MaxItems: 1000}, "the l is the l + the l", "the list would hold 1,024 items, more than the run's limit of 1,000 items"},
		{"list doubling against the facts limit", "the l is (1, 2)\nthe rounds are " + numbers(40) + "\nprocess each round as follows\n  the l is the l + the l\n",
			lang.Limits{MaxFactsBytes: 16 << 20}, "the l is the l + the l", "the run's facts would be"},
		{"list growing by add", "the l is an empty list\nthe rounds are " + numbers(40) + "\nprocess each round as follows\n  add the round to the l\n",
			lang.Limits{MaxItems: 10}, "add the round to the l", "more than the run's limit of 10 items"},
		{"set growing by add", "the s is an empty set\nthe rounds are " + numbers(40) + "\nprocess each round as follows\n  add the round to the s\n",
			lang.Limits{MaxItems: 10}, "add the round to the s", "the set would hold 11 items"},
		{"dictionary growing by fields", "the d is an empty dictionary\nthe rounds are " + numbers(40) + "\nprocess each round as follows\n  the d's key is the round\n  the d's other is 1\n  the d's third is 1\n",
			lang.Limits{MaxItems: 2}, "the d's third is 1", "the dictionary would hold 3 items, more than the run's limit of 2 items"},
		{"many texts in a list", "the t is \"abcdefgh\" * 1000\nthe l is an empty list\nthe rounds are " + numbers(40) + "\nprocess each round as follows\n  add the t + the round to the l\n",
			lang.Limits{MaxFactsBytes: 64 << 10}, "add the t + the round to the l", "the run's facts would be"},
		{"copies of a list", "the l is (\"abcdefgh\" * 1000, 2, 3)\nthe rounds are " + numbers(40) + "\nprocess each round as follows\n  the copy is the l\n  add the copy to the l\n",
			lang.Limits{MaxFactsBytes: 256 << 10}, "", "the run's facts would be"},
		{"a list written as text", "the l is (\"abcdefgh\" * 1000, \"abcdefgh\" * 1000)\nthe t is convert the l to text\n",
			lang.Limits{MaxTextBytes: 10000}, "the t is convert the l to text", "the text would be 16,002 bytes"},
		{"say in a loop", "the t is \"abcdefgh\" * 1000\nthe rounds are " + numbers(40) + "\nprocess each round as follows\n  say the t\n",
			lang.Limits{MaxFactsBytes: 100 << 10}, "say the t", "the run's facts would be"},
		{"text repeated over a small limit", "the t is \"abcdefgh\" * 1000\n", lang.Limits{MaxTextBytes: 4096}, "the t is \"abcdefgh\" * 1000", "the text would be 8,000 bytes, more than the run's limit of 4 KiB"},
		{"upper case", "the t is \"abcdefgh\" * 1000\nthe u is the t in upper case\n", lang.Limits{MaxFactsBytes: 12000}, "the u is the t in upper case", "the run's facts would be"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := lang.Start(context.Background(), parse(t, c.src), nil, lang.Options{Limits: c.limits})
			if res.Status != lang.Suspended {
				t.Fatalf("status %v, want awaiting_guidance (failure %+v)", res.Status, res.Failure)
			}
			x := res.Exception
			if x.Group != lang.GroupUserSystemError || !strings.Contains(x.Message, c.message) {
				t.Fatalf("exception %s %q, want user_system_error with %q", x.Group, x.Message, c.message)
			}
			if c.at != "" {
				if want := spanOf(t, c.src, c.at); x.Span != want {
					t.Errorf("exception at %v (%q), want %v (%q)", x.Span, c.src[x.Span.Start:x.Span.End], want, c.at)
				}
			}
			// Retrying raises the same exception; skipping goes on.
			again, err := lang.Resume(context.Background(), parse(t, c.src), res.State, lang.Resolution{Kind: lang.Retry}, lang.Options{Limits: c.limits})
			if err != nil {
				t.Fatal(err)
			}
			if again.Status != lang.Suspended || !strings.Contains(again.Exception.Message, c.message) {
				t.Errorf("retry: %v %+v, want the same exception", again.Status, again.Exception)
			}
		})
	}
}

// TestDoublingDoesNotAllocate: the text that would exceed the limit is
// never made.
func TestDoublingDoesNotAllocate(t *testing.T) {
	prog := parse(t, doubling)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	res := lang.Start(context.Background(), prog, nil, lang.Options{})
	runtime.ReadMemStats(&after)
	if res.Status != lang.Suspended {
		t.Fatalf("status %v", res.Status)
	}
	// The texts made: 16 B, 32 B, … 4 MiB (8 MiB in all), and the saved
	// state holding the last one (its JSON encoding takes a few times its
	// size). Without the limit the run tried to make a text of 4 TiB.
	if got := after.TotalAlloc - before.TotalAlloc; got > 64<<20 {
		t.Errorf("the run allocated %d MiB", got>>20)
	}
}

// nested is four loops over 1,000 items each: 10^12 statements.
var nested = "the items are " + numbers(1000) + "\nthe n is 0\n" +
	"process each a in the items as follows\n" +
	"  process each b in the items as follows\n" +
	"    process each c in the items as follows\n" +
	"      process each d in the items as follows\n" +
	"        add 1 to the n\n"

func TestStepLimit(t *testing.T) {
	prog := parse(t, nested)
	opts := lang.Options{Limits: lang.Limits{MaxSteps: 100_000}}
	res := lang.Start(context.Background(), prog, nil, opts)
	if res.Status != lang.Suspended || res.Exception.Group != lang.GroupUserSystemError ||
		!strings.Contains(res.Exception.Message, "step limit of 100,000 statements") {
		t.Fatalf("%v %+v, want the step limit exception", res.Status, res.Exception)
	}
	// Retry goes on with a fresh budget from where the run stood.
	again, err := lang.Resume(context.Background(), prog, res.State, lang.Resolution{Kind: lang.Retry}, opts)
	if err != nil {
		t.Fatal(err)
	}
	if again.Status != lang.Suspended || !strings.Contains(again.Exception.Message, "step limit") {
		t.Fatalf("retry: %v %+v", again.Status, again.Exception)
	}
	if string(again.State) == string(res.State) {
		t.Error("retry did not go on")
	}
	// The budget is per execution: a run of fewer statements completes.
	small := parse(t, "the items are "+numbers(100)+"\nthe n is 0\nprocess each a in the items as follows\n  add 1 to the n\nthe output n is the n\n")
	if r := lang.Start(context.Background(), small, nil, lang.Options{Limits: lang.Limits{MaxSteps: 1000}}); r.Status != lang.Completed {
		t.Fatalf("small run: %v %+v", r.Status, r.Exception)
	}
}

func TestStepLimitSkip(t *testing.T) {
	src := "the items are " + numbers(100) + "\nthe n is 0\nprocess each a in the items as follows\n  add 1 to the n\nthe output n is the n\n"
	prog := parse(t, src)
	opts := lang.Options{Limits: lang.Limits{MaxSteps: 50}}
	res := lang.Start(context.Background(), prog, nil, opts)
	rounds := 0
	for res.Status == lang.Suspended {
		if !strings.Contains(res.Exception.Message, "step limit of 50 statements") {
			t.Fatalf("exception %+v", res.Exception)
		}
		var err error
		if res, err = lang.Resume(context.Background(), prog, res.State, lang.Resolution{Kind: lang.Skip}, opts); err != nil {
			t.Fatal(err)
		}
		rounds++
	}
	if res.Status != lang.Completed || rounds == 0 {
		t.Fatalf("%v after %d skips", res.Status, rounds)
	}
	// Each skip passed one `add`: fewer than 100 additions were made.
	if n := res.Outputs["output n"].AsNumber(); n.String() != strconv.Itoa(100-rounds) {
		t.Errorf("n = %s after %d skips, want %d", n, rounds, 100-rounds)
	}
}

func TestTimeLimit(t *testing.T) {
	res := lang.Start(context.Background(), parse(t, nested), nil, lang.Options{Limits: lang.Limits{MaxDuration: time.Nanosecond}})
	if res.Status != lang.Suspended || !strings.Contains(res.Exception.Message, "time limit of 1ns") {
		t.Fatalf("%v %+v, want the time limit exception", res.Status, res.Exception)
	}
}

func TestJournalLimit(t *testing.T) {
	src := "the items are " + numbers(1000) + "\nprocess each a in the items as follows\n  the now is the current datetime\n"
	res := lang.Start(context.Background(), parse(t, src), nil, lang.Options{Limits: lang.Limits{MaxJournalBytes: 4096}})
	if res.Status != lang.Suspended || !strings.Contains(res.Exception.Message, "journal of book results and clock readings holds 4 KiB") {
		t.Fatalf("%v %+v, want the journal limit exception", res.Status, res.Exception)
	}
	if want := spanOf(t, src, "the now is the current datetime"); res.Exception.Span != want {
		t.Errorf("exception at %v, want %v", res.Exception.Span, want)
	}
}

func TestStateLimit(t *testing.T) {
	src := "the t is \"abcdefgh\" * 1000\nget the answer\n"
	res := lang.Start(context.Background(), parse(t, src), nil, lang.Options{Limits: lang.Limits{MaxStateBytes: 4096}})
	if res.Status != lang.Failed || !strings.Contains(res.Failure.Description, "more than the run's limit of 4 KiB") {
		t.Fatalf("%v %+v, want a failure naming the state limit", res.Status, res.Failure)
	}
}

func TestYield(t *testing.T) {
	src := "the items are " + numbers(1000) + "\nthe n is 0\nprocess each a in the items as follows\n  process each b in the items as follows\n    add 1 to the n\nthe output n is the n\n"
	prog := parse(t, src)
	asked := 0
	opts := lang.Options{Yield: func() bool { asked++; return asked%50 == 0 }}
	res := lang.Start(context.Background(), prog, nil, opts)
	stops := 0
	for res.Status == lang.Stopped {
		stops++
		var err error
		if res, err = lang.Resume(context.Background(), prog, res.State, lang.Resolution{}, opts); err != nil {
			t.Fatal(err)
		}
	}
	if res.Status != lang.Completed || stops == 0 {
		t.Fatalf("%v after %d yields", res.Status, stops)
	}
	if n := res.Outputs["output n"].String(); n != "1000000" {
		t.Errorf("n = %s, want 1000000 (a yield lost or repeated statements)", n)
	}
}

// TestBudgetAcrossYields: a run given up for a turn goes on with what is
// left of its step budget; guidance gives a fresh one.
func TestBudgetAcrossYields(t *testing.T) {
	prog := parse(t, nested)
	opts := lang.Options{Limits: lang.Limits{MaxSteps: 10_000}, Yield: func() bool { return true }}
	res := lang.Start(context.Background(), prog, nil, opts)
	stops := 0
	for res.Status == lang.Stopped {
		stops++
		var err error
		if res, err = lang.Resume(context.Background(), prog, res.State, lang.Resolution{}, opts); err != nil {
			t.Fatal(err)
		}
	}
	// Yield is asked every 1,024 statements: nine stops, then the limit.
	if res.Status != lang.Suspended || !strings.Contains(res.Exception.Message, "step limit of 10,000") || stops != 9 {
		t.Fatalf("%v after %d stops (%+v), want the step limit after 9", res.Status, stops, res.Exception)
	}
	// Retry: a fresh budget of 10,000 statements, again in ten turns.
	res, err := lang.Resume(context.Background(), prog, res.State, lang.Resolution{Kind: lang.Retry}, opts)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != lang.Stopped {
		t.Fatalf("after retry: %v %+v, want a stop for a turn", res.Status, res.Exception)
	}
}
