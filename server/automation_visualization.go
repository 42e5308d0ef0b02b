package server

import (
	"context"
	"fmt"

	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/internal/lang"
	"github.com/proserun/prose/internal/names"
	"github.com/proserun/prose/server/transport"
)

var flowNodeTypes = map[lang.FlowKind]platformv1.FlowNodeType{
	lang.FlowStart:    platformv1.FlowNodeType_FLOW_NODE_TYPE_START,
	lang.FlowEnd:      platformv1.FlowNodeType_FLOW_NODE_TYPE_END,
	lang.FlowProcess:  platformv1.FlowNodeType_FLOW_NODE_TYPE_PROCESS,
	lang.FlowDecision: platformv1.FlowNodeType_FLOW_NODE_TYPE_DECISION,
	lang.FlowInput:    platformv1.FlowNodeType_FLOW_NODE_TYPE_INPUT,
	lang.FlowOutput:   platformv1.FlowNodeType_FLOW_NODE_TYPE_OUTPUT,
}

// GetAutomationVisualization answers the flow graph of the published
// version. It is computed from the published code on each call rather than
// stored at publish: parsing is cheap, and a graph made on read cannot be
// stale after a publish. Code that no longer parses (a published version
// older than a language change) is state FAILED with the parser's message,
// not an error: the automation itself is fine to read.
func (s *AutomationService) GetAutomationVisualization(ctx context.Context, req *platformv1.GetAutomationVisualizationRequest) (*platformv1.AutomationVisualization, error) {
	org, ws, id := req.GetOrganizationId(), req.GetWorkspaceId(), req.GetAutomationId()
	a, err := s.st.GetAutomation(ctx, org, ws, id)
	if err != nil {
		return nil, automationErr(err, org, ws, id)
	}
	if a.PublishedVersion == 0 {
		return nil, transport.FailedPrecondition(ReasonAutomationNotPublished,
			fmt.Sprintf("automation %q has never been published: a visualization shows the published version", id),
			map[string]string{"resource_name": names.Automation(org, ws, id)})
	}
	out := &platformv1.AutomationVisualization{
		Name:              names.Automation(org, ws, id) + "/visualization",
		AutomationVersion: versionStr(a.PublishedVersion),
	}
	prog, perr := lang.Parse(a.PublishedCode)
	if perr != nil {
		// The answer, not an error: the graph failed, the read did not.
		out.State = platformv1.VisualizationState_VISUALIZATION_STATE_FAILED
		out.ErrorMessage = perr.Error()
		return out, nil //nolint:nilerr // a parse failure is the state FAILED
	}
	g := prog.Flow()
	graph := &platformv1.FlowGraph{}
	for _, n := range g.Nodes {
		graph.Nodes = append(graph.Nodes, &platformv1.FlowNode{Id: n.ID, Label: n.Label, Type: flowNodeTypes[n.Kind]})
	}
	for _, e := range g.Edges {
		graph.Edges = append(graph.Edges, &platformv1.FlowEdge{Source: e.Source, Target: e.Target, Condition: e.Condition})
	}
	out.Graph = graph
	out.State = platformv1.VisualizationState_VISUALIZATION_STATE_COMPLETED
	return out, nil
}
