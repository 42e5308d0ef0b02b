// Package netguard keeps the server's outbound connections made for tenants
// (the books' calls, file downloads, mail and database servers, outbound
// webhooks) off addresses that are not public — loopback, private networks,
// link-local addresses where cloud metadata services answer — unless the
// server allows them. The check runs on every address dialled, after DNS.
package netguard

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"syscall"
	"time"
)

// The addresses a server's outbound connections may not reach unless the
// server allows private networks: besides what
// netip classifies (loopback, RFC 1918 and fc00::/7 private, link-local —
// where cloud metadata services answer, 169.254.169.254 —, unspecified,
// multicast), these ranges of RFC 6890 that are not the public internet.
var nonPublicPrefixes = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),      // "this network"
	netip.MustParsePrefix("100.64.0.0/10"),  // carrier-grade NAT (some clouds' internal addresses)
	netip.MustParsePrefix("192.0.0.0/24"),   // IETF protocol assignments
	netip.MustParsePrefix("198.18.0.0/15"),  // benchmarking
	netip.MustParsePrefix("240.0.0.0/4"),    // reserved, and broadcast
	netip.MustParsePrefix("64:ff9b::/96"),   // NAT64: an IPv4 address behind it
	netip.MustParsePrefix("64:ff9b:1::/48"), // local-use NAT64
	netip.MustParsePrefix("2001:db8::/32"),  // documentation
	netip.MustParsePrefix("fec0::/10"),      // site-local (deprecated)
	netip.MustParsePrefix("100::/64"),       // discard
	netip.MustParsePrefix("2001::/23"),      // IETF protocol assignments (Teredo and others)
	netip.MustParsePrefix("2002::/16"),      // 6to4: an IPv4 address inside
	netip.MustParsePrefix("ff00::/8"),       // multicast
	netip.MustParsePrefix("255.255.255.255/32"),
}

// PublicAddress reports whether ip is an address of the public internet.
func PublicAddress(ip netip.Addr) bool {
	ip = ip.Unmap()
	if !ip.IsValid() || ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() ||
		ip.IsInterfaceLocalMulticast() || ip.IsMulticast() || ip.IsUnspecified() {
		return false
	}
	for _, p := range nonPublicPrefixes {
		if p.Contains(ip) {
			return false
		}
	}
	return true
}

// NotPublicError is a connection refused: its address is not
// public and the server does not allow private networks. Address is what
// the caller asked to dial (a tenant's own host and port), never the
// address a name resolved to: a tenant learns nothing of the server's
// network from it.
type NotPublicError struct{ Address string }

func (e *NotPublicError) Error() string {
	return fmt.Sprintf("%s: refused: not a public address (loopback, private, link-local or reserved); this server reaches only public addresses (prose serve --allow-private-networks allows others)", e.Address)
}

// Control is a net.Dialer Control that refuses addresses that are not
// public: it runs once the name is resolved, for each address tried, so a
// name that resolves to a private address (or is made to, between a check
// and the dial) is refused as well.
func Control(_, address string, _ syscall.RawConn) error {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		host = address
	}
	ip, err := netip.ParseAddr(host)
	if err != nil || !PublicAddress(ip) {
		return &NotPublicError{Address: host}
	}
	return nil
}

// Dialer returns a dialer with deadline (zero: none) and a 30 s connect
// timeout that, when publicOnly, refuses addresses that are not public.
// Its errors are the standard library's: a dial whose error a tenant sees
// goes through DialContext instead.
func Dialer(publicOnly bool, deadline time.Time) *net.Dialer {
	d := &net.Dialer{Deadline: deadline, Timeout: 30 * time.Second}
	if publicOnly {
		d.Control = Control
	}
	return d
}

// DialFunc returns a dial function of Dialer(publicOnly, deadline) whose
// errors a tenant may read (see TenantError).
func DialFunc(publicOnly bool, deadline time.Time) func(ctx context.Context, network, addr string) (net.Conn, error) {
	d := Dialer(publicOnly, deadline)
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, TenantError(addr, err)
		}
		return c, nil
	}
}

// TenantError is err of a dial to addr as a tenant may read it: a refused
// address names only addr as the tenant gave it (not what its name
// resolved to), and a failed name lookup does not name the server's
// resolver ("lookup x on 10.0.0.2:53").
func TenantError(addr string, err error) error {
	var np *NotPublicError
	if errors.As(err, &np) {
		return &NotPublicError{Address: addr}
	}
	var dns *net.DNSError
	if errors.As(err, &dns) && dns.Server != "" {
		clean := *dns
		clean.Server = ""
		return &net.OpError{Op: "dial", Net: "tcp", Err: &clean}
	}
	return err
}

// HTTPClient is a client with timeout whose connections are DialFunc's.
// Proxies from the environment are not used when publicOnly (a proxy would
// reach what the dialer refuses).
func HTTPClient(timeout time.Duration, publicOnly bool) *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.DialContext = DialFunc(publicOnly, time.Time{})
	if publicOnly {
		t.Proxy = nil
	}
	return &http.Client{Timeout: timeout, Transport: t}
}
