package codec

import (
	"bytes"
	"testing"

	"google.golang.org/protobuf/proto"

	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/internal/codec/protovalue"
	"github.com/proserun/prose/internal/lang"
	"github.com/proserun/prose/store"
	persistv1 "github.com/proserun/prose/store/persist/v1"
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
			data, err := EncodeLangValues(benchOutputs)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := DecodeValues(data); err != nil {
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

// TestValuesBlobIsPersistValues: EncodeValues writes a persist.v1.Values
// message (proto reads it as one), and DecodeValues reads what proto
// writes for one.
func TestValuesBlobIsPersistValues(t *testing.T) {
	p, err := protovalue.MapToProto(map[string]lang.Value{
		"a": lang.Text("x"), "b": lang.Int(2), "c": lang.ListValue(lang.Text("y"), lang.Int(3)), "": lang.Null(),
	})
	if err != nil {
		t.Fatal(err)
	}
	data, err := EncodeValues(p)
	if err != nil {
		t.Fatal(err)
	}
	pv := &persistv1.Values{}
	if err := proto.Unmarshal(data, pv); err != nil {
		t.Fatal(err)
	}
	want, err := ValuesToStored(p)
	if err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(pv, &persistv1.Values{Values: want}) {
		t.Fatalf("EncodeValues wrote %v, want %v", pv, want)
	}
	back, err := DecodeValues(mustMarshal(t, &persistv1.Values{Values: want}))
	if err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(&platformv1.CompletedRunState{Outputs: back}, &platformv1.CompletedRunState{Outputs: p}) {
		t.Fatalf("DecodeValues read %v, want %v", back, p)
	}
	if _, err := DecodeValues([]byte{0x0a, 0x05, 0x12, 0x03, 0x0a, 0x01}); err == nil {
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

// TestEncodeStepsIsPersistSteps: EncodeSteps writes the inputs at the byte
// level ahead of the rest, and the bytes are those proto's deterministic
// encoding of the whole persist.v1.Steps makes (with the inputs converted
// member by member), so rows read the same whichever wrote them; DecodeRun
// reads the inputs back as given.
func TestEncodeStepsIsPersistSteps(t *testing.T) {
	full, err := protovalue.MapToProto(map[string]lang.Value{
		"name": lang.Text("Ana"), "n": lang.Int(2), "l": lang.ListValue(lang.Text("y")), "": lang.Null(),
	})
	if err != nil {
		t.Fatal(err)
	}
	origin := &persistv1.Origin{RequestId: "req-1", Traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}
	steps := []Step{
		{Code: "say 1", Phase: PhaseMain},
		{Code: "say 2", Phase: PhasePost, BookConnections: map[string]BookConnection{"mail": {ConnectionID: "c1", Endpoint: "e"}, "files": {ConnectionID: "c2"}}},
	}
	for name, inputs := range map[string]Values{"none": nil, "empty": {}, "some": full} {
		t.Run(name, func(t *testing.T) {
			got, err := EncodeSteps(origin, inputs, steps)
			if err != nil {
				t.Fatal(err)
			}
			stored, err := ValuesToStored(inputs)
			if err != nil {
				t.Fatal(err)
			}
			want := &persistv1.Steps{Inputs: stored, Origin: origin}
			for _, s := range steps {
				ps := &persistv1.Step{Code: s.Code, Phase: persistv1.Phase(s.Phase)}
				for k, c := range s.BookConnections {
					if ps.BookConnections == nil {
						ps.BookConnections = map[string]*persistv1.BookConnection{}
					}
					ps.BookConnections[k] = &persistv1.BookConnection{ConnectionId: c.ConnectionID, Endpoint: c.Endpoint}
				}
				want.Steps = append(want.Steps, ps)
			}
			wantB, err := marshal.Marshal(want)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, wantB) {
				t.Fatalf("EncodeSteps wrote\n%x\nproto writes\n%x", got, wantB)
			}
			d, err := DecodeRun(store.Run{Steps: got})
			if err != nil {
				t.Fatal(err)
			}
			if len(d.Steps) != 2 || d.Steps[1].Code != "say 2" || d.Steps[1].BookConnections["mail"].ConnectionID != "c1" {
				t.Fatalf("DecodeRun read steps %+v", d.Steps)
			}
			if len(inputs) == 0 && d.StepsInputs != nil {
				t.Fatalf("DecodeRun read inputs %v from none", d.StepsInputs)
			}
			if !proto.Equal(&platformv1.CompletedRunState{Outputs: d.StepsInputs}, &platformv1.CompletedRunState{Outputs: inputs}) {
				t.Fatalf("DecodeRun read inputs %v, want %v", d.StepsInputs, inputs)
			}
		})
	}
}
