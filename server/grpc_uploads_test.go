package server_test

import (
	"context"
	"net"
	"net/http"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/api/httpbody"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/proserun/prose/gateway"
	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/internal/testtime"
	"github.com/proserun/prose/server/app"
	"github.com/proserun/prose/server/testenv"
	"github.com/proserun/prose/server/transport"
)

// TestGRPCUploadsInFlightAreBounded: with --max-grpc-uploads 2 (and no
// share per organization), two native
// gRPC uploads held in flight make a third one RESOURCE_EXHAUSTED
// UPLOADS_BUSY (refused before its message is read), while the HTTP
// side's uploads (the gateway's in-process calls, bounded by --max-uploads)
// and other gRPC calls go on; once an upload ends its slot is free again.
// Both ways gRPC calls arrive are checked: the server's own transport
// (its InTapHandle) and the shared HTTP port of `prose serve`
// (gateway.Serve, grpc.Server.ServeHTTP), and the gRPC-only port of
// --grpc-addr (its own server, sharing the bound).
func TestGRPCUploadsInFlightAreBounded(t *testing.T) {
	for _, via := range []string{"grpc-transport", "shared-port", "grpc-only"} {
		t.Run(via, func(t *testing.T) { testGRPCUploadsBounded(t, via) })
	}
}

func testGRPCUploadsBounded(t *testing.T, via string) {
	entered := make(chan struct{}, 4)
	release := make(chan struct{})
	// Holds the native uploads named "hold" inside the server.
	hold := transport.Middleware{Name: "hold", Unary: func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		if r, ok := req.(*platformv1.UploadFileRequest); ok && r.GetFilename() == "hold" {
			entered <- struct{}{}
			<-release
		}
		return h(ctx, req)
	}}
	e := newTestEnvWith(t, func(c *app.Config) {
		c.MaxGRPCUploads, c.MaxGRPCUploadsPerOrg = 2, -1 // the server's bound alone
		c.Outer = append(c.Outer, hold)
		if via == "grpc-only" {
			testenv.WithGRPCOnly(c)
		}
	})
	_, ctx := e.files(t)
	conn := grpcUploadConn(t, e, via)
	c := platformv1.NewFileServiceClient(conn)
	org := e.Init.OrganizationID
	upload := func(name string, size int) error {
		_, err := c.UploadFile(ctx, &platformv1.UploadFileRequest{OrganizationId: org, Filename: name,
			Content: &httpbody.HttpBody{ContentType: "application/octet-stream", Data: make([]byte, size)}}, grpc.MaxCallSendMsgSize(64<<20))
		return err
	}
	held := make(chan error, 2)
	for range 2 {
		go func() { held <- upload("hold", 1<<20) }()
	}
	<-entered
	<-entered
	err := upload("third", 4<<20)
	if status.Code(err) != codes.ResourceExhausted || testenv.GRPCReason(err) != transport.ReasonName(transport.ReasonUploadsBusy) {
		t.Fatalf("a third native upload while two are in flight: %v", err)
	}
	// The HTTP side is bounded by the gateway, not by this bound.
	if code, _, raw := e.fileHTTP(t, "POST", "/api/v1/organizations/"+org+"/files:upload?filename=h.bin", "application/octet-stream", []byte("hello"), e.Init.APIKey); code != http.StatusOK {
		t.Fatalf("an HTTP upload while the native slots are taken: %d %s", code, raw)
	}
	// Other calls are not bounded.
	if _, err := platformv1.NewWorkspaceServiceClient(conn).ListWorkspaces(ctx, &platformv1.ListWorkspacesRequest{OrganizationId: org}); err != nil {
		t.Fatalf("another call while the native upload slots are taken: %v", err)
	}
	close(release)
	for range 2 {
		if err := <-held; err != nil {
			t.Fatalf("a held upload: %v", err)
		}
	}
	// The slots are free again (a slot is released when its stream ends,
	// just after the answer).
	deadline := testtime.Deadline(testtime.Wait)
	for {
		err := upload("after", 4<<20)
		if err == nil {
			break
		}
		if status.Code(err) != codes.ResourceExhausted || time.Now().After(deadline) {
			t.Fatalf("an upload after the others ended: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// grpcUploadConn is a native gRPC connection to e's server by way via:
// "grpc-transport" (the server's own transport), "shared-port" (the HTTP
// port of `prose serve`, gateway.Serve) or "grpc-only" (--grpc-addr; e's
// config must have testenv.WithGRPCOnly).
func grpcUploadConn(t *testing.T, e *testEnv, via string) *grpc.ClientConn {
	t.Helper()
	switch via {
	case "shared-port":
		lis, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		sctx, stop := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			_ = gateway.Serve(sctx, lis, e.App.GRPC, e.App.HTTP, testenv.Discard(), e.App.ServeOptions()...)
		}()
		t.Cleanup(func() { stop(); <-done })
		conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		return conn
	case "grpc-only":
		return e.ServeGRPCOnly(t, nil)
	}
	return e.Conn
}
