package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/genproto/googleapis/api/httpbody"
	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// NDJSON is the content type of server-streaming responses.
const NDJSON = "application/x-ndjson"

// Marshaler is the JSON marshaler of the gateway:
//
//   - protojson with proto (snake_case) field names, enums by name, int64 as
//     strings, unpopulated fields left out;
//   - unknown fields in request bodies rejected (INVALID_ARGUMENT, 400), and
//     anything but white space after the body's JSON value too;
//   - google.api.HttpBody responses written as their raw bytes and content type;
//   - server streams sent as application/x-ndjson: one JSON object per line,
//     each line `{"result": <message>}` (grpc-gateway's framing). An error
//     after the stream started is a last line `{"error": {...}}` holding the
//     reference's rpcStatus: code (the google.rpc.Code number), message,
//     details.
type Marshaler struct {
	runtime.HTTPBodyMarshaler
	// valueExample converts a plain JSON value to the API's Value JSON, for
	// the error of a body that gives one where a Value is expected (nil: the
	// error shows the shape only). See Options.ValueExample.
	valueExample func([]byte) ([]byte, error)
}

var _ runtime.StreamContentType = (*Marshaler)(nil)

// NewMarshaler returns the gateway's marshaler.
func NewMarshaler() *Marshaler {
	return &Marshaler{HTTPBodyMarshaler: runtime.HTTPBodyMarshaler{Marshaler: &runtime.JSONPb{
		MarshalOptions: protojson.MarshalOptions{
			UseProtoNames:   true,
			EmitUnpopulated: false,
		},
		UnmarshalOptions: protojson.UnmarshalOptions{
			DiscardUnknown: false,
		},
	}}}
}

// StreamContentType implements runtime.StreamContentType.
func (m *Marshaler) StreamContentType(v any) string {
	if b, ok := v.(*httpbody.HttpBody); ok {
		return b.GetContentType()
	}
	return NDJSON
}

// emitUnpopulated are the answers whose zero values the reference requires:
// QueryMetrics' series[].tags ({} without group_by) and points[].value (0
// for an interval without runs), which protojson would leave out.
var emitUnpopulated = map[protoreflect.FullName]bool{
	"prose.platform.v1.QueryMetricsResponse": true,
}

var emitAll = protojson.MarshalOptions{UseProtoNames: true, EmitUnpopulated: true}

// Marshal renders the error chunk of a stream (grpc-gateway passes
// map[string]proto.Message{"error": *status.Status}) as an rpcStatus,
// and everything else as protojson.
func (m *Marshaler) Marshal(v any) ([]byte, error) {
	if chunk, ok := v.(map[string]proto.Message); ok && len(chunk) == 1 {
		if st, ok := chunk["error"].(*spb.Status); ok {
			return append(append([]byte(`{"error":`), rpcStatusBody(st)...), '}'), nil
		}
	}
	// A message (not an HttpBody, whose bytes are its data): protojson's
	// bytes themselves. runtime.JSONPb.Marshal copies them into a
	// bytes.Buffer first (an allocation and a copy per response).
	if pm, ok := v.(proto.Message); ok {
		if emitUnpopulated[pm.ProtoReflect().Descriptor().FullName()] {
			return emitAll.Marshal(pm)
		}
		if _, body := v.(*httpbody.HttpBody); !body {
			if jp, ok := m.Marshaler.(*runtime.JSONPb); ok {
				return jp.MarshalOptions.Marshal(pm)
			}
		}
	}
	return m.HTTPBodyMarshaler.Marshal(v)
}

// NewDecoder implements runtime.Marshaler: it decodes one JSON value, like
// grpc-gateway's, and then refuses a body that goes on after it
// (`{"a":1} trailing`): a client that sent two values, or garbage, is told
// so instead of having the rest ignored. An empty body is io.EOF (no body).
// A body that gives a plain JSON value where a Value is expected is refused
// with an error naming the field and showing the Value's shape (see
// valueShapeError); its details reach the error renderer through the
// request's body state.
func (m *Marshaler) NewDecoder(r io.Reader) runtime.Decoder {
	return runtime.DecoderFunc(func(v any) error {
		data, err := io.ReadAll(r)
		if err != nil {
			return err
		}
		if m.decodeOnce(data, v) {
			return nil
		}
		dec := json.NewDecoder(bytes.NewReader(data))
		var first json.RawMessage
		if err := dec.Decode(&first); err != nil {
			return err // io.EOF for an empty body
		}
		if _, err := dec.Token(); !errors.Is(err, io.EOF) {
			return fmt.Errorf("the request body has more after its JSON value (at byte %d)", dec.InputOffset())
		}
		err = m.Unmarshal(first, v)
		if err == nil {
			return nil
		}
		if md := descriptorOf(v); md != nil {
			if st := valueShapeError(first, md, m.valueExample); st != nil {
				if g, ok := r.(guardedBody); ok {
					g.st.decodeStatus.Store(st)
				}
				return errors.New(st.GetMessage())
			}
		}
		return err
	})
}

// decodeOnce decodes a body into a request message in one pass, and
// reports whether it could: protojson reads the whole body as one JSON
// value and refuses anything after it, which is what NewDecoder's path
// checks with two passes of encoding/json before the same protojson
// decode (grpc-gateway's JSONPb adds a third). A body it refuses (or an
// empty one, or a target that is not a message) goes that path, which
// gives the error it always gave; a body it accepts, that path accepts
// too, with the same message decoded.
func (m *Marshaler) decodeOnce(data []byte, v any) bool {
	pm, ok := v.(proto.Message)
	if !ok || len(bytes.TrimSpace(data)) == 0 {
		return false
	}
	jp, ok := m.Marshaler.(*runtime.JSONPb)
	if !ok {
		return false
	}
	// protojson clears the message before it decodes, so a failed attempt
	// leaves nothing behind for the other path.
	return jp.UnmarshalOptions.Unmarshal(data, pm) == nil
}

// descriptorOf is the descriptor of the message a decoder fills: a
// proto.Message, or a pointer to one (grpc-gateway decodes a body that is
// one field of the request, body: "automation", into &req.Automation).
func descriptorOf(v any) protoreflect.MessageDescriptor {
	if pm, ok := v.(proto.Message); ok {
		return pm.ProtoReflect().Descriptor()
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.Type().Elem().Kind() != reflect.Pointer {
		return nil
	}
	if pm, ok := reflect.New(rv.Type().Elem().Elem()).Interface().(proto.Message); ok {
		return pm.ProtoReflect().Descriptor()
	}
	return nil
}
