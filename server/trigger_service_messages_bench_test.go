package server

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/internal/engine"
	"github.com/proserun/prose/store"
	"github.com/proserun/prose/store/sqlite"
)

// countingInvoker counts the runs created.
type countingInvoker struct {
	eng     *engine.Engine
	created atomic.Int64
}

func (c *countingInvoker) Invoke(ctx context.Context, req engine.InvokeRequest) (store.Run, bool, error) {
	r, created, err := c.eng.Invoke(ctx, req)
	if created {
		c.created.Add(1)
	}
	return r, created, err
}

func benchStore(b *testing.B) (store.Store, *engine.Engine, store.Automation) {
	b.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	org, err := st.CreateOrganization(ctx, store.Organization{DisplayName: "Acme"})
	if err != nil {
		b.Fatal(err)
	}
	ws, err := st.CreateWorkspace(ctx, store.Workspace{OrganizationID: org.ID, Title: "ops"})
	if err != nil {
		b.Fatal(err)
	}
	a, err := st.CreateAutomation(ctx, store.Automation{OrganizationID: org.ID, WorkspaceID: ws.ID, DisplayName: "a", Code: "the output x is the amount\n"})
	if err != nil {
		b.Fatal(err)
	}
	return st, engine.New(st, engine.Options{}), a
}

// BenchmarkNATSMessagesToRuns: messages published to NATS (distinct ids),
// each becoming a pending run on SQLite through a message trigger (read
// through JetStream: a stream and a durable consumer Prose makes).
// msgs/s is messages in, runs created, per second.
func BenchmarkNATSMessagesToRuns(b *testing.B) {
	if c, err := net.DialTimeout("tcp", "127.0.0.1:4222", time.Second); err != nil {
		b.Skipf("NATS is not running on 127.0.0.1:4222: %v", err)
	} else {
		c.Close()
	}
	st, eng, a := benchStore(b)
	ctx := context.Background()
	subject := "prose-bench-" + store.NewID()
	// The stream Prose made for the subject goes after the subscription
	// (cleanups run last first: this one after m.closeAll).
	b.Cleanup(func() {
		nc, err := nats.Connect(DefaultNATSURL)
		if err != nil {
			return
		}
		defer nc.Close()
		js, _ := jetstream.New(nc)
		if name, err := js.StreamNameBySubject(context.Background(), subject); err == nil {
			_ = js.DeleteStream(context.Background(), name)
		}
	})
	cfg, _ := encodeTriggerConfig(map[string]*platformv1.BdkValue{
		"subject": {Kind: &platformv1.BdkValue_TextValue{TextValue: subject}}}, nil)
	inst, err := st.CreateTriggerInstance(ctx, store.TriggerInstance{OrganizationID: a.OrganizationID, WorkspaceID: a.WorkspaceID,
		BookName: NATSBook, ConnectionID: "bus", TriggerID: "message", Configuration: cfg, AutomationIDs: []string{a.ID}})
	if err != nil {
		b.Fatal(err)
	}
	m := NewMessageTriggers(st, eng, slog.New(slog.DiscardHandler))
	m.AllowPrivateNetworks(true)          // the broker is on loopback
	m.SetRate(TriggerRate{PerSecond: -1}) // the path's own pace, not the trigger rate's
	inv := &countingInvoker{eng: eng}
	m.inv = inv
	if err := m.Sync(ctx); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(m.closeAll)
	_ = inst
	nc, err := nats.Connect(DefaultNATSURL)
	if err != nil {
		b.Fatal(err)
	}
	defer nc.Close()
	b.ResetTimer()
	start := time.Now()
	for i := range b.N {
		msg := nats.NewMsg(subject)
		msg.Header.Set(nats.MsgIdHdr, fmt.Sprintf("bench-%d", i))
		msg.Data = fmt.Appendf(nil, `{"amount":%d}`, i)
		if err := nc.PublishMsg(msg); err != nil {
			b.Fatal(err)
		}
	}
	for inv.created.Load() < int64(b.N) {
		time.Sleep(time.Millisecond)
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "msgs/s")
}

// BenchmarkInvokeRuns is the reference for BenchmarkNATSMessagesToRuns:
// the same runs created by calling the engine directly, one at a time (as
// one subscription does).
func BenchmarkInvokeRuns(b *testing.B) {
	_, eng, a := benchStore(b)
	ctx := context.Background()
	b.ResetTimer()
	start := time.Now()
	for i := range b.N {
		_, _, err := eng.Invoke(ctx, engine.InvokeRequest{OrganizationID: a.OrganizationID, WorkspaceID: a.WorkspaceID, AutomationID: a.ID,
			Stage: store.StageDraft, RequestID: fmt.Sprintf("direct-%d", i)})
		if err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "runs/s")
}
