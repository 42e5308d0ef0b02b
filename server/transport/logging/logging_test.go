package logging_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"

	"google.golang.org/grpc"

	errorsv1 "github.com/proserun/prose/gen/prose/errors/v1"
	"github.com/proserun/prose/server/transport"
	"github.com/proserun/prose/server/transport/logging"
)

// TestLoggingEntry: one line per call, with the method, the code, the
// request id and the error's message; nothing below the logger's level.
func TestLoggingEntry(t *testing.T) {
	var buf bytes.Buffer
	entry := logging.Middleware(slog.New(slog.NewJSONHandler(&buf, nil)))
	ctx := transport.ContextWithRequestID(context.Background(), "req-7")
	_, _ = entry.Unary(ctx, nil, &grpc.UnaryServerInfo{FullMethod: "/x.v1.S/M"}, func(context.Context, any) (any, error) {
		return nil, transport.NotFound(errorsv1.ErrorReason_ERROR_REASON_RUN_NOT_FOUND, "runs/1")
	})
	line := buf.String()
	for _, want := range []string{`"msg":"rpc"`, `"method":"/x.v1.S/M"`, `"code":"NotFound"`, `"request_id":"req-7"`, `"error":"runs/1 not found"`, `"duration_ms":`} {
		if !strings.Contains(line, want) {
			t.Errorf("log line lacks %s: %s", want, line)
		}
	}
	buf.Reset()
	quiet := logging.Middleware(slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelWarn})))
	_ = quiet.Stream(nil, transport.WithStreamContext(nil, ctx), &grpc.StreamServerInfo{FullMethod: "/x.v1.S/Stream"},
		func(any, grpc.ServerStream) error { return nil })
	if buf.Len() != 0 {
		t.Errorf("an OK call logged at info under a warn logger: %s", buf.String())
	}
}
