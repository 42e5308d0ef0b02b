package chain

import (
	"strings"
	"unicode/utf8"

	"google.golang.org/grpc"
	"google.golang.org/grpc/encoding"
	_ "google.golang.org/grpc/encoding/proto" // registers the "proto" codec wrapped below
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// requestCodec is the gRPC server's codec: grpc-go's proto codec, except
// that a request whose strings are not all UTF-8 is decoded rather than
// refused. grpc-go answers a message its codec cannot decode with INTERNAL
// before any interceptor sees it, which would make a client's mistake a
// server fault; instead, each string that is not UTF-8 is decoded with a
// NUL character in place of each invalid byte sequence, so that the limits
// entry of the chain refuses it as every transport does:
// INVALID_ARGUMENT INVALID_CHARACTER naming the field.
type requestCodec struct{ encoding.CodecV2 }

// codecOption installs requestCodec on a gRPC server.
func codecOption() grpc.ServerOption {
	return grpc.ForceServerCodecV2(requestCodec{encoding.GetCodecV2("proto")})
}

func (c requestCodec) Unmarshal(data mem.BufferSlice, v any) error {
	err := c.CodecV2.Unmarshal(data, v)
	if err == nil {
		return nil
	}
	m, ok := v.(proto.Message)
	if !ok {
		return err
	}
	marked, changed := markInvalidUTF8(data.Materialize(), m.ProtoReflect().Descriptor(), 0)
	if !changed {
		return err
	}
	proto.Reset(m)
	return proto.Unmarshal(marked, m)
}

// markInvalidUTF8 returns the message b (of type md) with NUL characters in
// place of the invalid UTF-8 of its string fields, nested messages
// included, and whether it changed anything. Malformed wire data is left
// for the codec to refuse.
func markInvalidUTF8(b []byte, md protoreflect.MessageDescriptor, depth int) ([]byte, bool) {
	if depth > protowireMaxDepth {
		return nil, false
	}
	out := make([]byte, 0, len(b))
	changed := false
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return nil, false
		}
		if typ != protowire.BytesType {
			m := protowire.ConsumeFieldValue(num, typ, b[n:])
			if m < 0 {
				return nil, false
			}
			out = append(out, b[:n+m]...)
			b = b[n+m:]
			continue
		}
		v, m := protowire.ConsumeBytes(b[n:])
		if m < 0 {
			return nil, false
		}
		if fd := md.Fields().ByNumber(num); fd != nil {
			switch fd.Kind() {
			case protoreflect.StringKind:
				if !utf8.Valid(v) {
					v, changed = []byte(strings.ToValidUTF8(string(v), "\x00")), true
				}
			case protoreflect.MessageKind:
				if w, ch := markInvalidUTF8(v, fd.Message(), depth+1); ch {
					v, changed = w, true
				}
			}
		}
		out = append(out, b[:n]...)
		out = protowire.AppendBytes(out, v)
		b = b[n+m:]
	}
	return out, changed
}

// protowireMaxDepth is the nesting protobuf-go itself accepts.
const protowireMaxDepth = 10000
