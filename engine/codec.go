package engine

import (
	"encoding/json"
	"fmt"

	"google.golang.org/protobuf/proto"

	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/lang"
	"github.com/proserun/prose/lang/protovalue"
)

// The blobs a run keeps in the store are protobuf messages of the platform
// contract, so that a run reads back exactly as it was given:
//
//	Run.Steps, Run.UserInputs, Run.StepInputs: ExecutableSteps (maps of Values)
//	Run.Outputs: CompletedRunState
//	Run.InvocationDetails: InvocationDetails
//	Run.Resolution: ResolveExceptionRequest (its guidance only)
//	Exception.Details: the interpreter's exception, as JSON

var marshal = proto.MarshalOptions{Deterministic: true}

// EncodeSteps encodes the executable steps of a run.
func EncodeSteps(s *platformv1.ExecutableSteps) ([]byte, error) { return marshal.Marshal(s) }

// DecodeSteps decodes what EncodeSteps made.
func DecodeSteps(b []byte) (*platformv1.ExecutableSteps, error) {
	s := &platformv1.ExecutableSteps{}
	if err := proto.Unmarshal(b, s); err != nil {
		return nil, fmt.Errorf("decode steps: %w", err)
	}
	return s, nil
}

// EncodeValues encodes a map of values.
func EncodeValues(m map[string]*platformv1.Value) ([]byte, error) {
	if m == nil {
		return nil, nil
	}
	return marshal.Marshal(&platformv1.ExecutableSteps{Inputs: m})
}

// DecodeValues decodes what EncodeValues made (nil for nil).
func DecodeValues(b []byte) (map[string]*platformv1.Value, error) {
	if b == nil {
		return nil, nil
	}
	s := &platformv1.ExecutableSteps{}
	if err := proto.Unmarshal(b, s); err != nil {
		return nil, fmt.Errorf("decode values: %w", err)
	}
	if s.Inputs == nil {
		s.Inputs = map[string]*platformv1.Value{}
	}
	return s.Inputs, nil
}

// EncodeLangValues encodes interpreter values.
func EncodeLangValues(m map[string]lang.Value) ([]byte, error) {
	p, err := protovalue.MapToProto(m)
	if err != nil {
		return nil, err
	}
	if p == nil {
		p = map[string]*platformv1.Value{}
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

// EncodeOutputs encodes a completed run's outputs.
func EncodeOutputs(m map[string]*platformv1.Value) ([]byte, error) {
	return marshal.Marshal(&platformv1.CompletedRunState{Outputs: m})
}

// DecodeOutputs decodes what EncodeOutputs made.
func DecodeOutputs(b []byte) (map[string]*platformv1.Value, error) {
	s := &platformv1.CompletedRunState{}
	if err := proto.Unmarshal(b, s); err != nil {
		return nil, fmt.Errorf("decode outputs: %w", err)
	}
	return s.Outputs, nil
}

// EncodeGuidance keeps the guidance of a resolution (ids cleared).
func EncodeGuidance(req *platformv1.ResolveExceptionRequest) ([]byte, error) {
	g := proto.CloneOf(req)
	g.OrganizationId, g.WorkspaceId, g.ExceptionId = "", "", ""
	return marshal.Marshal(g)
}

// DecodeGuidance turns stored guidance into an interpreter resolution. Nil
// guidance is a zero resolution (continue).
func DecodeGuidance(b []byte) (lang.Resolution, error) {
	if b == nil {
		return lang.Resolution{}, nil
	}
	g := &platformv1.ResolveExceptionRequest{}
	if err := proto.Unmarshal(b, g); err != nil {
		return lang.Resolution{}, fmt.Errorf("decode guidance: %w", err)
	}
	return guidanceToLang(g)
}

func guidanceToLang(g *platformv1.ResolveExceptionRequest) (lang.Resolution, error) {
	switch k := g.GetGuidance().(type) {
	case *platformv1.ResolveExceptionRequest_ProvideValues:
		vals, err := protovalue.MapFromProto(k.ProvideValues.GetValues())
		if err != nil {
			return lang.Resolution{}, err
		}
		return lang.Resolution{Kind: lang.ProvideValues, Values: vals}, nil
	case *platformv1.ResolveExceptionRequest_Skip:
		return lang.Resolution{Kind: lang.Skip}, nil
	case *platformv1.ResolveExceptionRequest_Retry:
		return lang.Resolution{Kind: lang.Retry}, nil
	case *platformv1.ResolveExceptionRequest_ReplaceStep:
		return lang.Resolution{Kind: lang.ReplaceStep, Code: k.ReplaceStep.GetCode()}, nil
	case *platformv1.ResolveExceptionRequest_Answer:
		v, err := protovalue.FromProto(k.Answer.GetValue())
		if err != nil {
			return lang.Resolution{}, err
		}
		return lang.Resolution{Kind: lang.Answer, Answer: v}, nil
	}
	return lang.Resolution{}, fmt.Errorf("no guidance given")
}

// EncodeException keeps the interpreter's description of an exception.
func EncodeException(e *lang.Exception) ([]byte, error) { return json.Marshal(e) }

// DecodeException decodes what EncodeException made.
func DecodeException(b []byte) (*lang.Exception, error) {
	e := &lang.Exception{}
	if len(b) == 0 {
		return e, nil
	}
	if err := json.Unmarshal(b, e); err != nil {
		return nil, fmt.Errorf("decode exception: %w", err)
	}
	return e, nil
}
