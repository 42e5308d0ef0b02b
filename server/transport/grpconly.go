package transport

import (
	"google.golang.org/grpc"
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
