package server_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"google.golang.org/genproto/googleapis/api/httpbody"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/server/app"
	"github.com/proserun/prose/server/testenv"
	"github.com/proserun/prose/server/transport"
)

// TestGRPCUploadSlotsPerOrganization: native gRPC uploads take a slot of
// their organization's share (--max-grpc-uploads-per-organization, by
// default half of --max-grpc-uploads) before one of the server's. With 4
// slots and the default share of 2, an organization holding two uploads has
// its third refused at once (RESOURCE_EXHAUSTED UPLOADS_BUSY, naming the
// share) while another organization's upload is taken, with the x-api-key
// header as with Bearer; calls with a key that does not check out share
// one organization's share. On the three ways native gRPC arrives (the
// server's transport, the shared HTTP port, --grpc-addr).
func TestGRPCUploadSlotsPerOrganization(t *testing.T) {
	for _, via := range []string{"grpc-transport", "shared-port", "grpc-only"} {
		t.Run(via, func(t *testing.T) { testGRPCUploadShare(t, via) })
	}
}

func testGRPCUploadShare(t *testing.T, via string) {
	entered := make(chan struct{}, 4)
	release := make(chan struct{})
	free := sync.OnceFunc(func() { close(release) })
	hold := transport.Middleware{Name: "hold", Unary: func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		if r, ok := req.(*platformv1.UploadFileRequest); ok && r.GetFilename() == "hold" {
			entered <- struct{}{}
			<-release
		}
		return h(ctx, req)
	}}
	e := newTestEnvWith(t, func(c *app.Config) {
		c.MaxGRPCUploads = 4
		c.Outer = append(c.Outer, hold)
		if via == "grpc-only" {
			testenv.WithGRPCOnly(c)
		}
	})
	other, err := app.Bootstrap(context.Background(), e.Store, app.InitOptions{Organization: "Other org", Email: "other-" + e.Email, Workspace: "Ops"})
	if err != nil {
		t.Fatal(err)
	}
	c := platformv1.NewFileServiceClient(grpcUploadConn(t, e, via))
	t.Cleanup(free) // before the servers stop: a failed check leaves no upload held
	upload := func(header, key, org, name string) error {
		ctx := metadata.AppendToOutgoingContext(t.Context(), header, key)
		_, err := c.UploadFile(ctx, &platformv1.UploadFileRequest{OrganizationId: org, Filename: name,
			Content: &httpbody.HttpBody{ContentType: "application/octet-stream", Data: make([]byte, 1<<20)}}, grpc.MaxCallSendMsgSize(64<<20))
		return err
	}
	busy := func(err error) bool {
		return status.Code(err) == codes.ResourceExhausted && testenv.GRPCReason(err) == transport.ReasonName(transport.ReasonUploadsBusy)
	}
	bearer := "Bearer " + e.Init.APIKey
	held := make(chan error, 2)
	for range 2 {
		go func() { held <- upload("authorization", bearer, e.Init.OrganizationID, "hold") }()
	}
	<-entered
	<-entered
	err = upload("authorization", bearer, e.Init.OrganizationID, "third")
	if !busy(err) || !strings.Contains(status.Convert(err).Message(), "share") {
		t.Fatalf("a third upload of an organization holding its share: %v, want UPLOADS_BUSY (its share)", err)
	}
	if err := upload("x-api-key", other.APIKey, other.OrganizationID, "other"); err != nil {
		t.Fatalf("another organization's upload while the first holds its share: %v", err)
	}
	// Keys that do not check out are one organization: they are refused
	// by the chain (UNAUTHENTICATED) once admitted, and never hold more
	// than one share.
	if err := upload("authorization", "Bearer prose_nonsense", e.Init.OrganizationID, "bad"); status.Code(err) != codes.Unauthenticated {
		t.Fatalf("an upload with a bad key: %v, want UNAUTHENTICATED", err)
	}
	free()
	for range 2 {
		if err := <-held; err != nil {
			t.Fatalf("a held upload: %v", err)
		}
	}
}
