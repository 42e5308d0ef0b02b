// Package normalize is the chain's errors entry: every error leaves it as
// a status (transport.ToStatus: a plain error becomes INTERNAL, logged and
// never shown), and panics inside it become INTERNAL too, so that logging
// and metrics, outside it, count them.
package normalize

import (
	"context"
	"errors"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
	"google.golang.org/grpc"

	"github.com/proserun/prose/server/transport"
	"github.com/proserun/prose/server/transport/recovery"
	"github.com/proserun/prose/store"
)

// DatabaseUnavailable counts the calls answered UNAVAILABLE because the
// database was away (restarting, failing over); /readyz says not-ready
// meanwhile.
var DatabaseUnavailable = promauto.NewCounter(prometheus.CounterOpts{
	Name: "prose_database_unavailable_total",
	Help: "Calls answered UNAVAILABLE (HTTP 503 with Retry-After) because the database did not answer.",
})

// Name is the entry's name in the chain ("errors").
const Name = "errors"

// Middleware is the errors entry, logging what it replaces to log.
func Middleware(log *slog.Logger) transport.Middleware {
	return transport.Middleware{Name: Name, Unary: unary(log), Stream: stream(log)}
}

func normalise(ctx context.Context, log *slog.Logger, method string, err error) error {
	if err == nil {
		return nil
	}
	st, replaced := transport.ToStatus(err)
	if errors.Is(err, store.ErrUnavailable) {
		DatabaseUnavailable.Inc()
	}
	if replaced {
		log.LogAttrs(ctx, slog.LevelError, "non-status error replaced",
			slog.String("method", method),
			slog.String("request_id", transport.RequestID(ctx)),
			slog.String("error", err.Error()),
			slog.String("code", st.Code().String()),
		)
	}
	return st.Err()
}

// The errors entry also recovers panics of the entries inside it and of the
// handler, so that logging and metrics (outside it) count them as INTERNAL;
// the outermost recovery entry is left for panics in the chain itself.

func unary(log *slog.Logger) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (resp any, err error) {
		defer func() {
			if p := recover(); p != nil {
				resp, err = nil, recovery.Recovered(log, transport.RequestID(ctx), info.FullMethod, p)
			}
		}()
		resp, err = handler(ctx, req)
		if err != nil {
			return nil, normalise(ctx, log, info.FullMethod, err)
		}
		return resp, nil
	}
}

func stream(log *slog.Logger) grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) (err error) {
		defer func() {
			if p := recover(); p != nil {
				err = recovery.Recovered(log, transport.RequestID(ss.Context()), info.FullMethod, p)
			}
		}()
		return normalise(ss.Context(), log, info.FullMethod, handler(srv, ss))
	}
}
