package recovery

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/proserun/prose/server/transport"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// The recovery entry (go-grpc-middleware's recovery) answers a panic of
// what it wraps with INTERNAL, hiding the panic value, and logs it with the
// method and the request id the entries inside it found.
func TestRecoveryEntry(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&buf, nil))
	info := &grpc.UnaryServerInfo{FullMethod: "/x.v1.S/M"}
	_, err := Middleware(log).Unary(context.Background(), nil, info, func(ctx context.Context, _ any) (any, error) {
		transport.ContextWithRequestID(ctx, "req-42")
		panic("secret boom")
	})
	if status.Code(err) != codes.Internal || strings.Contains(err.Error(), "secret") {
		t.Fatalf("got %v, want INTERNAL without the panic value", err)
	}
	for _, want := range []string{`"method":"/x.v1.S/M"`, `"request_id":"req-42"`, `"panic":"secret boom"`} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("log lacks %s: %s", want, buf.String())
		}
	}
	serr := Middleware(log).Stream(nil, transport.WithStreamContext(nil, context.Background()), &grpc.StreamServerInfo{FullMethod: "/x.v1.S/Stream"}, func(any, grpc.ServerStream) error {
		panic("stream boom")
	})
	if status.Code(serr) != codes.Internal || !strings.Contains(buf.String(), `"method":"/x.v1.S/Stream"`) {
		t.Fatalf("stream: %v\n%s", serr, buf.String())
	}
}
