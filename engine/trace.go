package engine

import "context"

// traceContextOf is the W3C trace context (traceparent, tracestate) of the
// span in ctx, kept with a run it starts; empty without tracing.
func traceContextOf(ctx context.Context) (traceparent, tracestate string) {
	return "", ""
}
