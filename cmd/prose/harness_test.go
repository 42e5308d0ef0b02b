package main

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/proserun/prose/internal/testtime"
	"github.com/proserun/prose/store"
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
		return e.doGRPC(t, rpc, in, metadata.Pairs("authorization", "Bearer "+e.init.APIKey))
	}
	method, path, body := httpRequestFor(t, methodDescriptor(t, rpc), in.ProtoReflect())
	code, m, raw := e.doHTTP(t, method, path, body, map[string]string{"Authorization": "Bearer " + e.init.APIKey})
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
	r := xresult{code: status.Code(err), raw: err.Error(), reason: grpcReason(err)}
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
	r := xresult{code: cc, m: m, raw: string(raw), reason: httpReason(m)}
	details, _ := m["details"].([]any)
	for _, d := range details {
		dm, _ := d.(map[string]any)
		if vs, ok := dm["field_violations"].([]any); ok && len(vs) > 0 && r.violation == "" {
			r.violation = fmt.Sprint(field(vs[0], "field"))
		}
	}
	return r
}

// pollWait is how long poll waits before failing.
var pollWait = testtime.Limit(testtime.Wait)

// poll calls read, waking the engine between reads, until it reports
// done; it fails the test with read's description when read reports
// failed or after pollWait. It is the one wait loop of the tests that wait
// for a run (pollRun reads the store, waitRun the HTTP API).
func (e *testEnv) poll(t *testing.T, read func() (done, failed bool, desc string)) {
	t.Helper()
	deadline := time.Now().Add(pollWait)
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for {
		done, failed, desc := read()
		if done {
			return
		}
		if failed || time.Now().After(deadline) {
			t.Fatal(desc)
		}
		e.app.engine.Wake()
		<-tick.C
	}
}

// pollRun reads a run from the store until done says so; it fails the
// test when failed says so or after pollWait.
func (e *testEnv) pollRun(t *testing.T, automation, id, what string, done, failed func(store.Run) bool) store.Run {
	t.Helper()
	var r store.Run
	e.poll(t, func() (bool, bool, string) {
		var err error
		r, err = e.st.GetRun(context.Background(), e.init.orgID, e.init.workspaceID, automation, id)
		if err != nil {
			t.Fatal(err)
		}
		return done(r), failed(r), fmt.Sprintf("run %s is %s (%s), %s", id, r.State, r.Description, what)
	})
	return r
}

// waitRun reads a run with GetRun over HTTP until it is in state want,
// failing after pollWait or when it ends in another state.
func (e *testEnv) waitRun(t *testing.T, automation, run, want string) map[string]any {
	t.Helper()
	var m map[string]any
	e.poll(t, func() (bool, bool, string) {
		m = e.api(t, "GET", e.runPath(automation, run), "", 200)
		s := runState(m)
		return s == want, s == "completed" || s == "failed", fmt.Sprintf("run %s is %s, want %s: %v", run, s, want, m)
	})
	return m
}
