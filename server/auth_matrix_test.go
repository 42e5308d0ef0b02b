package server_test

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/genproto/googleapis/api/annotations"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	"go.einride.tech/aip/fieldbehavior"

	"github.com/proserun/prose/server"
	"github.com/proserun/prose/server/apikey"
	"github.com/proserun/prose/server/app"
	"github.com/proserun/prose/server/testenv"
	"github.com/proserun/prose/server/transport"
	"github.com/proserun/prose/server/transport/auth"
	"github.com/proserun/prose/store"
)

// fillRequest sets every REQUIRED field of m (recursively) to a plausible
// value, and organization_id / workspace_id / agent_id / workspace_ids to
// the given organization and workspace wherever they exist, so requests
// pass validation and name a target.
func fillRequest(m protoreflect.Message, org, ws string, depth int) {
	fields := m.Descriptor().Fields()
	for i := 0; i < fields.Len(); i++ {
		f := fields.Get(i)
		name := string(f.Name())
		target := depth == 0 && f.Kind() == protoreflect.StringKind &&
			(name == "organization_id" || name == "workspace_id" || name == "agent_id" || name == "workspace_ids")
		if !target && !fieldbehavior.Has(f, annotations.FieldBehavior_REQUIRED) {
			continue
		}
		if depth > 4 || f.IsMap() {
			continue
		}
		switch {
		case f.IsList():
			l := m.Mutable(f).List()
			if f.Kind() == protoreflect.MessageKind {
				el := l.NewElement()
				fillRequest(el.Message(), org, ws, depth+1)
				l.Append(el)
			} else {
				l.Append(scalarFor(f, org, ws))
			}
		case f.Kind() == protoreflect.MessageKind:
			fillRequest(m.Mutable(f).Message(), org, ws, depth+1)
		default:
			m.Set(f, scalarFor(f, org, ws))
		}
	}
}

func scalarFor(f protoreflect.FieldDescriptor, org, ws string) protoreflect.Value {
	switch f.Kind() {
	case protoreflect.StringKind:
		switch f.Name() {
		case "organization_id":
			return protoreflect.ValueOfString(org)
		case "workspace_id", "agent_id", "workspace_ids":
			return protoreflect.ValueOfString(ws)
		}
		return protoreflect.ValueOfString("x")
	case protoreflect.BoolKind:
		return protoreflect.ValueOfBool(true)
	case protoreflect.EnumKind:
		if v := f.Enum().Values(); v.Len() > 1 {
			return protoreflect.ValueOfEnum(v.Get(1).Number())
		}
		return protoreflect.ValueOfEnum(0)
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		return protoreflect.ValueOfInt32(1)
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return protoreflect.ValueOfInt64(1)
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return protoreflect.ValueOfUint32(1)
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return protoreflect.ValueOfUint64(1)
	case protoreflect.FloatKind:
		return protoreflect.ValueOfFloat32(1)
	case protoreflect.DoubleKind:
		return protoreflect.ValueOfFloat64(1)
	case protoreflect.BytesKind:
		return protoreflect.ValueOfBytes([]byte("x"))
	}
	return protoreflect.ValueOfString("x")
}

// httpRequestFor renders the HTTP form of msg for its binding: path
// variables from top-level fields, the body field (or the whole message for
// "*") as JSON, and remaining top-level scalars as query parameters.
func httpRequestFor(t *testing.T, md protoreflect.MethodDescriptor, msg protoreflect.Message) (method, path, body string) {
	t.Helper()
	rule := proto.GetExtension(md.Options(), annotations.E_Http).(*annotations.HttpRule)
	switch p := rule.GetPattern().(type) {
	case *annotations.HttpRule_Get:
		method, path = http.MethodGet, p.Get
	case *annotations.HttpRule_Post:
		method, path = http.MethodPost, p.Post
	case *annotations.HttpRule_Patch:
		method, path = http.MethodPatch, p.Patch
	case *annotations.HttpRule_Put:
		method, path = http.MethodPut, p.Put
	case *annotations.HttpRule_Delete:
		method, path = http.MethodDelete, p.Delete
	}
	fields := msg.Descriptor().Fields()
	used := map[string]bool{}
	path = pathVar.ReplaceAllStringFunc(path, func(v string) string {
		name := pathVar.FindStringSubmatch(v)[1]
		used[name] = true
		if f := fields.ByName(protoreflect.Name(name)); f != nil && msg.Has(f) {
			return url.PathEscape(msg.Get(f).String())
		}
		return "x"
	})
	marshal := protojson.MarshalOptions{UseProtoNames: true}
	switch b := rule.GetBody(); b {
	case "":
	case "*":
		raw, err := marshal.Marshal(msg.Interface())
		if err != nil {
			t.Fatal(err)
		}
		body = string(raw)
		return method, path, body
	default:
		f := fields.ByName(protoreflect.Name(b))
		used[b] = true
		body = "{}"
		if f != nil && msg.Has(f) {
			raw, err := marshal.Marshal(msg.Get(f).Message().Interface())
			if err != nil {
				t.Fatal(err)
			}
			body = string(raw)
		}
	}
	q := url.Values{}
	addQuery(t, q, "", msg, used)
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	return method, path, body
}

// addQuery adds the fields of msg not bound to the path or body as query
// parameters the way grpc-gateway reads them: repeated fields repeated,
// enums by name, fields of nested messages by dotted names
// (filter.time_window.time_zone), timestamps in RFC 3339.
func addQuery(t *testing.T, q url.Values, prefix string, msg protoreflect.Message, used map[string]bool) {
	t.Helper()
	fields := msg.Descriptor().Fields()
	for i := 0; i < fields.Len(); i++ {
		f := fields.Get(i)
		name := prefix + string(f.Name())
		if used[name] || !msg.Has(f) || f.IsMap() {
			continue
		}
		if f.Kind() == protoreflect.MessageKind && !f.IsList() {
			m := msg.Get(f).Message()
			if m.Descriptor().FullName() == "google.protobuf.Timestamp" {
				raw, err := protojson.Marshal(m.Interface())
				if err != nil {
					t.Fatal(err)
				}
				q.Set(name, strings.Trim(string(raw), `"`))
				continue
			}
			addQuery(t, q, name+".", m, used)
			continue
		}
		if f.Kind() == protoreflect.MessageKind {
			continue
		}
		if f.IsList() {
			l := msg.Get(f).List()
			for j := 0; j < l.Len(); j++ {
				q.Add(name, l.Get(j).String())
			}
			continue
		}
		v := msg.Get(f)
		if f.Kind() == protoreflect.EnumKind {
			if ev := f.Enum().Values().ByNumber(v.Enum()); ev != nil {
				q.Set(name, string(ev.Name()))
			} else { // a number the enum does not define, sent as such
				q.Set(name, strconv.Itoa(int(v.Enum())))
			}
		} else {
			q.Set(name, v.String())
		}
	}
}

// TestAuthorizationMatrix calls every RPC of the contract (except the
// public ones) over gRPC and HTTP with: no key, an unknown key, an expired
// key, a key scoped to another workspace, and a read-only key, and checks
// the documented answer. The file methods name a file of the first
// workspace (see also TestFilesHonourWorkspaceScope, TestFilesMadeInScope;
// UpdateApiKey field by field: TestUpdateApiKeyMatrix). Legacy /v1 paths render 403 {message} for
// UNAUTHENTICATED and 400 {statusCode, message} for PERMISSION_DENIED.
func TestAuthorizationMatrix(t *testing.T) {
	e := newTestEnv(t)
	other := e.NewWorkspace(t, "Other")
	type keyCase struct {
		name string
		key  string
	}
	cases := []keyCase{
		{"no key", ""},
		{"unknown key", apikey.Generate().Value},
		{"malformed key", "prose_not-a-key"},
		{"expired key", e.NewKey(t, testenv.KeySpec{Expired: true})},
		{"scoped to another workspace", e.NewKey(t, testenv.KeySpec{Workspaces: []string{other}})},
		{"read-only key", e.NewKey(t, testenv.KeySpec{Level: store.PermissionReadOnly})},
	}
	public := map[string]bool{"/prose.legacy.v2.LegacyService/Health": true}
	// The file the FileService requests name (fillRequest sets file "x"):
	// a file of the first workspace, so a key scoped to another workspace
	// is refused it.
	if _, err := e.Store.CreateFile(context.Background(), store.File{OrganizationID: e.Init.OrganizationID, WorkspaceID: e.Init.WorkspaceID,
		ID: "x", Filename: "x.txt", MimeType: "text/plain"}, []byte("x"), true); err != nil {
		t.Fatal(err)
	}
	namesFile := func(rpc string) bool {
		return strings.HasPrefix(rpc, fileSvc) && !strings.HasSuffix(rpc, "/UploadFile") && !strings.HasSuffix(rpc, "/GenerateUploadUrl")
	}
	n := 0
	for _, b := range testenv.ContractBindings() {
		if b.Err != "" {
			t.Fatal(b.Err)
		}
		if public[b.RPC] {
			continue
		}
		acc, ok := auth.MethodAccess[b.RPC]
		if !ok {
			t.Errorf("%s is missing from auth.MethodAccess", b.RPC)
			continue
		}
		n++
		md := testenv.MethodDescriptor(t, b.RPC)
		msg := dynamicpb.NewMessage(md.Input())
		fillRequest(msg, e.Init.OrganizationID, e.Init.WorkspaceID, 0)
		namesWorkspace := len(auth.TargetOf(msg).WorkspaceIDs) > 0 || namesFile(b.RPC)
		legacy := strings.HasPrefix(b.RPC, "/prose.legacy.")
		for _, c := range cases {
			// want: the code, or OK meaning "authorization lets it through".
			want, reason := codes.OK, ""
			switch c.name {
			case "no key":
				want, reason = codes.Unauthenticated, transport.ReasonName(transport.ReasonAPIKeyMissing)
			case "unknown key", "malformed key":
				want, reason = codes.Unauthenticated, transport.ReasonName(transport.ReasonAPIKeyInvalid)
			case "expired key":
				want, reason = codes.Unauthenticated, transport.ReasonName(transport.ReasonAPIKeyExpired)
			case "scoped to another workspace":
				if namesWorkspace || acc.AllWorkspaces {
					want, reason = codes.PermissionDenied, transport.ReasonName(transport.ReasonWorkspaceOutOfScope)
				}
			case "read-only key":
				if acc.Write {
					want, reason = codes.PermissionDenied, transport.ReasonName(transport.ReasonAPIKeyReadOnly)
				}
			}
			header, value := "authorization", "Bearer "+c.key
			if legacy {
				header, value = "x-api-key", c.key
			}
			t.Run(strings.TrimPrefix(b.RPC, "/")+"/"+c.name+"/grpc", func(t *testing.T) {
				md := metadata.MD{}
				if c.key != "" {
					md.Set(header, value)
				}
				_, err := e.DoGRPC(t, b.RPC, msg, md)
				got := status.Code(err)
				if want == codes.OK {
					if got == codes.Unauthenticated || got == codes.PermissionDenied {
						t.Errorf("got %v (%v), want authorization to let it through", got, err)
					}
					return
				}
				if got != want || testenv.GRPCReason(err) != reason {
					t.Errorf("got %v %s (%v), want %v %s", got, testenv.GRPCReason(err), err, want, reason)
				}
			})
			t.Run(strings.TrimPrefix(b.RPC, "/")+"/"+c.name+"/http", func(t *testing.T) {
				method, path, body := httpRequestFor(t, md, msg)
				headers := map[string]string{}
				if c.key != "" {
					headers[header] = value
				}
				st, m, raw := e.DoHTTP(t, method, path, body, headers)
				if want == codes.OK {
					if st == http.StatusUnauthorized || st == http.StatusForbidden ||
						(strings.HasPrefix(path, "/v1/") && st == http.StatusBadRequest && m["statusCode"] != nil && strings.Contains(string(raw), "API key")) {
						t.Errorf("HTTP %d %s, want authorization to let it through", st, raw)
					}
					return
				}
				switch {
				case strings.HasPrefix(path, "/v1/"):
					if want == codes.Unauthenticated {
						if st != http.StatusForbidden || len(m) != 1 || m["message"] == nil {
							t.Errorf("HTTP %d %s, want 403 {message}", st, raw)
						}
					} else if st != http.StatusBadRequest || len(m) != 2 || m["statusCode"] != float64(400) || m["message"] == nil {
						t.Errorf("HTTP %d %s, want 400 {statusCode, message}", st, raw)
					}
				case strings.HasPrefix(path, "/v2/"):
					if st != runtime.HTTPStatusFromCode(want) || m["status_code"] != float64(st) {
						t.Errorf("HTTP %d %s, want %d {status_code, message}", st, raw, runtime.HTTPStatusFromCode(want))
					}
				default:
					if e, ok := m["error"].(map[string]any); ok && md.IsStreamingServer() {
						m = e // a stream's error is its last line, {"error": rpcStatus}
					}
					if st != runtime.HTTPStatusFromCode(want) || m["code"] != float64(want) || testenv.HTTPReason(m) != reason {
						t.Errorf("HTTP %d %s, want %d %v %s", st, raw, runtime.HTTPStatusFromCode(want), want, reason)
					}
				}
			})
		}
	}
	if n < 80 {
		t.Errorf("only %d RPCs checked", n)
	}
}

// TestMethodAccessCoversContract keeps auth.MethodAccess exactly the
// contract's RPCs, and its Write flags true to the naming rule (Get, List,
// Query, Count, Stream, Search read) except for downloads.
func TestMethodAccessCoversContract(t *testing.T) {
	seen := map[string]bool{}
	for _, b := range testenv.ContractBindings() {
		seen[b.RPC] = true
		if b.RPC == "/prose.legacy.v2.LegacyService/Health" {
			continue
		}
		acc, ok := auth.MethodAccess[b.RPC]
		if !ok {
			t.Errorf("%s: no entry", b.RPC)
			continue
		}
		read := auth.IsReadMethod(b.RPC) || strings.Contains(b.RPC, "Download")
		if acc.Write == read {
			t.Errorf("%s: Write = %v, naming rule says read = %v", b.RPC, acc.Write, read)
		}
	}
	for m := range auth.MethodAccess {
		if !seen[m] {
			t.Errorf("%s: entry for an RPC the contract does not have", m)
		}
	}
}

// keyID returns the id of the stored key whose value is value.
func (e *testEnv) keyID(t *testing.T, value string) string {
	t.Helper()
	prefix, err := apikey.Parse(value)
	if err != nil {
		t.Fatal(err)
	}
	k, err := e.Store.GetAPIKeyByPrefix(context.Background(), prefix)
	if err != nil {
		t.Fatal(err)
	}
	return k.ID
}

// TestUpdateApiKeyMatrix updates keys field by field (display_name,
// workspace_ids, permission_level, restricted_permissions, expiration and
// the empty mask) with four calling keys — level all, read-only, restricted
// (apikeys.manage and runs.get) and scoped to one workspace — over HTTP and
// gRPC. The key as it will be after the update must stay inside the caller,
// whatever the body holds outside update_mask; a key inside the caller
// (such as the caller itself) can be renamed.
func TestUpdateApiKeyMatrix(t *testing.T) {
	e := newTestEnv(t)
	ws := e.Init.WorkspaceID
	other := e.NewWorkspace(t, "Other")
	toggles := map[string]bool{store.PermAPIKeysManage: true, store.PermRunsGet: true}
	type caller struct {
		name string
		spec testenv.KeySpec
	}
	callers := []caller{
		{"all", testenv.KeySpec{}},
		{"read-only", testenv.KeySpec{Level: store.PermissionReadOnly}},
		{"restricted", testenv.KeySpec{Level: store.PermissionRestricted, Toggles: toggles}},
		{"scoped", testenv.KeySpec{Workspaces: []string{ws}}},
	}
	var (
		ok        = codes.OK
		denied    = codes.PermissionDenied
		invalid   = codes.InvalidArgument
		readOnly  = transport.ReasonName(transport.ReasonAPIKeyReadOnly)
		levelOff  = transport.ReasonName(transport.ReasonAPIKeyPermissionOff)
		outside   = transport.ReasonName(transport.ReasonWorkspaceOutOfScope)
		badField  = transport.ReasonName(server.ReasonInvalidField)
		likeSelf  = "self"
		likeCall  = "like caller"
		broadAll  = "all workspaces, level all"
		broadRO   = "all workspaces, read-only"
		narrowed  = "like caller, scoped to the workspace"
		restrictd = "restricted runs.get, caller's scope"
	)
	type want struct {
		code   codes.Code
		reason string
	}
	type updateCase struct {
		name   string
		target string
		mask   string
		body   string
		want   map[string]want // by caller; read-only is always refused
		check  checkFunc       // for the callers it lets through
	}
	cases := []updateCase{
		{name: "rename itself", target: likeSelf, mask: "display_name", body: `{"display_name":"renamed"}`,
			want:  map[string]want{"all": {ok, ""}, "restricted": {ok, ""}, "scoped": {ok, ""}},
			check: wantField("display_name", "renamed")},
		{name: "rename a key like itself", target: likeCall, mask: "display_name", body: `{"display_name":"renamed"}`,
			want:  map[string]want{"all": {ok, ""}, "restricted": {ok, ""}, "scoped": {ok, ""}},
			check: wantField("display_name", "renamed")},
		{name: "rename a broader key", target: broadAll, mask: "display_name", body: `{"display_name":"renamed"}`,
			want: map[string]want{"all": {ok, ""}, "restricted": {denied, levelOff}, "scoped": {denied, outside}}},
		{name: "level from the mask, scope from the body", target: broadRO, mask: "permission_level",
			body:  `{"workspace_ids":["{ws}"],"permission_level":"API_KEY_PERMISSION_LEVEL_ALL"}`,
			want:  map[string]want{"all": {ok, ""}, "restricted": {denied, levelOff}, "scoped": {denied, outside}},
			check: all(wantField("permission_level", "API_KEY_PERMISSION_LEVEL_ALL"), wantCount("workspace_ids", 0))},
		{name: "widen scope to all workspaces", target: narrowed, mask: "workspace_ids", body: `{"permission_level":"API_KEY_PERMISSION_LEVEL_ALL"}`,
			want:  map[string]want{"all": {ok, ""}, "restricted": {ok, ""}, "scoped": {denied, outside}},
			check: wantCount("workspace_ids", 0)},
		{name: "narrow scope", target: likeCall, mask: "workspace_ids", body: `{"workspace_ids":["{ws}"]}`,
			want:  map[string]want{"all": {ok, ""}, "restricted": {ok, ""}, "scoped": {ok, ""}},
			check: wantField("workspace_ids.0", "{ws}")},
		{name: "move scope to another workspace", target: likeCall, mask: "workspace_ids", body: `{"workspace_ids":["{other}"]}`,
			want:  map[string]want{"all": {ok, ""}, "restricted": {ok, ""}, "scoped": {denied, outside}},
			check: wantField("workspace_ids.0", "{other}")},
		{name: "unknown workspace", target: likeCall, mask: "workspace_ids", body: `{"workspace_ids":["nope"]}`,
			want: map[string]want{"all": {invalid, transport.ReasonName(server.ReasonWorkspaceNotFound)}, "restricted": {invalid, transport.ReasonName(server.ReasonWorkspaceNotFound)}, "scoped": {invalid, transport.ReasonName(server.ReasonWorkspaceNotFound)}}},
		{name: "level down to read-only", target: likeCall, mask: "permission_level", body: `{"permission_level":"API_KEY_PERMISSION_LEVEL_READ_ONLY"}`,
			want:  map[string]want{"all": {ok, ""}, "restricted": {denied, levelOff}, "scoped": {ok, ""}},
			check: wantField("permission_level", "API_KEY_PERMISSION_LEVEL_READ_ONLY")},
		{name: "level up to all", target: restrictd, mask: "permission_level", body: `{"permission_level":"API_KEY_PERMISSION_LEVEL_ALL"}`,
			want:  map[string]want{"all": {ok, ""}, "restricted": {denied, levelOff}, "scoped": {ok, ""}},
			check: wantField("permission_level", "API_KEY_PERMISSION_LEVEL_ALL")},
		{name: "add a permission the caller lacks", target: restrictd, mask: "restricted_permissions",
			body:  `{"restricted_permissions":{"runs.get":true,"runs.manage":true}}`,
			want:  map[string]want{"all": {ok, ""}, "restricted": {denied, levelOff}, "scoped": {ok, ""}},
			check: wantToggle("runs.manage")},
		{name: "permissions within the caller", target: restrictd, mask: "restricted_permissions",
			body:  `{"restricted_permissions":{"apikeys.manage":true}}`,
			want:  map[string]want{"all": {ok, ""}, "restricted": {ok, ""}, "scoped": {ok, ""}},
			check: wantToggle("apikeys.manage")},
		{name: "expiration is fixed", target: likeCall, mask: "expiration", body: `{"expiration":"API_KEY_EXPIRATION_1_YEAR"}`,
			want: map[string]want{"all": {invalid, badField}, "restricted": {invalid, badField}, "scoped": {invalid, badField}}},
		{name: "empty mask takes the whole body", target: likeCall, mask: "",
			body: `{"display_name":"whole","workspace_ids":[],"permission_level":"API_KEY_PERMISSION_LEVEL_ALL"}`,
			want: map[string]want{"all": {ok, ""}, "restricted": {denied, levelOff}, "scoped": {denied, outside}},
			check: all(wantField("display_name", "whole"), wantField("permission_level", "API_KEY_PERMISSION_LEVEL_ALL"),
				wantCount("workspace_ids", 0))},
	}
	for _, c := range callers {
		callerKey := e.NewKey(t, c.spec)
		for _, tc := range cases {
			var target string
			switch tc.target {
			case likeSelf:
				target = callerKey
			case likeCall:
				target = e.NewKey(t, c.spec)
			case broadAll:
				target = e.NewKey(t, testenv.KeySpec{})
			case broadRO:
				target = e.NewKey(t, testenv.KeySpec{Level: store.PermissionReadOnly})
			case narrowed:
				s := c.spec
				s.Workspaces = []string{ws}
				target = e.NewKey(t, s)
			case restrictd:
				target = e.NewKey(t, testenv.KeySpec{Level: store.PermissionRestricted, Toggles: map[string]bool{store.PermRunsGet: true}, Workspaces: c.spec.Workspaces})
			}
			id := e.keyID(t, target)
			w, found := tc.want[c.name]
			if c.name == "read-only" {
				w, found = want{denied, readOnly}, true
			}
			if !found {
				t.Fatalf("%s: no expectation for %s", tc.name, c.name)
			}
			x := strings.NewReplacer("{ws}", ws, "{other}", other, "{id}", id).Replace
			path := "/api/v1/organizations/{org}/apiKeys/{id}"
			req := `{"organization_id":"{org}","api_key_id":"{id}","api_key":` + tc.body
			if tc.mask != "" {
				path += "?update_mask=" + tc.mask
				req += `,"update_mask":"` + lowerCamel(tc.mask) + `"`
			}
			call := apiCall{
				name: c.name + "/" + tc.name, rpc: keySvc + "UpdateApiKey", method: http.MethodPatch,
				path: x(path), body: x(tc.body), req: x(req + "}"), key: callerKey,
				want: w.code, reason: w.reason,
			}
			if tc.check != nil {
				call.check = func(t *testing.T, m map[string]any, xx func(string) string) {
					t.Helper()
					tc.check(t, m, func(s string) string { return x(xx(s)) })
				}
			}
			e.run(t, call)
		}
	}
}

// wantToggle checks that a key's restricted_permissions has perm on.
func wantToggle(perm string) checkFunc {
	return func(t *testing.T, m map[string]any, _ func(string) string) {
		t.Helper()
		if tg, _ := m["restricted_permissions"].(map[string]any); tg[perm] != true {
			t.Errorf("restricted_permissions[%s] is not on: %v", perm, m)
		}
	}
}

// lowerCamel is the proto JSON spelling of a field mask path.
func lowerCamel(path string) string {
	parts := strings.Split(path, "_")
	for i := 1; i < len(parts); i++ {
		if parts[i] != "" {
			parts[i] = strings.ToUpper(parts[i][:1]) + parts[i][1:]
		}
	}
	return strings.Join(parts, "")
}

// TestEveryRegisteredRPCIsGuarded enumerates every method of every service
// registered on the server (grpc.Server.GetServiceInfo, not the contract's
// list) and checks, over gRPC (on the server's own transport and on the
// gRPC-only port of --grpc-addr, which must register the same methods) and
// over HTTP, that each non-public one has
// an entry in auth.MethodAccess, is refused without a key, and is refused
// (ORGANIZATION_MISMATCH) to a key of another organization when the
// request names this one. The server is built as serve builds it: the
// checks must come from the built-in chain, not from an option.
func TestEveryRegisteredRPCIsGuarded(t *testing.T) {
	e := newTestEnvWith(t, testenv.WithGRPCOnly)
	intruder, err := app.Bootstrap(context.Background(), e.Store, app.InitOptions{Organization: "Intruder", Email: "intruder-" + store.NewID() + "@example.test", Workspace: "Theirs"})
	if err != nil {
		t.Fatal(err)
	}
	// The gRPC-only port: the same checks on its connection.
	only := *e
	only.Conn = e.ServeGRPCOnly(t, nil)
	methodsOf := func(s *grpc.Server) map[string]bool {
		m := map[string]bool{}
		for svc, info := range s.GetServiceInfo() {
			for _, md := range info.Methods {
				m["/"+svc+"/"+md.Name] = true
			}
		}
		return m
	}
	if shared, own := methodsOf(e.App.GRPC), methodsOf(e.App.GRPCOnly); !maps.Equal(shared, own) {
		t.Errorf("the gRPC-only server registers other methods than the gRPC server:\n%v\n%v", slices.Sorted(maps.Keys(own)), slices.Sorted(maps.Keys(shared)))
	}
	n := 0
	for svc, info := range e.App.GRPC.GetServiceInfo() {
		for _, m := range info.Methods {
			rpc := "/" + svc + "/" + m.Name
			if auth.IsPublicMethod(rpc) {
				continue
			}
			n++
			if _, ok := auth.MethodAccess[rpc]; !ok {
				t.Errorf("%s is registered but has no entry in auth.MethodAccess", rpc)
			}
			md := testenv.MethodDescriptor(t, rpc)
			msg := dynamicpb.NewMessage(md.Input())
			fillRequest(msg, e.Init.OrganizationID, e.Init.WorkspaceID, 0)
			namesOrg := auth.TargetOf(msg).OrganizationID != ""
			legacy := strings.HasPrefix(rpc, "/prose.legacy.")
			header, prefix := "authorization", "Bearer "
			if legacy {
				header, prefix = "x-api-key", ""
			}
			for port, env := range map[string]*testEnv{"grpc": e, "grpc-only": &only} {
				t.Run(strings.TrimPrefix(rpc, "/")+"/"+port, func(t *testing.T) {
					_, err := env.DoGRPC(t, rpc, msg, metadata.MD{})
					if status.Code(err) != codes.Unauthenticated {
						t.Errorf("without a key: %v, want UNAUTHENTICATED", err)
					}
					if namesOrg {
						_, err = env.DoGRPC(t, rpc, msg, metadata.Pairs(header, prefix+intruder.APIKey))
						if status.Code(err) != codes.PermissionDenied || testenv.GRPCReason(err) != transport.ReasonName(transport.ReasonOrganizationMismatch) {
							t.Errorf("another organization's key: %v, want PERMISSION_DENIED %s", err, transport.ReasonName(transport.ReasonOrganizationMismatch))
						}
					}
				})
			}
			if _, ok := proto.GetExtension(md.Options(), annotations.E_Http).(*annotations.HttpRule); !ok {
				t.Errorf("%s has no HTTP binding", rpc)
				continue
			}
			t.Run(strings.TrimPrefix(rpc, "/")+"/http", func(t *testing.T) {
				method, path, body := httpRequestFor(t, md, msg)
				st, _, raw := e.DoHTTP(t, method, path, body, nil)
				wantNoKey := http.StatusUnauthorized
				if strings.HasPrefix(path, "/v1/") {
					wantNoKey = http.StatusForbidden // the legacy shape of UNAUTHENTICATED
				}
				if st != wantNoKey {
					t.Errorf("without a key: HTTP %d %s, want %d", st, raw, wantNoKey)
				}
				if namesOrg {
					st, m, raw := e.DoHTTP(t, method, path, body, map[string]string{header: prefix + intruder.APIKey})
					if inner, ok := m["error"].(map[string]any); ok && md.IsStreamingServer() {
						m = inner // a stream's error line: {"error": rpcStatus}
					}
					if st != http.StatusForbidden || testenv.HTTPReason(m) != transport.ReasonName(transport.ReasonOrganizationMismatch) {
						t.Errorf("another organization's key: HTTP %d %s, want 403 %s", st, raw, transport.ReasonName(transport.ReasonOrganizationMismatch))
					}
				}
			})
		}
	}
	if n < 80 {
		t.Errorf("only %d registered RPCs checked", n)
	}
}

// TestCreateApiKeyMatrix: the key CreateApiKey makes stays inside the
// calling key (scope, level, restricted permissions), over HTTP and gRPC.
func TestCreateApiKeyMatrix(t *testing.T) {
	e := newTestEnv(t)
	ws, other := e.Init.WorkspaceID, e.NewWorkspace(t, "Other")
	callers := map[string]string{
		"all":        e.Init.APIKey,
		"restricted": e.NewKey(t, testenv.KeySpec{Level: store.PermissionRestricted, Toggles: map[string]bool{store.PermAPIKeysManage: true, store.PermRunsGet: true}}),
		"scoped":     e.NewKey(t, testenv.KeySpec{Workspaces: []string{ws}}),
	}
	type want struct {
		code   codes.Code
		reason string
	}
	ok := want{codes.OK, ""}
	outside := want{codes.PermissionDenied, transport.ReasonName(transport.ReasonWorkspaceOutOfScope)}
	levelOff := want{codes.PermissionDenied, transport.ReasonName(transport.ReasonAPIKeyPermissionOff)}
	for _, c := range []struct {
		name string
		key  string // the api_key body, without display_name and expiration
		want map[string]want
	}{
		{"all workspaces, level all", `"permission_level":"API_KEY_PERMISSION_LEVEL_ALL"`,
			map[string]want{"all": ok, "restricted": levelOff, "scoped": outside}},
		{"the caller's workspace, read-only", `"workspace_ids":["{ws}"],"permission_level":"API_KEY_PERMISSION_LEVEL_READ_ONLY"`,
			map[string]want{"all": ok, "restricted": levelOff, "scoped": ok}},
		{"another workspace", `"workspace_ids":["{other}"],"permission_level":"API_KEY_PERMISSION_LEVEL_READ_ONLY"`,
			map[string]want{"all": ok, "restricted": levelOff, "scoped": outside}},
		{"restricted within the caller", `"permission_level":"API_KEY_PERMISSION_LEVEL_RESTRICTED","restricted_permissions":{"runs.get":true}`,
			map[string]want{"all": ok, "restricted": ok, "scoped": outside}},
		{"restricted beyond the caller", `"workspace_ids":["{ws}"],"permission_level":"API_KEY_PERMISSION_LEVEL_RESTRICTED","restricted_permissions":{"runs.manage":true}`,
			map[string]want{"all": ok, "restricted": levelOff, "scoped": ok}},
	} {
		for who, key := range callers {
			w := c.want[who]
			body := strings.NewReplacer("{ws}", ws, "{other}", other).Replace(`{"display_name":"made","expiration":"API_KEY_EXPIRATION_7_DAYS",` + c.key + `}`)
			call := apiCall{
				name: who + "/" + c.name, rpc: keySvc + "CreateApiKey", method: http.MethodPost,
				path: "/api/v1/organizations/{org}/apiKeys", body: body, req: `{"organization_id":"{org}","api_key":` + body + `}`,
				key: key, want: w.code, reason: w.reason,
				// Delete what was made: an organization has at most 10 keys.
				check: func(t *testing.T, m map[string]any, _ func(string) string) {
					t.Helper()
					if err := e.Store.DeleteAPIKey(context.Background(), e.Init.OrganizationID, store.LastSegment(fmt.Sprint(m["api_key"].(map[string]any)["name"]))); err != nil {
						t.Error(err)
					}
				},
			}
			e.run(t, call)
		}
	}
}
