package transport

import (
	"context"
	"strconv"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
)

// RequestIDHeader is the metadata key (and HTTP header) carrying the request
// id, in both directions.
const RequestIDHeader = "x-request-id"

type requestIDKey struct{}

// callInfo is placed in the context by the outermost interceptor so that
// entries outside the request id one (recovery) can still log the id.
type callInfo struct{ requestID, method string }

type callInfoKey struct{}

// StartCall returns ctx carrying a record of the call to method, which
// ContextWithRequestID fills in later: the recovery entry, outside the
// request id entry, reads it back with CallOf to log a panic's request id.
func StartCall(ctx context.Context, method string) context.Context {
	return context.WithValue(ctx, callInfoKey{}, &callInfo{method: method})
}

// CallOf returns the request id and method StartCall's record holds ("" when
// there is none).
func CallOf(ctx context.Context) (requestID, method string) {
	if ci, ok := ctx.Value(callInfoKey{}).(*callInfo); ok {
		return ci.requestID, ci.method
	}
	return "", ""
}

// RequestID returns the request id of the call ctx belongs to, or "".
func RequestID(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey{}).(string)
	return id
}

// ContextWithRequestID returns ctx carrying id as its request id.
func ContextWithRequestID(ctx context.Context, id string) context.Context {
	if ci, ok := ctx.Value(callInfoKey{}).(*callInfo); ok {
		ci.requestID = id
	}
	return context.WithValue(ctx, requestIDKey{}, id)
}

// serverStream replaces the context of a grpc.ServerStream.
type serverStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s *serverStream) Context() context.Context { return s.ctx }

// WithStreamContext returns ss with its context replaced by ctx.
func WithStreamContext(ss grpc.ServerStream, ctx context.Context) grpc.ServerStream {
	if w, ok := ss.(*serverStream); ok {
		return &serverStream{ServerStream: w.ServerStream, ctx: ctx}
	}
	return &serverStream{ServerStream: ss, ctx: ctx}
}

// Middleware is one named entry of the interceptor chain. Either interceptor
// may be nil when the entry applies to one kind of call only.
type Middleware struct {
	Name   string
	Unary  grpc.UnaryServerInterceptor
	Stream grpc.StreamServerInterceptor
}

// HTTPCodeHeader is the response header metadata key the gateway reads to
// set the HTTP status of a successful call; it never reaches HTTP clients.
const HTTPCodeHeader = "x-http-code"

// SetHTTPStatus asks the gateway to answer a successful unary call over
// HTTP with code (2xx, e.g. 201 for POST /v1/invoke/{share_id}). gRPC
// clients see the header metadata x-http-code and may ignore it.
func SetHTTPStatus(ctx context.Context, code int) error {
	return grpc.SetHeader(ctx, metadata.Pairs(HTTPCodeHeader, strconv.Itoa(code)))
}
