package chain_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/proserun/prose/server/transport"
	"github.com/proserun/prose/server/transport/chain"
)

type ctxKey struct{}

// probeHealth answers by the requested service name, to exercise Local.
type probeHealth struct {
	healthpb.UnimplementedHealthServer
}

type probeClient struct{ cc grpc.ClientConnInterface }

func (c probeClient) Check(ctx context.Context, in *healthpb.HealthCheckRequest, opts ...grpc.CallOption) (*healthpb.HealthCheckResponse, error) {
	out := new(healthpb.HealthCheckResponse)
	if err := c.cc.Invoke(ctx, "/probe.Health/Check", in, out, opts...); err != nil {
		return nil, err
	}
	return out, nil
}

func (c probeClient) Watch(ctx context.Context, in *healthpb.HealthCheckRequest) (grpc.ServerStreamingClient[healthpb.HealthCheckResponse], error) {
	stream, err := c.cc.NewStream(ctx, &healthpb.Health_ServiceDesc.Streams[0], "/probe.Health/Watch")
	if err != nil {
		return nil, err
	}
	x := &grpc.GenericClientStream[healthpb.HealthCheckRequest, healthpb.HealthCheckResponse]{ClientStream: stream}
	if err := x.SendMsg(in); err != nil {
		return nil, err
	}
	if err := x.CloseSend(); err != nil {
		return nil, err
	}
	return x, nil
}

func (probeHealth) Check(ctx context.Context, req *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	_ = grpc.SetHeader(ctx, metadata.Pairs("x-probe", "h"))
	switch req.GetService() {
	case "value":
		if ctx.Value(ctxKey{}) != nil {
			return nil, status.Error(codes.FailedPrecondition, "the caller's context value leaked")
		}
	case "deadline":
		<-ctx.Done()
		return nil, ctx.Err()
	case "error":
		return nil, status.Error(codes.NotFound, "no such thing")
	}
	return &healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING}, nil
}

func (probeHealth) Watch(req *healthpb.HealthCheckRequest, ss grpc.ServerStreamingServer[healthpb.HealthCheckResponse]) error {
	if req.GetService() == "error" {
		return status.Error(codes.NotFound, "no such thing")
	}
	for range 3 {
		if err := ss.Send(&healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING}); err != nil {
			return err
		}
	}
	if req.GetService() == "late-error" {
		return status.Error(codes.Aborted, "gone")
	}
	return nil
}

// TestLocalBehavesLikeAConnection: Local runs the chain (every call passes
// an Outer entry and gets its request id header), passes metadata both ways, hides
// the caller's context values, maps errors as grpc-go does and streams.
func TestLocalBehavesLikeAConnection(t *testing.T) {
	var seen []string // by an Outer entry: the chain runs
	outer := transport.Middleware{Name: "seen",
		Unary: func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			seen = append(seen, info.FullMethod)
			return h(ctx, req)
		},
		Stream: func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
			seen = append(seen, info.FullMethod)
			return h(srv, ss)
		}}
	srv := chain.NewServer(chain.Options{Logger: slog.New(slog.DiscardHandler), Registerer: prometheus.NewRegistry(),
		Outer: []transport.Middleware{outer}, InsecureNoAuthorization: true, DisableReflection: true})
	defer srv.GRPC.Stop()
	// The probe: the health service's shape under another name (the
	// built-in health service is registered already).
	desc := healthpb.Health_ServiceDesc
	desc.ServiceName = "probe.Health"
	srv.RegisterService(&desc, probeHealth{})
	client := probeClient{srv.Local}
	authed := metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer k")

	var header, trailer metadata.MD
	resp, err := client.Check(context.WithValue(authed, ctxKey{}, "x"), &healthpb.HealthCheckRequest{Service: "value"}, grpc.Header(&header), grpc.Trailer(&trailer))
	if err != nil || resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("Check: %v %v", resp, err)
	}
	if header.Get("x-probe")[0] != "h" || len(header.Get(transport.RequestIDHeader)) != 1 || len(trailer.Get(transport.RequestIDHeader)) != 1 {
		t.Errorf("header %v trailer %v", header, trailer)
	}
	header = nil
	_, err = client.Check(authed, &healthpb.HealthCheckRequest{Service: "error"}, grpc.Header(&header))
	if status.Code(err) != codes.NotFound || len(header.Get(transport.RequestIDHeader)) != 1 {
		t.Errorf("error: %v, header %v", err, header)
	}
	ctx, cancel := context.WithTimeout(authed, 20*time.Millisecond)
	defer cancel()
	if _, err := client.Check(ctx, &healthpb.HealthCheckRequest{Service: "deadline"}); status.Code(err) != codes.DeadlineExceeded {
		t.Errorf("deadline: %v", err)
	}

	for _, c := range []struct {
		service string
		n       int
		want    codes.Code
	}{{"", 3, codes.OK}, {"late-error", 3, codes.Aborted}, {"error", 0, codes.NotFound}} {
		stream, err := client.Watch(authed, &healthpb.HealthCheckRequest{Service: c.service})
		if err != nil {
			t.Fatal(err)
		}
		h, err := stream.Header()
		if err != nil || len(h.Get(transport.RequestIDHeader)) != 1 {
			t.Errorf("%q: header %v %v", c.service, h, err)
		}
		n := 0
		for {
			_, err = stream.Recv()
			if err != nil {
				break
			}
			n++
		}
		if n != c.n || (c.want == codes.OK && !errors.Is(err, io.EOF)) || (c.want != codes.OK && status.Code(err) != c.want) {
			t.Errorf("%q: %d messages, end %v; want %d, %v", c.service, n, err, c.n, c.want)
		}
	}
	if len(seen) != 6 {
		t.Errorf("the chain saw %d calls, want 6: %v", len(seen), seen)
	}
}
