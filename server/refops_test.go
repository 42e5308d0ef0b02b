package server_test

import (
	"net/http"
	"net/url"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"github.com/grpc-ecosystem/grpc-gateway/v2/utilities"
	"google.golang.org/genproto/googleapis/api/annotations"
	"google.golang.org/genproto/googleapis/api/httpbody"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	"github.com/proserun/prose/server/testenv"
)

// refOp is one operation of the reference (testdata/reference) with the
// Prose RPC bound to its method and path.
type refOp struct {
	ID       string // the reference's operationId
	Method   string // GET, POST, …
	Template string // the reference's path, with {variables}
	Vars     []string
	RPC      string // "/pkg.Service/Method"
	// proseVars are the variables of the RPC's own binding, in the order of
	// Vars (the names may differ: the reference's {name} may be Prose's
	// {book_name}).
	proseVars []string
}

var anyPathVar = regexp.MustCompile(`\{([a-z_.]+)(?:=[^}]*)?\}`)

// referenceOps lists the reference's operations in path order, each with
// its Prose binding; an operation without one fails the test.
func referenceOps(t *testing.T) []refOp {
	t.Helper()
	bound := map[string]testenv.Binding{}
	for _, b := range testenv.ContractBindings() {
		if b.Err == "" {
			bound[b.Method+" "+anyPathVar.ReplaceAllString(b.Path, "{}")] = b
		}
	}
	paths, _ := referenceDoc(t)["paths"].(map[string]any)
	var ops []refOp
	for tmpl, raw := range paths {
		methods, _ := raw.(map[string]any)
		for method, o := range methods {
			id, _ := testenv.Field(o, "operationId").(string)
			if id == "" {
				continue
			}
			m := strings.ToUpper(method)
			b, ok := bound[m+" "+anyPathVar.ReplaceAllString(tmpl, "{}")]
			if !ok {
				t.Errorf("%s %s (%s): no RPC of Prose is bound to it", m, tmpl, id)
				continue
			}
			op := refOp{ID: id, Method: m, Template: tmpl, RPC: b.RPC}
			for _, v := range anyPathVar.FindAllStringSubmatch(tmpl, -1) {
				op.Vars = append(op.Vars, v[1])
			}
			for _, v := range anyPathVar.FindAllStringSubmatch(b.Path, -1) {
				op.proseVars = append(op.proseVars, v[1])
			}
			ops = append(ops, op)
		}
	}
	sort.Slice(ops, func(i, j int) bool {
		if ops[i].Template != ops[j].Template {
			return ops[i].Template < ops[j].Template
		}
		return ops[i].Method < ops[j].Method
	})
	return ops
}

// opRequest is one call of a reference operation: the values of its path
// variables, and its body (JSON; for GET and DELETE, or beside a body, a
// query string starting with "?").
type opRequest struct {
	vars  map[string]string
	body  string
	query string
	// contentType is the body's (default application/json).
	contentType string
}

func (o refOp) path(vars map[string]string) string {
	p := o.Template
	for _, v := range o.Vars {
		p = strings.Replace(p, "{"+v+"}", url.PathEscape(vars[v]), 1)
	}
	return p
}

// callOp makes the call over tr with the owner's key: over HTTP exactly as
// written (the documented JSON at the reference's path), over gRPC as the
// request message the gateway would make of it (grpcRequest).
func (e *testEnv) callOp(t *testing.T, tr apiTransport, o refOp, r opRequest) xresult {
	t.Helper()
	if tr.grpc {
		m, err := e.DoGRPC(t, o.RPC, o.grpcRequest(t, r), grpcOwner(e))
		if err != nil {
			return grpcError(err)
		}
		return xresult{code: codes.OK, m: m}
	}
	path := o.path(r.vars)
	if r.query != "" {
		path += "?" + r.query
	}
	body := r.body
	if body == "" && o.Method != http.MethodGet && o.Method != http.MethodDelete {
		body = "{}"
	}
	headers := e.Bearer()
	if r.contentType != "" {
		headers["Content-Type"] = r.contentType
	}
	code, m, raw := e.DoHTTP(t, o.Method, path, body, headers)
	if code == http.StatusOK {
		return xresult{code: codes.OK, m: m, raw: string(raw)}
	}
	return httpError(t, code, m, raw)
}

// grpcRequest is the request message of o's RPC the gateway makes of r:
// the body into the field its binding names (or the whole message), the
// path variables and query parameters as the gateway sets them.
func (o refOp) grpcRequest(t *testing.T, r opRequest) proto.Message {
	t.Helper()
	md := testenv.MethodDescriptor(t, o.RPC)
	mt, err := protoregistry.GlobalTypes.FindMessageByName(md.Input().FullName())
	if err != nil {
		t.Fatal(err)
	}
	msg := mt.New().Interface()
	rule, _ := proto.GetExtension(md.Options(), annotations.E_Http).(*annotations.HttpRule)
	if r.body == "" && o.Method != http.MethodGet && o.Method != http.MethodDelete {
		r.body = "{}" // what callOp sends over HTTP
	}
	if r.body != "" {
		switch field := rule.GetBody(); field {
		case "":
		case "*":
			if err := protojson.Unmarshal([]byte(r.body), msg); err != nil {
				t.Fatalf("%s: the body as %s: %v", o.ID, md.Input().FullName(), err)
			}
		default:
			fd := md.Input().Fields().ByName(protoreflect.Name(field))
			inner := msg.ProtoReflect().Mutable(fd).Message().Interface()
			if hb, ok := inner.(*httpbody.HttpBody); ok {
				hb.ContentType, hb.Data = "application/json", []byte(r.body)
				if r.contentType != "" {
					hb.ContentType = r.contentType
				}
			} else if err := protojson.Unmarshal([]byte(r.body), inner); err != nil {
				t.Fatalf("%s: the body as %s: %v", o.ID, fd.Message().FullName(), err)
			}
		}
	}
	for i, v := range o.Vars {
		if err := runtime.PopulateFieldFromPath(msg, o.proseVars[i], r.vars[v]); err != nil {
			t.Fatalf("%s: path variable %s: %v", o.ID, v, err)
		}
	}
	if r.query != "" {
		q, err := url.ParseQuery(r.query)
		if err != nil {
			t.Fatal(err)
		}
		if err := runtime.PopulateQueryParameters(msg, q, utilities.NewDoubleArray(nil)); err != nil {
			t.Fatalf("%s: query %s: %v", o.ID, r.query, err)
		}
	}
	return msg
}

// grpcOwner is the metadata of a call with the owner's key.
func grpcOwner(e *testEnv) metadata.MD {
	return metadata.Pairs("authorization", "Bearer "+e.Init.APIKey)
}
