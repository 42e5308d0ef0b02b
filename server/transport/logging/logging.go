// Package logging is the chain's logging entry: one line per call, with
// its method, code, duration and request id (error codes of the server's
// own failures at level error).
package logging

import (
	"context"
	"log/slog"
	"time"

	"github.com/proserun/prose/server/transport"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Name is the entry's name in the chain.
const Name = "logging"

// Middleware is the logging entry, writing to log.
func Middleware(log *slog.Logger) transport.Middleware {
	return transport.Middleware{Name: Name, Unary: unary(log), Stream: stream(log)}
}

func logCall(ctx context.Context, log *slog.Logger, method string, start time.Time, err error) {
	code := status.Code(err)
	level := slog.LevelInfo
	switch code {
	case codes.Internal, codes.Unknown, codes.DataLoss, codes.Unavailable:
		level = slog.LevelError
	}
	if !log.Enabled(ctx, level) {
		// Not logged (--log-level above info): no duration, no attributes.
		return
	}
	attrs := []slog.Attr{
		slog.String("method", method),
		slog.String("code", code.String()),
		slog.Float64("duration_ms", float64(time.Since(start))/float64(time.Millisecond)),
		slog.String("request_id", transport.RequestID(ctx)),
	}
	if err != nil {
		attrs = append(attrs, slog.String("error", status.Convert(err).Message()))
	}
	log.LogAttrs(ctx, level, "rpc", attrs...)
}

func unary(log *slog.Logger) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		start := time.Now()
		resp, err := handler(ctx, req)
		logCall(ctx, log, info.FullMethod, start, err)
		return resp, err
	}
}

func stream(log *slog.Logger) grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		start := time.Now()
		err := handler(srv, ss)
		logCall(ss.Context(), log, info.FullMethod, start, err)
		return err
	}
}
