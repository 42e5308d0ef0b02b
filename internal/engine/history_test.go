package engine_test

import (
	"context"
	"strings"
	"testing"

	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/internal/codec"
	"github.com/proserun/prose/internal/engine"
	"github.com/proserun/prose/store"
)

// TestHistoryIsBounded: a run that says more lines than the history holds
// records the first MaxEvents, then one HistoryTruncated entry, and
// nothing more; a line longer than an entry is cut there. The run itself
// is not affected.
func TestHistoryIsBounded(t *testing.T) {
	for _, inline := range []bool{true, false} {
		name := "worker"
		if inline {
			name = "inline"
		}
		t.Run(name, func(t *testing.T) {
			opts := engine.Options{History: engine.HistoryLimits{MaxEvents: 100, MaxEventBytes: 1024}}
			if !inline {
				opts.InlineWindow = -1
			}
			e := newEnv(t, opts)
			e.start(t)
			a := e.automation(t, "say the long line\nprocess each item as follows\n  say \"line \" + the item\nthe output is \"done\"\n")
			items := &platformv1.List{}
			for i := range 1000 {
				items.Items = append(items.Items, &platformv1.Value{Kind: &platformv1.Value_Number{Number: &platformv1.Number{Lo: uint32(i)}}})
			}
			long := strings.Repeat("é", 1000) // 2,000 bytes
			r, _, err := e.eng.Invoke(context.Background(), engine.InvokeRequest{OrganizationID: e.org, WorkspaceID: e.ws, AutomationID: a.ID, Stage: store.StageDraft,
				Inputs: map[string]*platformv1.Value{"items": {Kind: &platformv1.Value_List{List: items}}, "long line": text(long)}})
			if err != nil {
				t.Fatal(err)
			}
			done := e.waitFor(t, a, r.ID, store.RunCompleted)
			if done.HistoryEvents != 101 {
				t.Errorf("history_events = %d, want 101", done.HistoryEvents)
			}
			var says, truncated int
			token := ""
			for {
				p, err := e.st.ListRunEvents(context.Background(), store.ListRunEventsRequest{RunID: r.ID, PageSize: 1000, PageToken: token})
				if err != nil {
					t.Fatal(err)
				}
				for _, ev := range p.Items {
					if ev.Kind != store.RunEventEngine {
						continue
					}
					h, err := codec.DecodeHistoryEvent(ev.Data)
					if err != nil {
						t.Fatal(err)
					}
					switch {
					case h.Said != nil:
						if says == 0 && (len(*h.Said) > 1024 || h.SaidBytes != 2000 || !strings.HasPrefix(long, *h.Said) || len(*h.Said) < 1022) {
							t.Errorf("the long line: %d bytes kept of %d", len(*h.Said), h.SaidBytes)
						}
						if says == 1 && *h.Said != "line 0" {
							t.Errorf("second line %q", *h.Said)
						}
						says++
					case h.TruncatedAt == 100 && ev.NodeKind == engine.NodeKindTruncated:
						truncated++
					default:
						t.Errorf("entry %+v", ev)
					}
				}
				if token = p.NextPageToken; token == "" {
					break
				}
			}
			if says != 100 || truncated != 1 {
				t.Errorf("%d says and %d truncation entries, want 100 and 1", says, truncated)
			}
		})
	}
}
