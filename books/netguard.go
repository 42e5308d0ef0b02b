package books

import (
	"context"
	"net"
	"net/http"
	"time"

	"github.com/proserun/prose/netguard"
)

// network is how the built-in books dial other systems: with publicOnly,
// never to an address that is not public (netguard).
type network struct {
	publicOnly bool
}

// dialer returns a dialer with the deadline (zero: none).
func (n network) dialer(deadline time.Time) *net.Dialer {
	return netguard.Dialer(n.publicOnly, deadline)
}

// dialContext dials with n's dialer.
func (n network) dialContext(ctx context.Context, netw, addr string) (net.Conn, error) {
	return n.dialer(time.Time{}).DialContext(ctx, netw, addr)
}

// httpClient is a client with timeout whose connections are n's.
func (n network) httpClient(timeout time.Duration) *http.Client {
	return netguard.HTTPClient(timeout, n.publicOnly)
}
