package server_test

import (
	"context"
	"io"
	"net"
	"os"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"

	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/server"
	"github.com/proserun/prose/server/app"
	"github.com/proserun/prose/server/testenv"
	"github.com/proserun/prose/store"
)

// BenchmarkIdleEventStreams opens PROSE_BENCH_STREAMS (default 10,000)
// gRPC event streams on one thread of one server (SQLite, gRPC over
// loopback TCP, 10 client connections), measures the memory they hold
// while idle (heap and stacks after a GC, client and server in this one
// process: an upper bound of the server's share), then writes
// PROSE_BENCH_MESSAGES (default 10) user messages one after the other and
// measures, for every stream, the time from the start of the write to the
// stream receiving the message. Then it closes the streams, and opens and
// closes as many again: the memory after each round shows what the
// streams leave behind. Run once: -benchtime 1x.
func BenchmarkIdleEventStreams(b *testing.B) {
	n := envInt("PROSE_BENCH_STREAMS", 10000)
	messages := envInt("PROSE_BENCH_MESSAGES", 10)
	ctx := context.Background()
	a, err := app.New(ctx, app.Config{Addr: "127.0.0.1:0", Data: b.TempDir(), LogLevel: "error"}, testenv.Discard(), io.Discard)
	if err != nil {
		b.Fatal(err)
	}
	defer a.Close()
	init, err := app.Bootstrap(ctx, a.Store, app.InitOptions{Organization: "Bench org", Email: "bench@example.test", Workspace: "Ops"})
	if err != nil {
		b.Fatal(err)
	}
	auto, err := a.Store.CreateAutomation(ctx, store.Automation{OrganizationID: init.OrganizationID, WorkspaceID: init.WorkspaceID, ID: "bench",
		DisplayName: "Bench", Code: "the output x is 1\n", AuthorID: init.UserID})
	if err != nil {
		b.Fatal(err)
	}
	a.StopEngine() // the run stays pending: the thread is all that matters
	run, _, err := a.Store.CreateRun(ctx, store.Run{OrganizationID: init.OrganizationID, WorkspaceID: init.WorkspaceID, AutomationID: auto.ID,
		Stage: store.StageDraft, StageVersion: auto.Version, Steps: []byte{}})
	if err != nil {
		b.Fatal(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	go func() { _ = a.GRPC.Serve(lis) }()
	defer a.GRPC.Stop()
	conns := make([]*grpc.ClientConn, 10)
	for i := range conns {
		if conns[i], err = grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials())); err != nil {
			b.Fatal(err)
		}
		defer conns[i].Close()
	}
	events := a.Services.Events.(interface{ Streams() int })
	req := &platformv1.StreamEventsRequest{OrganizationId: init.OrganizationID, WorkspaceId: init.WorkspaceID, AutomationId: auto.ID, RunId: run.ID, AgentId: "prose"}

	type receipt struct {
		msg int
		at  time.Time
	}
	// open opens n streams whose receivers report each user message.
	open := func(got chan<- receipt) (closeAll func()) {
		sctx, cancel := context.WithCancel(evCtx(init.APIKey))
		var wg sync.WaitGroup
		for i := range n {
			c := platformv1.NewEventServiceClient(conns[i%len(conns)])
			s, err := c.StreamEvents(sctx, req)
			if err != nil {
				b.Fatal(err)
			}
			wg.Go(func() {
				for {
					m, err := s.Recv()
					if err != nil {
						return
					}
					k, _ := strconv.Atoi(m.GetEvent().GetUserMessage().GetContent())
					got <- receipt{msg: k, at: time.Now()}
				}
			})
		}
		for events.Streams() != n {
			time.Sleep(10 * time.Millisecond)
		}
		return func() {
			cancel()
			wg.Wait()
			for events.Streams() != 0 {
				time.Sleep(10 * time.Millisecond)
			}
		}
	}
	th := store.Thread{OrganizationID: init.OrganizationID, WorkspaceID: init.WorkspaceID, AutomationID: auto.ID, RunID: run.ID, AgentID: "prose"}

	before := heapAndStacks()
	b.ResetTimer()
	got := make(chan receipt, 1024)
	closeAll := open(got)
	idle := heapAndStacks()
	perStream := float64(idle-before) / float64(n)

	// Event to subscriber: a user message is written (as CreateEvent
	// writes it, without the agent's answer) and announced as a write of
	// this process or a notice of another replica is; every stream must
	// receive it before the next one.
	var lat []time.Duration
	cpu0 := testenv.ProcessCPU()
	for k := 1; k <= messages; k++ {
		payload, err := proto.Marshal(&platformv1.Event{State: platformv1.Event_STATE_COMPLETE,
			Payload: &platformv1.Event_UserMessage{UserMessage: &platformv1.UserMessage{Content: strconv.Itoa(k)}}})
		if err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		e, err := a.Store.CreateEvent(ctx, store.Event{Thread: th, Payload: payload})
		if err != nil {
			b.Fatal(err)
		}
		a.Services.Events.(*server.EventService).EventChanged(th.Key(), e.Offset)
		for range n {
			r := <-got
			if r.msg != k {
				b.Fatalf("message %d arrived while waiting for %d", r.msg, k)
			}
			lat = append(lat, r.at.Sub(start))
		}
	}
	cpu := testenv.ProcessCPU() - cpu0
	b.StopTimer()
	closeAll()
	after := heapAndStacks()
	// A second round: what the first left behind must not grow.
	go func() {
		for range got {
		}
	}()
	open(got)()
	after2 := heapAndStacks()
	close(got)

	slices.Sort(lat)
	pct := func(p float64) time.Duration { return lat[min(len(lat)-1, int(p*float64(len(lat))))] }
	b.ReportMetric(perStream, "B/idle-stream")
	b.ReportMetric(float64(pct(0.50).Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(pct(0.99).Microseconds())/1000, "p99-ms")
	b.ReportMetric(float64(pct(1).Microseconds())/1000, "max-ms")
	b.ReportMetric(float64(cpu.Microseconds())/float64(len(lat)), "cpu-us/delivery")
	b.Logf("%d streams: heap+stacks %.1f MiB before, %.1f MiB idle (%.0f B/stream), %.1f MiB after they closed, %.1f MiB after a second round; %d deliveries: p50 %v, p99 %v, max %v; CPU (client and server) %v, %.1f µs per delivery",
		n, mib(before), mib(idle), perStream, mib(after), mib(after2), len(lat), pct(0.5), pct(0.99), pct(1), cpu, float64(cpu.Microseconds())/float64(len(lat)))
}

func heapAndStacks() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse + m.StackInuse
}

func mib(v uint64) float64 { return float64(v) / (1 << 20) }

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}
