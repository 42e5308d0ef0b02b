package main

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"google.golang.org/genproto/googleapis/api/httpbody"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/fieldmaskpb"

	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/internal/testtime"
	"github.com/proserun/prose/server/app"
	"github.com/proserun/prose/server/testenv"
	"github.com/proserun/prose/server/transport"
	"github.com/proserun/prose/server/transport/chain"
)

// TestGRPCOnlyPortBoundsEveryMethod: on the gRPC-only port (--grpc-addr,
// grpc-go's transport) every request message is bounded to 8 MiB, file
// uploads included: a 20 MiB upload, one just over 8 MiB, or a 20 MiB
// UpdateWorkspace is RESOURCE_EXHAUSTED (grpc-go's own answer, naming the
// bound), refused from the length its frame declares (the server reads at
// most the flow-control window of it) and before the interceptor chain.
// Within the bound, uploads and other calls are served.
func TestGRPCOnlyPortBoundsEveryMethod(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]int{}
	record := transport.Middleware{Name: "record", Unary: func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		mu.Lock()
		seen[info.FullMethod]++
		mu.Unlock()
		return h(ctx, req)
	}}
	seenOf := func(method string) int {
		mu.Lock()
		defer mu.Unlock()
		return seen[method]
	}
	e := newTestEnvWith(t, func(c *app.Config) { testenv.WithGRPCOnly(c); c.Outer = append(c.Outer, record) })
	var read atomic.Int64
	conn := e.ServeGRPCOnly(t, func(l net.Listener) net.Listener { return testenv.CountingListener{Listener: l, Read: &read} })
	ctx := metadata.AppendToOutgoingContext(t.Context(), "authorization", "Bearer "+e.Init.APIKey)
	org, ws := e.Init.OrganizationID, e.Init.WorkspaceID
	files := platformv1.NewFileServiceClient(conn)
	workspaces := platformv1.NewWorkspaceServiceClient(conn)
	const upload = "/prose.platform.v1.FileService/UploadFile"
	uploadOf := func(size int) error {
		_, err := files.UploadFile(ctx, &platformv1.UploadFileRequest{OrganizationId: org, Filename: "f.bin",
			Content: &httpbody.HttpBody{ContentType: "application/octet-stream", Data: make([]byte, size)}})
		return err
	}

	for _, size := range []int{20 << 20, 8<<20 + 1} {
		before := read.Load()
		err := uploadOf(size)
		got := read.Load() - before
		if status.Code(err) != codes.ResourceExhausted || !strings.Contains(status.Convert(err).Message(), "vs. 8388608") {
			t.Fatalf("an upload of %d bytes: %v, want RESOURCE_EXHAUSTED over 8388608 bytes", size, err)
		}
		if got > 4<<20 {
			t.Errorf("an upload of %d bytes: the server read %d bytes of it, want at most the flow-control window", size, got)
		}
	}
	if n := seenOf(upload); n != 0 {
		t.Errorf("refused uploads reached the interceptor chain %d times", n)
	}
	// Other methods take 8 MiB on either port.
	before := read.Load()
	_, err := workspaces.UpdateWorkspace(ctx, &platformv1.UpdateWorkspaceRequest{OrganizationId: org, WorkspaceId: ws,
		Workspace: &platformv1.Workspace{Title: strings.Repeat("t", 20<<20)}, UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"title"}}})
	if status.Code(err) != codes.ResourceExhausted || !strings.Contains(status.Convert(err).Message(), "vs. 8388608") {
		t.Fatalf("UpdateWorkspace with a 20 MiB message: %v, want RESOURCE_EXHAUSTED over 8388608 bytes", err)
	}
	if got := read.Load() - before; got > 4<<20 {
		t.Errorf("UpdateWorkspace with a 20 MiB message: the server read %d bytes of it", got)
	}
	// Within the bound: served, through the chain.
	if err := uploadOf(7 << 20); err != nil {
		t.Fatalf("a 7 MiB upload: %v", err)
	}
	if n := seenOf(upload); n != 1 {
		t.Errorf("a 7 MiB upload went through the chain %d times, want 1", n)
	}
	if _, err := workspaces.GetWorkspace(ctx, &platformv1.GetWorkspaceRequest{OrganizationId: org, WorkspaceId: ws}); err != nil {
		t.Fatalf("GetWorkspace: %v", err)
	}
}

// TestServeGRPCOnlyPort runs `prose serve --grpc-addr` and the prose CLI
// against that port (--address): plain gRPC, then mutual TLS
// (--tls-cert, --tls-client-ca apply to it: a client without a certificate
// is refused). Each server stops on SIGTERM with exit 0 after draining.
func TestServeGRPCOnlyPort(t *testing.T) {
	bin := proseBinary(t)
	data := t.TempDir()
	init := proseInit(t, bin, "--data", data)
	deadline := time.Now().Add(2 * time.Minute)
	stop := func(p *proseProc) {
		t.Helper()
		if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		select {
		case <-p.done:
		case <-time.After(time.Until(deadline)):
			t.Fatalf("prose serve did not stop on SIGTERM:\n%s", p.logTail())
		}
		if code := p.cmd.ProcessState.ExitCode(); code != 0 || !strings.Contains(p.logTail(), `"msg":"stopped"`) {
			t.Fatalf("prose serve after SIGTERM: exit %d\n%s", code, p.logTail())
		}
	}

	p := startProse(t, bin, deadline, "--data", data, "--grpc-addr", "127.0.0.1:0")
	if p.grpcAddr == "" || p.grpcAddr == p.addr {
		t.Fatalf("no gRPC-only port logged (%q):\n%s", p.grpcAddr, p.logTail())
	}
	c := newCLI(t, "PROSE_ADDRESS="+p.grpcAddr, "PROSE_API_KEY="+init.APIKey)
	a := c.json(0, "automations", "create", "--file", "../../examples/invoice.prose", "--title", "Invoices", "--id", "invoices", "--publish")
	if a["latest_published_version"] == nil {
		t.Fatalf("created %v", a)
	}
	if out := c.must(0, "automations", "list"); !strings.Contains(out, "invoices") {
		t.Fatalf("automations list:\n%s", out)
	}
	if out := c.must(0, "automations", "invoke", "invoices", "--input", "invoice_total=120.50", "--wait"); !strings.Contains(out, "Completed") || !strings.Contains(out, "output due: 128.9350") {
		t.Fatalf("invoke --wait:\n%s", out)
	}
	if out := c.must(0, "runs", "list"); !strings.Contains(out, "Completed") {
		t.Fatalf("runs list:\n%s", out)
	}
	stop(p)

	ca := newTestCA(t, "prose-ca")
	srvCert, srvKey := ca.issue("server", 2, true)
	cliCert, cliKey := ca.issue("client", 3, false)
	p = startProse(t, bin, deadline, "--data", data, "--grpc-addr", "127.0.0.1:0",
		"--tls-cert", srvCert, "--tls-key", srvKey, "--tls-client-ca", ca.file)
	base := []string{"--address", "https://" + p.grpcAddr, "--api-key", init.APIKey, "--ca-file", ca.file}
	if out := c.must(0, append(base, "automations", "list", "--cert-file", cliCert, "--key-file", cliKey)...); !strings.Contains(out, "invoices") {
		t.Fatalf("automations list over mutual TLS on the gRPC-only port:\n%s", out)
	}
	if code, _, errb := c.run(append(base, "automations", "list")...); code != exitUnavailable {
		t.Fatalf("without a client certificate: exit %d, want %d\n%s", code, exitUnavailable, errb)
	}
	stop(p)
}

// grpcOnlyAddr serves the app's gRPC-only port (ServeGRPCOnly) and returns
// its address, for raw connections.
func grpcOnlyAddr(t *testing.T, e *testEnv) (string, *grpc.ClientConn) {
	t.Helper()
	var addr string
	conn := e.ServeGRPCOnly(t, func(l net.Listener) net.Listener { addr = l.Addr().String(); return l })
	return addr, conn
}

// TestGRPCOnlyPortClosesSilentConnections: on the gRPC-only port a client
// that opens a TCP connection and sends nothing (no TLS handshake, no HTTP/2
// preface) is closed after the handshake timeout (10 s in production,
// shortened here), while ordinary calls are served.
func TestGRPCOnlyPortClosesSilentConnections(t *testing.T) {
	e := newTestEnvWith(t, func(c *app.Config) {
		testenv.WithGRPCOnly(c)
		c.GRPCHandshakeTimeout = 500 * time.Millisecond
	})
	addr, conn := grpcOnlyAddr(t, e)
	ctx := metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer "+e.Init.APIKey)
	if _, err := platformv1.NewWorkspaceServiceClient(conn).GetWorkspace(ctx, &platformv1.GetWorkspaceRequest{OrganizationId: e.Init.OrganizationID, WorkspaceId: e.Init.WorkspaceID}); err != nil {
		t.Fatalf("a call on the gRPC-only port: %v", err)
	}
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.SetReadDeadline(testtime.Deadline(testtime.Wait)); err != nil {
		t.Fatal(err)
	}
	// The server's own settings come first; then the connection ends.
	_, err = io.Copy(io.Discard, c)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("a silent connection is still open after %s", testtime.Limit(testtime.Wait))
	}
}

// TestGRPCOnlyPortPingPolicy: the gRPC-only port advertises at most 250
// streams per connection (as net/http's HTTP/2 server on the shared port),
// and a client pinging more often than every 5 s is sent GOAWAY
// ENHANCE_YOUR_CALM "too_many_pings" and closed.
func TestGRPCOnlyPortPingPolicy(t *testing.T) {
	e := newTestEnvWith(t, testenv.WithGRPCOnly)
	addr, _ := grpcOnlyAddr(t, e)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.SetDeadline(testtime.Deadline(testtime.Wait)); err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(c, http2.ClientPreface); err != nil {
		t.Fatal(err)
	}
	fr := http2.NewFramer(c, c)
	if err := fr.WriteSettings(); err != nil {
		t.Fatal(err)
	}
	var maxStreams uint32
	var sawSettings bool
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			t.Fatalf("no GOAWAY after the pings (settings seen: %v): %v", sawSettings, err)
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if f.IsAck() {
				continue
			}
			sawSettings = true
			maxStreams, _ = f.Value(http2.SettingMaxConcurrentStreams)
			if err := fr.WriteSettingsAck(); err != nil {
				t.Fatal(err)
			}
			// Pings back to back, as a misconfigured client would.
			for i := range 10 {
				if err := fr.WritePing(false, [8]byte{byte(i)}); err != nil {
					t.Fatalf("ping %d: %v", i, err)
				}
			}
		case *http2.GoAwayFrame:
			if f.ErrCode != http2.ErrCodeEnhanceYourCalm || string(f.DebugData()) != "too_many_pings" {
				t.Fatalf("GOAWAY %v %q, want ENHANCE_YOUR_CALM too_many_pings", f.ErrCode, f.DebugData())
			}
			if maxStreams != chain.GRPCOnlyMaxConcurrentStreams {
				t.Errorf("SETTINGS_MAX_CONCURRENT_STREAMS %d, want %d", maxStreams, chain.GRPCOnlyMaxConcurrentStreams)
			}
			return
		}
	}
}
