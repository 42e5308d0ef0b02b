package engine

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/proserun/prose/store"
)

// traceContextOf is the W3C trace context (traceparent, tracestate) of the
// span in ctx, kept with a run it starts (persist Steps.origin); empty
// without a span (tracing off).
func traceContextOf(ctx context.Context) (traceparent, tracestate string) {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return "", ""
	}
	c := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, c)
	return c["traceparent"], c["tracestate"]
}

// originSpan is the span context of a kept trace context (invalid when
// there is none).
func originSpan(traceparent, tracestate string) trace.SpanContext {
	if traceparent == "" {
		return trace.SpanContext{}
	}
	c := propagation.MapCarrier{"traceparent": traceparent}
	if tracestate != "" {
		c["tracestate"] = tracestate
	}
	return trace.SpanContextFromContext(propagation.TraceContext{}.Extract(context.Background(), c))
}

// startRunSpan starts the span of one execution of r (a root: the run may
// execute long after the request that started it, on another replica),
// linked to the span of that request when it was kept. Nil Tracer: no
// span, ctx unchanged.
func (e *Engine) startRunSpan(ctx context.Context, r store.Run, traceparent, tracestate string) (context.Context, trace.Span) {
	if e.opts.Tracer == nil {
		return ctx, nil
	}
	opts := []trace.SpanStartOption{
		trace.WithNewRoot(),
		trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(
			attribute.String("prose.organization", r.OrganizationID),
			attribute.String("prose.workspace", r.WorkspaceID),
			attribute.String("prose.automation", r.AutomationID),
			attribute.String("prose.run", r.ID),
		),
	}
	if sc := originSpan(traceparent, tracestate); sc.IsValid() {
		opts = append(opts, trace.WithLinks(trace.Link{SpanContext: sc, Attributes: []attribute.KeyValue{attribute.String("prose.link", "started by")}}))
	}
	return e.opts.Tracer.Start(ctx, "prose.run", opts...)
}

// endSpan ends span (nil: none) with err's status.
func endSpan(span trace.Span, err error) {
	if span == nil {
		return
	}
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}
