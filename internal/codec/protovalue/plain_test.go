package protovalue_test

import (
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/proserun/prose/internal/codec/protovalue"
)

// Plain JSON reads into a Value and writes back as the same JSON; what the
// language cannot read as a plain value is an error.
func TestPlainRoundTrip(t *testing.T) {
	for _, js := range []string{`"tea"`, `2.5`, `true`, `null`, `["a",1,[false]]`, `{"b":{"c":"d"},"n":3}`} {
		in := &structpb.Value{}
		if err := protojson.Unmarshal([]byte(js), in); err != nil {
			t.Fatal(err)
		}
		v, err := protovalue.FromPlain(in)
		if err != nil {
			t.Fatalf("%s: %v", js, err)
		}
		out, err := protovalue.ToPlain(v)
		if err != nil {
			t.Fatalf("%s: %v", js, err)
		}
		if !proto.Equal(in, out) {
			t.Errorf("%s came back as %v", js, out)
		}
		direct, err := protovalue.FromPlainJSON([]byte(js))
		if err != nil || !proto.Equal(direct, v) {
			t.Errorf("%s: FromPlainJSON read %v (%v), FromPlain %v", js, direct, err, v)
		}
	}
	if _, err := protovalue.FromPlainJSON([]byte(`{"a":`)); err == nil {
		t.Error("truncated JSON read as a value")
	}
}
