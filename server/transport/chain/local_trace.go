package chain

import (
	"context"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	otelcodes "go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc/status"
)

// tracerName is the instrumentation scope of Local's spans.
const tracerName = "github.com/proserun/prose/server/transport"

// startSpan starts the server span of an in-process call under ctx's span
// (the HTTP request's), named and attributed as otelgrpc's server handler
// names a call that arrives on a connection ("prose.platform.v1.RunService/GetRun",
// rpc.system, rpc.service, rpc.method). Without a tracer it returns ctx and
// a nil span.
func (l *Local) startSpan(ctx context.Context, method string) (context.Context, trace.Span) {
	if l.tracer == nil {
		return ctx, nil
	}
	name := strings.TrimPrefix(method, "/")
	service, m, _ := strings.Cut(name, "/")
	return l.tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(
		attribute.String("rpc.system", "grpc"),
		attribute.String("rpc.service", service),
		attribute.String("rpc.method", m),
	))
}

// endSpan ends span (if any) with the call's gRPC status code, and an error
// status when the call failed.
func endSpan(span trace.Span, err error) {
	if span == nil {
		return
	}
	st := status.Convert(err)
	span.SetAttributes(attribute.Int64("rpc.grpc.status_code", int64(st.Code())))
	if err != nil {
		span.SetStatus(otelcodes.Error, st.Message())
	}
	span.End()
}
