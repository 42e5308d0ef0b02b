package schedule

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/type/date"
	"google.golang.org/genproto/googleapis/type/timeofday"
	"google.golang.org/protobuf/proto"

	"github.com/proserun/prose/internal/engine"
	"github.com/proserun/prose/store"
	persistv1 "github.com/proserun/prose/store/persist/v1"
	"github.com/proserun/prose/store/sqlite"
)

// BenchmarkSchedulerPrecision: 100 one-time schedules due over the next
// 3 seconds, run by the real scheduler loop on SQLite with the real
// clock; reports how late each run was created after its occurrence
// (p50, p99, max in ms).
func BenchmarkSchedulerPrecision(b *testing.B) {
	ctx := context.Background()
	var late []time.Duration
	for range b.N {
		st, err := sqlite.Open(ctx, b.TempDir())
		if err != nil {
			b.Fatal(err)
		}
		org, _ := st.CreateOrganization(ctx, store.Organization{DisplayName: "Acme"})
		ws, _ := st.CreateWorkspace(ctx, store.Workspace{OrganizationID: org.ID, Title: "ops"})
		first := time.Now().UTC().Truncate(time.Second).Add(2 * time.Second)
		const n = 100
		for i := range n {
			at := first.Add(time.Duration(i%3) * time.Second)
			a, err := st.CreateAutomation(ctx, store.Automation{OrganizationID: org.ID, WorkspaceID: ws.ID, DisplayName: "a", Code: "the output x is 1\n"})
			if err != nil {
				b.Fatal(err)
			}
			cfg, _ := proto.Marshal(&persistv1.ScheduleConfig{Start: &persistv1.ScheduleStart{
				StartDate: &date.Date{Year: int32(at.Year()), Month: int32(at.Month()), Day: int32(at.Day())},
				Time:      &timeofday.TimeOfDay{Hours: int32(at.Hour()), Minutes: int32(at.Minute()), Seconds: int32(at.Second())},
			}})
			if _, err := st.CreateSchedule(ctx, store.Schedule{OrganizationID: org.ID, WorkspaceID: ws.ID, AutomationID: a.ID, Config: cfg, Enabled: true, NextTime: at}); err != nil {
				b.Fatal(err)
			}
		}
		var mu sync.Mutex
		fired := 0
		done := make(chan struct{})
		s := NewScheduler(st, engine.New(st, engine.Options{}), Options{OnFire: func(occ, started time.Time) {
			mu.Lock()
			defer mu.Unlock()
			late = append(late, started.Sub(occ))
			if fired++; fired == n {
				close(done)
			}
		}})
		runCtx, cancel := context.WithCancel(ctx)
		go s.Run(runCtx)
		<-done
		cancel()
		st.Close()
	}
	slices.Sort(late)
	q := func(p float64) float64 { return float64(late[int(p*float64(len(late)-1))]) / float64(time.Millisecond) }
	b.ReportMetric(q(0.5), "p50_ms")
	b.ReportMetric(q(0.99), "p99_ms")
	b.ReportMetric(q(1), "max_ms")
}
