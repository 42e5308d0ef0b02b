package server_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	bookv1 "github.com/proserun/prose/gen/prose/book/v1"
	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/internal/codec"
	"github.com/proserun/prose/internal/codec/protovalue"
	"github.com/proserun/prose/internal/engine"
	"github.com/proserun/prose/internal/lang"
	"github.com/proserun/prose/server/app"
	"github.com/proserun/prose/server/testenv"
	"github.com/proserun/prose/store"
	"github.com/proserun/prose/store/storetest"
)

// benchCode is a ten-statement automation with one book call.
const benchCode = `get the amount
the ticket is "T-" + the amount
stamp the ticket
the output stamp is the above
the rate is 0.02
the output fee is the amount * the rate
if the amount is greater than 1000 then
  the output fee is the output fee + 5
the output total is the amount + the output fee
say "Total: " + the output total
`

// BenchmarkReplay replays PROSE_BENCH_REPLAY_RUNS (default 10,000)
// recorded runs of benchCode's published version against a draft that
// changes the fee of amounts over 1000 (about half of them): one
// :replay, in the background, polled until it ends, on SQLite in
// process. The runs are written to the store as the engine writes them
// (steps, the book result in the journal, outputs); the workspace's stamp
// book fails every call, and the benchmark fails if it was called. Run
// once: go test ./server -run '^$' -bench BenchmarkReplay -benchtime 1x
func BenchmarkReplay(b *testing.B) {
	n := envInt("PROSE_BENCH_REPLAY_RUNS", 10000)
	ctx := context.Background()
	a, err := app.New(ctx, app.Config{Addr: "127.0.0.1:0", Data: b.TempDir(), LogLevel: "error"}, testenv.Discard(), io.Discard)
	if err != nil {
		b.Fatal(err)
	}
	defer a.Close()
	a.StopEngine() // the runs are written here, as the engine would
	init, err := app.Bootstrap(ctx, a.Store, app.InitOptions{Organization: "Bench org", Email: "bench@example.test", Workspace: "Ops"})
	if err != nil {
		b.Fatal(err)
	}
	var calls atomic.Int64
	book := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		calls.Add(1)
		http.Error(w, "a replay calls no book", http.StatusInternalServerError)
	}))
	defer book.Close()
	org, ws := init.OrganizationID, init.WorkspaceID
	if _, err := a.Services.Books.CreateWorkspaceBook(ctx, &bookv1.CreateWorkspaceBookRequest{OrganizationId: org, WorkspaceId: ws,
		Book: testenv.StampBook(book.URL)}); err != nil {
		b.Fatal(err)
	}
	auto, err := a.Store.CreateAutomation(ctx, store.Automation{OrganizationID: org, WorkspaceID: ws, ID: "fees", DisplayName: "Fees", Code: benchCode})
	if err != nil {
		b.Fatal(err)
	}
	if auto, err = a.Store.PublishAutomation(ctx, org, ws, auto.ID, ""); err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	changed := recordRuns(b, a.Store, auto, n)
	b.Logf("wrote %d runs in %v", n, time.Since(start).Round(time.Millisecond))
	if _, err := a.Store.UpdateAutomation(ctx, store.Automation{OrganizationID: org, WorkspaceID: ws, ID: auto.ID,
		Code: strings.Replace(benchCode, "+ 5", "+ 7", 1)}, []string{"code"}); err != nil {
		b.Fatal(err)
	}
	req := &platformv1.ReplayAutomationRequest{OrganizationId: org, WorkspaceId: ws, AutomationId: auto.ID, RunCount: int32(n)}
	get := &platformv1.GetAutomationReplayRequest{OrganizationId: org, WorkspaceId: ws, AutomationId: auto.ID}
	b.ResetTimer()
	cpu := storetest.StartCPU(nil)
	for range b.N {
		t0 := time.Now()
		rep, err := a.Services.Tests.ReplayAutomation(ctx, req)
		for err == nil && rep.GetState() == platformv1.AutomationReplay_STATE_RUNNING {
			time.Sleep(5 * time.Millisecond) // a benchmark's poll of the background replay
			rep, err = a.Services.Tests.GetAutomationReplay(ctx, get)
		}
		wall := time.Since(t0)
		if err != nil {
			b.Fatal(err)
		}
		if rep.GetReplayedCount() != int32(n) || rep.GetOutputsDifferCount() != int32(changed) || rep.GetUnchangedCount() != int32(n-changed) {
			b.Fatalf("replay: %v (want %d changed)", rep, changed)
		}
		b.ReportMetric(wall.Seconds(), "s/replay")
		b.ReportMetric(float64(wall.Microseconds())/float64(n), "µs/run")
	}
	cpu.Report(b)
	if c := calls.Load(); c != 0 {
		b.Fatalf("the replay called the book %d times", c)
	}
}

// stampBooks answers the stamp book's calls while runs are recorded, and
// keeps each call as the engine journals it.
type stampBooks struct{ journal []store.JournalEntry }

func (s *stampBooks) Lookup(context.Context, string) ([]lang.BookProcedure, error) {
	return []lang.BookProcedure{{Book: "test.stamps@1.0.0", Name: "stamp", Signature: "stamp a ticket (the stamp)"}}, nil
}

func (s *stampBooks) Call(ctx context.Context, p lang.BookProcedure, in map[string]lang.Value) (map[string]lang.Value, error) {
	out := map[string]lang.Value{"stamp": lang.Text("S:" + in["ticket"].AsText())}
	key, err := engine.CallKey(p, in)
	if err != nil {
		return nil, err
	}
	data, err := codec.EncodeLangValues(out)
	if err != nil {
		return nil, err
	}
	seq, _ := lang.JournalIndex(ctx)
	s.journal = append(s.journal, store.JournalEntry{Step: 0, Seq: seq, Kind: "book", Key: key, Data: data})
	return out, nil
}

// recordRuns writes n completed runs of a's published version, as the
// engine leaves them, and returns how many have an amount over 1000.
func recordRuns(b *testing.B, st store.Store, a store.Automation, n int) int {
	ctx := context.Background()
	prog, err := lang.Parse(a.PublishedCode)
	if err != nil {
		b.Fatal(err)
	}
	changed := 0
	for done := 0; done < n; {
		batch := min(500, n-done)
		type rec struct {
			journal []store.JournalEntry
			outputs []byte
		}
		recs := map[string]rec{}
		for i := range batch {
			amount := (done+i)*37%2000 + 1
			if amount > 1000 {
				changed++
			}
			in := lang.Int(int64(amount))
			bk := &stampBooks{}
			res := lang.Start(ctx, prog, map[string]lang.Value{"amount": in}, lang.Options{Books: bk})
			if res.Status != lang.Completed {
				b.Fatalf("run %d: %v", i, res.Status)
			}
			pin, _ := protovalue.ToProto(in)
			steps, err := codec.EncodeSteps(nil, codec.Values{"amount": pin}, []codec.Step{{Code: a.PublishedCode, Phase: codec.PhaseMain}})
			if err != nil {
				b.Fatal(err)
			}
			outs, err := protovalue.MapToProto(res.Outputs)
			if err != nil {
				b.Fatal(err)
			}
			ob, err := codec.EncodeValues(outs)
			if err != nil {
				b.Fatal(err)
			}
			r, _, err := st.CreateRun(ctx, store.Run{OrganizationID: a.OrganizationID, WorkspaceID: a.WorkspaceID, AutomationID: a.ID,
				Stage: store.StagePublished, StageVersion: a.PublishedVersion, Steps: steps, RequestID: "bench-" + strconv.Itoa(done+i)})
			if err != nil {
				b.Fatal(err)
			}
			recs[r.ID] = rec{journal: bk.journal, outputs: ob}
		}
		claimed, err := st.ClaimRuns(ctx, "bench", batch, time.Now().Add(time.Hour))
		if err != nil || len(claimed) != batch {
			b.Fatalf("claimed %d of %d: %v", len(claimed), batch, err)
		}
		for _, r := range claimed {
			x := recs[r.ID]
			if err := st.SaveProgress(ctx, "bench", r.ID, store.Progress{Journal: x.journal}); err != nil {
				b.Fatal(err)
			}
			if _, err := st.FinishRun(ctx, "bench", r.ID, store.RunOutcome{State: store.RunCompleted, Outputs: x.outputs, Step: 1}); err != nil {
				b.Fatal(err)
			}
		}
		done += batch
	}
	return changed
}
