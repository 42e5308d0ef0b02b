package main

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/proserun/prose/gateway"
	"github.com/proserun/prose/server/app"
	"github.com/proserun/prose/server/testenv"
	"github.com/proserun/prose/store"
)

// writeSelfSigned writes a self-signed certificate for 127.0.0.1 with the
// serial and its key to certFile and keyFile.
func writeSelfSigned(t *testing.T, certFile, keyFile string, serial int64) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: "prose test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	// Written beside and renamed, as a renewal (or a Kubernetes secret) does.
	for _, f := range []struct {
		path string
		data []byte
	}{{certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}, {keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb})}} {
		tmp := f.path + ".tmp"
		if err := os.WriteFile(tmp, f.data, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, f.path); err != nil {
			t.Fatal(err)
		}
	}
}

// serveTLS serves the test app over TLS with the files' certificate.
func serveTLS(t *testing.T, e *testEnv, certFile, keyFile string) string {
	t.Helper()
	certs, err := gateway.NewCertReloader(certFile, keyFile, testenv.Discard())
	if err != nil {
		t.Fatal(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = gateway.Serve(ctx, lis, e.App.GRPC, e.App.HTTP, testenv.Discard(), append(e.App.ServeOptions(), gateway.WithTLS(certs.TLSConfig()))...)
	}()
	t.Cleanup(func() { cancel(); <-done })
	return lis.Addr().String()
}

// TLS: HTTPS (HTTP/1.1 and HTTP/2) and gRPC over TLS on one port; a new
// connection after the files were replaced sees the new certificate.
func TestServeTLSReloadsCertificate(t *testing.T) {
	e := newTestEnv(t)
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	writeSelfSigned(t, certFile, keyFile, 1)
	addr := serveTLS(t, e, certFile, keyFile)

	// serialOverHTTPS makes a new connection and returns the serial the
	// server presented and the protocol of GET /livez.
	serialOverHTTPS := func(h2 bool) (int64, string) {
		t.Helper()
		tr := &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, ForceAttemptHTTP2: h2} //nolint:gosec // the test's self-signed certificates
		if !h2 {
			tr.TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{}
		}
		defer tr.CloseIdleConnections()
		resp, err := (&http.Client{Transport: tr}).Get("https://" + addr + "/livez")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("/livez over TLS: %d", resp.StatusCode)
		}
		return resp.TLS.PeerCertificates[0].SerialNumber.Int64(), resp.Proto
	}
	serialOverGRPC := func() int64 {
		t.Helper()
		var got int64
		creds := credentials.NewTLS(&tls.Config{InsecureSkipVerify: true, VerifyPeerCertificate: func(raw [][]byte, _ [][]*x509.Certificate) error { //nolint:gosec // the test's self-signed certificates
			c, err := x509.ParseCertificate(raw[0])
			if err == nil {
				got = c.SerialNumber.Int64()
			}
			return err
		}})
		conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(creds))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		res, err := healthpb.NewHealthClient(conn).Check(context.Background(), &healthpb.HealthCheckRequest{})
		if err != nil || res.GetStatus() != healthpb.HealthCheckResponse_SERVING {
			t.Fatalf("gRPC health over TLS: %v %v", res, err)
		}
		return got
	}
	if s, proto := serialOverHTTPS(true); s != 1 || proto != "HTTP/2.0" {
		t.Errorf("HTTPS: serial %d over %s, want 1 over HTTP/2.0", s, proto)
	}
	if s, proto := serialOverHTTPS(false); s != 1 || proto != "HTTP/1.1" {
		t.Errorf("HTTPS: serial %d over %s, want 1 over HTTP/1.1", s, proto)
	}
	if s := serialOverGRPC(); s != 1 {
		t.Errorf("gRPC: serial %d, want 1", s)
	}

	writeSelfSigned(t, certFile, keyFile, 2)
	if s, _ := serialOverHTTPS(true); s != 2 {
		t.Errorf("after the renewal HTTPS presents serial %d, want 2", s)
	}
	if s := serialOverGRPC(); s != 2 {
		t.Errorf("after the renewal gRPC presents serial %d, want 2", s)
	}

	// A broken renewal (a key that is not the certificate's) keeps the
	// last good pair.
	if err := os.WriteFile(keyFile, []byte("not a key"), 0o600); err != nil {
		t.Fatal(err)
	}
	if s, _ := serialOverHTTPS(true); s != 2 {
		t.Errorf("with a broken key file HTTPS presents serial %d, want 2 (the last good one)", s)
	}
}

func TestServeTLSFlagsGoTogether(t *testing.T) {
	var out, errb bytes.Buffer
	if code := realMain([]string{"serve", "--data", t.TempDir(), "--tls-cert", "x.pem"}, nil, &out, &errb); code != 2 {
		t.Fatalf("exit %d, want 2: %s", code, errb.String())
	}
}

// pingStore is a store whose Ping fails while down is set.
type pingStore struct {
	store.Store
	down atomic.Bool
}

func (s *pingStore) Ping(ctx context.Context) error {
	if s.down.Load() {
		return errors.New("database unreachable")
	}
	return s.Store.Ping(ctx)
}

// Health: gRPC health for the server and each service, /readyz (the store,
// the shutdown), /livez, and the older /healthz and /v2/health.
func TestServeHealth(t *testing.T) {
	var ps *pingStore
	e := newTestEnvWith(t, func(c *app.Config) {
		st := c.Store
		if st == nil {
			var err error
			if st, err = app.OpenStore(context.Background(), c.Data, ""); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
		}
		ps = &pingStore{Store: st}
		c.Store = ps
	})
	get := func(path string) (int, string) {
		t.Helper()
		resp, err := http.Get(e.Srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	hc := healthpb.NewHealthClient(e.Conn)
	check := func(service string) healthpb.HealthCheckResponse_ServingStatus {
		t.Helper()
		res, err := hc.Check(context.Background(), &healthpb.HealthCheckRequest{Service: service})
		if err != nil {
			t.Fatalf("health of %q: %v", service, err)
		}
		return res.GetStatus()
	}
	services := []string{"", "prose.platform.v1.AutomationService", "prose.platform.v1.RunService", "prose.legacy.v2.LegacyService"}
	for _, svc := range services {
		if s := check(svc); s != healthpb.HealthCheckResponse_SERVING {
			t.Errorf("health of %q: %s", svc, s)
		}
	}
	if _, err := hc.Check(context.Background(), &healthpb.HealthCheckRequest{Service: "prose.nope.v1.Nothing"}); status.Code(err) != codes.NotFound {
		t.Errorf("health of an unknown service: %v, want NOT_FOUND", err)
	}
	for _, path := range []string{"/readyz", "/livez", "/healthz", "/v2/health"} {
		if code, body := get(path); code != http.StatusOK {
			t.Errorf("%s: %d %s", path, code, body)
		}
	}
	ps.down.Store(true)
	if code, body := get("/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(body, "database unreachable") {
		t.Errorf("/readyz with the store down: %d %s", code, body)
	}
	if code, _ := get("/livez"); code != http.StatusOK {
		t.Errorf("/livez with the store down: %d", code)
	}
	ps.down.Store(false)

	e.App.BeginShutdown()
	for _, svc := range services {
		if s := check(svc); s != healthpb.HealthCheckResponse_NOT_SERVING {
			t.Errorf("health of %q during the shutdown: %s", svc, s)
		}
	}
	if code, body := get("/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(body, "shutting_down") {
		t.Errorf("/readyz during the shutdown: %d %s", code, body)
	}
	if code, _ := get("/livez"); code != http.StatusOK {
		t.Errorf("/livez during the shutdown: %d", code)
	}
}
