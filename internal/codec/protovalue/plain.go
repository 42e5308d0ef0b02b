package protovalue

import (
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"

	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/internal/lang"
)

// Plain JSON (the legacy API's values, a webhook's fields) reads and
// writes through the language's plain form (lang.DecodePlain,
// lang.AppendPlain), so a value means the same whichever API carried it.

// FromPlainJSON converts one plain JSON value to a Value.
func FromPlainJSON(b []byte) (*platformv1.Value, error) {
	lv, err := lang.DecodePlain(b)
	if err != nil {
		return nil, err
	}
	return ToProto(lv)
}

// FromPlain converts one plain JSON value (struct form) to a Value.
func FromPlain(v *structpb.Value) (*platformv1.Value, error) {
	b, err := protojson.Marshal(v)
	if err != nil {
		return nil, err
	}
	return FromPlainJSON(b)
}

// ToPlain converts a Value to its plain JSON form (struct form).
func ToPlain(v *platformv1.Value) (*structpb.Value, error) {
	lv, err := FromProto(v)
	if err != nil {
		return nil, err
	}
	b, err := lang.AppendPlain(nil, lv)
	if err != nil {
		return nil, err
	}
	out := &structpb.Value{}
	if err := protojson.Unmarshal(b, out); err != nil {
		return nil, err
	}
	return out, nil
}
