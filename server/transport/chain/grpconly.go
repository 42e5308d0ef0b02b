package chain

import (
	"time"

	"github.com/proserun/prose/server/transport/limits"
	"google.golang.org/grpc"
	"google.golang.org/grpc/keepalive"
)

// GRPCOnlyOptions are the server options of the gRPC-only server
// (Options.GRPCOnly) beyond those both servers share: its transport
// credentials (TLS), for one. Its receive bound, GRPCOnlyMaxRequestBytes,
// comes after them and cannot be raised; its connection limits
// (GRPCOnlyConnectionOptions) come before them.
type GRPCOnlyOptions struct {
	ServerOptions []grpc.ServerOption
	// HandshakeTimeout replaces GRPCOnlyHandshakeTimeout when positive
	// (tests shorten it).
	HandshakeTimeout time.Duration
}

// GRPCOnlyMaxRequestBytes is the receive bound of the gRPC-only server, the
// same for every method (grpc.MaxRecvMsgSize): grpc-go's own transport
// checks a message's declared length against one bound before reading it,
// and has no hook there for a bound per method. So the larger bound of
// LargeRequestMethods (MaxRequestBytes) is not taken there: larger file
// uploads go to the shared port (gRPC or HTTP).
const GRPCOnlyMaxRequestBytes = limits.MaxMessageBytes

// The connection limits of the gRPC-only port (grpc-go's own defaults are
// a 120 s handshake, no idle limit, a keepalive ping after 2 h, clients'
// pings at most every 5 min, and unbounded streams per connection). They
// match what the shared port's HTTP server enforces (gateway.Serve:
// ReadHeaderTimeout 10 s, IdleTimeout 2 min, net/http's 250 streams per
// HTTP/2 connection); docs/operations.md, "A gRPC-only port", says why each.
const (
	// GRPCOnlyHandshakeTimeout bounds a new connection's establishment: the
	// TLS handshake and the HTTP/2 preface and settings. A client that
	// connects and sends nothing is closed after it.
	GRPCOnlyHandshakeTimeout = 10 * time.Second
	// GRPCOnlyMaxConnectionIdle closes (GOAWAY) a connection with no call
	// in progress for this long. A connection with a call open, a long
	// event stream for one, is never idle.
	GRPCOnlyMaxConnectionIdle = 2 * time.Minute
	// GRPCOnlyKeepaliveTime is how long a connection may be silent before
	// the server pings it; GRPCOnlyKeepaliveTimeout how long it waits for
	// the answer before closing it (a peer gone without a FIN, a stream
	// held by a dead client).
	GRPCOnlyKeepaliveTime    = time.Minute
	GRPCOnlyKeepaliveTimeout = 20 * time.Second
	// GRPCOnlyMinPingInterval is the least time between a client's
	// keepalive pings (with or without a call open): a client pinging more
	// often is sent GOAWAY (ENHANCE_YOUR_CALM, "too_many_pings") after a
	// few strikes. grpc-go clients never ping more often than every 10 s.
	GRPCOnlyMinPingInterval = 5 * time.Second
	// GRPCOnlyMaxConcurrentStreams bounds the calls open at once on one
	// connection (net/http's default on the shared port); a client opening
	// more waits for one to end (HTTP/2 flow control, not an error).
	GRPCOnlyMaxConcurrentStreams = 250
)

// GRPCOnlyConnectionOptions are the connection limits of the gRPC-only
// server; handshake replaces GRPCOnlyHandshakeTimeout when positive.
func GRPCOnlyConnectionOptions(handshake time.Duration) []grpc.ServerOption {
	if handshake <= 0 {
		handshake = GRPCOnlyHandshakeTimeout
	}
	return []grpc.ServerOption{
		grpc.ConnectionTimeout(handshake),
		grpc.KeepaliveParams(keepalive.ServerParameters{
			MaxConnectionIdle: GRPCOnlyMaxConnectionIdle,
			Time:              GRPCOnlyKeepaliveTime,
			Timeout:           GRPCOnlyKeepaliveTimeout,
		}),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{
			MinTime:             GRPCOnlyMinPingInterval,
			PermitWithoutStream: true,
		}),
		grpc.MaxConcurrentStreams(GRPCOnlyMaxConcurrentStreams),
	}
}
