package metrics

import (
	"context"
	"errors"
	"io"
	"testing"

	grpcprom "github.com/grpc-ecosystem/go-grpc-middleware/providers/prometheus"
	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"
)

// fakeStream is a server stream whose sends and receives fail when told.
type fakeStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s fakeStream) Context() context.Context { return s.ctx }
func (s fakeStream) SendMsg(m any) error {
	if m == "fail" {
		return io.ErrClosedPipe
	}
	return nil
}
func (s fakeStream) RecvMsg(m any) error {
	if m == "fail" {
		return io.EOF
	}
	return nil
}

// TestRPCMetricsAreGrpcproms: the per-RPC metrics are grpcprom's
// (ServerMetrics with its handling time histogram), series for series:
// the same calls (unary and streaming, each code, context errors, plain
// errors, a code past Unauthenticated, a method name that does not parse,
// sends and receives that fail) give the same families, help, types,
// labels and counts. Only the histograms' sums and bucket counts (times)
// and the series' creation times
// are left out of the comparison.
func TestRPCMetricsAreGrpcproms(t *testing.T) {
	theirs := grpcprom.NewServerMetrics(grpcprom.WithServerHandlingTimeHistogram())
	ours := newRPCMetrics()
	type side struct {
		reg    *prometheus.Registry
		unary  grpc.UnaryServerInterceptor
		stream grpc.StreamServerInterceptor
	}
	sides := []side{
		{prometheus.NewRegistry(), theirs.UnaryServerInterceptor(), theirs.StreamServerInterceptor()},
		{prometheus.NewRegistry(), interceptors.UnaryServerInterceptor(ours), interceptors.StreamServerInterceptor(ours)},
	}
	sides[0].reg.MustRegister(theirs)
	sides[1].reg.MustRegister(ours)
	ctx := context.Background()
	unaryCalls := []struct {
		method string
		err    error
	}{
		{"/pkg.Svc/A", nil}, {"/pkg.Svc/A", nil}, {"/pkg.Svc/A", nil},
		{"/pkg.Svc/A", status.Error(codes.NotFound, "no")}, {"/pkg.Svc/A", status.Error(codes.NotFound, "no")},
		{"/pkg.Svc/A", status.Error(codes.Unauthenticated, "who")},
		{"/pkg.Svc/B", context.Canceled}, {"/pkg.Svc/B", context.DeadlineExceeded},
		{"/pkg.Svc/B", errors.New("plain")},
		{"/pkg.Svc/B", status.Error(codes.Code(42), "odd")}, {"/pkg.Svc/B", status.Error(codes.Code(42), "odd")},
		{"not-a-method", nil},
	}
	streamCalls := []struct {
		method     string
		info       grpc.StreamServerInfo
		send, recv []any
		err        error
	}{
		{"/pkg.Svc/S", grpc.StreamServerInfo{IsServerStream: true}, []any{"a", "b", "fail"}, []any{"r"}, nil},
		{"/pkg.Svc/C", grpc.StreamServerInfo{IsClientStream: true}, []any{"a"}, []any{"r", "r", "fail"}, status.Error(codes.InvalidArgument, "bad")},
		{"/pkg.Svc/D", grpc.StreamServerInfo{IsClientStream: true, IsServerStream: true}, nil, []any{"fail"}, io.ErrUnexpectedEOF},
	}
	for _, s := range sides {
		for _, c := range unaryCalls {
			_, _ = s.unary(ctx, "req", &grpc.UnaryServerInfo{FullMethod: c.method}, func(context.Context, any) (any, error) {
				if c.err != nil {
					return nil, c.err
				}
				return "resp", nil
			})
		}
		for _, c := range streamCalls {
			info := c.info
			info.FullMethod = c.method
			_ = s.stream(nil, fakeStream{ctx: ctx}, &info, func(_ any, ss grpc.ServerStream) error {
				for _, m := range c.send {
					_ = ss.SendMsg(m)
				}
				for _, m := range c.recv {
					_ = ss.RecvMsg(m)
				}
				return c.err
			})
		}
	}
	gather := func(reg *prometheus.Registry) []*dto.MetricFamily {
		fams, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range fams {
			for _, m := range f.Metric {
				if c := m.Counter; c != nil {
					c.CreatedTimestamp = nil
				}
				if h := m.Histogram; h != nil {
					h.CreatedTimestamp = nil
					h.SampleSum = nil
					for _, b := range h.Bucket {
						b.CumulativeCount = nil
					}
				}
			}
		}
		return fams
	}
	want, got := gather(sides[0].reg), gather(sides[1].reg)
	if len(want) != 5 {
		t.Fatalf("grpcprom gave %d families, want 5", len(want))
	}
	if len(got) != len(want) {
		t.Fatalf("%d families, grpcprom's %d", len(got), len(want))
	}
	for i := range want {
		if !proto.Equal(want[i], got[i]) {
			t.Errorf("family %s differs:\ngrpcprom: %s\nours: %s", want[i].GetName(), prototext.Format(want[i]), prototext.Format(got[i]))
		}
	}
}
