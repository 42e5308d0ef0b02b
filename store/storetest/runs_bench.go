package storetest

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/proserun/prose/store"
)

// BenchCreateRunsCompleted measures the store's part of a run executed at
// its creation (engine/inline.go): runs created completed, in batches of
// batch runs (CreateRuns, one transaction a batch, as the engine's
// creator writes them), each having said say lines. b.N is the number of
// runs; ns/op is the store's cost of one run.
func BenchCreateRunsCompleted(b *testing.B, st store.Store, batch, say int) {
	ctx := context.Background()
	org, err := st.CreateOrganization(ctx, store.Organization{DisplayName: "Acme"})
	if err != nil {
		b.Fatal(err)
	}
	ws, err := st.CreateWorkspace(ctx, store.Workspace{OrganizationID: org.ID, Title: "ops"})
	if err != nil {
		b.Fatal(err)
	}
	a, err := st.CreateAutomation(ctx, store.Automation{OrganizationID: org.ID, WorkspaceID: ws.ID, DisplayName: "bench",
		Code: strings.Repeat("say \"a line\"\n", say) + "the output result is 42\n"})
	if err != nil {
		b.Fatal(err)
	}
	events := make([]store.RunEvent, say)
	for i := range events {
		events[i] = store.RunEvent{NodeKind: "Say", Data: []byte("\n\x0aa line of the run"), Location: store.Location{Start: int64(i * 13), End: int64(i*13 + 12)}}
	}
	in := make([]store.Run, 0, batch)
	b.ReportAllocs()
	b.ResetTimer()
	for done := 0; done < b.N; {
		in = in[:0]
		for i := 0; i < batch && done+i < b.N; i++ {
			in = append(in, store.Run{OrganizationID: org.ID, WorkspaceID: ws.ID, AutomationID: a.ID, Stage: store.StageDraft, StageVersion: a.Version,
				State: store.RunCompleted, Outputs: []byte(`{"result":42}`), Step: 1, Events: events,
				RequestID: fmt.Sprintf("req-%d", done+i)})
		}
		_, created, errs, err := st.CreateRuns(ctx, in)
		if err != nil {
			b.Fatal(err)
		}
		for i := range in {
			if errs[i] != nil || !created[i] {
				b.Fatalf("run %d of the batch: created %v, %v", i, created[i], errs[i])
			}
		}
		done += len(in)
	}
}
