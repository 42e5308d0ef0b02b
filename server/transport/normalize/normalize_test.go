package normalize_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	errorsv1 "github.com/proserun/prose/gen/prose/errors/v1"
	"github.com/proserun/prose/server/transport"
	"github.com/proserun/prose/server/transport/normalize"
)

// TestErrorsEntry: a status passes unchanged; a plain error becomes a
// generic INTERNAL (its text logged, never sent); a panic inside the entry
// becomes INTERNAL too, for unary calls and streams alike.
func TestErrorsEntry(t *testing.T) {
	var buf bytes.Buffer
	entry := normalize.Middleware(slog.New(slog.NewJSONHandler(&buf, nil)))
	if entry.Name != normalize.Name || normalize.Name != "errors" {
		t.Fatalf("entry named %q", entry.Name)
	}
	info := &grpc.UnaryServerInfo{FullMethod: "/x.v1.S/M"}
	call := func(h grpc.UnaryHandler) error {
		_, err := entry.Unary(context.Background(), nil, info, h)
		return err
	}
	notFound := transport.NotFound(errorsv1.ErrorReason_ERROR_REASON_RUN_NOT_FOUND, "runs/1")
	if err := call(func(context.Context, any) (any, error) { return nil, notFound }); status.Code(err) != codes.NotFound ||
		transport.ReasonOf(err) != errorsv1.ErrorReason_ERROR_REASON_RUN_NOT_FOUND {
		t.Errorf("a status: %v", err)
	}
	err := call(func(context.Context, any) (any, error) { return nil, errors.New("disk on fire") })
	if st := status.Convert(err); st.Code() != codes.Internal || st.Message() != "internal error" {
		t.Errorf("a plain error: %v", err)
	}
	if !strings.Contains(buf.String(), "non-status error replaced") || !strings.Contains(buf.String(), "disk on fire") {
		t.Errorf("the replaced error is not logged: %s", buf.String())
	}
	err = call(func(context.Context, any) (any, error) { panic("secret boom") })
	if status.Code(err) != codes.Internal || strings.Contains(err.Error(), "secret") {
		t.Errorf("a panic: %v", err)
	}
	err = entry.Stream(nil, transport.WithStreamContext(nil, context.Background()), &grpc.StreamServerInfo{FullMethod: "/x.v1.S/Stream"},
		func(any, grpc.ServerStream) error { panic("stream boom") })
	if status.Code(err) != codes.Internal || !strings.Contains(buf.String(), `"panic":"stream boom"`) {
		t.Errorf("a stream's panic: %v\n%s", err, buf.String())
	}
}
