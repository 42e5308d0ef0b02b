package storetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/proserun/prose/store"
)

// The insights benchmark's data: BenchInsightsRuns runs of
// BenchInsightsAutomations automations (BenchInsightsAutomations /
// BenchInsightsWorkspaces per workspace) in one organization, created one
// after the other over BenchInsightsDays days from BenchInsightsStart (run
// i: automation i % BenchInsightsAutomations). States by i % 20: 0–13
// completed (those with i % 5 = 0 after a person's guidance), 14–15
// failed, 16 awaiting guidance, 17–19 stopped.
const (
	BenchInsightsOrg         = "bench"
	BenchInsightsWorkspaces  = 10
	BenchInsightsAutomations = 100
	BenchInsightsRuns        = 10_000_000
	BenchInsightsDays        = 365
)

// BenchInsightsStart is when the first run of the benchmark was created.
var BenchInsightsStart = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// BenchInsightsStep is the time between two runs' creation.
const BenchInsightsStep = time.Duration(BenchInsightsDays) * 24 * time.Hour / BenchInsightsRuns

// BenchInsightsWorkspaceID is the id of workspace i.
func BenchInsightsWorkspaceID(i int) string { return fmt.Sprintf("w%d", i) }

// BenchInsightsAutomationID is the id of automation i (in workspace
// i / (BenchInsightsAutomations / BenchInsightsWorkspaces)).
func BenchInsightsAutomationID(i int) string { return fmt.Sprintf("a%02d", i) }

// SeedInsightsParents creates the benchmark's organization, workspaces and
// automations, and an estimate for every automation.
func SeedInsightsParents(tb testing.TB, st store.Store) {
	tb.Helper()
	ctx := context.Background()
	if _, err := st.CreateOrganization(ctx, store.Organization{ID: BenchInsightsOrg}); err != nil {
		tb.Fatal(err)
	}
	per := BenchInsightsAutomations / BenchInsightsWorkspaces
	for w := range BenchInsightsWorkspaces {
		ws := BenchInsightsWorkspaceID(w)
		if _, err := st.CreateWorkspace(ctx, store.Workspace{OrganizationID: BenchInsightsOrg, ID: ws, Title: "Workspace " + ws}); err != nil {
			tb.Fatal(err)
		}
		var es []store.AutomationEstimate
		for a := w * per; a < (w+1)*per; a++ {
			id := BenchInsightsAutomationID(a)
			if _, err := st.CreateAutomation(ctx, store.Automation{OrganizationID: BenchInsightsOrg, WorkspaceID: ws, ID: id,
				DisplayName: "Automation " + id, Code: "the output x is 1\n"}); err != nil {
				tb.Fatal(err)
			}
			es = append(es, store.AutomationEstimate{AutomationID: id, CostUSD: fmt.Sprintf("%d.25", a), TimeSavedSecs: int32(60 + a)})
		}
		if _, err := st.SetAutomationEstimates(ctx, BenchInsightsOrg, ws, es); err != nil {
			tb.Fatal(err)
		}
	}
}

// BenchInsightsWorkspaceOf is the workspace of automation i.
func BenchInsightsWorkspaceOf(i int) int {
	return i / (BenchInsightsAutomations / BenchInsightsWorkspaces)
}
