package lang

import (
	"fmt"
	"strings"
)

// FlowKind is the kind of a step of a program's flow graph.
type FlowKind uint8

// The kinds of flow steps.
const (
	FlowStart    FlowKind = iota + 1 // where a run begins
	FlowEnd                          // where it ends (also after stop)
	FlowProcess                      // a statement: assignment, call, check
	FlowDecision                     // an if/else if condition, or a loop over items
	FlowInput                        // get, find, ask: a value from outside
	FlowOutput                       // an output of the run, or say
)

// FlowNode is a step of a flow graph. ID is "start", "end", or "s" and the
// byte offset of the statement's line, so that a span of a run's events
// names the step it ran.
type FlowNode struct {
	ID    string
	Label string
	Kind  FlowKind
	Span  Span
}

// FlowEdge is a transition; Condition names the branch taken after a
// decision ("Yes"/"No", "Each"/"Done").
type FlowEdge struct {
	Source, Target, Condition string
}

// FlowGraph is the flow of a program's top level: procedure bodies are not
// drawn (a call is one step), so the graph stays finite and readable.
type FlowGraph struct {
	Nodes []FlowNode
	Edges []FlowEdge
}

// Flow returns the program's flow graph, computed from its statements.
func (p *Program) Flow() FlowGraph {
	fb := &flowBuilder{src: p.src}
	fb.nodes = append(fb.nodes, FlowNode{ID: "start", Label: "Start", Kind: FlowStart})
	exits := fb.block(p.top, []flowExit{{from: "start"}})
	fb.nodes = append(fb.nodes, FlowNode{ID: "end", Label: "End", Kind: FlowEnd})
	fb.join(exits, "end")
	return FlowGraph{Nodes: fb.nodes, Edges: fb.edges}
}

// flowExit is an edge waiting for its target: the step it leaves and the
// branch it stands for.
type flowExit struct {
	from, cond string
}

type flowBuilder struct {
	src   string
	nodes []FlowNode
	edges []FlowEdge
}

func (fb *flowBuilder) join(exits []flowExit, to string) {
	for _, e := range exits {
		fb.edges = append(fb.edges, FlowEdge{Source: e.from, Target: to, Condition: e.cond})
	}
}

func (fb *flowBuilder) node(sp Span, label string, kind FlowKind) string {
	id := fmt.Sprintf("s%d", sp.Start)
	fb.nodes = append(fb.nodes, FlowNode{ID: id, Label: label, Kind: kind, Span: sp})
	return id
}

// block lays out a block's statements after the steps in exits and
// returns the exits of its last statement.
func (fb *flowBuilder) block(b *block, exits []flowExit) []flowExit {
	if b == nil {
		return exits
	}
	for _, s := range b.stmts {
		exits = fb.stmt(s, exits)
	}
	return exits
}

func (fb *flowBuilder) stmt(s *stmt, exits []flowExit) []flowExit {
	switch s.op {
	case opIf:
		var out []flowExit
		for _, br := range s.branches {
			if br.cond == nil { // the final else: its body takes the last "No"
				return append(out, fb.block(br.body, exits)...)
			}
			id := fb.node(br.span, conditionLabel(fb.src[br.span.Start:br.span.End]), FlowDecision)
			fb.join(exits, id)
			out = append(out, fb.block(br.body, []flowExit{{from: id, cond: "Yes"}})...)
			exits = []flowExit{{from: id, cond: "No"}}
		}
		return append(out, exits...)
	case opEach:
		id := fb.node(s.span, s.text, FlowDecision)
		fb.join(exits, id)
		fb.join(fb.block(s.body, []flowExit{{from: id, cond: "Each"}}), id)
		return []flowExit{{from: id, cond: "Done"}}
	case opStop:
		id := fb.node(s.span, s.text, FlowProcess)
		fb.join(exits, id)
		fb.edges = append(fb.edges, FlowEdge{Source: id, Target: "end"})
		return nil
	}
	kind := FlowProcess
	switch {
	case s.out || s.op == opSay:
		kind = FlowOutput
	case s.op == opGet || s.op == opFind || s.op == opAsk:
		kind = FlowInput
	}
	id := fb.node(s.span, s.text, kind)
	fb.join(exits, id)
	return []flowExit{{from: id}}
}

// conditionLabel is an if or else-if line without its keywords: the
// condition as written.
func conditionLabel(line string) string {
	words := strings.Fields(line)
	for len(words) > 0 {
		w := strings.ToLower(words[0])
		if w != "else" && w != "otherwise" && w != "if" {
			break
		}
		words = words[1:]
	}
	if n := len(words); n > 0 && strings.EqualFold(words[n-1], "then") {
		words = words[:n-1]
	}
	if len(words) == 0 {
		return strings.TrimSpace(line)
	}
	return strings.Join(words, " ")
}
