package gateway

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"
	"google.golang.org/protobuf/types/known/anypb"

	errorsv1 "github.com/proserun/prose/gen/prose/errors/v1"
)

// valueMessage is the full name of the API's Value: a oneof of kinds
// (text, number, bool_value, …), not a plain JSON value.
const valueMessage = "prose.platform.v1.Value"

// ReasonInvalidValue is the ErrorInfo reason of a request body that gives a
// plain JSON value where the API's Value is expected.
const ReasonInvalidValue = errorsv1.ErrorReason_ERROR_REASON_INVALID_FIELD

// valueShapeError looks, in a request body that protojson refused, for the
// first place where a Value is expected and something else is given (a
// plain JSON value such as 120.5): its status names the field and the
// input, shows the expected shape, and, when example can convert the plain
// value, the Value it stands for. nil when the body's fault is elsewhere.
func valueShapeError(body []byte, md protoreflect.MessageDescriptor, example func([]byte) ([]byte, error)) *spb.Status {
	var doc any
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if dec.Decode(&doc) != nil {
		return nil
	}
	path, raw, ok := findBadValue(doc, md, "", 0)
	if !ok {
		return nil
	}
	got, _ := json.Marshal(raw)
	var msg strings.Builder
	fmt.Fprintf(&msg, "%s: %s is not a Value. A Value is a JSON object with one member naming its kind: "+
		`{"text": "ACME"}, {"bool_value": true}, {"number": {"lo": 12050, "flags": 131072}} (120.50: lo holds the digits, flags the scale << 16), `+
		`{"list": {"items": [{"text": "a"}]}}, {"date": {"year": 2026, "month": 1, "day": 31}}`, path, truncate(string(got), 200))
	if example != nil {
		if ex, err := example(got); err == nil {
			fmt.Fprintf(&msg, "; %s as a Value is %s", truncate(string(got), 200), truncate(string(ex), 400))
		}
	}
	msg.WriteString(". Plain JSON values are taken as they are by the CLI (prose automations invoke --input name=value), the Go client package, and the /v1 and /v2 APIs.")
	st := &spb.Status{Code: int32(codes.InvalidArgument), Message: msg.String()}
	br, err := anypb.New(&errdetails.BadRequest{FieldViolations: []*errdetails.BadRequest_FieldViolation{{
		Field: path, Description: "a Value object is expected, not a plain JSON value",
	}}})
	if err == nil {
		st.Details = append(st.Details, br)
	}
	info, err := anypb.New(&errdetails.ErrorInfo{
		Reason: strings.TrimPrefix(ReasonInvalidValue.String(), "ERROR_REASON_"), Domain: ErrorDomain,
		Metadata: map[string]string{"field": path, "expected": valueMessage},
	})
	if err == nil {
		st.Details = append([]*anypb.Any{info}, st.Details...)
	}
	return st
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// findBadValue walks doc as a message of type md and returns the path of
// the first Value that does not parse, and what was given there.
func findBadValue(doc any, md protoreflect.MessageDescriptor, prefix string, depth int) (string, any, bool) {
	obj, ok := doc.(map[string]any)
	if !ok || depth > 32 {
		return "", nil, false
	}
	for _, key := range sortedKeys(obj) {
		v := obj[key]
		fd := md.Fields().ByJSONName(key)
		if fd == nil {
			fd = md.Fields().ByName(protoreflect.Name(key))
		}
		if fd == nil || fd.Message() == nil {
			continue
		}
		path := join(prefix, string(fd.Name()))
		switch {
		case fd.IsMap():
			m, ok := v.(map[string]any)
			if !ok || fd.MapValue().Message() == nil {
				continue
			}
			for _, k := range sortedKeys(m) {
				item := m[k]
				if p, raw, bad := checkMessage(item, fd.MapValue().Message(), path+"["+strconv.Quote(k)+"]", depth); bad {
					return p, raw, true
				}
			}
		case fd.IsList():
			l, ok := v.([]any)
			if !ok {
				continue
			}
			for i, item := range l {
				if p, raw, bad := checkMessage(item, fd.Message(), fmt.Sprintf("%s[%d]", path, i), depth); bad {
					return p, raw, true
				}
			}
		default:
			if p, raw, bad := checkMessage(v, fd.Message(), path, depth); bad {
				return p, raw, true
			}
		}
	}
	return "", nil, false
}

// checkMessage checks v given as a message of type md: a Value must parse
// as one; other messages of ours are walked (well-known types have JSON of
// their own and are left to protojson).
func checkMessage(v any, md protoreflect.MessageDescriptor, path string, depth int) (string, any, bool) {
	if md.FullName() == valueMessage {
		b, err := json.Marshal(v)
		if err != nil {
			return "", nil, false
		}
		if protojson.Unmarshal(b, dynamicpb.NewMessage(md)) != nil {
			if _, isObj := v.(map[string]any); isObj {
				// An object that is not a Value: a Value nested in it may be
				// the fault (a list's items); else the object is.
				if p, raw, bad := findBadValue(v, md, path, depth+1); bad {
					return p, raw, true
				}
			}
			return path, v, true
		}
		return "", nil, false
	}
	if strings.HasPrefix(string(md.FullName()), "google.") {
		return "", nil, false
	}
	return findBadValue(v, md, path, depth+1)
}

func join(prefix, name string) string {
	if prefix == "" {
		return name
	}
	return prefix + "." + name
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
