package main

import (
	"context"
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

	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/server"
	"github.com/proserun/prose/store"
)

// BenchmarkIdleEventStreams opens PROSE_BENCH_STREAMS (default 10,000)
// gRPC event streams on one thread of one server (SQLite, gRPC over
// loopback TCP, 10 client connections), measures the memory they hold
// while idle (heap and stacks after a GC, client and server in this one
// process: an upper bound of the server's share), then writes
// PROSE_BENCH_MESSAGES (default 10) user messages and measures, for every
// stream, the time from the CreateEvent call to the stream receiving the
// message. Run once: -benchtime 1x. After the streams are closed, the
// memory must come back (the subscriptions are released).
func BenchmarkIdleEventStreams(b *testing.B) {
	n := envInt("PROSE_BENCH_STREAMS", 10000)
	messages := envInt("PROSE_BENCH_MESSAGES", 10)
	ctx := context.Background()
	a, err := newApp(ctx, serveConfig{addr: "127.0.0.1:0", data: b.TempDir(), logLevel: "error"}, slogDiscard(), os.Stderr)
	if err != nil {
		b.Fatal(err)
	}
	defer a.Close()
	init, err := bootstrap(ctx, a.store, initOptions{organization: "Bench org", email: "bench@example.test", workspace: "Ops"})
	if err != nil {
		b.Fatal(err)
	}
	auto, err := a.store.CreateAutomation(ctx, store.Automation{OrganizationID: init.orgID, WorkspaceID: init.workspaceID, ID: "bench",
		DisplayName: "Bench", Code: "the output x is 1\n", AuthorID: init.userID})
	if err != nil {
		b.Fatal(err)
	}
	a.stopEngine() // the run stays pending: the thread is all that matters
	run, _, err := a.store.CreateRun(ctx, store.Run{OrganizationID: init.orgID, WorkspaceID: init.workspaceID, AutomationID: auto.ID,
		Stage: store.StageDraft, StageVersion: auto.Version, Steps: []byte{}})
	if err != nil {
		b.Fatal(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	go func() { _ = a.grpc.Serve(lis) }()
	defer a.grpc.Stop()
	conns := make([]*grpc.ClientConn, 10)
	for i := range conns {
		if conns[i], err = grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials())); err != nil {
			b.Fatal(err)
		}
		defer conns[i].Close()
	}
	events := a.services.Events.(interface{ Streams() int })
	req := &platformv1.StreamEventsRequest{OrganizationId: init.orgID, WorkspaceId: init.workspaceID, AutomationId: auto.ID, RunId: run.ID, AgentId: "prose"}

	before := heapAndStacks()
	b.ResetTimer()
	sctx, cancel := context.WithCancel(evCtx(init.APIKey))
	type receipt struct {
		msg int
		at  time.Time
	}
	got := make(chan receipt, 1024)
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
				if um := m.GetEvent().GetUserMessage(); um != nil {
					k, _ := strconv.Atoi(um.GetContent())
					got <- receipt{msg: k, at: time.Now()}
				}
			}
		})
	}
	for events.Streams() != n {
		time.Sleep(10 * time.Millisecond)
	}
	idle := heapAndStacks()
	perStream := float64(idle-before) / float64(n)

	// Event to subscriber: every stream must receive every message.
	c := platformv1.NewEventServiceClient(conns[0])
	var lat []time.Duration
	for k := 1; k <= messages; k++ {
		start := time.Now()
		if _, err := c.CreateEvent(evCtx(init.APIKey), &platformv1.CreateEventRequest{OrganizationId: init.orgID, WorkspaceId: init.workspaceID,
			AutomationId: auto.ID, RunId: run.ID, AgentId: "prose",
			Event: &platformv1.Event{Payload: &platformv1.Event_UserMessage{UserMessage: &platformv1.UserMessage{Content: strconv.Itoa(k)}}}}); err != nil {
			b.Fatal(err)
		}
		for range n {
			r := <-got
			if r.msg != k {
				b.Fatalf("message %d arrived while waiting for %d", r.msg, k)
			}
			lat = append(lat, r.at.Sub(start))
		}
		// The agent answers each message (more events to every stream):
		// let it finish before the next.
		a.services.Events.(*server.EventService).Runner().Wait()
	}
	b.StopTimer()
	cancel()
	wg.Wait()
	for events.Streams() != 0 {
		time.Sleep(10 * time.Millisecond)
	}
	after := heapAndStacks()
	slices.Sort(lat)
	pct := func(p float64) time.Duration { return lat[min(len(lat)-1, int(p*float64(len(lat))))] }
	b.ReportMetric(perStream, "B/idle-stream")
	b.ReportMetric(float64(pct(0.50).Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(pct(0.99).Microseconds())/1000, "p99-ms")
	b.ReportMetric(float64(pct(1).Microseconds())/1000, "max-ms")
	b.Logf("%d streams: heap+stacks %.1f MiB before, %.1f MiB idle (%.0f B/stream), %.1f MiB after they closed; %d deliveries: p50 %v, p99 %v, max %v",
		n, mib(before), mib(idle), perStream, mib(after), len(lat), pct(0.5), pct(0.99), pct(1))
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
