// Package requestid gives every request an id, on both transports: the
// caller's X-Request-Id when valid, a new one otherwise. HTTP makes it
// before routing (so routing errors carry one too) and forwards it to gRPC;
// the chain's entry puts it in the call's context (transport.RequestID), its
// log lines, and its response header and trailer.
package requestid

import (
	"github.com/proserun/prose/internal/logctx"
	"github.com/proserun/prose/server/transport"

	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
)

// Name is the entry's name in the chain.
const Name = "request_id"

// Middleware is the request id entry.
func Middleware() transport.Middleware {
	return transport.Middleware{Name: Name, Unary: unary(), Stream: stream()}
}

func incomingRequestID(ctx context.Context) string {
	for _, id := range metadata.ValueFromIncomingContext(ctx, transport.RequestIDHeader) {
		if Valid(id) {
			return id
		}
	}
	return New()
}

// Valid reports whether a client-supplied request id is accepted: 1 to 128
// characters of [A-Za-z0-9._:-].
func Valid(id string) bool {
	if id == "" || len(id) > 128 {
		return false
	}
	for _, c := range id {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9',
			c == '-', c == '_', c == '.', c == ':':
		default:
			return false
		}
	}
	return true
}

// New returns a fresh random request id (32 hex digits), for a request that
// brought none.
func New() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+).
	return hex.EncodeToString(b[:])
}

// HTTPHeader is the HTTP header of the request id.
const HTTPHeader = "X-Request-Id"

// HTTP gives every HTTP request an id before routing: the client's
// X-Request-Id when valid, else a new one. It is forwarded to gRPC (whose
// entry then keeps it), echoed, and in the context's log fields, so lines
// logged by HTTP-only routes (inbound webhooks, signed files) name it too.
func HTTP(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get(HTTPHeader)
		if !Valid(id) {
			id = New()
		}
		r.Header.Set(HTTPHeader, id)
		w.Header().Set(HTTPHeader, id)
		next.ServeHTTP(w, r.WithContext(logctx.With(r.Context(), logctx.RequestID, id)))
	})
}

func unary() grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		id := incomingRequestID(ctx)
		ctx = transport.ContextWithRequestID(logctx.With(ctx, logctx.RequestID, id, logctx.Method, info.FullMethod), id)
		// Header for callers that read headers; trailer too, because an
		// error without a message is sent as a trailers-only response. One
		// map for both: metadata set is not changed afterwards (grpc-go and
		// Local join further metadata into a new map).
		md := metadata.MD{transport.RequestIDHeader: {id}}
		_ = grpc.SetHeader(ctx, md)
		_ = grpc.SetTrailer(ctx, md)
		return handler(ctx, req)
	}
}

func stream() grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		id := incomingRequestID(ss.Context())
		_ = ss.SetHeader(metadata.Pairs(transport.RequestIDHeader, id))
		ss.SetTrailer(metadata.Pairs(transport.RequestIDHeader, id))
		ctx := logctx.With(ss.Context(), logctx.RequestID, id, logctx.Method, info.FullMethod)
		return handler(srv, transport.WithStreamContext(ss, transport.ContextWithRequestID(ctx, id)))
	}
}
