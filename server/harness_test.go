package server_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"github.com/proserun/prose/server/testenv"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// The case harness: one test body runs over both transports of the
// platform API (as Cerbos's RunGRPCTests/RunHTTPTests run one case table
// over each). forEachTransport runs a subtest per transport, and
// testEnv.call makes one RPC over the transport given: over gRPC on the
// test's connection, over HTTP/JSON at the path of the RPC's
// google.api.http binding (httpRequestFor), both with the owner's key.

// apiTransport names one way to reach the platform API.
type apiTransport struct {
	name string // "http" or "grpc", the subtest's name
	grpc bool
}

func (tr apiTransport) String() string { return tr.name }

var (
	overHTTP = apiTransport{name: "http"}
	overGRPC = apiTransport{name: "grpc", grpc: true}
)

// forEachTransport runs f as a subtest over HTTP, then over gRPC.
func forEachTransport(t *testing.T, f func(t *testing.T, tr apiTransport)) {
	t.Helper()
	for _, tr := range []apiTransport{overHTTP, overGRPC} {
		t.Run(tr.name, func(t *testing.T) { f(t, tr) })
	}
}

// call makes rpc (a full method name, "/pkg.Service/Method") with in over
// tr with the owner's key. It returns the response as proto JSON
// (snake_case) decoded into a map, or the call's status as an error: over
// HTTP the status is read back from the gateway's error body, and its HTTP
// code must be the one the gateway maps the status code to.
func (e *testEnv) call(t *testing.T, tr apiTransport, rpc string, in proto.Message) (map[string]any, error) {
	t.Helper()
	if tr.grpc {
		return e.DoGRPC(t, rpc, in, metadata.Pairs("authorization", "Bearer "+e.Init.APIKey))
	}
	method, path, body := httpRequestFor(t, testenv.MethodDescriptor(t, rpc), in.ProtoReflect())
	code, m, raw := e.DoHTTP(t, method, path, body, map[string]string{"Authorization": "Bearer " + e.Init.APIKey})
	if code == 200 {
		return m, nil
	}
	r := httpError(t, code, m, raw)
	return nil, status.Error(r.code, r.raw)
}

// mustCall is call that fails the test on an error.
func (e *testEnv) mustCall(t *testing.T, tr apiTransport, rpc string, in proto.Message) map[string]any {
	t.Helper()
	m, err := e.call(t, tr, rpc, in)
	if err != nil {
		t.Fatalf("%s over %s: %v", rpc, tr, err)
	}
	return m
}

// decodeInto fills msg from a response map made by call.
func decodeInto(t *testing.T, m map[string]any, msg proto.Message) {
	t.Helper()
	raw, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if err := protojson.Unmarshal(raw, msg); err != nil {
		t.Fatal(err)
	}
}

// grpcError reads a gRPC error into an xresult: code, reason and the first
// BadRequest field violation.
func grpcError(err error) xresult {
	r := xresult{code: status.Code(err), raw: err.Error(), reason: testenv.GRPCReason(err)}
	for _, d := range status.Convert(err).Details() {
		if br, ok := d.(*errdetails.BadRequest); ok && len(br.GetFieldViolations()) > 0 && r.violation == "" {
			r.violation = br.GetFieldViolations()[0].GetField()
		}
	}
	return r
}

// httpError reads the gateway's error body (the reference's rpcStatus:
// code, message, details) into an xresult, failing the test when the body
// has no code or the HTTP status is not the one mapped from it.
func httpError(t *testing.T, code int, m map[string]any, raw []byte) xresult {
	t.Helper()
	num, ok := m["code"].(float64)
	if !ok {
		t.Fatalf("HTTP %d without a code: %s", code, raw)
	}
	cc := codes.Code(num)
	if runtime.HTTPStatusFromCode(cc) != code {
		t.Errorf("HTTP %d for %v", code, cc)
	}
	r := xresult{code: cc, m: m, raw: string(raw), reason: testenv.HTTPReason(m)}
	details, _ := m["details"].([]any)
	for _, d := range details {
		dm, _ := d.(map[string]any)
		if vs, ok := dm["field_violations"].([]any); ok && len(vs) > 0 && r.violation == "" {
			r.violation = fmt.Sprint(testenv.Field(vs[0], "field"))
		}
	}
	return r
}
