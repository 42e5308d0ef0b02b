package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/genproto/googleapis/api/httpbody"
	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
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
}

var _ runtime.StreamContentType = (*Marshaler)(nil)

// NewMarshaler returns the gateway's marshaler.
func NewMarshaler() *Marshaler {
	return &Marshaler{runtime.HTTPBodyMarshaler{Marshaler: &runtime.JSONPb{
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

// Marshal renders the error chunk of a stream (grpc-gateway passes
// map[string]proto.Message{"error": *status.Status}) as an rpcStatus,
// and everything else as protojson.
func (m *Marshaler) Marshal(v any) ([]byte, error) {
	if chunk, ok := v.(map[string]proto.Message); ok && len(chunk) == 1 {
		if st, ok := chunk["error"].(*spb.Status); ok {
			return append(append([]byte(`{"error":`), rpcStatusBody(st)...), '}'), nil
		}
	}
	return m.HTTPBodyMarshaler.Marshal(v)
}

// NewDecoder implements runtime.Marshaler: it decodes one JSON value, like
// grpc-gateway's, and then refuses a body that goes on after it
// (`{"a":1} trailing`): a client that sent two values, or garbage, is told
// so instead of having the rest ignored. An empty body is io.EOF (no body).
func (m *Marshaler) NewDecoder(r io.Reader) runtime.Decoder {
	return runtime.DecoderFunc(func(v any) error {
		data, err := io.ReadAll(r)
		if err != nil {
			return err
		}
		dec := json.NewDecoder(bytes.NewReader(data))
		var first json.RawMessage
		if err := dec.Decode(&first); err != nil {
			return err // io.EOF for an empty body
		}
		if _, err := dec.Token(); !errors.Is(err, io.EOF) {
			return fmt.Errorf("the request body has more after its JSON value (at byte %d)", dec.InputOffset())
		}
		return m.Unmarshal(first, v)
	})
}
