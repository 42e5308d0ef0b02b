package console

import (
	"fmt"
	"html/template"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
)

// The flow graph of an automation (GetAutomationVisualization: the
// published version's steps in the program's own words), drawn as inline
// SVG from top to bottom. Pages draw it with the template function
// flowGraph: {{flowGraph .Graph .Taken}}, where Taken lists the ids of the
// nodes a run went through ("start", "s{byte}", "end"); those and the edges
// between them are drawn lit (class "taken"), so a run page can show the
// path a run took.

func init() {
	funcs["flowGraph"] = flowGraph
}

// Sizes of the drawing, in SVG units.
const (
	flowNodeW, flowNodeH = 260.0, 46.0
	flowGapX, flowGapY   = 30.0, 44.0
	flowMargin           = 16.0
	flowLabelChars       = 30
)

type flowPlace struct {
	x, y float64 // top left
	node *platformv1.FlowNode
}

// flowLayout places each node: its row is its longest distance from START
// along forward edges (an edge to a node written earlier, a loop's way
// back, does not count), and the nodes of one row sit side by side in
// program order.
func flowLayout(g *platformv1.FlowGraph) (map[string]*flowPlace, float64, float64) {
	index := map[string]int{}
	for i, n := range g.GetNodes() {
		index[n.GetId()] = i
	}
	rank := make([]int, len(g.GetNodes()))
	// Nodes are in program order and forward edges go to later nodes, so
	// one pass in order is a topological pass.
	out := map[string][]string{}
	for _, e := range g.GetEdges() {
		out[e.GetSource()] = append(out[e.GetSource()], e.GetTarget())
	}
	// A loop's way out (its head's edge past the body) goes below the
	// body: for a way back u → head, the head's edges to nodes written
	// after u count as leaving u too.
	for _, e := range g.GetEdges() {
		u, head := e.GetSource(), e.GetTarget()
		if index[head] >= index[u] {
			continue
		}
		for _, x := range out[head] {
			if index[x] > index[u] {
				out[u] = append(out[u], x)
			}
		}
	}
	for i, n := range g.GetNodes() {
		for _, t := range out[n.GetId()] {
			if j, ok := index[t]; ok && j > i && rank[j] < rank[i]+1 {
				rank[j] = rank[i] + 1
			}
		}
	}
	rows := map[int][]int{}
	maxRank, widest := 0, 1
	for i := range g.GetNodes() {
		rows[rank[i]] = append(rows[rank[i]], i)
		maxRank = max(maxRank, rank[i])
		widest = max(widest, len(rows[rank[i]]))
	}
	w := 2*flowMargin + float64(widest)*flowNodeW + float64(widest-1)*flowGapX + 40 // room for the loops' way back
	places := map[string]*flowPlace{}
	for r := 0; r <= maxRank; r++ {
		row := rows[r]
		rowW := float64(len(row))*flowNodeW + float64(len(row)-1)*flowGapX
		x0 := (w - 40 - rowW) / 2
		for k, i := range row {
			n := g.GetNodes()[i]
			places[n.GetId()] = &flowPlace{x: x0 + float64(k)*(flowNodeW+flowGapX), y: flowMargin + float64(r)*(flowNodeH+flowGapY), node: n}
		}
	}
	h := 2*flowMargin + float64(maxRank+1)*flowNodeH + float64(maxRank)*flowGapY
	return places, w, h
}

// flowGraph draws g; taken are the ids of the nodes a run went through.
func flowGraph(g *platformv1.FlowGraph, taken []string) template.HTML {
	if len(g.GetNodes()) == 0 {
		return ""
	}
	lit := map[string]bool{}
	for _, id := range taken {
		lit[id] = true
	}
	places, w, h := flowLayout(g)
	var b strings.Builder
	steps := len(g.GetNodes()) - 2
	// Drawn at its own size (narrower on a phone, never larger): the
	// width attribute, which the style sheet caps at 100%.
	svgOpenSized(&b, "flow", "The automation's flow", fmt.Sprintf("%d steps from start to end, with %d branches.", max(steps, 0), countDecisions(g)), w, h)
	b.WriteString(`<defs><marker id="flow-arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" class="flow-arrowhead"/></marker></defs>`)
	for _, e := range g.GetEdges() {
		flowEdge(&b, places, e, w, lit[e.GetSource()] && lit[e.GetTarget()])
	}
	for _, n := range g.GetNodes() {
		flowNode(&b, places[n.GetId()], lit[n.GetId()])
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String()) //nolint:gosec // G203: every text in it is escaped
}

func countDecisions(g *platformv1.FlowGraph) int {
	n := 0
	for _, x := range g.GetNodes() {
		if x.GetType() == platformv1.FlowNodeType_FLOW_NODE_TYPE_DECISION {
			n++
		}
	}
	return n
}

func flowEdge(b *strings.Builder, places map[string]*flowPlace, e *platformv1.FlowEdge, w float64, lit bool) {
	s, t := places[e.GetSource()], places[e.GetTarget()]
	if s == nil || t == nil {
		return
	}
	cls := "flow-edge"
	if lit {
		cls += " taken"
	}
	x1, y1 := s.x+flowNodeW/2, s.y+flowNodeH
	x2, y2 := t.x+flowNodeW/2, t.y
	var mx, my float64
	if t.y <= s.y {
		// Back up to a loop: out of the right side, along the margin, into
		// the loop's right side.
		xr := w - 20
		x1, y1 = s.x+flowNodeW, s.y+flowNodeH/2
		x2, y2 = t.x+flowNodeW, t.y+flowNodeH/2
		fmt.Fprintf(b, `<path class="%s" d="M%.1f,%.1f H%.1f V%.1f H%.1f" marker-end="url(#flow-arrow)"/>`, cls, x1, y1, xr, y2, x2)
		mx, my = xr-4, (y1+y2)/2
	} else {
		midY := y1 + (y2-y1)/2
		fmt.Fprintf(b, `<path class="%s" d="M%.1f,%.1f V%.1f H%.1f V%.1f" marker-end="url(#flow-arrow)"/>`, cls, x1, y1, min(midY, y1+flowGapY/2), x2, y2)
		mx, my = x2+6, y2-6
	}
	if c := e.GetCondition(); c != "" {
		fmt.Fprintf(b, `<text class="flow-cond" x="%.1f" y="%.1f">%s</text>`, mx, my, esc(c))
	}
}

func flowNode(b *strings.Builder, p *flowPlace, lit bool) {
	if p == nil {
		return
	}
	n := p.node
	cls := "flow-node flow-" + strings.ToLower(strings.TrimPrefix(n.GetType().String(), "FLOW_NODE_TYPE_"))
	if lit {
		cls += " taken"
	}
	x, y, w, h := p.x, p.y, flowNodeW, flowNodeH
	label := n.GetLabel()
	switch n.GetType() {
	case platformv1.FlowNodeType_FLOW_NODE_TYPE_START:
		label = "Start"
	case platformv1.FlowNodeType_FLOW_NODE_TYPE_END:
		label = "End"
	}
	fmt.Fprintf(b, `<g class="%s" data-node="%s"><title>%s</title>`, cls, esc(n.GetId()), esc(label))
	switch n.GetType() {
	case platformv1.FlowNodeType_FLOW_NODE_TYPE_START, platformv1.FlowNodeType_FLOW_NODE_TYPE_END:
		fmt.Fprintf(b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" rx="%.1f"/>`, x+w/4, y, w/2, h, h/2)
	case platformv1.FlowNodeType_FLOW_NODE_TYPE_DECISION:
		fmt.Fprintf(b, `<polygon points="%.1f,%.1f %.1f,%.1f %.1f,%.1f %.1f,%.1f %.1f,%.1f %.1f,%.1f"/>`,
			x+14, y, x+w-14, y, x+w, y+h/2, x+w-14, y+h, x+14, y+h, x, y+h/2)
	case platformv1.FlowNodeType_FLOW_NODE_TYPE_INPUT, platformv1.FlowNodeType_FLOW_NODE_TYPE_OUTPUT:
		fmt.Fprintf(b, `<polygon points="%.1f,%.1f %.1f,%.1f %.1f,%.1f %.1f,%.1f"/>`, x+12, y, x+w, y, x+w-12, y+h, x, y+h)
	default:
		fmt.Fprintf(b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" rx="4"/>`, x, y, w, h)
	}
	fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text></g>`, x+w/2, y+h/2+5, esc(ellipsis(label, flowLabelChars)))
}

// automationFlow is the flow graph of an automation's published version;
// nil when it was never published (or the graph cannot be read: the
// page then goes without it, and says why when the service does).
func (c *Console) automationFlow(s *sess, ws, id string) *platformv1.AutomationVisualization {
	v, err := c.automations.GetAutomationVisualization(s.ctx, &platformv1.GetAutomationVisualizationRequest{OrganizationId: s.OrganizationID, WorkspaceId: ws, AutomationId: id})
	if err != nil {
		if status.Code(err) != codes.NotFound && status.Code(err) != codes.FailedPrecondition {
			c.opts.Logger.Warn("console: flow graph", "automation", id, "err", err)
		}
		return nil
	}
	return v
}
