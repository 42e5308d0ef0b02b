package lang

import (
	"fmt"
	"strings"
	"testing"
)

// flowString writes a graph as one line per node ("id kind label") and per
// edge ("a -> b [cond]"), with ids replaced by the first word of their
// label so the expectations read like the program.
func flowString(g FlowGraph) string {
	kinds := map[FlowKind]string{FlowStart: "START", FlowEnd: "END", FlowProcess: "PROCESS",
		FlowDecision: "DECISION", FlowInput: "INPUT", FlowOutput: "OUTPUT"}
	var b strings.Builder
	for _, n := range g.Nodes {
		fmt.Fprintf(&b, "%s %s %q\n", n.ID, kinds[n.Kind], n.Label)
	}
	for _, e := range g.Edges {
		fmt.Fprintf(&b, "%s -> %s", e.Source, e.Target)
		if e.Condition != "" {
			fmt.Fprintf(&b, " [%s]", e.Condition)
		}
		b.WriteString("\n")
	}
	return b.String()
}

func TestFlow(t *testing.T) {
	cases := []struct {
		name, code, want string
	}{
		{
			name: "sequence",
			code: "the a is 1\nthe output is the a\n",
			want: `start START "Start"
s0 PROCESS "the a is 1"
s11 OUTPUT "the output is the a"
end END "End"
start -> s0
s0 -> s11
s11 -> end
`,
		},
		{
			name: "if else if else, then a join",
			code: "ask \"how many?\"\nif the above is 1 then\n  say \"one\"\nelse if the above is 2 then\n  say \"two\"\nelse\n  stop\nthe output is the above\n",
			want: `start START "Start"
s0 INPUT "ask \"how many?\""
s16 DECISION "the above is 1"
s41 OUTPUT "say \"one\""
s51 DECISION "the above is 2"
s81 OUTPUT "say \"two\""
s98 PROCESS "stop"
s103 OUTPUT "the output is the above"
end END "End"
start -> s0
s0 -> s16
s16 -> s41 [Yes]
s16 -> s51 [No]
s51 -> s81 [Yes]
s51 -> s98 [No]
s98 -> end
s41 -> s103
s81 -> s103
s103 -> end
`,
		},
		{
			name: "if without else: the No edge joins the next statement",
			code: "the n is 3\nif the n is 3 then\n  the m is 1\nthe output is the n\n",
			want: `start START "Start"
s0 PROCESS "the n is 3"
s11 DECISION "the n is 3"
s32 PROCESS "the m is 1"
s43 OUTPUT "the output is the n"
end END "End"
start -> s0
s0 -> s11
s11 -> s32 [Yes]
s32 -> s43
s11 -> s43 [No]
s43 -> end
`,
		},
		{
			name: "a loop returns to its decision; a procedure call is one step",
			code: "to double a number\n  the result is the number * 2\n\nthe total is 0\nprocess each price as follows\n  double the price\n  add the above to the total\nget the rate\nthe output is the total\n",
			want: `start START "Start"
s51 PROCESS "the total is 0"
s66 DECISION "process each price as follows"
s98 PROCESS "double the price"
s117 PROCESS "add the above to the total"
s144 INPUT "get the rate"
s157 OUTPUT "the output is the total"
end END "End"
start -> s51
s51 -> s66
s66 -> s98 [Each]
s98 -> s117
s117 -> s66
s66 -> s144 [Done]
s144 -> s157
s157 -> end
`,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := Parse(c.code)
			if err != nil {
				t.Fatal(err)
			}
			if got := flowString(p.Flow()); got != c.want {
				t.Errorf("flow of\n%s\ngot:\n%s\nwant:\n%s", c.code, got, c.want)
			}
		})
	}
}
