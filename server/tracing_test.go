package server_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	otelcodes "go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc/metadata"

	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/internal/books"
	"github.com/proserun/prose/internal/testtime"
	"github.com/proserun/prose/internal/tracing"
	"github.com/proserun/prose/server/app"
	"github.com/proserun/prose/server/testenv"
)

// spanAttr is the value of a span's attribute, or "".
func spanAttr(s sdktrace.ReadOnlySpan, key string) string {
	for _, kv := range s.Attributes() {
		if string(kv.Key) == key {
			return kv.Value.String()
		}
	}
	return ""
}

// A request's span (HTTP: otelhttp; gRPC: otelgrpc) continues the caller's
// trace; the run it started executes later on a worker, in a span of its
// own linked to the request's, with a span per step and per book call
// under it.
func TestTracingLinksRunsToRequests(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	e := newTestEnvWith(t, func(c *app.Config) { c.InlineWindow = -1; c.TracerProvider = tp })
	book := testenv.NewHeldBook(t)
	close(book.Release)
	ws := books.Workspace{OrganizationID: e.Init.OrganizationID, WorkspaceID: e.Init.WorkspaceID}
	if _, err := books.NewRegistry(books.WithStore(app.NewDBBooks(e.Store))).Register(t.Context(), ws, testenv.StampBook(book.Srv.URL), ""); err != nil {
		t.Fatal(err)
	}
	a := e.MkAutomation(t, "traced", "stamp \"t1\"\nthe output s is the above\n", false)

	const invokeRPC = "prose.platform.v1.AutomationService/InvokeAutomation"
	check := func(t *testing.T, run string, caller trace.TraceID) {
		t.Helper()
		e.WaitRun(t, a.ID, run, "completed")
		var request, runSpan, step, call sdktrace.ReadOnlySpan
		// The run's span ends (and reaches the exporter) after the
		// worker's write that made the run completed: wait for it.
		var spans []sdktrace.ReadOnlySpan
		for deadline := testtime.Deadline(testtime.Wait); runSpan == nil; time.Sleep(5 * time.Millisecond) {
			spans = exp.GetSpans().Snapshots()
			for _, s := range spans {
				if s.Name() == "prose.run" && spanAttr(s, "prose.run") == run {
					runSpan = s
				}
			}
			if runSpan == nil && time.Now().After(deadline) {
				t.Fatalf("no prose.run span for run %s among %d spans", run, len(spans))
			}
		}
		for _, s := range spans {
			switch {
			// The RPC's span (otelgrpc's on a connection; Local's under
			// the HTTP request's span): the run links to it.
			case s.Name() == invokeRPC && s.SpanContext().TraceID() == caller:
				request = s
			case s.Name() == "prose.run.step" && s.Parent().SpanID() == runSpan.SpanContext().SpanID():
				step = s
			}
		}
		if request == nil || step == nil {
			t.Fatalf("request span %v, step span %v", request, step)
		}
		for _, s := range spans {
			if s.Name() == "prose.book.call" && s.Parent().SpanID() == step.SpanContext().SpanID() {
				call = s
			}
		}
		if call == nil || spanAttr(call, "prose.book") != "test.stamps@1.0.0" {
			t.Fatalf("book call span %v", call)
		}
		if runSpan.SpanContext().TraceID() == caller {
			t.Error("the run's span is in the request's trace: it should be a root linked to it")
		}
		links := runSpan.Links()
		if len(links) != 1 || links[0].SpanContext.TraceID() != caller || links[0].SpanContext.SpanID() != request.SpanContext().SpanID() {
			t.Errorf("the run's span links %+v, want the request's span %s", links, request.SpanContext().SpanID())
		}
	}

	t.Run("http", func(t *testing.T) {
		caller, _ := trace.TraceIDFromHex("0af7651916cd43dd8448eb211c80319c")
		code, m, raw := e.DoHTTP(t, "POST", e.AutomationsPath()+"/"+a.ID+":invoke", `{"stage":"AUTOMATION_STAGE_DRAFT"}`,
			map[string]string{"Authorization": "Bearer " + e.Init.APIKey, "traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"})
		if code != 200 {
			t.Fatalf("invoke: %d %s", code, raw)
		}
		check(t, fmt.Sprint(m["run_id"]), caller)
		// HTTP → gateway → the in-process call: the RPC's span is a child
		// of the HTTP request's, as over a connection.
		var httpSpan, rpc sdktrace.ReadOnlySpan
		for _, s := range exp.GetSpans().Snapshots() {
			if s.SpanContext().TraceID() != caller {
				continue
			}
			switch s.Name() {
			case "HTTP POST":
				httpSpan = s
			case invokeRPC:
				rpc = s
			}
		}
		if httpSpan == nil || rpc == nil {
			t.Fatalf("http span %v, rpc span %v", httpSpan, rpc)
		}
		if rpc.Parent().SpanID() != httpSpan.SpanContext().SpanID() || rpc.SpanKind() != trace.SpanKindServer {
			t.Errorf("rpc span parent %s kind %v, want a server span under the HTTP span %s", rpc.Parent().SpanID(), rpc.SpanKind(), httpSpan.SpanContext().SpanID())
		}
		if spanAttr(rpc, "rpc.system") != "grpc" || spanAttr(rpc, "rpc.service") != "prose.platform.v1.AutomationService" ||
			spanAttr(rpc, "rpc.method") != "InvokeAutomation" || spanAttr(rpc, "rpc.grpc.status_code") != "0" {
			t.Errorf("rpc span attributes %v", rpc.Attributes())
		}
	})
	t.Run("http error", func(t *testing.T) {
		// A refused call's span carries its code and an error status.
		traceID, _ := trace.TraceIDFromHex("2cf7651916cd43dd8448eb211c80319e")
		code, _, raw := e.DoHTTP(t, "GET", e.AutomationsPath()+"/no-such-automation", "",
			map[string]string{"Authorization": "Bearer " + e.Init.APIKey, "traceparent": "00-2cf7651916cd43dd8448eb211c80319e-d7ad6b7169203333-01"})
		if code != 404 {
			t.Fatalf("get: %d %s", code, raw)
		}
		var rpc sdktrace.ReadOnlySpan
		for _, s := range exp.GetSpans().Snapshots() {
			if s.SpanContext().TraceID() == traceID && s.Name() == "prose.platform.v1.AutomationService/GetAutomation" {
				rpc = s
			}
		}
		if rpc == nil {
			t.Fatal("no GetAutomation span")
		}
		if spanAttr(rpc, "rpc.grpc.status_code") != "5" || rpc.Status().Code != otelcodes.Error {
			t.Errorf("span of a NOT_FOUND call: code %s status %v", spanAttr(rpc, "rpc.grpc.status_code"), rpc.Status())
		}
	})
	t.Run("grpc", func(t *testing.T) {
		caller, _ := trace.TraceIDFromHex("1bf7651916cd43dd8448eb211c80319d")
		ctx := metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer "+e.Init.APIKey,
			"traceparent", "00-1bf7651916cd43dd8448eb211c80319d-c7ad6b7169203332-01")
		res, err := platformv1.NewAutomationServiceClient(e.Conn).InvokeAutomation(ctx, &platformv1.InvokeAutomationRequest{
			OrganizationId: e.Init.OrganizationID, WorkspaceId: e.Init.WorkspaceID, AutomationId: a.ID, Stage: platformv1.AutomationStage_AUTOMATION_STAGE_DRAFT})
		if err != nil {
			t.Fatal(err)
		}
		check(t, res.GetRunId(), caller)
	})
}

// Tracing is off without the OTEL_ variables, on with an endpoint, off
// again when disabled.
func TestTracingEnabledByEnvironment(t *testing.T) {
	for _, c := range []struct {
		env  map[string]string
		want bool
	}{
		{map[string]string{}, false},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}, true},
		{map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://collector:4318/v1/traces"}, true},
		{map[string]string{"OTEL_TRACES_EXPORTER": "otlp"}, true},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318", "OTEL_SDK_DISABLED": "true"}, false},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318", "OTEL_TRACES_EXPORTER": "none"}, false},
	} {
		if got := tracing.Enabled(func(k string) string { return c.env[k] }); got != c.want {
			t.Errorf("Enabled(%v) = %v", c.env, got)
		}
	}
	tp, err := tracing.Setup(context.Background(), func(string) string { return "" }, "test")
	if tp != nil || err != nil {
		t.Errorf("Setup without variables: %v %v, want no provider", tp, err)
	}
}
