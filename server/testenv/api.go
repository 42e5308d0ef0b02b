package testenv

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/proserun/prose/internal/testtime"
	"github.com/proserun/prose/store"
)

// Expand replaces {org}, {ws}, {user} and {email} in s by the test
// organization's, and {t} by transport ("h" over HTTP and "g" over gRPC,
// so that creates over the two do not collide).
func (e *Env) Expand(s, transport string) string {
	return strings.NewReplacer("{org}", e.Init.OrganizationID, "{ws}", e.Init.WorkspaceID, "{user}", e.Init.UserID, "{email}", e.Email, "{t}", transport).Replace(s)
}

// DoHTTP sends an HTTP request with headers and returns status and JSON.
func (e *Env) DoHTTP(t *testing.T, method, path, body string, headers map[string]string) (int, map[string]any, []byte) {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, e.Srv.URL+path, r)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := e.Srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var m map[string]any
	_ = json.Unmarshal(raw, &m)
	return resp.StatusCode, m, raw
}

// MethodDescriptor is the descriptor of rpc ("/pkg.Service/Method").
func MethodDescriptor(t *testing.T, rpc string) protoreflect.MethodDescriptor {
	t.Helper()
	name := strings.ReplaceAll(strings.TrimPrefix(rpc, "/"), "/", ".")
	d, err := protoregistry.GlobalFiles.FindDescriptorByName(protoreflect.FullName(name))
	if err != nil {
		t.Fatalf("%s: %v", rpc, err)
	}
	return d.(protoreflect.MethodDescriptor)
}

// DoGRPC calls rpc with a request message and metadata; it returns the
// response as proto JSON (snake_case) decoded into a map.
func (e *Env) DoGRPC(t *testing.T, rpc string, in protoreflect.ProtoMessage, md metadata.MD) (map[string]any, error) {
	t.Helper()
	out := dynamicpb.NewMessage(MethodDescriptor(t, rpc).Output())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ctx = metadata.NewOutgoingContext(ctx, md)
	if MethodDescriptor(t, rpc).IsStreamingServer() {
		s, err := e.Conn.NewStream(ctx, &grpc.StreamDesc{ServerStreams: true}, rpc)
		if err != nil {
			return nil, err
		}
		if err := s.SendMsg(in); err != nil {
			return nil, err
		}
		_ = s.CloseSend()
		if err := s.RecvMsg(out); err != nil {
			return nil, err
		}
	} else if err := e.Conn.Invoke(ctx, rpc, in, out); err != nil {
		return nil, err
	}
	raw, err := protojson.MarshalOptions{UseProtoNames: true}.Marshal(out)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	return m, nil
}

// GRPCReason is the ErrorInfo reason of a gRPC error ("" without one).
func GRPCReason(err error) string {
	for _, d := range status.Convert(err).Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok {
			return info.GetReason()
		}
	}
	return ""
}

// HTTPReason is the ErrorInfo reason of an HTTP error body ("" without one).
func HTTPReason(m map[string]any) string {
	details, _ := m["details"].([]any)
	for _, d := range details {
		if dm, ok := d.(map[string]any); ok && dm["reason"] != nil {
			return fmt.Sprint(dm["reason"])
		}
	}
	return ""
}

// Field walks a decoded JSON value by keys and indexes ("workspaces.0.title").
func Field(m any, path string) any {
	for _, p := range strings.Split(path, ".") {
		switch v := m.(type) {
		case map[string]any:
			m = v[p]
		case []any:
			var i int
			if _, err := fmt.Sscan(p, &i); err != nil || i >= len(v) {
				return nil
			}
			m = v[i]
		default:
			return nil
		}
	}
	return m
}

// JSONStr is s as a JSON string.
func JSONStr(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// API makes an HTTP call with the owner's key as a bearer token (path
// expanded as Expand does, {t} as "h") and fails unless it answers want.
func (e *Env) API(t *testing.T, method, path, body string, want int) map[string]any {
	t.Helper()
	code, m, raw := e.DoHTTP(t, method, e.Expand(path, "h"), body, e.Bearer())
	if code != want {
		t.Fatalf("%s %s: HTTP %d, want %d: %s", method, path, code, want, raw)
	}
	return m
}

// APIRaw makes an HTTP call with the owner's key and returns status and body.
func (e *Env) APIRaw(t *testing.T, method, path, body string) (int, []byte) {
	t.Helper()
	code, _, raw := e.DoHTTP(t, method, path, body, e.Bearer())
	return code, raw
}

// Legacy makes an HTTP call with the owner's key in x-api-key.
func (e *Env) Legacy(t *testing.T, method, path, body string, want int) map[string]any {
	t.Helper()
	code, m, raw := e.DoHTTP(t, method, path, body, map[string]string{"x-api-key": e.Init.APIKey})
	if code != want {
		t.Fatalf("%s %s: HTTP %d, want %d: %s", method, path, code, want, raw)
	}
	return m
}

// Bearer is the header of the owner's key as a bearer token.
func (e *Env) Bearer() map[string]string {
	return map[string]string{"Authorization": "Bearer " + e.Init.APIKey}
}

// WsPath is the platform path of the test workspace.
func (e *Env) WsPath() string {
	return "/api/v1/organizations/" + e.Init.OrganizationID + "/workspaces/" + e.Init.WorkspaceID
}

// AutomationsPath is the platform path of the test workspace's automations.
func (e *Env) AutomationsPath() string {
	return e.WsPath() + "/automations"
}

// Automation is an automation made through the API.
type Automation struct {
	ID, DraftShare, PublishedShare string
}

// MkAutomation creates an automation with code and, when publish, publishes it.
func (e *Env) MkAutomation(t *testing.T, name, code string, publish bool) Automation {
	t.Helper()
	m := e.API(t, "POST", e.AutomationsPath(), `{"display_name":`+JSONStr(name)+`,"english_code":`+JSONStr(code)+`}`, 200)
	a := Automation{ID: store.LastSegment(fmt.Sprint(m["name"])), DraftShare: fmt.Sprint(m["draft_share_id"])}
	if publish {
		p := e.API(t, "POST", e.AutomationsPath()+"/"+a.ID+":publish", `{}`, 200)
		a.PublishedShare = fmt.Sprint(p["published_share_id"])
	}
	return a
}

// RunPath is the platform path of a run.
func (e *Env) RunPath(automation, run string) string {
	return e.AutomationsPath() + "/" + automation + "/runs/" + run
}

// RunState is the member of a run's state that is set.
func RunState(m map[string]any) string {
	st, _ := m["state"].(map[string]any)
	for k := range st {
		if k != "update_time" {
			return k
		}
	}
	return ""
}

// StopEngine stops the app's engine so that new runs stay pending.
func (e *Env) StopEngine(t *testing.T) {
	t.Helper()
	e.App.StopEngine()
}

// NumberOf reads a platform Number in JSON as a float.
func NumberOf(v any) float64 {
	n, _ := v.(map[string]any)
	lo, _ := n["lo"].(float64)
	flags, _ := n["flags"].(float64)
	scale := (int(flags) >> 16) & 0xff
	return lo / math.Pow10(scale)
}

// RunCount counts the runs of the test workspace.
func (e *Env) RunCount(t *testing.T) int {
	t.Helper()
	page, err := e.Store.ListRuns(context.Background(), store.ListRunsRequest{
		OrganizationID: e.Init.OrganizationID, WorkspaceID: e.Init.WorkspaceID, AutomationID: "-", PageSize: 1000})
	if err != nil {
		t.Fatal(err)
	}
	return len(page.Items)
}

// PollWait is how long Poll waits before failing.
var PollWait = testtime.Limit(testtime.Wait)

// Poll calls read, waking the engine between reads, until it reports
// done; it fails the test with read's description when read reports
// failed or after PollWait. It is the one wait loop of the tests that wait
// for a run (PollRun reads the store, WaitRun the HTTP API).
func (e *Env) Poll(t *testing.T, read func() (done, failed bool, desc string)) {
	t.Helper()
	deadline := time.Now().Add(PollWait)
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
		e.App.Engine.Wake()
		<-tick.C
	}
}

// PollRun reads a run from the store until done says so; it fails the
// test when failed says so or after PollWait.
func (e *Env) PollRun(t *testing.T, automation, id, what string, done, failed func(store.Run) bool) store.Run {
	t.Helper()
	var r store.Run
	e.Poll(t, func() (bool, bool, string) {
		var err error
		r, err = e.Store.GetRun(context.Background(), e.Init.OrganizationID, e.Init.WorkspaceID, automation, id)
		if err != nil {
			t.Fatal(err)
		}
		return done(r), failed(r), fmt.Sprintf("run %s is %s (%s), %s", id, r.State, r.Description, what)
	})
	return r
}

// WaitRun reads a run with GetRun over HTTP until it is in state want,
// failing after PollWait or when it ends in another state.
func (e *Env) WaitRun(t *testing.T, automation, run, want string) map[string]any {
	t.Helper()
	var m map[string]any
	e.Poll(t, func() (bool, bool, string) {
		m = e.API(t, "GET", e.RunPath(automation, run), "", 200)
		s := RunState(m)
		return s == want, s == "completed" || s == "failed", fmt.Sprintf("run %s is %s, want %s: %v", run, s, want, m)
	})
	return m
}
