package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/proserun/prose/gateway"
	"github.com/proserun/prose/internal/testtime"
	"github.com/proserun/prose/server"
	"github.com/proserun/prose/server/apikey"
	"github.com/proserun/prose/server/app"
	"github.com/proserun/prose/server/testenv"
	"github.com/proserun/prose/store"
)

// The hostile-input test: every route of the served OpenAPI document, the
// legacy x-api-key routes (they are in it) and the hand-written paths
// (signed files, inbound webhooks, the OAuth callback) are sent, with a
// key of level all, malformed and ill-typed bodies, out-of-range numbers,
// bad filters, orders, page tokens, masks and timestamps, hostile path
// segments, wrong content types, oversize bodies, and no, wrong or too
// weak a key; every method of every service is called over gRPC with
// hostile field values. Whatever the input, the answer is never a 5xx (or
// INTERNAL / UNKNOWN over gRPC), never a hang, and an HTTP error always
// has the documented shape of its path (rpcStatus on /api/v1, {statusCode,
// message} or {message} on /v1, {status_code, message, details} on /v2)
// with its status the one its code maps to. One server serves every case.

// hostileReq is one HTTP request of the test.
type hostileReq struct {
	op, variant  string
	method, path string // path with its query, escaped
	body         []byte
	oversize     int64 // when > 0: body is a JSON object of that many bytes, sent chunked
	noBody       bool
	ctype        string
	headers      map[string]string
	stream       bool // a server stream: a 200 is read no further than its headers
}

// hostileOp is one operation of the OpenAPI document.
type hostileOp struct {
	id, method, template, rpc string
	legacy                    bool
	query                     []swaggerParam
	body                      map[string]swaggerSchema // the body's properties (nil: no body)
	bodyField                 string                   // "*" or the field the body is
	md                        protoreflect.MethodDescriptor
}

type swaggerParam struct {
	Name   string         `json:"name"`
	In     string         `json:"in"`
	Type   string         `json:"type"`
	Format string         `json:"format"`
	Enum   []string       `json:"enum"`
	Items  *swaggerSchema `json:"items"`
	Schema *swaggerSchema `json:"schema"`
}

type swaggerSchema struct {
	Ref        string                   `json:"$ref"`
	Type       string                   `json:"type"`
	Format     string                   `json:"format"`
	Enum       []string                 `json:"enum"`
	Properties map[string]swaggerSchema `json:"properties"`
	Items      *swaggerSchema           `json:"items"`
}

type swaggerDoc struct {
	Paths       map[string]map[string]json.RawMessage `json:"paths"`
	Definitions map[string]swaggerSchema              `json:"definitions"`
}

func (d *swaggerDoc) resolve(s swaggerSchema) swaggerSchema {
	for i := 0; i < 8 && s.Ref != ""; i++ {
		s = d.Definitions[strings.TrimPrefix(s.Ref, "#/definitions/")]
	}
	return s
}

// hostileOps reads the operations of the OpenAPI document the server serves.
func hostileOps(t *testing.T, e *testEnv) []hostileOp {
	t.Helper()
	code, _, raw := e.DoHTTP(t, http.MethodGet, "/openapi.json", "", nil)
	if code != http.StatusOK {
		t.Fatalf("GET /openapi.json: %d", code)
	}
	var doc swaggerDoc
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	rpcOf := map[string]string{} // "Service_Method" → full method
	for _, b := range testenv.ContractBindings() {
		svc := b.RPC[strings.LastIndexByte(b.RPC[:strings.LastIndexByte(b.RPC, '/')], '.')+1:]
		rpcOf[strings.ReplaceAll(svc, "/", "_")] = b.RPC
	}
	var ops []hostileOp
	for tmpl, methods := range doc.Paths {
		for m, rawOp := range methods {
			var o struct {
				OperationID string         `json:"operationId"`
				Parameters  []swaggerParam `json:"parameters"`
			}
			if err := json.Unmarshal(rawOp, &o); err != nil || o.OperationID == "" {
				continue
			}
			rpc, ok := rpcOf[o.OperationID]
			if !ok {
				t.Fatalf("operation %s names no RPC of the contract", o.OperationID)
			}
			op := hostileOp{id: o.OperationID, method: strings.ToUpper(m), template: tmpl, rpc: rpc,
				legacy: strings.HasPrefix(tmpl, "/v1/") || strings.HasPrefix(tmpl, "/v2/"), md: testenv.MethodDescriptor(t, rpc)}
			for _, p := range o.Parameters {
				switch p.In {
				case "query":
					op.query = append(op.query, p)
				case "body":
					s := doc.resolve(*p.Schema)
					op.body = map[string]swaggerSchema{}
					for name, ps := range s.Properties {
						ps = doc.resolve(ps)
						op.body[name] = ps
					}
					op.bodyField = p.Name
				}
			}
			ops = append(ops, op)
		}
	}
	sort.Slice(ops, func(i, j int) bool { return ops[i].template+ops[i].method < ops[j].template+ops[j].method })
	if len(ops) < 140 {
		t.Fatalf("the served OpenAPI document has only %d operations", len(ops))
	}
	return ops
}

// Hostile values.
var (
	hostileLong = strings.Repeat("a", 70<<10) // over every title and description bound

	// hostilePathSegments replace one path variable at a time (already escaped).
	hostilePathSegments = []string{
		"..%2F..%2Fetc%2Fpasswd", "a%2Fb", "%00", "%FF%FE", "%E6%97%A5%E6%9C%AC", "-1", "%20", "%25",
		"'%20OR%201%3D1--", strings.Repeat("a", 8<<10),
	}
	hostileJSONValues = []string{
		`"x"`, `1e309`, `-0`, `9223372036854775808`, `{}`, `[]`, `null`, `true`, `[null]`,
		`"NOT_AN_ENUM_VALUE"`, `"\u0000"`, `"` + hostileLong + `"`, `"9999-99-99T99:99:99Z"`,
	}
	hostileNestedValues = []string{`1e309`, `[]`, `{}`, `"\u0000"`}
	malformedBodies     = []string{
		`{`, `{"a":`, `[]`, `null`, `"s"`, `1`, `{"a":1} x`, "\xff\xfe", `{"a":"\ud800"}`, `{{}}`, `{"a":1,}`,
		`{"zzz_unknown_field":1}`, strings.Repeat(`[`, 100000), `{"a":` + strings.Repeat(`{"a":`, 20000) + `1` + strings.Repeat(`}`, 20001),
	}
	hostileFilters = []string{
		`(((`, `state = `, `nope = "x"`, `state = 1 AND`, strings.Repeat("(", 5000), strings.Repeat("(", 4000), `a.b.c.d.e = 1`, `"unterminated`,
		`create_time > "not a time"`, `create_time > 1e309`, `state = "NOT_A_STATE"`, `NOT NOT NOT`, `x:*`, `f(1,2,3)`,
		`create_time > timestamp("x")`, `state = "\u0000"`, strings.Repeat(`state = "a" OR `, 2000) + `state = "a"`,
	}
	hostileOrders = []string{"nope", "create_time sideways", ",,,", "create_time desc, create_time desc", "create_time desc desc",
		"-create_time", "create_time;--", strings.Repeat("a,", 5000)}
	hostileTokens = []string{"garbage", "%%%", "AAAA", "eyJ4IjoxfQ", strings.Repeat("A", 10000), "-1", "\x00"}
	hostileMasks  = []string{"nope", "a..b", "*,x", ",", "display_name,nope", "name.*.x", strings.Repeat("a.", 3000)}
	hostileInts   = []string{"abc", "-1", "2147483648", "-2147483649", "9223372036854775808", "1e309", "-0", "1.5", "", "0x10", "1000000000"}
	hostileTimes  = []string{"not-a-time", "10000-01-01T00:00:00Z", "1970-13-45T99:99:99Z", "-0001-01-01T00:00:00Z", "0000-01-01T00:00:00Z", "9999-12-31T23:59:60Z"}
	hostileDurs   = []string{"abc", "1e400s", "-315576000001s", "99999999999999999999s", "1.0000000001s"}
	hostileStrs   = []string{hostileLong[:10000], "\x00", "日本語", "../../etc/passwd", "\xff", ""}
)

// queryValues returns the hostile values of a query parameter.
func queryValues(p swaggerParam) []string {
	name := p.Name[strings.LastIndexByte(p.Name, '.')+1:]
	var vs []string
	switch {
	case p.Type == "integer" || p.Format == "int64" || p.Format == "uint64" || p.Format == "int32" || p.Format == "uint32":
		vs = append(vs, hostileInts...)
		vs = append(vs, "18446744073709551616", "-9223372036854775809")
	case p.Type == "boolean":
		vs = []string{"maybe", "2", ""}
	case len(p.Enum) > 0 || (p.Items != nil && len(p.Items.Enum) > 0):
		vs = []string{"NOT_A_VALUE", "99999", "-1", ""}
	case p.Format == "date-time":
		vs = hostileTimes
	case name == "filter":
		vs = hostileFilters
	case name == "order_by":
		vs = hostileOrders
	case name == "page_token":
		vs = hostileTokens
	case name == "update_mask" || name == "read_mask":
		vs = hostileMasks
	case strings.Contains(name, "duration") || strings.Contains(name, "timeout") || strings.Contains(name, "interval"):
		vs = hostileDurs
	}
	return append(vs, hostileStrs...)
}

// hostileRequests makes every request of one operation.
func hostileRequests(t *testing.T, op hostileOp, org, ws, key, readOnly string) []hostileReq {
	t.Helper()
	msg := dynamicpb.NewMessage(op.md.Input())
	fillRequest(msg, org, ws, 0)
	_, basePath, baseBody := httpRequestFor(t, op.md, msg)
	baseQuery := ""
	if i := strings.IndexByte(basePath, '?'); i >= 0 {
		baseQuery = basePath[i+1:]
	}
	vars := map[string]string{}
	fields := msg.Descriptor().Fields()
	for _, m := range pathVar.FindAllStringSubmatch(op.template, -1) {
		vars[m[1]] = "x"
		if f := fields.ByName(protoreflect.Name(m[1])); f != nil && msg.Has(f) && f.Kind() == protoreflect.StringKind && !f.IsList() {
			vars[m[1]] = url.PathEscape(msg.Get(f).String())
		}
	}
	render := func(over map[string]string, query string) string {
		p := pathVar.ReplaceAllStringFunc(op.template, func(v string) string {
			name := pathVar.FindStringSubmatch(v)[1]
			if s, ok := over[name]; ok {
				return s
			}
			return vars[name]
		})
		if query != "" {
			p += "?" + query
		}
		return p
	}
	auth := func(k string) map[string]string {
		if op.legacy {
			return map[string]string{"x-api-key": k}
		}
		return map[string]string{"Authorization": "Bearer " + k}
	}
	hasBody := op.bodyField != ""
	base := hostileReq{op: op.id, method: op.method, path: render(nil, baseQuery), headers: auth(key),
		ctype: "application/json", stream: op.md.IsStreamingServer()}
	if hasBody {
		base.body = []byte(baseBody)
	} else {
		base.noBody = true
	}
	var out []hostileReq
	add := func(variant string, edit func(r *hostileReq)) {
		r := base
		r.variant = variant
		edit(&r)
		out = append(out, r)
	}

	// Keys.
	add("no key", func(r *hostileReq) { r.headers = nil })
	add("unknown key", func(r *hostileReq) { r.headers = auth(apikey.Generate().Value) })
	add("malformed key", func(r *hostileReq) { r.headers = auth("prose_%00../x") })
	add("read-only key", func(r *hostileReq) { r.headers = auth(readOnly) })
	add("empty bearer", func(r *hostileReq) { r.headers = map[string]string{"Authorization": "Bearer ", "x-api-key": ""} })
	add("basic auth", func(r *hostileReq) { r.headers = map[string]string{"Authorization": "Basic eDp5"} })
	add("both headers, one wrong", func(r *hostileReq) {
		r.headers = map[string]string{"Authorization": "Bearer " + key, "x-api-key": "wrong"}
	})
	add("another method", func(r *hostileReq) {
		r.method = http.MethodPut
		if op.method == http.MethodPut {
			r.method = http.MethodPatch
		}
	})

	// Path segments.
	for name := range vars {
		for i, seg := range hostilePathSegments {
			add(fmt.Sprintf("path %s #%d", name, i), func(r *hostileReq) { r.path = render(map[string]string{name: seg}, baseQuery) })
		}
	}

	// Query parameters.
	add("unknown query parameter", func(r *hostileReq) { r.path = render(nil, joinQuery(baseQuery, "zzz_unknown=1")) })
	add("malformed query", func(r *hostileReq) { r.path = render(nil, joinQuery(baseQuery, "a=%ZZ&&=&b")) })
	for _, p := range op.query {
		for i, v := range queryValues(p) {
			q, _ := url.ParseQuery(baseQuery)
			q.Set(p.Name, v)
			if p.Type == "array" {
				q[p.Name] = []string{v, v}
			}
			add(fmt.Sprintf("query %s #%d", p.Name, i), func(r *hostileReq) { r.path = render(nil, q.Encode()) })
		}
	}

	if !hasBody {
		return out
	}
	// Bodies.
	for i, b := range malformedBodies {
		add(fmt.Sprintf("malformed body #%d", i), func(r *hostileReq) { r.body = []byte(b) })
	}
	add("empty body", func(r *hostileReq) { r.body = nil })
	add("no body", func(r *hostileReq) { r.body, r.noBody = nil, true })
	for _, ct := range []string{"text/plain", "application/xml", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x",
		"application/json; charset=latin1", "%%%", "", "application/octet-stream"} {
		add("content type "+ct, func(r *hostileReq) { r.ctype = ct })
	}
	add("form body", func(r *hostileReq) { r.ctype, r.body = "application/x-www-form-urlencoded", []byte("a=1&b=%ZZ") })
	add("oversize body", func(r *hostileReq) { r.body, r.oversize = nil, gateway.DefaultMaxBodyBytes+1 })
	var obj map[string]json.RawMessage
	if err := json.Unmarshal([]byte(baseBody), &obj); err != nil || obj == nil {
		obj = map[string]json.RawMessage{}
	}
	with := func(field string, v json.RawMessage) []byte {
		m := make(map[string]json.RawMessage, len(obj)+1)
		for k, x := range obj {
			m[k] = x
		}
		m[field] = v
		raw, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return raw
	}
	for name, s := range op.body {
		for i, v := range hostileJSONValues {
			add(fmt.Sprintf("body %s #%d", name, i), func(r *hostileReq) { r.body = with(name, json.RawMessage(v)) })
		}
		for sub := range s.Properties {
			for i, v := range hostileNestedValues {
				var inner map[string]json.RawMessage
				_ = json.Unmarshal(obj[name], &inner)
				if inner == nil {
					inner = map[string]json.RawMessage{}
				}
				inner[sub] = json.RawMessage(v)
				raw, _ := json.Marshal(inner)
				add(fmt.Sprintf("body %s.%s #%d", name, sub, i), func(r *hostileReq) { r.body = with(name, raw) })
			}
		}
	}
	return out
}

func joinQuery(a, b string) string {
	if a == "" {
		return b
	}
	return a + "&" + b
}

// handWrittenRequests are the paths outside the OpenAPI document: signed
// file URLs, inbound webhooks, the OAuth callback.
func handWrittenRequests(org, ws string) []hostileReq {
	var out []hostileReq
	for _, p := range []struct{ method, tmpl string }{
		{http.MethodPost, "/files/upload/{}"}, {http.MethodPut, "/files/upload/{}"},
		{http.MethodGet, "/files/download/{}"}, {http.MethodGet, "/files/download/{}/name.txt"},
		{http.MethodPost, "/hooks/" + org + "/" + ws + "/{}"}, {http.MethodPost, "/hooks/{}/{}/{}"},
	} {
		for i, seg := range append([]string{"x", "garbage.token.sig"}, hostilePathSegments...) {
			r := hostileReq{op: "hand " + p.method + " " + p.tmpl, variant: fmt.Sprintf("segment #%d", i), method: p.method,
				path: strings.ReplaceAll(p.tmpl, "{}", seg), ctype: "application/json", body: []byte(`{`)}
			if p.method == http.MethodGet {
				r.body, r.noBody = nil, true
			}
			out = append(out, r)
		}
		if p.method != http.MethodGet {
			out = append(out, hostileReq{op: "hand " + p.method + " " + p.tmpl, variant: "oversize", method: p.method,
				path: strings.ReplaceAll(p.tmpl, "{}", "x"), ctype: "application/octet-stream", oversize: gateway.DefaultMaxUploadBytes + 1})
		}
	}
	for i, q := range []string{"", "state=x&code=y", "state=%ZZ", "error=access_denied&state=" + hostileLong[:5000], "state=%00"} {
		out = append(out, hostileReq{op: "hand GET /oauth/callback", variant: fmt.Sprintf("query #%d", i), method: http.MethodGet,
			path: "/oauth/callback?" + q, noBody: true})
	}
	return out
}

// sendHostile sends r and returns a description of what is wrong with the
// answer, or "".
func sendHostile(client *http.Client, base string, r hostileReq) string {
	var body io.Reader
	switch {
	case r.oversize > 0:
		body = io.MultiReader(strings.NewReader(`{"a":"`), io.LimitReader(repeatByte('a'), r.oversize), strings.NewReader(`"}`))
	case !r.noBody:
		body = bytes.NewReader(r.body)
	}
	req, err := http.NewRequest(r.method, base, body)
	if err != nil {
		return "request: " + err.Error()
	}
	if r.oversize > 0 {
		req.ContentLength = -1 // chunked: the bound must hold without a declared length
	}
	// The path as escaped (Opaque keeps %2F, %00 and malformed escapes).
	req.URL.Opaque = "//" + req.URL.Host + r.path
	if i := strings.IndexByte(r.path, '?'); i >= 0 {
		req.URL.Opaque = "//" + req.URL.Host + r.path[:i]
		req.URL.RawQuery = r.path[i+1:]
	}
	if r.ctype != "" {
		req.Header.Set("Content-Type", r.ctype)
	}
	for k, v := range r.headers {
		req.Header.Set(k, v)
	}
	resp, err := client.Do(req)
	if err != nil {
		if strings.Contains(err.Error(), "Client.Timeout") || strings.Contains(err.Error(), "deadline") {
			return "no answer in time (a hang): " + err.Error()
		}
		if r.oversize > 0 && (strings.Contains(err.Error(), "broken pipe") || strings.Contains(err.Error(), "connection reset")) {
			return "" // the server answered and closed before the client finished sending
		}
		return "transport error: " + err.Error()
	}
	defer resp.Body.Close()
	if r.stream && resp.StatusCode == http.StatusOK {
		return ""
	}
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Sprintf("HTTP %d, body unreadable: %v", resp.StatusCode, err)
	}
	if r.stream {
		// A server stream's error is its last ndjson line, {"error": rpcStatus}.
		var line struct{ Error json.RawMessage }
		if json.Unmarshal(raw, &line) == nil && line.Error != nil {
			raw = line.Error
		}
	}
	if strings.HasPrefix(r.path, server.OAuthCallbackPath) && resp.StatusCode < 500 {
		return "" // a page for the person the provider sends back, not an API answer
	}
	return checkHostileAnswer(r.path, resp.StatusCode, resp.Header, raw)
}

type repeatByte byte

func (b repeatByte) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(b)
	}
	return len(p), nil
}

// checkHostileAnswer checks one answer: no 5xx, and an error in the shape
// of its path.
func checkHostileAnswer(path string, code int, h http.Header, raw []byte) string {
	short := string(raw)
	if len(short) > 300 {
		short = short[:300] + "…"
	}
	if code >= 500 {
		return fmt.Sprintf("HTTP %d %s", code, short)
	}
	if code < 400 {
		return ""
	}
	if ct := h.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		return fmt.Sprintf("HTTP %d with Content-Type %q: %s", code, ct, short)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return fmt.Sprintf("HTTP %d, body not a JSON object: %s", code, short)
	}
	msg, _ := m["message"].(string)
	if msg == "" {
		return fmt.Sprintf("HTTP %d without a message: %s", code, short)
	}
	p, _, _ := strings.Cut(path, "?")
	switch gateway.ShapeFor(p) {
	case gateway.ShapeLegacyV1:
		if code == http.StatusForbidden && len(m) == 1 {
			return ""
		}
		if len(m) != 2 || m["statusCode"] != float64(code) {
			return fmt.Sprintf("HTTP %d, not {statusCode, message}: %s", code, short)
		}
	case gateway.ShapeLegacyV2:
		if m["status_code"] != float64(code) {
			return fmt.Sprintf("HTTP %d, not {status_code, message, details}: %s", code, short)
		}
		for k := range m {
			if k != "status_code" && k != "message" && k != "details" {
				return fmt.Sprintf("HTTP %d, field %q beside {status_code, message, details}: %s", code, k, short)
			}
		}
	default:
		c, ok := m["code"].(float64)
		_, okd := m["details"].([]any)
		if !ok || !okd || len(m) != 3 {
			return fmt.Sprintf("HTTP %d, not rpcStatus {code, message, details}: %s", code, short)
		}
		if want := gateway.HTTPStatus(p, codes.Code(c)); want != code && code != http.StatusMethodNotAllowed &&
			code != http.StatusRequestEntityTooLarge && code != http.StatusRequestTimeout {
			return fmt.Sprintf("HTTP %d for code %v (which maps to %d): %s", code, codes.Code(c), want, short)
		}
		if testenv.HTTPReason(m) == "" {
			return fmt.Sprintf("HTTP %d without an ErrorInfo reason: %s", code, short)
		}
	}
	return ""
}

// hostileFinding is one defect: the operation, the variant, what it answered.
type hostileFinding struct{ op, variant, what string }

// runHostile sends every request with a few workers and returns what went
// wrong.
func runHostile(client *http.Client, base string, reqs []hostileReq) []hostileFinding {
	var (
		mu    sync.Mutex
		found []hostileFinding
		wg    sync.WaitGroup
		next  = make(chan hostileReq)
	)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range next {
				if what := sendHostile(client, base, r); what != "" {
					mu.Lock()
					found = append(found, hostileFinding{r.op + " " + r.method, r.variant, what})
					mu.Unlock()
				}
			}
		}()
	}
	for _, r := range reqs {
		next <- r
	}
	close(next)
	wg.Wait()
	return found
}

// reportFindings fails t with the findings, at most a few per operation.
func reportFindings(t *testing.T, found []hostileFinding) {
	t.Helper()
	sort.Slice(found, func(i, j int) bool { return found[i].op+found[i].variant < found[j].op+found[j].variant })
	per := map[string]int{}
	for _, f := range found {
		per[f.op]++
		if per[f.op] <= 3 {
			t.Errorf("%s, %s: %s", f.op, f.variant, f.what)
		}
	}
	for op, n := range per {
		if n > 3 {
			t.Errorf("%s: %d more", op, n-3)
		}
	}
}

// checkStillHealthy checks that the server answers its probes and an
// ordinary call after the hostile ones.
func checkStillHealthy(t *testing.T, e *testEnv) {
	t.Helper()
	for _, p := range []string{"/healthz", "/readyz", "/livez", "/v2/health"} {
		if code, _, raw := e.DoHTTP(t, http.MethodGet, p, "", nil); code != http.StatusOK {
			t.Errorf("GET %s after the hostile requests: %d %s", p, code, raw)
		}
	}
	path := "/api/v1/organizations/" + e.Init.OrganizationID + "/workspaces/" + e.Init.WorkspaceID
	if code, _, raw := e.DoHTTP(t, http.MethodGet, path, "", map[string]string{"Authorization": "Bearer " + e.Init.APIKey}); code != http.StatusOK {
		t.Errorf("GET %s after the hostile requests: %d %s", path, code, raw)
	}
}

// destructive reports whether an operation may delete the organization,
// workspace or key the other cases use: those run against an organization
// of their own, after the others.
func destructive(method, rpc string) bool {
	name := rpc[strings.LastIndexByte(rpc, '/')+1:]
	return method == http.MethodDelete || strings.HasPrefix(name, "Delete") || strings.HasPrefix(name, "Remove") ||
		strings.HasPrefix(name, "Leave")
}

func TestHostileHTTPInput(t *testing.T) {
	e := newTestEnv(t)
	readOnly := e.NewKey(t, testenv.KeySpec{Level: store.PermissionReadOnly})
	victim, err := app.Bootstrap(context.Background(), e.Store, app.InitOptions{Organization: "Victim", Email: "victim-" + store.NewID() + "@example.test", Workspace: "Doomed"})
	if err != nil {
		t.Fatal(err)
	}
	ops := hostileOps(t, e)
	var safe, late []hostileReq
	for _, op := range ops {
		if destructive(op.method, op.rpc) {
			late = append(late, hostileRequests(t, op, victim.OrganizationID, victim.WorkspaceID, victim.APIKey, readOnly)...)
		} else {
			safe = append(safe, hostileRequests(t, op, e.Init.OrganizationID, e.Init.WorkspaceID, e.Init.APIKey, readOnly)...)
		}
	}
	hand := handWrittenRequests(e.Init.OrganizationID, e.Init.WorkspaceID)
	// The organization-wide deletions last.
	sort.SliceStable(late, func(i, j int) bool { return strings.Count(late[i].path, "/") > strings.Count(late[j].path, "/") })

	client := &http.Client{Timeout: testtime.Limit(30 * time.Second), Transport: e.Srv.Client().Transport}
	var found []hostileFinding
	found = append(found, runHostile(client, e.Srv.URL, safe)...)
	found = append(found, runHostile(client, e.Srv.URL, hand)...)
	found = append(found, runHostile(client, e.Srv.URL, late)...)
	t.Logf("%d operations, %d hostile HTTP requests (%d destructive, %d on hand-written paths)",
		len(ops), len(safe)+len(late)+len(hand), len(late), len(hand))
	reportFindings(t, found)
	checkStillHealthy(t, e)
}

// hostileScalars returns hostile values for a scalar field.
func hostileScalars(f protoreflect.FieldDescriptor) []protoreflect.Value {
	switch f.Kind() {
	case protoreflect.StringKind:
		var vs []protoreflect.Value
		for _, s := range []string{"../../etc/passwd", hostileLong, "\x00", "(((", "nope desc", "-1", "", strings.Repeat("(", 4000)} {
			vs = append(vs, protoreflect.ValueOfString(s))
		}
		return vs
	case protoreflect.BytesKind:
		return []protoreflect.Value{protoreflect.ValueOfBytes([]byte{0xff, 0}), protoreflect.ValueOfBytes([]byte(hostileLong))}
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		return []protoreflect.Value{protoreflect.ValueOfInt32(math.MaxInt32), protoreflect.ValueOfInt32(math.MinInt32), protoreflect.ValueOfInt32(-1)}
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return []protoreflect.Value{protoreflect.ValueOfInt64(math.MaxInt64), protoreflect.ValueOfInt64(math.MinInt64), protoreflect.ValueOfInt64(-1)}
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return []protoreflect.Value{protoreflect.ValueOfUint32(math.MaxUint32)}
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return []protoreflect.Value{protoreflect.ValueOfUint64(math.MaxUint64)}
	case protoreflect.DoubleKind:
		return []protoreflect.Value{protoreflect.ValueOfFloat64(math.NaN()), protoreflect.ValueOfFloat64(math.Inf(1)),
			protoreflect.ValueOfFloat64(math.Inf(-1)), protoreflect.ValueOfFloat64(math.MaxFloat64), protoreflect.ValueOfFloat64(math.Copysign(0, -1))}
	case protoreflect.FloatKind:
		return []protoreflect.Value{protoreflect.ValueOfFloat32(float32(math.NaN())), protoreflect.ValueOfFloat32(float32(math.Inf(-1))),
			protoreflect.ValueOfFloat32(math.MaxFloat32)}
	case protoreflect.EnumKind:
		return []protoreflect.Value{protoreflect.ValueOfEnum(9999), protoreflect.ValueOfEnum(-1)}
	case protoreflect.BoolKind:
		return []protoreflect.Value{protoreflect.ValueOfBool(true)}
	}
	return nil
}

// hostileMessages returns hostile values of a message field's type: broken
// well-known types, or the empty message.
func hostileMessages(m protoreflect.Message) []protoreflect.Message {
	mk := func(set func(m protoreflect.Message)) protoreflect.Message {
		n := m.New()
		set(n)
		return n
	}
	fd := func(n protoreflect.Message, name string) protoreflect.FieldDescriptor {
		return n.Descriptor().Fields().ByName(protoreflect.Name(name))
	}
	switch m.Descriptor().FullName() {
	case "google.protobuf.Timestamp", "google.protobuf.Duration":
		return []protoreflect.Message{
			mk(func(n protoreflect.Message) { n.Set(fd(n, "seconds"), protoreflect.ValueOfInt64(math.MaxInt64)) }),
			mk(func(n protoreflect.Message) { n.Set(fd(n, "seconds"), protoreflect.ValueOfInt64(math.MinInt64)) }),
			mk(func(n protoreflect.Message) { n.Set(fd(n, "nanos"), protoreflect.ValueOfInt32(-1)) }),
			mk(func(n protoreflect.Message) { n.Set(fd(n, "nanos"), protoreflect.ValueOfInt32(math.MaxInt32)) }),
		}
	case "google.protobuf.FieldMask":
		var out []protoreflect.Message
		for _, p := range [][]string{{"nope"}, {"a..b"}, {""}, {"*", "x"}, {"\x00"}} {
			out = append(out, mk(func(n protoreflect.Message) {
				l := n.Mutable(fd(n, "paths")).List()
				for _, s := range p {
					l.Append(protoreflect.ValueOfString(s))
				}
			}))
		}
		return out
	case "google.protobuf.Value":
		return []protoreflect.Message{
			mk(func(protoreflect.Message) {}),
			mk(func(n protoreflect.Message) { n.Set(fd(n, "number_value"), protoreflect.ValueOfFloat64(math.NaN())) }),
			mk(func(n protoreflect.Message) { n.Set(fd(n, "number_value"), protoreflect.ValueOfFloat64(math.Inf(1))) }),
			mk(func(n protoreflect.Message) { n.Set(fd(n, "string_value"), protoreflect.ValueOfString("\x00")) }),
		}
	}
	return []protoreflect.Message{m.New()}
}

// grpcVariant is one hostile request message.
type grpcVariant struct {
	name string
	msg  proto.Message
	raw  rawMessage // when set: the request's bytes, sent as they are
}

// rawMessage is a request already encoded (one no proto library would
// encode: a string that is not UTF-8).
type rawMessage []byte

// rawRequestCodec sends a rawMessage as it is and anything else as proto.
type rawRequestCodec struct{}

func (rawRequestCodec) Name() string { return "proto" }

func (rawRequestCodec) Marshal(v any) (mem.BufferSlice, error) {
	if b, ok := v.(rawMessage); ok {
		return mem.BufferSlice{mem.SliceBuffer(b)}, nil
	}
	b, err := proto.Marshal(v.(proto.Message))
	return mem.BufferSlice{mem.SliceBuffer(b)}, err
}

func (rawRequestCodec) Unmarshal(data mem.BufferSlice, v any) error {
	return proto.Unmarshal(data.Materialize(), v.(proto.Message))
}

// grpcVariants mutates one field of base at a time (top-level fields and
// those of top-level message fields).
func grpcVariants(base protoreflect.Message) []grpcVariant {
	var out []grpcVariant
	var walk func(path string, get func(protoreflect.Message) protoreflect.Message, md protoreflect.MessageDescriptor, depth int)
	walk = func(path string, get func(protoreflect.Message) protoreflect.Message, md protoreflect.MessageDescriptor, depth int) {
		fields := md.Fields()
		for i := 0; i < fields.Len(); i++ {
			f := fields.Get(i)
			name := path + string(f.Name())
			variant := func(what string, set func(m protoreflect.Message)) {
				c := proto.Clone(base.Interface())
				set(get(c.ProtoReflect()))
				out = append(out, grpcVariant{name: name + " " + what, msg: c})
			}
			switch {
			case f.IsMap():
				if f.MapKey().Kind() != protoreflect.StringKind {
					continue
				}
				for j, k := range []string{"\x00", hostileLong[:5000], ""} {
					variant(fmt.Sprintf("key #%d", j), func(m protoreflect.Message) {
						mp := m.Mutable(f).Map()
						v := mp.NewValue()
						if f.MapValue().Kind() != protoreflect.MessageKind {
							v = scalarFor(f.MapValue(), "x", "x")
						}
						mp.Set(protoreflect.ValueOfString(k).MapKey(), v)
					})
				}
			case f.IsList() && f.Kind() == protoreflect.MessageKind:
				variant("empty element", func(m protoreflect.Message) {
					l := m.Mutable(f).List()
					l.Append(l.NewElement())
				})
			case f.IsList():
				for j, v := range hostileScalars(f) {
					variant(fmt.Sprintf("element #%d", j), func(m protoreflect.Message) { m.Mutable(f).List().Append(v) })
				}
				variant("1001 elements", func(m protoreflect.Message) {
					l := m.Mutable(f).List()
					for range 1001 {
						l.Append(scalarFor(f, "x", "x"))
					}
				})
			case f.Kind() == protoreflect.MessageKind:
				for j, hm := range hostileMessages(dynamicpb.NewMessage(f.Message())) {
					variant(fmt.Sprintf("message #%d", j), func(m protoreflect.Message) {
						n := m.NewField(f).Message()
						proto.Merge(n.Interface(), hm.Interface())
						m.Set(f, protoreflect.ValueOfMessage(n))
					})
				}
				if depth == 0 && !strings.HasPrefix(string(f.Message().FullName()), "google.protobuf.") {
					walk(name+".", func(m protoreflect.Message) protoreflect.Message { return get(m).Mutable(f).Message() }, f.Message(), depth+1)
				}
			default:
				for j, v := range hostileScalars(f) {
					variant(fmt.Sprintf("#%d", j), func(m protoreflect.Message) { m.Set(f, v) })
				}
			}
		}
	}
	walk("", func(m protoreflect.Message) protoreflect.Message { return m }, base.Descriptor(), 0)
	// Strings that are not UTF-8, which only a hand-made encoding sends: the
	// field appended to the encoded request (the last value of a string
	// wins; a list gets one more element).
	enc, err := proto.Marshal(base.Interface())
	if err == nil {
		fields := base.Descriptor().Fields()
		for i := 0; i < fields.Len(); i++ {
			f := fields.Get(i)
			if f.Kind() != protoreflect.StringKind || f.IsMap() {
				continue
			}
			b := protowire.AppendTag(append([]byte(nil), enc...), f.Number(), protowire.BytesType)
			b = protowire.AppendBytes(b, []byte("a\xff\xfeb"))
			out = append(out, grpcVariant{name: string(f.Name()) + " not UTF-8", raw: b})
		}
	}
	return out
}

func TestHostileGRPCInput(t *testing.T) {
	e := newTestEnv(t)
	victim, err := app.Bootstrap(context.Background(), e.Store, app.InitOptions{Organization: "Victim", Email: "victim-" + store.NewID() + "@example.test", Workspace: "Doomed"})
	if err != nil {
		t.Fatal(err)
	}
	type call struct {
		rpc, variant string
		msg          proto.Message
		raw          rawMessage
		md           metadata.MD
		stream       bool
		out          protoreflect.MessageDescriptor
	}
	var safe, late []call
	methods := 0
	for _, b := range testenv.ContractBindings() {
		if b.Err != "" {
			t.Fatal(b.Err)
		}
		methods++
		md := testenv.MethodDescriptor(t, b.RPC)
		org, ws, key := e.Init.OrganizationID, e.Init.WorkspaceID, e.Init.APIKey
		if destructive(b.Method, b.RPC) {
			org, ws, key = victim.OrganizationID, victim.WorkspaceID, victim.APIKey
		}
		header, prefix := "authorization", "Bearer "
		if strings.HasPrefix(b.RPC, "/prose.legacy.") {
			header, prefix = "x-api-key", ""
		}
		msg := dynamicpb.NewMessage(md.Input())
		fillRequest(msg, org, ws, 0)
		for _, v := range grpcVariants(msg) {
			c := call{b.RPC, v.name, v.msg, v.raw, metadata.Pairs(header, prefix+key), md.IsStreamingServer(), md.Output()}
			if destructive(b.Method, b.RPC) {
				late = append(late, c)
			} else {
				safe = append(safe, c)
			}
		}
	}
	timeout := testtime.Limit(30 * time.Second)
	do := func(c call) string {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		ctx = metadata.NewOutgoingContext(ctx, c.md)
		out := dynamicpb.NewMessage(c.out)
		var in any = c.msg
		if c.raw != nil {
			in = c.raw
		}
		codec := grpc.ForceCodecV2(rawRequestCodec{})
		var err error
		if c.stream {
			var s grpc.ClientStream
			s, err = e.Conn.NewStream(ctx, &grpc.StreamDesc{ServerStreams: true}, c.rpc, codec)
			if err == nil {
				if err = s.SendMsg(in); err == nil {
					_ = s.CloseSend()
					err = s.RecvMsg(out)
				}
			}
		} else {
			err = e.Conn.Invoke(ctx, c.rpc, in, out, codec)
		}
		switch status.Code(err) {
		case codes.Internal, codes.Unknown, codes.DataLoss, codes.Unimplemented:
			return err.Error()
		case codes.DeadlineExceeded:
			if ctx.Err() != nil {
				return "no answer in time (a hang)"
			}
		}
		return ""
	}
	var (
		mu    sync.Mutex
		found []hostileFinding
	)
	for _, batch := range [][]call{safe, late} {
		var wg sync.WaitGroup
		next := make(chan call)
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for c := range next {
					if what := do(c); what != "" {
						mu.Lock()
						found = append(found, hostileFinding{c.rpc, c.variant, what})
						mu.Unlock()
					}
				}
			}()
		}
		for _, c := range batch {
			next <- c
		}
		close(next)
		wg.Wait()
	}
	t.Logf("%d methods, %d hostile gRPC calls", methods, len(safe)+len(late))
	reportFindings(t, found)
	checkStillHealthy(t, e)
}

// TestHostileRegressions pins the defects TestHostileHTTPInput found, each
// with the answer it must get now.
func TestHostileRegressions(t *testing.T) {
	e := newTestEnv(t)
	bearer := map[string]string{"Authorization": "Bearer " + e.Init.APIKey}
	ws := "/api/v1/organizations/" + e.Init.OrganizationID + "/workspaces/" + e.Init.WorkspaceID
	deep := url.QueryEscape(strings.Repeat("(", 4000)) // within the 4,096 bytes a filter may have
	for _, c := range []struct {
		name, method, path, body string
		headers                  map[string]string
		status                   int
		reason, field            string
	}{
		// The filter parser's cost and its error message grew with the
		// square of the nesting: minutes and hundreds of MB for a book
		// list, 14 s and 144 MB within the 4 KiB bound of the others.
		{name: "book filter nested 4000 deep", method: "GET", path: "/api/v1/books?filter=" + deep, headers: bearer,
			status: 400, reason: "INVALID_FILTER", field: "filter"},
		{name: "book filter nested 5000 deep", method: "GET", path: ws + "/books?filter=" + url.QueryEscape(strings.Repeat("(", 5000)), headers: bearer,
			status: 400, reason: "INVALID_FILTER", field: "filter"},
		{name: "exception filter nested 4000 deep", method: "GET", path: ws + "/exceptions?filter=" + deep, headers: bearer,
			status: 400, field: "filter"},
		{name: "workspace filter nested 33 deep", method: "GET", path: "/api/v1/organizations/" + e.Init.OrganizationID + "/workspaces?filter=" +
			url.QueryEscape(strings.Repeat("(", 33)+`title = "x"`+strings.Repeat(")", 33)), headers: bearer, status: 400, field: "filter"},
		// A file name that is not UTF-8 was stored, then its answer could
		// not be encoded: 500.
		{name: "upload named with bytes that are not UTF-8", method: "POST", path: "/api/v1/organizations/" + e.Init.OrganizationID + "/files:upload?filename=%FF.txt",
			body: "hello", headers: bearer, status: 400, reason: "INVALID_CHARACTER", field: "filename"},
		// Inbound webhooks answered {code, message, details: []}, without
		// the ErrorInfo every other error has.
		{name: "webhook of no trigger", method: "POST", path: "/hooks/" + e.Init.OrganizationID + "/" + e.Init.WorkspaceID + "/nope", body: "{}",
			status: 404, reason: "NOT_FOUND"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, m, raw := e.DoHTTP(t, c.method, c.path, c.body, c.headers)
			if code != c.status {
				t.Fatalf("HTTP %d %.300s, want %d", code, raw, c.status)
			}
			if len(raw) > 4096 {
				t.Errorf("an error of %d bytes", len(raw))
			}
			if what := checkHostileAnswer(c.path, code, http.Header{"Content-Type": {"application/json"}}, raw); what != "" {
				t.Error(what)
			}
			if c.reason != "" && testenv.HTTPReason(m) != c.reason {
				t.Errorf("reason %q, want %q: %s", testenv.HTTPReason(m), c.reason, raw)
			}
			if c.field != "" {
				if r := httpError(t, code, m, raw); r.violation != c.field {
					t.Errorf("violation of %q, want %q: %s", r.violation, c.field, raw)
				}
			}
		})
	}
	// Over native gRPC a string that is not UTF-8 failed to decode, which
	// grpc-go answers INTERNAL before any interceptor runs.
	t.Run("grpc title not UTF-8", func(t *testing.T) {
		// CreateWorkspaceRequest{organization_id: 1, workspace: 2{title: 2}}
		title := protowire.AppendBytes(protowire.AppendTag(nil, 2, protowire.BytesType), []byte("Sales\xffOps"))
		req := protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), []byte(e.Init.OrganizationID))
		req = protowire.AppendBytes(protowire.AppendTag(req, 2, protowire.BytesType), title)
		ctx := metadata.NewOutgoingContext(context.Background(), metadata.Pairs("authorization", "Bearer "+e.Init.APIKey))
		out := dynamicpb.NewMessage(testenv.MethodDescriptor(t, "/prose.platform.v1.WorkspaceService/CreateWorkspace").Output())
		err := e.Conn.Invoke(ctx, "/prose.platform.v1.WorkspaceService/CreateWorkspace", rawMessage(req), out, grpc.ForceCodecV2(rawRequestCodec{}))
		if r := grpcError(err); r.code != codes.InvalidArgument || r.reason != "INVALID_CHARACTER" || r.violation != "workspace.title" {
			t.Errorf("%v (reason %q, field %q), want INVALID_ARGUMENT INVALID_CHARACTER on workspace.title", err, r.reason, r.violation)
		}
	})
}
