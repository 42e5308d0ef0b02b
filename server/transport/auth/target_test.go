package auth

import (
	"slices"
	"testing"

	legacyv2 "github.com/proserun/prose/gen/prose/legacy/v2"
	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
)

// TestTargetOfAgentID: agent_id is the legacy API's workspace, but in a
// request that has workspace_id (a conversation thread) it names an agent.
func TestTargetOfAgentID(t *testing.T) {
	for _, c := range []struct {
		req  any
		want []string
	}{
		{&legacyv2.ListProcessesRequest{AgentId: "ws1"}, []string{"ws1"}},
		{&platformv1.CreateEventRequest{OrganizationId: "o", WorkspaceId: "ws1", AgentId: "model"}, []string{"ws1"}},
		{&platformv1.ListEventsRequest{OrganizationId: "o", WorkspaceId: "ws2", AgentId: "prose"}, []string{"ws2"}},
	} {
		if got := TargetOf(c.req).WorkspaceIDs; !slices.Equal(got, c.want) {
			t.Errorf("%T: %v, want %v", c.req, got, c.want)
		}
	}
}
