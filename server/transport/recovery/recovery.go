// Package recovery is the outermost built-in entry of the chain: a panic
// anywhere inside it (the chain's own entries included) becomes INTERNAL,
// logged with its stack, the method and the request id.
package recovery

import (
	"context"
	"fmt"
	"log/slog"
	"runtime/debug"

	grpcrecovery "github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/recovery"
	"github.com/proserun/prose/server/transport"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
)

// Name is the entry's name in the chain.
const Name = "recovery"

// Middleware is the recovery entry. It is go-grpc-middleware's recovery
// interceptor; ours around it only starts the call record
// (transport.StartCall) its handler reads (the request id the entry inside
// it finds, the method) for the log line of the panic.
func Middleware(log *slog.Logger) transport.Middleware {
	return transport.Middleware{Name: Name, Unary: unary(log), Stream: stream(log)}
}

func handler(log *slog.Logger) grpcrecovery.Option {
	return grpcrecovery.WithRecoveryHandlerContext(func(ctx context.Context, p any) error {
		requestID, method := transport.CallOf(ctx)
		return Recovered(log, requestID, method, p)
	})
}

func unary(log *slog.Logger) grpc.UnaryServerInterceptor {
	rec := grpcrecovery.UnaryServerInterceptor(handler(log))
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		return rec(transport.StartCall(ctx, info.FullMethod), req, info, handler)
	}
}

func stream(log *slog.Logger) grpc.StreamServerInterceptor {
	rec := grpcrecovery.StreamServerInterceptor(handler(log))
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		ss = transport.WithStreamContext(ss, transport.StartCall(ss.Context(), info.FullMethod))
		return rec(srv, ss, info, handler)
	}
}

// Recovered logs panic p of a call and returns the INTERNAL error the
// client gets instead (the panic's value is never sent). The errors entry
// (package normalize) uses it for the panics inside it.
func Recovered(log *slog.Logger, requestID, method string, p any) error {
	log.Error("panic in handler",
		slog.String("method", method),
		slog.String("code", codes.Internal.String()),
		slog.String("request_id", requestID),
		slog.String("panic", fmt.Sprint(p)),
		slog.String("stack", string(debug.Stack())),
	)
	return transport.Internal()
}
