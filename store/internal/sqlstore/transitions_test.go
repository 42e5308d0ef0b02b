package sqlstore

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/proserun/prose/store/statemachine"
)

// otherMachines are state literals of other tables that share a name with
// a state of runs or exceptions, by file: they are not run or exception
// states.
var otherMachines = map[string][]string{
	"webhooks.go": {"'pending'"}, // webhook deliveries (their own states)
}

// transitions.go is the one file whose SQL names a run's or an exception's
// state, and the one that writes a state: in every other source of the
// package, no string holds a state literal, and an UPDATE's SET gives the
// state column only a value rendered by transitions.go (the string ends
// there and transitions.go's rendering is concatenated).
func TestStatesOnlyInTransitions(t *testing.T) {
	var names []string
	for _, s := range statemachine.Runs.States {
		names = append(names, regexp.QuoteMeta(string(s)))
	}
	for _, s := range statemachine.Exceptions.States {
		names = append(names, regexp.QuoteMeta(string(s)))
	}
	literal := regexp.MustCompile(`'(` + strings.Join(names, "|") + `)'`)
	// A state assigned in a SET list, with its value in the same string,
	// in an UPDATE of runs or exceptions.
	assigned := regexp.MustCompile(`(?i)(\bSET\s+|,\s*)(\w+\.)?state\s*=\s*\S`)
	ofRunsOrExceptions := regexp.MustCompile(`(?i)\bUPDATE\s+(runs|exceptions)\b`)

	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	checked := 0
	for _, name := range files {
		if name == "transitions.go" || strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(fset, name, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		checked++
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			s, err := strconv.Unquote(lit.Value)
			if err != nil {
				t.Fatalf("%s: %v", fset.Position(lit.Pos()), err)
			}
			for _, m := range literal.FindAllString(s, -1) {
				allowed := false
				for _, o := range otherMachines[name] {
					allowed = allowed || o == m
				}
				if !allowed {
					t.Errorf("%s: state %s in SQL outside transitions.go: render it there from store/statemachine", fset.Position(lit.Pos()), m)
				}
			}
			if m := assigned.FindString(s); m != "" && ofRunsOrExceptions.MatchString(s) {
				t.Errorf("%s: %q sets a state outside transitions.go: render the state a transition enters there (runTo, moveRun)",
					fset.Position(lit.Pos()), m)
			}
			return true
		})
	}
	if checked < 20 {
		t.Fatalf("checked %d files: the package's sources were not found", checked)
	}
}

// The statements on many runs render the conditions of the migrations'
// partial indexes exactly as the indexes write them (00002_runs.sql,
// 00017_child_runs.sql), or the databases scan the table instead.
func TestRenderedConditionsMatchPartialIndexes(t *testing.T) {
	for _, c := range []struct{ got, want, index string }{
		{queuedRun, "state = 'pending'", "runs_pending"},
		{leasedState, "state IN ('executing', 'stopping')", "runs_leased"},
		{leaseLostFrom, "state IN ('executing', 'stopping')", "runs_leased"},
		{childFinishedFrom, "state = 'waiting'", "runs_waiting"},
	} {
		if c.got != c.want {
			t.Errorf("%s: rendered %q, the index's condition is %q", c.index, c.got, c.want)
		}
	}
	for _, backend := range []string{"sqlite", "postgres"} {
		b, err := os.ReadFile(filepath.Join("..", "..", backend, "migrations", "00002_runs.sql"))
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"WHERE " + queuedRun + ";", "WHERE " + leasedState + ";"} {
			if !strings.Contains(string(b), want) {
				t.Errorf("%s 00002_runs.sql has no index %q", backend, want)
			}
		}
	}
}

// What the table renders for the statements that change many runs.
func TestRenderedTransitions(t *testing.T) {
	for _, c := range []struct{ name, got, want string }{
		{"claim", claimTo, "'executing'"},
		{"lease lost", leaseLostTo, "CASE state WHEN 'executing' THEN 'pending' WHEN 'stopping' THEN 'stopped' END"},
		{"poison", poisonFrom + " → " + poisonTo, "state = 'executing' → 'failed'"},
		{"release", releaseFrom + " → " + releaseTo, "state IN ('executing', 'stopping') → CASE state WHEN 'executing' THEN 'pending' WHEN 'stopping' THEN 'stopped' END"},
		{"complete", completeFrom + " → " + completeTo, "state IN ('executing', 'stopping') → CASE state WHEN 'executing' THEN 'completed' WHEN 'stopping' THEN 'stopped' END"},
		{"complete step", completeStepSQL, "CASE WHEN state = 'stopping' THEN ? ELSE step END"},
		{"fail", failFrom + " → " + failTo, "state IN ('executing', 'stopping') → 'failed'"},
		{"resolve", resolveFrom + " → " + resolveTo, "state = 'awaiting_guidance' → 'pending'"},
		{"archive", archiveFrom + " → " + archiveTo, "state = 'awaiting_guidance' → 'stopped'"},
		{"unarchive", unarchiveFrom + " → " + unarchiveTo, "state = 'stopped' → 'awaiting_guidance'"},
		{"child finished", childFinishedFrom + " → " + childFinishedTo, "state = 'waiting' → 'pending'"},
		{"unsettled", unsettled("ch.state"), "ch.state NOT IN ('completed', 'failed')"},
		{"wait", waitTo("stopping"), "'stopped'"},
		{"wait", waitTo("executing"), "CASE WHEN " + noUnsettledChildren + " THEN 'pending' ELSE 'waiting' END"},
		{"wait", waitTo("pending"), ""},
		{"finish batch", finishToPG, "CASE v.state WHEN 'completed' THEN CASE r.state WHEN 'executing' THEN 'completed' WHEN 'stopping' THEN 'stopped' END WHEN 'failed' THEN 'failed' END"},
	} {
		if c.got != c.want {
			t.Errorf("%s:\n got %s\nwant %s", c.name, c.got, c.want)
		}
	}
}
