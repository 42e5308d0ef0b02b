package server_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/proserun/prose/internal/testtime"
	"github.com/proserun/prose/server/app"
	"github.com/proserun/prose/server/testenv"
	"github.com/proserun/prose/store"
)

// numberList writes "1, 2, …, n" as a program writes a list.
func numberList(n int) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = strconv.Itoa(i + 1)
	}
	return strings.Join(parts, ", ")
}

// doublingCode crashed a server with `fatal error: out of memory`: a text
// doubled 40 times (8 TiB).
var doublingCode = "the t is \"abcdefgh\"\nthe rounds are " + numberList(40) + "\nprocess each round as follows\n  the t is the t + the t\n"

// nestedCode is four nested loops over 1,000 items: 10^12 statements.
var nestedCode = "the items are " + numberList(1000) + "\nthe n is 0\n" +
	"process each a in the items as follows\n" +
	"  process each b in the items as follows\n" +
	"    process each c in the items as follows\n" +
	"      process each d in the items as follows\n" +
	"        add 1 to the n\n"

// invokeAPI starts a run of the draft of automation a over HTTP and returns
// its id.
func (e *testEnv) invokeAPI(t *testing.T, a string) string {
	t.Helper()
	m := e.API(t, "POST", e.AutomationsPath()+"/"+a+":invoke", `{"stage":"AUTOMATION_STAGE_DRAFT"}`, 200)
	return fmt.Sprint(m["run_id"])
}

// TestRunMemoryLimit: the program that crashed the server waits for
// guidance with a user_system_error exception at its statement, read back
// over HTTP and gRPC; so does list doubling.
func TestRunMemoryLimit(t *testing.T) {
	// Smaller limits than the defaults (which lang's tests and prose run
	// check), so that the test is quick on a busy machine: the values
	// reach them after fewer doublings.
	e := newTestEnvWith(t, func(c *app.Config) { c.Limits.MaxTextBytes, c.Limits.MaxFactsBytes = 256<<10, 4<<20 })
	for _, c := range []struct {
		name, code, stmt, message string
	}{
		{"text", doublingCode, "the t is the t + the t", "Could not go on: the text would be 512 KiB, more than the run's limit of 256 KiB"},
		{"list", "the l is (1, 2)\nthe rounds are " + numberList(40) + "\nprocess each round as follows\n  the l is the l + the l\n",
			"the l is the l + the l", "more than the run's limit of 4 MiB"},
	} {
		t.Run(c.name, func(t *testing.T) {
			a := e.MkAutomation(t, "Doubling "+c.name, c.code, false)
			run := e.invokeAPI(t, a.ID)
			r := e.WaitRun(t, a.ID, run, "awaiting_guidance")
			xid := store.LastSegment(fmt.Sprint(testenv.Field(r, "state.awaiting_guidance.exception")))
			start := strings.Index(c.code, c.stmt)
			forEachTransport(t, func(t *testing.T, tr apiTransport) {
				x := e.xwant(t, tr, xcall{rpc: "GetException", id: xid}, codes.OK)
				if x.m["group"] != e.excGroup("user_system_error") || !strings.Contains(fmt.Sprint(x.m["message"]), c.message) {
					t.Fatalf("exception: %v, want user_system_error with %q", x.m, c.message)
				}
				loc := fmt.Sprint(x.m["location"])
				if !strings.Contains(loc, "start_byte:"+strconv.Itoa(start)) && !strings.Contains(loc, `start_byte:"`+strconv.Itoa(start)) {
					t.Errorf("exception at %v, want the statement at byte %d", loc, start)
				}
			})
		})
	}
}

// TestRunStepLimit: four nested loops over 1,000 items raise the step
// limit's exception; retry goes on with a fresh budget (a new exception
// further on), skip passes the statement.
func TestRunStepLimit(t *testing.T) {
	e := newTestEnvWith(t, func(c *app.Config) { c.Limits.MaxSteps = 200_000 })
	a := e.MkAutomation(t, "Nested", nestedCode, false)
	run := e.invokeAPI(t, a.ID)
	r := e.WaitRun(t, a.ID, run, "awaiting_guidance")
	first := store.LastSegment(fmt.Sprint(testenv.Field(r, "state.awaiting_guidance.exception")))
	forEachTransport(t, func(t *testing.T, tr apiTransport) {
		x := e.xwant(t, tr, xcall{rpc: "GetException", id: first}, codes.OK)
		if x.m["group"] != e.excGroup("user_system_error") || !strings.Contains(fmt.Sprint(x.m["message"]), "step limit of 200,000 statements") {
			t.Fatalf("exception: %v", x.m)
		}
	})
	e.xwant(t, overHTTP, xcall{rpc: "ResolveException", id: first, body: `{"retry": {}}`}, codes.OK)
	second := e.PollRun(t, a.ID, run, "the retry never ran",
		func(r store.Run) bool { return r.State == store.RunAwaitingGuidance && r.ExceptionID != first },
		func(r store.Run) bool { return r.State.Terminal() }).ExceptionID
	x := e.xwant(t, overGRPC, xcall{rpc: "GetException", id: second}, codes.OK)
	if !strings.Contains(fmt.Sprint(x.m["message"]), "step limit") {
		t.Fatalf("after retry: %v", x.m)
	}

	// A loop a little over the budget: skip the statement where it stops,
	// and the run completes.
	small := e.MkAutomation(t, "Small", "the items are "+numberList(1000)+"\nthe n is 0\nprocess each a in the items as follows\n  process each b in the items as follows\n    add 1 to the n\nthe output n is the n\n", false)
	run = e.invokeAPI(t, small.ID)
	r = e.WaitRun(t, small.ID, run, "awaiting_guidance")
	xid := store.LastSegment(fmt.Sprint(testenv.Field(r, "state.awaiting_guidance.exception")))
	e.xwant(t, overGRPC, xcall{rpc: "ResolveException", id: xid, body: `{"skip": {}}`}, codes.OK)
	for {
		m := e.API(t, "GET", e.RunPath(small.ID, run), "", 200)
		if testenv.RunState(m) == "completed" {
			if n := testenv.NumberOf(testenv.Field(m, "state.completed.outputs.output n.number")); n < 999_990 || n >= 1_000_000 {
				t.Fatalf("output n = %v, want 1,000,000 less the skipped additions", n)
			}
			break
		}
		if testenv.RunState(m) == "awaiting_guidance" {
			xid := store.LastSegment(fmt.Sprint(testenv.Field(m, "state.awaiting_guidance.exception")))
			e.xwant(t, overGRPC, xcall{rpc: "ResolveException", id: xid, body: `{"skip": {}}`}, codes.OK)
		}
		e.App.Engine.Wake()
		time.Sleep(2 * time.Millisecond)
	}
}

// TestFairWorkers: runaway runs of one organization, more than the
// workers, do not keep another organization's trivial run waiting: it
// completes while they still run (without the fairness it waited until
// they ended, never here: they have no step or time limit).
func TestFairWorkers(t *testing.T) {
	e := newTestEnvWith(t, func(c *app.Config) {
		c.Workers = 2
		c.TimeSlice = 20 * time.Millisecond
		c.Limits.MaxSteps, c.Limits.MaxDuration = -1, -1
	})
	a := e.MkAutomation(t, "Runaway", nestedCode, false)
	var runaway []string
	for range 4 {
		runaway = append(runaway, e.invokeAPI(t, a.ID))
	}
	t.Cleanup(func() {
		// Pause them, so that the server stops without waiting for them.
		for _, id := range runaway {
			code, _, _ := e.DoHTTP(t, "POST", e.RunPath(a.ID, id)+":pause", `{"reason":"test over"}`, map[string]string{"Authorization": "Bearer " + e.Init.APIKey})
			_ = code
		}
		e.App.Engine.CheckPauses(context.Background())
	})
	// Both workers run organization A's runs. The runs take turns (each
	// gives its worker up after a time slice), so their states are read
	// in one list, at one moment: read one by one on a loaded machine,
	// they showed runs executing at different moments, up to all four.
	deadline := testtime.Deadline(testtime.Wait)
	for {
		n := 0
		list := e.API(t, "GET", e.AutomationsPath()+"/"+a.ID+"/runs?page_size=10", "", 200)
		runs, _ := list["runs"].([]any)
		for _, r := range runs {
			if testenv.RunState(r.(map[string]any)) == "executing" {
				n++
			}
		}
		if n > 2 {
			t.Fatalf("%d runaway runs executing at once, with 2 workers", n)
		}
		if n == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d runaway runs executing, want 2", n)
		}
		time.Sleep(2 * time.Millisecond)
	}

	// Organization B's trivial run.
	other, err := app.Bootstrap(context.Background(), e.Store, app.InitOptions{Organization: "Other org", Email: "other-" + store.NewID() + "@example.test", Workspace: "Ops"})
	if err != nil {
		t.Fatal(err)
	}
	b := &testEnv{&testenv.Env{App: e.App, Store: e.Store, Srv: e.Srv, Conn: e.Conn, Init: other}}
	auto := b.MkAutomation(t, "Trivial", "the output x is 1\n", false)
	run := b.invokeAPI(t, auto.ID)
	b.WaitRun(t, auto.ID, run, "completed")
	for _, id := range runaway {
		if s := testenv.RunState(e.API(t, "GET", e.RunPath(a.ID, id), "", 200)); s != "executing" && s != "pending" {
			t.Fatalf("runaway run %s is %s", id, s)
		}
	}
}
