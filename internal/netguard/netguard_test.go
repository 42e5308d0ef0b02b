package netguard_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"
	"time"

	"github.com/proserun/prose/internal/netguard"
)

func TestPublicAddress(t *testing.T) {
	for addr, public := range map[string]bool{
		"8.8.8.8": true, "1.1.1.1": true, "2606:4700:4700::1111": true, "93.184.215.14": true,
		"127.0.0.1": false, "127.8.9.10": false, "::1": false, "0.0.0.0": false, "::": false,
		"10.1.2.3": false, "172.16.0.1": false, "172.31.255.255": false, "192.168.1.1": false,
		"169.254.169.254": false, "fe80::1": false, "fd00:ec2::254": false, "fc00::1": false,
		"100.64.0.1": false, "198.18.0.1": false, "240.0.0.1": false, "255.255.255.255": false,
		"224.0.0.1": false, "ff02::1": false, "::ffff:127.0.0.1": false, "::ffff:10.0.0.1": false,
		"64:ff9b::7f00:1": false, "2002:7f00:1::": false, "2001:db8::1": false,
		"172.32.0.1": true, "100.128.0.1": true,
	} {
		if got := netguard.PublicAddress(netip.MustParseAddr(addr)); got != public {
			t.Errorf("PublicAddress(%s) = %v, want %v", addr, got, public)
		}
	}
}

// A public-only client refuses a server on loopback, by address and by a
// name that resolves to it, and follows no redirect there; the other one
// reaches it.
func TestHTTPClientRefusesPrivateAddresses(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) }))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	for _, u := range []string{srv.URL, "http://localhost:" + port} {
		resp, err := netguard.HTTPClient(5*time.Second, true).Get(u)
		if err == nil {
			resp.Body.Close()
			t.Fatalf("%s: reached with public-only", u)
		}
		var np *netguard.NotPublicError
		if !errors.As(err, &np) {
			t.Fatalf("%s: %v, want a NotPublicError", u, err)
		}
	}
	resp, err := netguard.HTTPClient(5*time.Second, false).Get(srv.URL)
	if err != nil {
		t.Fatalf("private allowed: %v", err)
	}
	resp.Body.Close()
	if _, err := netguard.Dialer(true, time.Time{}).DialContext(context.Background(), "tcp", srv.Listener.Addr().String()); err == nil {
		t.Fatal("the dialer reached loopback")
	}
}
