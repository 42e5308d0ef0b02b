package server_test

import (
	"context"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"google.golang.org/genproto/googleapis/api/httpbody"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/fieldmaskpb"

	"github.com/proserun/prose/gateway"
	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/server/app"
	"github.com/proserun/prose/server/testenv"
	"github.com/proserun/prose/server/transport"
)

// TestGRPCMessagesOverTheirMethodsBoundAreRefusedUnread: a native gRPC call
// of any method but a file upload whose message is over the JSON body
// bound (8 MiB) is RESOURCE_EXHAUSTED REQUEST_TOO_LARGE, answered from the
// length its gRPC frame declares: the server reads a small part of the
// 20 MiB (the flow-control window), and the call never reaches the
// interceptor chain. A message within the bound is read and meets the
// fields' limits (FIELD_TOO_LARGE); a 20 MiB file upload is received
// (admitted by --max-grpc-uploads). On both ports gateway.Serve serves:
// the shared one and WithGRPCListener's.
func TestGRPCMessagesOverTheirMethodsBoundAreRefusedUnread(t *testing.T) {
	for _, via := range []string{"shared-port", "grpc-listener"} {
		t.Run(via, func(t *testing.T) {
			var mu sync.Mutex
			seen := map[string]int{}
			record := transport.Middleware{Name: "record", Unary: func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
				mu.Lock()
				seen[info.FullMethod]++
				mu.Unlock()
				return h(ctx, req)
			}}
			e := newTestEnvWith(t, func(c *app.Config) { c.Outer = append(c.Outer, record) })
			var read atomic.Int64
			httpLis, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			grpcLis, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			target := httpLis.Addr().String()
			opts := e.App.ServeOptions()
			if via == "grpc-listener" {
				target = grpcLis.Addr().String()
				opts = append(opts, gateway.WithGRPCListener(testenv.CountingListener{Listener: grpcLis, Read: &read}))
			} else {
				httpLis = testenv.CountingListener{Listener: httpLis, Read: &read}
				grpcLis.Close()
			}
			sctx, stop := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() {
				defer close(done)
				_ = gateway.Serve(sctx, httpLis, e.App.GRPC, e.App.HTTP, testenv.Discard(), opts...)
			}()
			t.Cleanup(func() { stop(); <-done })
			conn, err := grpc.NewClient(target, grpc.WithTransportCredentials(insecure.NewCredentials()),
				grpc.WithDefaultCallOptions(grpc.MaxCallSendMsgSize(64<<20)))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { conn.Close() })
			ctx := metadata.AppendToOutgoingContext(t.Context(), "authorization", "Bearer "+e.Init.APIKey)
			org, ws := e.Init.OrganizationID, e.Init.WorkspaceID
			workspaces := platformv1.NewWorkspaceServiceClient(conn)
			automations := platformv1.NewAutomationServiceClient(conn)
			const big = 20 << 20

			refused := map[string]func() error{
				"/prose.platform.v1.WorkspaceService/UpdateWorkspace": func() error {
					_, err := workspaces.UpdateWorkspace(ctx, &platformv1.UpdateWorkspaceRequest{OrganizationId: org, WorkspaceId: ws,
						Workspace: &platformv1.Workspace{Title: strings.Repeat("t", big)}, UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"title"}}})
					return err
				},
				"/prose.platform.v1.AutomationService/CreateAutomation": func() error {
					_, err := automations.CreateAutomation(ctx, &platformv1.CreateAutomationRequest{OrganizationId: org, WorkspaceId: ws,
						Automation: &platformv1.Automation{DisplayName: "big", EnglishCode: strings.Repeat("x", big)}})
					return err
				},
			}
			for method, call := range refused {
				before := read.Load()
				err := call()
				got := read.Load() - before
				if status.Code(err) != codes.ResourceExhausted || testenv.GRPCReason(err) != transport.ReasonName(transport.ReasonRequestTooLarge) {
					t.Fatalf("%s with a 20 MiB message: %v (reason %q), want RESOURCE_EXHAUSTED REQUEST_TOO_LARGE", method, err, testenv.GRPCReason(err))
				}
				if !strings.Contains(status.Convert(err).Message(), "at most 8388608 bytes") {
					t.Errorf("%s: the message does not give the bound: %q", method, status.Convert(err).Message())
				}
				if got > 4<<20 {
					t.Errorf("%s: the server read %d bytes of a refused 20 MiB message, want at most the flow-control window", method, got)
				}
				mu.Lock()
				n := seen[method]
				mu.Unlock()
				if n != 0 {
					t.Errorf("%s: a refused call reached the interceptor chain %d times", method, n)
				}
			}

			// Within the bound: read, then refused by the field's limit.
			_, err = workspaces.UpdateWorkspace(ctx, &platformv1.UpdateWorkspaceRequest{OrganizationId: org, WorkspaceId: ws,
				Workspace: &platformv1.Workspace{Title: strings.Repeat("t", 7<<20)}, UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"title"}}})
			if status.Code(err) != codes.InvalidArgument || testenv.GRPCReason(err) != transport.ReasonName(transport.ReasonFieldTooLarge) {
				t.Fatalf("UpdateWorkspace with a 7 MiB title: %v, want INVALID_ARGUMENT FIELD_TOO_LARGE", err)
			}
			// A small call goes on.
			if _, err := workspaces.GetWorkspace(ctx, &platformv1.GetWorkspaceRequest{OrganizationId: org, WorkspaceId: ws}); err != nil {
				t.Fatalf("GetWorkspace: %v", err)
			}
			// A file upload may be larger.
			_, err = platformv1.NewFileServiceClient(conn).UploadFile(ctx, &platformv1.UploadFileRequest{OrganizationId: org, Filename: "big.bin",
				Content: &httpbody.HttpBody{ContentType: "application/octet-stream", Data: make([]byte, big)}})
			if err != nil {
				t.Fatalf("a 20 MiB upload: %v", err)
			}
		})
	}
}
