package main

import (
	"context"
	"fmt"
	"strings"

	"google.golang.org/genproto/googleapis/api/httpbody"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/fieldmaskpb"

	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
)

// grpcUploader sends one pre-encoded UploadFileRequest over several
// connections.
type grpcUploader struct {
	conns  []*grpc.ClientConn
	req    []byte // the encoded request, shared by every call
	method string
	md     metadata.MD
}

func newGRPCUploader(addr, key, org, workspace, method string, size int64, n int) (*grpcUploader, error) {
	data := make([]byte, size)
	_, _ = pattern{}.Read(data)
	var msg proto.Message = &platformv1.UploadFileRequest{OrganizationId: strings.TrimPrefix(org, "organizations/"), Filename: "load.bin",
		Content: &httpbody.HttpBody{ContentType: "application/octet-stream", Data: data}}
	full := "/prose.platform.v1.FileService/UploadFile"
	switch method {
	case "upload":
	case "update-workspace":
		// Not a large-payload method: a title of size bytes.
		ws := strings.Split(workspace, "/")
		if len(ws) != 4 {
			return nil, fmt.Errorf("--init has no workspace (%q)", workspace)
		}
		msg = &platformv1.UpdateWorkspaceRequest{OrganizationId: ws[1], WorkspaceId: ws[3],
			Workspace: &platformv1.Workspace{Title: string(data)}, UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"title"}}}
		full = "/prose.platform.v1.WorkspaceService/UpdateWorkspace"
	default:
		return nil, fmt.Errorf("--grpc-method %q: want upload or update-workspace", method)
	}
	req, err := proto.Marshal(msg)
	if err != nil {
		return nil, err
	}
	g := &grpcUploader{req: req, method: full, md: metadata.Pairs("authorization", "Bearer "+key)}
	for range max(n, 1) {
		c, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
			grpc.WithDefaultCallOptions(grpc.MaxCallSendMsgSize(1<<30), grpc.ForceCodecV2(rawCodec{})))
		if err != nil {
			g.close()
			return nil, err
		}
		g.conns = append(g.conns, c)
	}
	return g, nil
}

func (g *grpcUploader) upload(ctx context.Context, i int) string {
	var resp emptypb.Empty // the answer's fields are not read
	err := g.conns[i%len(g.conns)].Invoke(metadata.NewOutgoingContext(ctx, g.md), g.method, rawMsg(g.req), &resp)
	if err == nil {
		return "gRPC OK"
	}
	st := status.Convert(err)
	for _, d := range st.Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok {
			return fmt.Sprintf("gRPC %s %s", st.Code(), info.GetReason())
		}
	}
	return fmt.Sprintf("gRPC %s", st.Code())
}

func (g *grpcUploader) close() {
	for _, c := range g.conns {
		_ = c.Close()
	}
}

// rawMsg is an encoded request; rawCodec sends it as it is (no copy per
// call) and decodes answers as protobuf.
type rawMsg []byte

type rawCodec struct{}

func (rawCodec) Name() string { return "proto" }

func (rawCodec) Marshal(v any) (mem.BufferSlice, error) {
	if m, ok := v.(rawMsg); ok {
		return mem.BufferSlice{mem.SliceBuffer(m)}, nil
	}
	b, err := proto.Marshal(v.(proto.Message))
	return mem.BufferSlice{mem.SliceBuffer(b)}, err
}

func (rawCodec) Unmarshal(data mem.BufferSlice, v any) error {
	return proto.Unmarshal(data.Materialize(), v.(proto.Message))
}
