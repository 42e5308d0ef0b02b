package client_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/proserun/prose/client"
	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
)

// flakyRuns answers GetRun with UNAVAILABLE fails times, then a run; it
// records the authorization header it saw.
type flakyRuns struct {
	platformv1.UnimplementedRunServiceServer
	fails, calls atomic.Int32
	auth         atomic.Value
}

func (f *flakyRuns) GetRun(ctx context.Context, req *platformv1.GetRunRequest) (*platformv1.Run, error) {
	f.calls.Add(1)
	md, _ := metadata.FromIncomingContext(ctx)
	if v := md.Get("authorization"); len(v) > 0 {
		f.auth.Store(v[0])
	}
	if f.fails.Add(-1) >= 0 {
		return nil, status.Error(codes.Unavailable, "restarting")
	}
	return &platformv1.Run{Name: "organizations/o/workspaces/w/automations/a/runs/" + req.GetRunId(),
		State: &platformv1.RunState{State: &platformv1.RunState_Completed{Completed: &platformv1.CompletedRunState{}}}}, nil
}

func serveFake(t *testing.T, f *flakyRuns, opts ...grpc.ServerOption) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer(opts...)
	platformv1.RegisterRunServiceServer(srv, f)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	return lis.Addr().String()
}

// TestDialRetriesAndKey: the key travels as a bearer token, and a call the
// server answers UNAVAILABLE is retried by the default service config (up to
// 4 attempts); WithServiceConfig replaces it.
func TestDialRetriesAndKey(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	f := &flakyRuns{}
	addr := serveFake(t, f)
	c, err := client.Dial("http://"+addr, "prose_k")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	f.fails.Store(2)
	r, err := c.GetRun(ctx, "organizations/o/workspaces/w/automations/a/runs/r1")
	if err != nil || !client.Settled(r) || f.calls.Load() != 3 {
		t.Fatalf("run %v, err %v after %d calls; want it after 3", r, err, f.calls.Load())
	}
	if f.auth.Load() != "Bearer prose_k" {
		t.Errorf("authorization %v", f.auth.Load())
	}
	f.calls.Store(0)
	f.fails.Store(10)
	if _, err := c.GetRun(ctx, "organizations/o/workspaces/w/automations/a/runs/r1"); status.Code(err) != codes.Unavailable || f.calls.Load() != 4 {
		t.Fatalf("err %v after %d calls; want UNAVAILABLE after 4", err, f.calls.Load())
	}

	noRetry, err := client.Dial(addr, "prose_k", client.WithServiceConfig(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	defer noRetry.Close()
	f.calls.Store(0)
	f.fails.Store(1)
	if _, err := noRetry.GetRun(ctx, "organizations/o/workspaces/w/automations/a/runs/r1"); status.Code(err) != codes.Unavailable || f.calls.Load() != 1 {
		t.Fatalf("without retries: err %v after %d calls", err, f.calls.Load())
	}
}

// TestDialTLS: https:// and WithTLS dial with TLS; a plain dial of a TLS
// server fails.
func TestDialTLS(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cert, pool := selfSigned(t)
	f := &flakyRuns{}
	addr := serveFake(t, f, grpc.Creds(credentials.NewTLS(&tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})))
	_, port, _ := net.SplitHostPort(addr)
	c, err := client.Dial("https://localhost:"+port, "prose_k", client.WithTLS(&tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.GetRun(ctx, "organizations/o/workspaces/w/automations/a/runs/r1"); err != nil {
		t.Fatalf("over TLS: %v", err)
	}
	plain, err := client.Dial(addr, "prose_k", client.WithServiceConfig(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	short, cancel2 := context.WithTimeout(ctx, 2*time.Second)
	defer cancel2()
	if _, err := plain.GetRun(short, "organizations/o/workspaces/w/automations/a/runs/r1"); err == nil {
		t.Fatal("a plain dial of a TLS server succeeded")
	}
	for _, bad := range []string{"", "ftp://x", "https://x/path"} {
		if _, err := client.Dial(bad, "k"); err == nil {
			t.Errorf("Dial(%q) succeeded", bad)
		}
	}
	if _, err := client.Dial(addr, " "); err == nil {
		t.Error("Dial without a key succeeded")
	}
}

func selfSigned(t *testing.T) (tls.Certificate, *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "localhost"}, DNSNames: []string{"localhost"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true, IsCA: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(leaf)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, pool
}
