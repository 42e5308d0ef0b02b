package statemachine

import (
	"fmt"
	"strings"
)

// DocumentPath is where Document is checked in, from the repository root.
const DocumentPath = "docs/state-machine.md"

// Document is docs/state-machine.md: each machine as a Mermaid diagram and
// a table of its transitions with their causes. A test fails when the
// checked-in file differs (go test ./store/statemachine -update rewrites it).
func Document() string {
	var b strings.Builder
	b.WriteString(`# State machines

<!-- Generated from store/statemachine (statemachine.go) by
     go test ./store/statemachine -update. Do not edit. -->

The states of runs and of exceptions and every transition between them, as
declared in ` + "`store/statemachine`" + `: the store renders its guarded updates
from that table (an UPDATE changes a state only from the states the table
gives for its event), so a transition missing here cannot happen. Every
transition writes the record's ` + "`update_time`" + ` and is one transaction.
`)
	writeMachine(&b, Runs, "A run's worker holds a lease while the run is `executing` or `stopping`. "+
		"The platform API shows `waiting` as executing.")
	writeMachine(&b, Exceptions, "Two concurrent transitions of one exception: exactly one wins, "+
		"the other fails with `FAILED_PRECONDITION`.")
	return b.String()
}

func writeMachine[S ~string](b *strings.Builder, m Machine[S], note string) {
	fmt.Fprintf(b, "\n## %s\n\n%s\n\n", m.Name, note)
	b.WriteString("```mermaid\nstateDiagram-v2\n")
	for _, i := range m.Initial {
		fmt.Fprintf(b, "    [*] --> %s\n", i.State)
	}
	// One edge per (from, to), its events joined.
	type edge struct{ from, to S }
	var order []edge
	events := map[edge][]string{}
	for _, t := range m.Transitions {
		e := edge{t.From, t.To}
		if _, ok := events[e]; !ok {
			order = append(order, e)
		}
		events[e] = append(events[e], string(t.Event))
	}
	for _, e := range order {
		fmt.Fprintf(b, "    %s --> %s: %s\n", e.from, e.to, strings.Join(events[e], " / "))
	}
	for _, s := range m.States {
		if m.Terminal(s) {
			fmt.Fprintf(b, "    %s --> [*]\n", s)
		}
	}
	b.WriteString("```\n\n")
	b.WriteString("Created in:\n\n| State | When |\n|---|---|\n")
	for _, i := range m.Initial {
		fmt.Fprintf(b, "| `%s` | %s |\n", i.State, i.Cause)
	}
	var terminal []string
	for _, s := range m.States {
		if m.Terminal(s) {
			terminal = append(terminal, "`"+string(s)+"`")
		}
	}
	fmt.Fprintf(b, "\nTerminal (no transition leaves them): %s.\n\n", strings.Join(terminal, ", "))
	b.WriteString("| From | To | Event | Cause |\n|---|---|---|---|\n")
	for _, t := range m.Transitions {
		fmt.Fprintf(b, "| `%s` | `%s` | %s | %s |\n", t.From, t.To, t.Event, t.Cause)
	}
}
