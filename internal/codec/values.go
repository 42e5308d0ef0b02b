package codec

import (
	"errors"
	"fmt"
	"sort"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/internal/codec/protovalue"
	"github.com/proserun/prose/internal/lang"
	persistv1 "github.com/proserun/prose/store/persist/v1"
)

// Values are named values as a client gave them or the interpreter made
// them, in the API's Value: a run's inputs and outputs, a book call's
// values. The engine keeps them as they are and hands them to this package
// to store.
type Values = map[string]*platformv1.Value

var marshal = proto.MarshalOptions{Deterministic: true}

// Mirror sets dst to src read as dst's type, for a prose.persist.v1
// message and the platform message it mirrors field by field, either way
// (checked by TestPersistValueMirrorsPlatformValue and
// TestPersistMirrorsPlatform). See the package comment for where it is
// used, and where it is not.
func Mirror(dst, src proto.Message) error {
	b, err := proto.Marshal(src)
	if err != nil {
		return err
	}
	return proto.Unmarshal(b, dst)
}

// ValuesToStored converts values as given by a client to their stored
// form (nil for nil).
func ValuesToStored(m Values) (map[string]*persistv1.Value, error) {
	if m == nil {
		return nil, nil
	}
	out := make(map[string]*persistv1.Value, len(m))
	for k, v := range m {
		p, err := ValueToStored(v)
		if err != nil {
			return nil, err
		}
		out[k] = p
	}
	return out, nil
}

// ValueToStored converts one value to its stored form.
func ValueToStored(v *platformv1.Value) (*persistv1.Value, error) {
	p := &persistv1.Value{}
	return p, Mirror(p, v)
}

// ValuesFromStored converts stored values back to the API's (nil for nil).
func ValuesFromStored(m map[string]*persistv1.Value) (Values, error) {
	if m == nil {
		return nil, nil
	}
	out := make(Values, len(m))
	for k, p := range m {
		v, err := ValueFromStored(p)
		if err != nil {
			return nil, err
		}
		out[k] = v
	}
	return out, nil
}

// ValueFromStored converts one stored value back to the API's.
func ValueFromStored(p *persistv1.Value) (*platformv1.Value, error) {
	v := &platformv1.Value{}
	return v, Mirror(v, p)
}

// LangToStored converts interpreter values to their stored form.
func LangToStored(m map[string]lang.Value) (map[string]*persistv1.Value, error) {
	p, err := protovalue.MapToProto(m)
	if err != nil {
		return nil, err
	}
	return ValuesToStored(p)
}

// CheckValues reports whether the language holds every value of m (the
// error names the first that it does not).
func CheckValues(m Values) error {
	_, err := protovalue.MapFromProto(m)
	return err
}

// EncodeValues encodes a map of values as a persist.v1.Values message (nil
// for nil). It writes the message's encoding itself, each entry's value
// being the platform Value's own encoding (which persist.v1.Value mirrors:
// TestPersistValueMirrorsPlatformValue), so that the values are encoded
// once, as when runs kept the API's messages. The entries are those of any
// map<string, Value> field numbered 1 (Values.values, Steps.inputs).
func EncodeValues(m Values) ([]byte, error) {
	if m == nil {
		return nil, nil
	}
	return appendValues([]byte{}, m)
}

func appendValues(out []byte, m Values) ([]byte, error) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var entry []byte
	for _, k := range keys {
		v, err := marshal.Marshal(m[k])
		if err != nil {
			return nil, err
		}
		entry = protowire.AppendTag(entry[:0], 1, protowire.BytesType)
		entry = protowire.AppendString(entry, k)
		entry = protowire.AppendTag(entry, 2, protowire.BytesType)
		entry = protowire.AppendBytes(entry, v)
		out = protowire.AppendTag(out, valuesField, protowire.BytesType)
		out = protowire.AppendBytes(out, entry)
	}
	return out, nil
}

// valuesField is the number of persist.v1.Values.values (and of
// persist.v1.Steps.inputs).
const valuesField = 1

// DecodeValues decodes a persist.v1.Values message (nil for nil), each
// value read as the platform Value it mirrors (see EncodeValues). Fields
// other than 1 are skipped, so it reads a Steps message's inputs too.
func DecodeValues(b []byte) (Values, error) {
	if b == nil {
		return nil, nil
	}
	out := Values{}
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return nil, fmt.Errorf("decode values: %w", protowire.ParseError(n))
		}
		b = b[n:]
		if num != valuesField || typ != protowire.BytesType {
			if n = protowire.ConsumeFieldValue(num, typ, b); n < 0 {
				return nil, fmt.Errorf("decode values: %w", protowire.ParseError(n))
			}
			b = b[n:]
			continue
		}
		entry, n := protowire.ConsumeBytes(b)
		if n < 0 {
			return nil, fmt.Errorf("decode values: %w", protowire.ParseError(n))
		}
		b = b[n:]
		key, v := "", &platformv1.Value{}
		for len(entry) > 0 {
			num, typ, n := protowire.ConsumeTag(entry)
			if n < 0 {
				return nil, fmt.Errorf("decode values: %w", protowire.ParseError(n))
			}
			entry = entry[n:]
			switch {
			case num == 1 && typ == protowire.BytesType:
				var k []byte
				if k, n = protowire.ConsumeBytes(entry); n >= 0 {
					if !utf8.Valid(k) {
						return nil, errors.New("decode values: a name is not UTF-8")
					}
					key = string(k)
				}
			case num == 2 && typ == protowire.BytesType:
				var vb []byte
				if vb, n = protowire.ConsumeBytes(entry); n >= 0 {
					if err := (proto.UnmarshalOptions{Merge: true}).Unmarshal(vb, v); err != nil {
						return nil, fmt.Errorf("decode values: %w", err)
					}
				}
			default:
				n = protowire.ConsumeFieldValue(num, typ, entry)
			}
			if n < 0 {
				return nil, fmt.Errorf("decode values: %w", protowire.ParseError(n))
			}
			entry = entry[n:]
		}
		out[key] = v
	}
	return out, nil
}

// EncodeLangValues encodes interpreter values (never nil).
func EncodeLangValues(m map[string]lang.Value) ([]byte, error) {
	p, err := protovalue.MapToProto(m)
	if err != nil {
		return nil, err
	}
	if p == nil {
		p = Values{}
	}
	return EncodeValues(p)
}

// DecodeLangValues decodes values into interpreter values.
func DecodeLangValues(b []byte) (map[string]lang.Value, error) {
	p, err := DecodeValues(b)
	if err != nil {
		return nil, err
	}
	return protovalue.MapFromProto(p)
}
