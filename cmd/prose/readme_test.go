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

	"github.com/proserun/prose/server/app"
	"github.com/proserun/prose/server/testenv"
	"go.yaml.in/yaml/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/dynamicpb"
)

// The status table lives in the API document; the flag rewrites it.
const statusDoc = "../../docs/api.md"

var updateStatusTable = flag.Bool("update-status-table", false, "rewrite the status table of docs/api.md from what the server answers")

const (
	tableStart = "<!-- status-table:start -->"
	tableEnd   = "<!-- status-table:end -->"
)

var rowRE = regexp.MustCompile("^\\| `([A-Z]+) ([^`]+)` \\| `([^`]+)` \\| (implemented|reference|not yet) \\|$")

// referenceDoc is the platform's public OpenAPI description, vendored for
// the server's tests.
const referenceDoc = "../../server/testdata/reference/platform-openapi.yaml"

// referenceOperations are the reference's operations, by method and path
// with its variables written {}.
func referenceOperations(t *testing.T) map[string]bool {
	t.Helper()
	raw, err := os.ReadFile(referenceDoc)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Paths map[string]map[string]struct {
			OperationID string `yaml:"operationId"`
		} `yaml:"paths"`
	}
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	ops := map[string]bool{}
	for p, methods := range doc.Paths {
		for m, op := range methods {
			if op.OperationID != "" {
				ops[strings.ToUpper(m)+" "+pathVars.ReplaceAllString(p, "{}")] = true
			}
		}
	}
	return ops
}

var pathVars = regexp.MustCompile(`\{[^}]*\}`)

// TestStatusTable keeps the table of operations of docs/api.md true: it must
// list every RPC of the contract; an operation is "implemented" exactly
// when calling it does not answer UNIMPLEMENTED, and "reference" when it is
// also one of the reference's operations (their answers are checked
// against its schemas over HTTP and gRPC in server's
// TestEveryOperationFitsTheReference).
func TestStatusTable(t *testing.T) {
	cfg := testenv.Config(t)
	a, err := app.New(context.Background(), cfg, slog.New(slog.DiscardHandler), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Close)
	// A bare server (no interceptors) shows what each implementation answers
	// to an empty request.
	bare := grpc.NewServer()
	a.Services.Register(bare)
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
	ref := referenceOperations(t)
	for _, b := range testenv.ContractBindings() {
		if b.Err != "" {
			t.Fatal(b.Err)
		}
		st := "implemented"
		if status.Code(callEmpty(t, conn, b.RPC)) == codes.Unimplemented {
			st = "not yet"
		} else if ref[b.Method+" "+pathVars.ReplaceAllString(b.Path, "{}")] {
			st = "reference"
		}
		want = append(want, row{b.Method, b.Path, b.RPC, st})
	}
	sort.Slice(want, func(i, j int) bool { return want[i].rpc < want[j].rpc })

	readme, err := os.ReadFile(statusDoc)
	if err != nil {
		t.Fatal(err)
	}
	start, end := bytes.Index(readme, []byte(tableStart)), bytes.Index(readme, []byte(tableEnd))
	if start < 0 || end < start {
		t.Fatalf("%s has no %s … %s section", statusDoc, tableStart, tableEnd)
	}
	var table strings.Builder
	table.WriteString(tableStart + "\n| HTTP | RPC | status |\n|---|---|---|\n")
	for _, r := range want {
		fmt.Fprintf(&table, "| `%s %s` | `%s` | %s |\n", r.method, r.path, strings.TrimPrefix(r.rpc, "/"), r.status)
	}
	if *updateStatusTable {
		out := append(append(append([]byte{}, readme[:start]...), table.String()...), readme[end:]...)
		if err := os.WriteFile(statusDoc, out, 0o644); err != nil {
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
		t.Errorf("the status table of %s is out of date; run: go test ./cmd/prose -run TestStatusTable -update-status-table\nwant:\n%s", statusDoc, strings.Join(wantRows, "\n"))
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
