package books

import (
	"context"
	"net"
	"net/http"
	"time"

	"github.com/proserun/prose/internal/netguard"
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
	return netguard.DialFunc(n.publicOnly, time.Time{})(ctx, netw, addr)
}

// plainClient is the client of what is built without one (NewClient,
// Email, Documents): it reaches every address, as a book author's tests and
// `prose run` on one machine expect. The server always gives its own,
// guarded one; the client is still netguard's, so that every way out is
// made in one package.
func plainClient(timeout time.Duration) *http.Client { return netguard.HTTPClient(timeout, false) }

// httpClient is a client with timeout whose connections are n's.
func (n network) httpClient(timeout time.Duration) *http.Client {
	return netguard.HTTPClient(timeout, n.publicOnly)
}
