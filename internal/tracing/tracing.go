// Package tracing sets up OpenTelemetry tracing for prose serve: spans are
// exported by OTLP when the standard OTEL_ variables ask for it, and tracing
// is off otherwise (no tracer provider, no span made, nothing to pay).
//
// Tracing is on when OTEL_EXPORTER_OTLP_ENDPOINT or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set, or OTEL_TRACES_EXPORTER is
// "otlp"; it stays off when OTEL_SDK_DISABLED is "true" or
// OTEL_TRACES_EXPORTER is "none". The protocol is
// OTEL_EXPORTER_OTLP_TRACES_PROTOCOL, else OTEL_EXPORTER_OTLP_PROTOCOL,
// "http/protobuf" by default or "grpc"; the exporters read the other
// OTEL_EXPORTER_OTLP_* variables (headers, timeout, certificates,
// compression) themselves, and the resource OTEL_SERVICE_NAME (default
// "prose") and OTEL_RESOURCE_ATTRIBUTES.
package tracing

import (
	"context"
	"fmt"
	"strings"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
)

// Propagator is the W3C trace context (and baggage) Prose reads from
// requests and keeps with runs.
var Propagator = propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})

// Enabled reports whether getenv's OTEL_ variables turn tracing on.
func Enabled(getenv func(string) string) bool {
	if strings.EqualFold(getenv("OTEL_SDK_DISABLED"), "true") {
		return false
	}
	switch strings.ToLower(getenv("OTEL_TRACES_EXPORTER")) {
	case "none":
		return false
	case "otlp":
		return true
	}
	return getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

// Setup returns a tracer provider exporting by OTLP when Enabled, and
// sets it and Propagator as otel's globals; nil (tracing off) otherwise.
// Shut the provider down at exit: it flushes the spans still batched.
func Setup(ctx context.Context, getenv func(string) string, version string) (*sdktrace.TracerProvider, error) {
	if !Enabled(getenv) {
		return nil, nil
	}
	proto := getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
	if proto == "" {
		proto = getenv("OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	var exp sdktrace.SpanExporter
	var err error
	switch proto {
	case "", "http/protobuf":
		exp, err = otlptracehttp.New(ctx)
	case "grpc":
		exp, err = otlptracegrpc.New(ctx)
	default:
		return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_PROTOCOL %q: Prose exports by http/protobuf or grpc", proto)
	}
	if err != nil {
		return nil, fmt.Errorf("otlp exporter: %w", err)
	}
	// Later detectors win: OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES
	// over the defaults.
	res, err := resource.New(ctx, resource.WithTelemetrySDK(),
		resource.WithAttributes(semconv.ServiceName("prose"), semconv.ServiceVersion(version)),
		resource.WithFromEnv())
	if err != nil {
		return nil, err
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(Propagator)
	return tp, nil
}
