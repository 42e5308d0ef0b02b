package console

import (
	"regexp"
	"strings"
	"testing"

	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
)

func flowTestGraph() *platformv1.FlowGraph {
	n := func(id, label string, t platformv1.FlowNodeType) *platformv1.FlowNode {
		return &platformv1.FlowNode{Id: id, Label: label, Type: t}
	}
	e := func(s, t, c string) *platformv1.FlowEdge {
		return &platformv1.FlowEdge{Source: s, Target: t, Condition: c}
	}
	return &platformv1.FlowGraph{
		Nodes: []*platformv1.FlowNode{
			n("start", "", platformv1.FlowNodeType_FLOW_NODE_TYPE_START),
			n("s0", "get the invoice total", platformv1.FlowNodeType_FLOW_NODE_TYPE_INPUT),
			n("s22", "if the invoice total > 1000", platformv1.FlowNodeType_FLOW_NODE_TYPE_DECISION),
			n("s50", "ask \"Approve?\"", platformv1.FlowNodeType_FLOW_NODE_TYPE_INPUT),
			n("s70", "the approved is \"yes\"", platformv1.FlowNodeType_FLOW_NODE_TYPE_PROCESS),
			n("s90", "for each line of the lines", platformv1.FlowNodeType_FLOW_NODE_TYPE_DECISION),
			n("s120", "say the line", platformv1.FlowNodeType_FLOW_NODE_TYPE_OUTPUT),
			n("end", "", platformv1.FlowNodeType_FLOW_NODE_TYPE_END),
		},
		Edges: []*platformv1.FlowEdge{
			e("start", "s0", ""), e("s0", "s22", ""), e("s22", "s50", "Yes"), e("s22", "s70", "No"),
			e("s50", "s90", ""), e("s70", "s90", ""), e("s90", "s120", "Each"), e("s120", "s90", ""), e("s90", "end", "Done"),
		},
	}
}

// The drawing puts the two branches of a condition side by side, a loop's
// way back along the right, every label in the program's words, and lights
// the path a run took.
func TestFlowGraphLayout(t *testing.T) {
	g := flowTestGraph()
	places, w, _ := flowLayout(g)
	if places["s50"].y != places["s70"].y || places["s50"].x == places["s70"].x {
		t.Errorf("the branches are not side by side: %+v %+v", *places["s50"], *places["s70"])
	}
	if !(places["s22"].y < places["s50"].y && places["s50"].y < places["s90"].y && places["s90"].y < places["s120"].y && places["s120"].y < places["end"].y) {
		t.Errorf("the rows are not in the order of the flow")
	}
	for id, p := range places {
		if p.x < 0 || p.x+flowNodeW > w {
			t.Errorf("%s is outside the drawing (%.0f of %.0f)", id, p.x, w)
		}
	}
	svg := string(flowGraph(g, []string{"start", "s0", "s22", "s70"}))
	for _, want := range []string{`role="img"`, "get the invoice total", "if the invoice total &gt; 1000", "ask &#34;Approve?&#34;", ">Yes<", ">No<", ">Each<", ">Done<", "Start", "End"} {
		if !strings.Contains(svg, want) {
			t.Errorf("the drawing lacks %q", want)
		}
	}
	if n := strings.Count(svg, `class="flow-edge taken"`); n != 3 {
		t.Errorf("%d lit edges, want 3 (start → s0 → s22 → s70)", n)
	}
	if !regexp.MustCompile(`<g class="flow-node flow-process taken" data-node="s70">`).MatchString(svg) || strings.Contains(svg, `data-node="s50" class`) {
		t.Errorf("the taken nodes are not lit")
	}
	// The loop's way back leaves the right side (an H/V path to the margin).
	if !regexp.MustCompile(`<path class="flow-edge" d="M[0-9.]+,[0-9.]+ H[0-9.]+ V[0-9.]+ H[0-9.]+"`).MatchString(svg) {
		t.Errorf("no way back drawn for the loop")
	}
	if flowGraph(nil, nil) != "" {
		t.Errorf("an absent graph draws something")
	}
}
