package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/dynamicpb"
)

var updateReadme = flag.Bool("update-readme", false, "rewrite the status table of README.md from what the server answers")

const (
	tableStart = "<!-- status-table:start -->"
	tableEnd   = "<!-- status-table:end -->"
)

var rowRE = regexp.MustCompile("^\\| `([A-Z]+) ([^`]+)` \\| `([^`]+)` \\| (implemented|not yet) \\|$")

// TestReadmeStatusTable keeps the README's table of operations true: it must
// list every RPC of the contract, and an operation is "implemented" exactly
// when calling it does not answer UNIMPLEMENTED.
func TestReadmeStatusTable(t *testing.T) {
	cfg := testServeConfig(t)
	a, err := newApp(context.Background(), cfg, slog.New(slog.DiscardHandler), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Close)
	// A bare server (no interceptors) shows what each implementation answers
	// to an empty request.
	bare := grpc.NewServer()
	a.services.Register(bare)
	lis := bufconn.Listen(1 << 20)
	go func() { _ = bare.Serve(lis) }()
	t.Cleanup(bare.Stop)
	conn, err := grpc.NewClient("passthrough:///bare",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })

	type row struct{ method, path, rpc, status string }
	var want []row
	for _, b := range contractBindings() {
		if b.err != "" {
			t.Fatal(b.err)
		}
		st := "implemented"
		if status.Code(callEmpty(t, conn, b.rpc)) == codes.Unimplemented {
			st = "not yet"
		}
		want = append(want, row{b.method, b.path, b.rpc, st})
	}
	sort.Slice(want, func(i, j int) bool { return want[i].rpc < want[j].rpc })

	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	start, end := bytes.Index(readme, []byte(tableStart)), bytes.Index(readme, []byte(tableEnd))
	if start < 0 || end < start {
		t.Fatalf("README.md has no %s … %s section", tableStart, tableEnd)
	}
	var table strings.Builder
	table.WriteString(tableStart + "\n| HTTP | RPC | status |\n|---|---|---|\n")
	for _, r := range want {
		fmt.Fprintf(&table, "| `%s %s` | `%s` | %s |\n", r.method, r.path, strings.TrimPrefix(r.rpc, "/"), r.status)
	}
	if *updateReadme {
		out := append(append(append([]byte{}, readme[:start]...), table.String()...), readme[end:]...)
		if err := os.WriteFile("../../README.md", out, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	var have []string
	for _, line := range strings.Split(string(readme[start:end]), "\n") {
		if rowRE.MatchString(line) {
			have = append(have, line)
		}
	}
	var wantRows []string
	for _, line := range strings.Split(table.String(), "\n") {
		if rowRE.MatchString(line) {
			wantRows = append(wantRows, line)
		}
	}
	if strings.Join(have, "\n") != strings.Join(wantRows, "\n") {
		t.Errorf("README.md's status table is out of date; run: go test ./cmd/prose -run TestReadmeStatusTable -update-readme\nwant:\n%s", strings.Join(wantRows, "\n"))
	}
}

// callEmpty calls an RPC with an empty request and returns its error. Server
// streams are read until their first message or error.
func callEmpty(t *testing.T, conn *grpc.ClientConn, rpc string) error {
	t.Helper()
	name := strings.ReplaceAll(strings.TrimPrefix(rpc, "/"), "/", ".")
	d, err := protoregistry.GlobalFiles.FindDescriptorByName(protoreflect.FullName(name))
	if err != nil {
		t.Fatalf("%s: %v", rpc, err)
	}
	md := d.(protoreflect.MethodDescriptor)
	in := dynamicpb.NewMessage(md.Input())
	out := dynamicpb.NewMessage(md.Output())
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if md.IsStreamingServer() {
		stream, err := conn.NewStream(ctx, &grpc.StreamDesc{ServerStreams: true}, rpc)
		if err != nil {
			return err
		}
		if err := stream.SendMsg(in); err != nil {
			return err
		}
		_ = stream.CloseSend()
		return stream.RecvMsg(out)
	}
	return conn.Invoke(ctx, rpc, in, out)
}
