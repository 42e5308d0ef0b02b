package transport

import (
	"context"
	"fmt"
	"strconv"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// GRPCOnlyOptions are the server options of the gRPC-only server
// (Options.GRPCOnly) beyond those both servers share: its transport
// credentials (TLS), for one. Its receive bound, GRPCOnlyMaxRequestBytes,
// comes after them and cannot be raised.
type GRPCOnlyOptions struct {
	ServerOptions []grpc.ServerOption
}

// GRPCOnlyMaxRequestBytes is the receive bound of the gRPC-only server, the
// same for every method (grpc.MaxRecvMsgSize): grpc-go's own transport
// checks a message's declared length against one bound before reading it,
// and has no hook there for a bound per method. So the larger bound of
// LargeRequestMethods (MaxRequestBytes) is not taken there: larger file
// uploads go to the shared port (gRPC or HTTP).
const GRPCOnlyMaxRequestBytes = MaxMessageBytes

// statusDetailsHeader is the trailer grpc-go clients read a status's
// details from (google.rpc.Status, binary).
const statusDetailsHeader = "grpc-status-details-bin"

// grpcOnlyDesc is desc for the gRPC-only server. Every method is desc's
// own, behind the server's chain; those of LargeRequestMethods (allowed
// more than GRPCOnlyMaxRequestBytes on the shared port) are wrapped so
// that a message over the bound gets RequestTooLargeOnGRPCOnly as its
// details rather than grpc-go's bare RESOURCE_EXHAUSTED.
//
// How: grpc-go refuses such a message before reading it and writes the
// call's status itself, inside the receive, with no hook for the server's
// code; but it sends the trailer metadata the call has set by then. So the
// receive is preceded by a grpc-status-details-bin trailer holding the
// refusal, which a client takes as the status when it is the only one and
// its code is the status's (RESOURCE_EXHAUSTED). A receive that succeeds
// adds an empty second value: with two, clients ignore them; an error
// the handler returns with details replaces them (grpc-go drops the
// metadata's). Other methods pay nothing for it.
func grpcOnlyDesc(desc *grpc.ServiceDesc) *grpc.ServiceDesc {
	d := *desc
	d.Methods = append([]grpc.MethodDesc(nil), desc.Methods...)
	for i, m := range d.Methods {
		method := "/" + desc.ServiceName + "/" + m.MethodName
		if MaxRequestBytesOf(method) <= GRPCOnlyMaxRequestBytes {
			continue
		}
		b, err := proto.Marshal(status.Convert(RequestTooLargeOnGRPCOnly(method)).Proto())
		if err != nil {
			panic("transport: " + err.Error()) // a status always marshals
		}
		refusal, received := metadata.Pairs(statusDetailsHeader, string(b)), metadata.Pairs(statusDetailsHeader, "")
		handler := m.Handler
		d.Methods[i].Handler = func(srv any, ctx context.Context, dec func(any) error, interceptor grpc.UnaryServerInterceptor) (any, error) {
			return handler(srv, ctx, func(v any) error {
				_ = grpc.SetTrailer(ctx, refusal)
				err := dec(v)
				if err == nil {
					_ = grpc.SetTrailer(ctx, received)
				}
				return err
			}, interceptor)
		}
	}
	return &d
}

// RequestTooLargeOnGRPCOnly is the answer of the gRPC-only server to a
// request message of method over its bound: RESOURCE_EXHAUSTED
// REQUEST_TOO_LARGE, saying where larger requests go.
func RequestTooLargeOnGRPCOnly(method string) error {
	return NewError(codes.ResourceExhausted, ReasonRequestTooLarge,
		fmt.Sprintf("the request message is over the %d bytes this gRPC-only port (--grpc-addr) takes for every method; %s takes up to %d bytes on the shared port (--addr, gRPC or HTTP): send larger files there",
			GRPCOnlyMaxRequestBytes, method, MaxRequestBytesOf(method))).
		Meta("max_request_bytes", strconv.Itoa(GRPCOnlyMaxRequestBytes)).Err()
}
