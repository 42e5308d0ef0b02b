package storetest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/proserun/prose/store"
)

// BenchCreateRunsCompleted measures the store's part of a run executed at
// its creation (engine/inline.go): runs created completed, in batches of
// batch runs (CreateRuns, one transaction a batch, as the engine's
// creator writes them), each having said say lines. b.N is the number of
// runs; ns/op is the store's cost of one run.
func BenchCreateRunsCompleted(b *testing.B, st store.Store, batch, say int) {
	ctx := context.Background()
	a := benchAutomation(b, st, strings.Repeat("say \"a line\"\n", say)+"the output result is 42\n")
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
			in = append(in, store.Run{OrganizationID: a.OrganizationID, WorkspaceID: a.WorkspaceID, AutomationID: a.ID, Stage: store.StageDraft, StageVersion: a.Version,
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

// BenchCreateClaimFinish measures the worker path of a run in the store:
// runs created pending in batches of batch (CreateRuns), claimed batch at a
// time (ClaimRuns) and finished completed batch at a time (FinishRuns).
// One op is one run through the three.
func BenchCreateClaimFinish(b *testing.B, st store.Store, batch int) {
	ctx := context.Background()
	a := benchAutomation(b, st, "the output result is 42\n")
	in := make([]store.Run, 0, batch)
	b.ReportAllocs()
	b.ResetTimer()
	for done := 0; done < b.N; {
		in = in[:0]
		for i := 0; i < batch && done+i < b.N; i++ {
			in = append(in, store.Run{OrganizationID: a.OrganizationID, WorkspaceID: a.WorkspaceID, AutomationID: a.ID, Stage: store.StageDraft, StageVersion: a.Version,
				RequestID: fmt.Sprintf("req-%d", done+i)})
		}
		if _, _, _, err := st.CreateRuns(ctx, in); err != nil {
			b.Fatal(err)
		}
		claimed, err := st.ClaimRuns(ctx, "bench", len(in), time.Now().Add(time.Minute))
		if err != nil {
			b.Fatal(err)
		}
		if len(claimed) != len(in) {
			b.Fatalf("claimed %d of %d", len(claimed), len(in))
		}
		ids := make([]string, len(claimed))
		outs := make([]store.RunOutcome, len(claimed))
		for i, r := range claimed {
			ids[i] = r.ID
			outs[i] = store.RunOutcome{State: store.RunCompleted, Outputs: []byte(`{"result":42}`), Step: 1}
		}
		errs, err := st.FinishRuns(ctx, "bench", ids, outs)
		if err != nil {
			b.Fatal(err)
		}
		for i, e := range errs {
			if e != nil {
				b.Fatalf("finish %d: %v", i, e)
			}
		}
		done += len(in)
	}
}

// benchAutomation makes an organization, a workspace and in it an
// automation of code, for a benchmark.
func benchAutomation(b *testing.B, st store.Store, code string) store.Automation {
	ctx := context.Background()
	org, err := st.CreateOrganization(ctx, store.Organization{DisplayName: "Acme"})
	if err != nil {
		b.Fatal(err)
	}
	ws, err := st.CreateWorkspace(ctx, store.Workspace{OrganizationID: org.ID, Title: "ops"})
	if err != nil {
		b.Fatal(err)
	}
	a, err := st.CreateAutomation(ctx, store.Automation{OrganizationID: org.ID, WorkspaceID: ws.ID, DisplayName: "bench", Code: code})
	if err != nil {
		b.Fatal(err)
	}
	return a
}
