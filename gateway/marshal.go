package gateway

import (
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
//   - unknown fields in request bodies rejected (INVALID_ARGUMENT, 400);
//   - google.api.HttpBody responses written as their raw bytes and content type;
//   - server streams sent as application/x-ndjson: one JSON object per line,
//     each line `{"result": <message>}` (grpc-gateway's framing). An error
//     after the stream started is a last line `{"error": {...}}` in the
//     AIP-193 shape: code (HTTP status), message, status (gRPC code name),
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
// map[string]proto.Message{"error": *status.Status}) in the AIP-193 shape,
// and everything else as protojson.
func (m *Marshaler) Marshal(v any) ([]byte, error) {
	if chunk, ok := v.(map[string]proto.Message); ok && len(chunk) == 1 {
		if st, ok := chunk["error"].(*spb.Status); ok {
			return aipBody(st, 0), nil
		}
	}
	return m.HTTPBodyMarshaler.Marshal(v)
}
