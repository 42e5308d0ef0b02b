package gateway_test

import (
	"bytes"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/api/httpbody"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/proserun/prose/gateway"
	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
)

// TestMarshalIsProtojsonsBytes: a response message marshals to protojson's
// bytes (proto names, unpopulated fields left out) with no allocation of
// its own on top of protojson's; an HttpBody is still its data.
func TestMarshalIsProtojsonsBytes(t *testing.T) {
	m := gateway.NewMarshaler()
	ws := &platformv1.Workspace{Name: "organizations/o/workspaces/w", Title: "T",
		CreateTime: timestamppb.New(time.Unix(1700000000, 0)), CreatorEmail: "a@b.c"}
	opts := protojson.MarshalOptions{UseProtoNames: true}
	want, err := opts.Marshal(ws)
	if err != nil {
		t.Fatal(err)
	}
	got, err := m.Marshal(ws)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("Marshal = %s, %v; want %s", got, err, want)
	}
	ours := testing.AllocsPerRun(50, func() { _, _ = m.Marshal(ws) })
	theirs := testing.AllocsPerRun(50, func() { _, _ = opts.Marshal(ws) })
	if ours > theirs {
		t.Errorf("Marshal of a workspace: %v allocations, protojson's %v", ours, theirs)
	}
	body := &httpbody.HttpBody{ContentType: "text/plain", Data: []byte("raw")}
	if got, err := m.Marshal(body); err != nil || string(got) != "raw" {
		t.Errorf("Marshal(HttpBody) = %q, %v; want its data", got, err)
	}
}
