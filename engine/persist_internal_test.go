package engine

import (
	"testing"

	"google.golang.org/protobuf/proto"

	persistv1 "github.com/proserun/prose/gen/prose/persist/v1"
	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/lang"
	"github.com/proserun/prose/lang/protovalue"
)

// benchOutputs are a run's outputs as the interpreter makes them.
var benchOutputs = map[string]lang.Value{
	"output total": lang.Num(lang.MustNumber("128.9350")), "output approval": lang.Text("manager"), "output due": lang.Int(3),
}

// BenchmarkOutputsBlob: what a run's completion costs to encode and a read
// to decode, in the persist.v1 shapes (Persist) and as the API's
// CompletedRunState was before migration 00014 (API), side by side.
func BenchmarkOutputsBlob(b *testing.B) {
	b.Run("Persist", func(b *testing.B) {
		for b.Loop() {
			data, err := encodeLangValues(benchOutputs)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := decodeValues(data); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("API", func(b *testing.B) {
		for b.Loop() {
			p, err := protovalue.MapToProto(benchOutputs)
			if err != nil {
				b.Fatal(err)
			}
			data, err := marshal.Marshal(&platformv1.CompletedRunState{Outputs: p})
			if err != nil {
				b.Fatal(err)
			}
			s := &platformv1.CompletedRunState{}
			if err := proto.Unmarshal(data, s); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestValuesBlobIsPersistValues: encodeValues writes a persist.v1.Values
// message (proto reads it as one), and decodeValues reads what proto
// writes for one.
func TestValuesBlobIsPersistValues(t *testing.T) {
	p, err := protovalue.MapToProto(map[string]lang.Value{
		"a": lang.Text("x"), "b": lang.Int(2), "c": lang.ListValue(lang.Text("y"), lang.Int(3)), "": lang.Null(),
	})
	if err != nil {
		t.Fatal(err)
	}
	data, err := encodeValues(p)
	if err != nil {
		t.Fatal(err)
	}
	pv := &persistv1.Values{}
	if err := proto.Unmarshal(data, pv); err != nil {
		t.Fatal(err)
	}
	want, err := toPersist(p)
	if err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(pv, &persistv1.Values{Values: want}) {
		t.Fatalf("encodeValues wrote %v, want %v", pv, want)
	}
	back, err := decodeValues(mustMarshal(t, &persistv1.Values{Values: want}))
	if err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(&platformv1.CompletedRunState{Outputs: back}, &platformv1.CompletedRunState{Outputs: p}) {
		t.Fatalf("decodeValues read %v, want %v", back, p)
	}
	if _, err := decodeValues([]byte{0x0a, 0x05, 0x12, 0x03, 0x0a, 0x01}); err == nil {
		t.Fatal("a truncated value decoded")
	}
}

func mustMarshal(t *testing.T, m proto.Message) []byte {
	t.Helper()
	b, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
