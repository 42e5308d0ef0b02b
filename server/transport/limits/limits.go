// Package limits bounds requests: the size of a request message per method
// (gRPC's receive limit, the HTTP side's body limit), and the size and
// characters of request fields (Set, checked by the validation entry).
package limits

import (
	errorsv1 "github.com/proserun/prose/gen/prose/errors/v1"
	"github.com/proserun/prose/server/transport"

	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/proserun/prose/store"
)

// MaxRequestBytes bounds the protobuf size of a request message the server
// receives (gRPC, and HTTP through the gateway): above the largest file
// upload (store's 32 MiB) and above what the gateway's largest JSON body
// (8 MiB) can become once decoded. A larger message is RESOURCE_EXHAUSTED
// before it reaches a handler. It is the gRPC server's receive limit, the
// same for every method; on gateway.Serve's ports only LargeRequestMethods
// may reach it (MaxRequestBytesOf, RequestSizeError).
const MaxRequestBytes = 64 << 20

// MaxMessageBytes bounds the request message of every method but
// LargeRequestMethods: the bound of a JSON request body on the HTTP side
// (gateway.DefaultMaxBodyBytes), so that a native gRPC call can carry no
// more than an HTTP one. The largest request the field limits allow
// (english_code of 4 MiB with a 1 MiB description, inputs of 4 MiB, an
// event of 4 MiB) fits. The gateway's ports check the declared length of
// a call's first message against it (RequestSizeError) before reading it.
const MaxMessageBytes = 8 << 20

// LargeRequestMethods are the methods whose request may be far above the
// JSON body bound (8 MiB), up to MaxRequestBytes: a file's bytes. Each call
// of one holds its message in memory (and more) while it runs.
var LargeRequestMethods = []string{
	"/prose.platform.v1.FileService/UploadFile",
}

var largeRequestMethods = func() map[string]bool {
	m := map[string]bool{}
	for _, name := range LargeRequestMethods {
		m[name] = true
	}
	return m
}()

// MaxRequestBytesOf is the bound of the request message of method (its
// full name, "/prose.platform.v1.WorkspaceService/UpdateWorkspace"):
// MaxRequestBytes for LargeRequestMethods, MaxMessageBytes for every other.
func MaxRequestBytesOf(method string) int {
	if largeRequestMethods[method] {
		return MaxRequestBytes
	}
	return MaxMessageBytes
}

// RequestSizeError is nil when a request message of size bytes (the length
// its gRPC frame declares) is within the bound of method, and otherwise the
// call's answer: RESOURCE_EXHAUSTED REQUEST_TOO_LARGE naming both, given
// before the message is read.
func RequestSizeError(method string, size uint32) error {
	limit := MaxRequestBytesOf(method)
	if int64(size) <= int64(limit) {
		return nil
	}
	return transport.NewError(codes.ResourceExhausted, transport.ReasonRequestTooLarge,
		fmt.Sprintf("the request message is %d bytes; %s takes at most %d bytes (only file uploads may be larger, up to %d)",
			size, method, limit, MaxRequestBytes)).
		Meta("max_request_bytes", strconv.Itoa(limit)).Meta("request_bytes", strconv.FormatUint(uint64(size), 10)).Err()
}

// MaxResponseBytes bounds the protobuf size of a response the server sends
// to gRPC clients: anything the server can build from stored data
// (grpc-go's own default).
const MaxResponseBytes = 1<<31 - 1

// MessageSizeOptions are the gRPC server's message bounds
// (MaxRequestBytes in, MaxResponseBytes out).
func MessageSizeOptions() []grpc.ServerOption {
	return []grpc.ServerOption{grpc.MaxRecvMsgSize(MaxRequestBytes), grpc.MaxSendMsgSize(MaxResponseBytes)}
}

// fieldLimit is the bound of one request field.
type fieldLimit struct {
	max  int
	what string // "a title", for the message
	// size measures a field's value: the UTF-8 bytes of a string, the
	// protobuf size of a message, list or map.
	size func(protoreflect.Value, protoreflect.FieldDescriptor) int
}

func stringBytes(v protoreflect.Value, _ protoreflect.FieldDescriptor) int { return len(v.String()) }

// valueBytes is the protobuf size of a message, list or map field.
func valueBytes(v protoreflect.Value, fd protoreflect.FieldDescriptor) int {
	switch {
	case fd.IsMap():
		n := 0
		v.Map().Range(func(k protoreflect.MapKey, mv protoreflect.Value) bool {
			n += len(k.String()) + 8
			if fd.MapValue().Kind() == protoreflect.MessageKind {
				n += proto.Size(mv.Message().Interface())
			} else {
				n += len(mv.String())
			}
			return true
		})
		return n
	case fd.IsList():
		n := 0
		for i := range v.List().Len() {
			if fd.Kind() == protoreflect.MessageKind {
				n += proto.Size(v.List().Get(i).Message().Interface())
			} else {
				n += len(v.List().Get(i).String())
			}
		}
		return n
	case fd.Kind() == protoreflect.MessageKind:
		return proto.Size(v.Message().Interface())
	}
	return len(v.String())
}

// Set is the bounds of request fields for one set of sizes.
type Set struct {
	// byName bounds string fields of these names in any request, at any
	// depth.
	byName map[protoreflect.Name]fieldLimit
	// byField bounds fields of one request message (full name of the
	// field).
	byField map[protoreflect.FullName]fieldLimit
}

// NewSet returns the bounds of sz (zero fields: store.DefaultSizes).
func NewSet(sz store.Sizes) *Set {
	sz = sz.WithDefaults()
	title := fieldLimit{sz.TitleBytes, "a title", stringBytes}
	text := fieldLimit{sz.TextBytes, "a description or reason", stringBytes}
	code := fieldLimit{sz.CodeBytes, "english_code", stringBytes}
	input := fieldLimit{sz.InputBytes, "the inputs of a run", valueBytes}
	event := fieldLimit{sz.EventBytes, "an event", valueBytes}
	return &Set{
		byName: map[protoreflect.Name]fieldLimit{
			"title":        title,
			"display_name": title,
			"description":  text,
			"reason":       text,
			"english_code": code,
			// A guide entry's text.
			"root_cause":       text,
			"resolution_steps": text,
			"resolution_notes": text,
		},
		byField: map[protoreflect.FullName]fieldLimit{
			"prose.platform.v1.InvokeAutomationRequest.inputs": input,
			"prose.legacy.v1.InvokeRequest.parameters":         input,
			"prose.legacy.v2.CreateRunRequest.inputs":          input,
			"prose.legacy.v2.CreateRunRequest.name":            title,
			"prose.platform.v1.CreateEventRequest.event":       event,
		},
	}
}

// Default is the bounds of the default sizes (store.DefaultSizes).
var Default = NewSet(store.Sizes{})

// Check walks a request: no string anywhere in it may hold a NUL
// character (no backend stores one in text; INVALID_ARGUMENT
// INVALID_CHARACTER), and the fields of ls must be within their bounds
// (INVALID_ARGUMENT FIELD_TOO_LARGE). Each names the field in a BadRequest
// violation.
func (ls *Set) Check(m protoreflect.Message) error {
	r := &limitReport{}
	ls.walkLimits(m, "", r)
	bad, reason := r.bad, r.reason
	if len(bad) == 0 {
		return nil
	}
	msg := bad[0].GetField() + " " + bad[0].GetDescription()
	if len(bad) > 1 {
		msg += fmt.Sprintf(" (and %d more)", len(bad)-1)
	}
	return transport.NewError(codes.InvalidArgument, reason, msg).Meta("field", bad[0].GetField()).Violations(bad...).Err()
}

// maxViolations bounds the violations one error lists.
const maxViolations = 10

// limitReport collects what walkLimits finds: the first reason, and the
// first maxViolations violations. (A struct, not a closure over them: one
// allocation per request, not three.)
type limitReport struct {
	reason transport.ErrorReason
	bad    []*transport.FieldViolation
}

func (r *limitReport) report(reason transport.ErrorReason, field, desc string) {
	if r.reason == errorsv1.ErrorReason_ERROR_REASON_UNSPECIFIED {
		r.reason = reason
	}
	if len(r.bad) < maxViolations {
		r.bad = append(r.bad, transport.Violation(field, desc))
	}
}

func (ls *Set) walkLimits(m protoreflect.Message, prefix string, r *limitReport) {
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		path := prefix + string(fd.Name())
		lim, ok := ls.byField[fd.FullName()]
		if !ok && fd.Kind() == protoreflect.StringKind && !fd.IsList() && !fd.IsMap() {
			lim, ok = ls.byName[fd.Name()]
		}
		if ok {
			if n := lim.size(v, fd); n > lim.max {
				r.report(transport.ReasonFieldTooLarge, path, fmt.Sprintf("is %d bytes; %s may be at most %d bytes", n, lim.what, lim.max))
			}
		}
		switch {
		case fd.IsMap():
			v.Map().Range(func(k protoreflect.MapKey, mv protoreflect.Value) bool {
				key := k.String()
				elem := path + "[" + strconv.Quote(key) + "]"
				if strings.IndexByte(key, 0) >= 0 {
					r.report(transport.ReasonInvalidCharacter, elem, "has a key with a NUL character")
				} else if !utf8.ValidString(key) {
					r.report(transport.ReasonInvalidCharacter, elem, "has a key that is not UTF-8")
				}
				switch fd.MapValue().Kind() {
				case protoreflect.StringKind:
					checkNUL(mv.String(), elem, r)
				case protoreflect.MessageKind:
					ls.walkLimits(mv.Message(), elem+".", r)
				}
				return true
			})
		case fd.IsList():
			l := v.List()
			for i := range l.Len() {
				elem := path + "[" + strconv.Itoa(i) + "]"
				switch fd.Kind() {
				case protoreflect.StringKind:
					checkNUL(l.Get(i).String(), elem, r)
				case protoreflect.MessageKind:
					ls.walkLimits(l.Get(i).Message(), elem+".", r)
				}
			}
		case fd.Kind() == protoreflect.StringKind:
			checkNUL(v.String(), path, r)
		case fd.Kind() == protoreflect.MessageKind:
			ls.walkLimits(v.Message(), path+".", r)
		}
		return true
	})
}

// checkNUL reports a string holding a NUL character or bytes that are not
// UTF-8 (a proto string must be UTF-8: such a request reaches a handler
// over HTTP, whose in-process channel does not encode it, and its answer
// could not be encoded either; over native gRPC requestCodec decodes such
// a string with NUL characters in place of the bad bytes).
func checkNUL(s, field string, r *limitReport) {
	if !ValidText(s) {
		r.report(transport.ReasonInvalidCharacter, field, "must be UTF-8 without a NUL character (U+0000)")
	}
}

// ValidText reports whether s is UTF-8 without a NUL character: what every
// string of a request must be (checkNUL), and what no name the API gives
// out can fail to be.
func ValidText(s string) bool {
	return strings.IndexByte(s, 0) < 0 && utf8.ValidString(s)
}
