package codec

import (
	"errors"
	"fmt"

	"google.golang.org/protobuf/proto"

	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/internal/codec/protovalue"
	"github.com/proserun/prose/internal/lang"
	persistv1 "github.com/proserun/prose/store/persist/v1"
)

// Guidance travels as a lang.Resolution, the interpreter's own vocabulary
// (the engine's Guidance is one, plus why it could not be read): the API's
// two forms (a resolve request, a guide entry's guidance) read into it, the
// agent's tool calls render it as a resolve request, and the stored
// persist.v1.Guidance is written from it and read back into it. The API's
// forms share their member messages, so one function reads both.

// errNoGuidance is what guidance without a kind reads as.
var errNoGuidance = errors.New("no guidance given")

// guidanceMembers are the members of the API's guidance oneofs, at most
// one set.
type guidanceMembers struct {
	values      *platformv1.ProvideValues
	expressions *platformv1.ProvideExpressions
	skip, retry bool
	replace     *platformv1.ReplaceStep
	answer      *platformv1.Answer
}

func (g guidanceMembers) resolution() (lang.Resolution, error) {
	switch {
	case g.values != nil:
		vals, err := protovalue.MapFromProto(g.values.GetValues())
		if err != nil {
			return lang.Resolution{}, err
		}
		return lang.Resolution{Kind: lang.ProvideValues, Values: vals}, nil
	case g.expressions != nil:
		return lang.Resolution{Kind: lang.ProvideValues, Expressions: g.expressions.GetExpressions()}, nil
	case g.skip:
		return lang.Resolution{Kind: lang.Skip}, nil
	case g.retry:
		return lang.Resolution{Kind: lang.Retry}, nil
	case g.replace != nil:
		return lang.Resolution{Kind: lang.ReplaceStep, Code: g.replace.GetCode()}, nil
	case g.answer != nil:
		v, err := protovalue.FromProto(g.answer.GetValue())
		if err != nil {
			return lang.Resolution{}, err
		}
		return lang.Resolution{Kind: lang.Answer, Answer: v}, nil
	}
	return lang.Resolution{}, errNoGuidance
}

// ResolveGuidance reads the guidance of a resolve request. The error says
// why it cannot be read (no guidance, a value the language cannot hold);
// the engine reports it once it has found the exception pending.
func ResolveGuidance(req *platformv1.ResolveExceptionRequest) (lang.Resolution, error) {
	var g guidanceMembers
	switch k := req.GetGuidance().(type) {
	case *platformv1.ResolveExceptionRequest_ProvideValues:
		g.values = orEmpty(k.ProvideValues)
	case *platformv1.ResolveExceptionRequest_Skip:
		g.skip = true
	case *platformv1.ResolveExceptionRequest_Retry:
		g.retry = true
	case *platformv1.ResolveExceptionRequest_ReplaceStep:
		g.replace = orEmpty(k.ReplaceStep)
	case *platformv1.ResolveExceptionRequest_Answer:
		g.answer = orEmpty(k.Answer)
	}
	return g.resolution()
}

// GuideEntryGuidance reads the guidance of a guide entry (errors as
// ResolveGuidance's).
func GuideEntryGuidance(e *platformv1.GuideEntryGuidance) (lang.Resolution, error) {
	var g guidanceMembers
	switch k := e.GetKind().(type) {
	case *platformv1.GuideEntryGuidance_ProvideValues:
		g.values = orEmpty(k.ProvideValues)
	case *platformv1.GuideEntryGuidance_ProvideExpressions:
		g.expressions = orEmpty(k.ProvideExpressions)
	case *platformv1.GuideEntryGuidance_Skip:
		g.skip = true
	case *platformv1.GuideEntryGuidance_ReplaceStep:
		g.replace = orEmpty(k.ReplaceStep)
	case *platformv1.GuideEntryGuidance_Answer:
		g.answer = orEmpty(k.Answer)
	}
	return g.resolution()
}

// orEmpty is m, or an empty message for a member set to nil (a oneof set
// to a nil message is set: its kind counts, as when the member was read
// with its getters).
func orEmpty[T any, P interface {
	*T
	proto.Message
}](m P) P {
	if m == nil {
		return new(T)
	}
	return m
}

// ResolveRequest renders guidance as the API's resolve request (the input
// an agent's tool call records).
func ResolveRequest(res lang.Resolution) (*platformv1.ResolveExceptionRequest, error) {
	req := &platformv1.ResolveExceptionRequest{}
	switch res.Kind {
	case lang.ProvideValues:
		vals, err := protovalue.MapToProto(res.Values)
		if err != nil {
			return nil, err
		}
		req.Guidance = &platformv1.ResolveExceptionRequest_ProvideValues{ProvideValues: &platformv1.ProvideValues{Values: vals}}
	case lang.Skip:
		req.Guidance = &platformv1.ResolveExceptionRequest_Skip{Skip: &platformv1.Skip{}}
	case lang.Retry:
		req.Guidance = &platformv1.ResolveExceptionRequest_Retry{Retry: &platformv1.Retry{}}
	case lang.ReplaceStep:
		req.Guidance = &platformv1.ResolveExceptionRequest_ReplaceStep{ReplaceStep: &platformv1.ReplaceStep{Code: res.Code}}
	case lang.Answer:
		v, err := protovalue.ToProto(res.Answer)
		if err != nil {
			return nil, err
		}
		req.Guidance = &platformv1.ResolveExceptionRequest_Answer{Answer: &platformv1.Answer{Value: v}}
	}
	return req, nil
}

// EncodeGuidance keeps guidance for the run (see DecodeGuidance).
func EncodeGuidance(res lang.Resolution) ([]byte, error) {
	p := &persistv1.Guidance{}
	switch res.Kind {
	case lang.ProvideValues:
		if len(res.Expressions) > 0 {
			p.Kind = &persistv1.Guidance_ProvideExpressions{ProvideExpressions: &persistv1.Expressions{Expressions: res.Expressions}}
			break
		}
		pv, err := LangToStored(res.Values)
		if err != nil {
			return nil, err
		}
		p.Kind = &persistv1.Guidance_ProvideValues{ProvideValues: &persistv1.Values{Values: pv}}
	case lang.Skip:
		p.Kind = &persistv1.Guidance_Skip{Skip: true}
	case lang.Retry:
		p.Kind = &persistv1.Guidance_Retry{Retry: true}
	case lang.ReplaceStep:
		p.Kind = &persistv1.Guidance_ReplaceStep{ReplaceStep: res.Code}
	case lang.Answer:
		v, err := protovalue.ToProto(res.Answer)
		if err != nil {
			return nil, err
		}
		pv, err := ValueToStored(v)
		if err != nil {
			return nil, err
		}
		p.Kind = &persistv1.Guidance_Answer{Answer: pv}
	default:
		return nil, errNoGuidance
	}
	return marshal.Marshal(p)
}

// DecodeGuidance turns stored guidance into an interpreter resolution. Nil
// guidance is a zero resolution (continue).
func DecodeGuidance(b []byte) (lang.Resolution, error) {
	if b == nil {
		return lang.Resolution{}, nil
	}
	g := &persistv1.Guidance{}
	if err := proto.Unmarshal(b, g); err != nil {
		return lang.Resolution{}, fmt.Errorf("decode guidance: %w", err)
	}
	switch k := g.GetKind().(type) {
	case *persistv1.Guidance_ProvideValues:
		p, err := ValuesFromStored(k.ProvideValues.GetValues())
		if err != nil {
			return lang.Resolution{}, err
		}
		vals, err := protovalue.MapFromProto(p)
		if err != nil {
			return lang.Resolution{}, err
		}
		return lang.Resolution{Kind: lang.ProvideValues, Values: vals}, nil
	case *persistv1.Guidance_ProvideExpressions:
		return lang.Resolution{Kind: lang.ProvideValues, Expressions: k.ProvideExpressions.GetExpressions()}, nil
	case *persistv1.Guidance_Skip:
		return lang.Resolution{Kind: lang.Skip}, nil
	case *persistv1.Guidance_Retry:
		return lang.Resolution{Kind: lang.Retry}, nil
	case *persistv1.Guidance_ReplaceStep:
		return lang.Resolution{Kind: lang.ReplaceStep, Code: k.ReplaceStep}, nil
	case *persistv1.Guidance_Answer:
		p, err := ValueFromStored(k.Answer)
		if err != nil {
			return lang.Resolution{}, err
		}
		v, err := protovalue.FromProto(p)
		if err != nil {
			return lang.Resolution{}, err
		}
		return lang.Resolution{Kind: lang.Answer, Answer: v}, nil
	}
	return lang.Resolution{}, fmt.Errorf("decode guidance: no guidance kept")
}

// GuidanceView is guidance as kept with a resolution (the data of a
// resolved exception's history entry), for display: Kind is one of
// provide_values, skip, retry, replace_step, answer.
type GuidanceView struct {
	Kind   string
	Values Values
	Code   string
	Answer *platformv1.Value
}

// DecodeGuidanceView decodes guidance kept with a resolution.
func DecodeGuidanceView(b []byte) (GuidanceView, error) {
	g := &persistv1.Guidance{}
	if err := proto.Unmarshal(b, g); err != nil {
		return GuidanceView{}, err
	}
	switch k := g.GetKind().(type) {
	case *persistv1.Guidance_ProvideValues:
		v, err := ValuesFromStored(k.ProvideValues.GetValues())
		return GuidanceView{Kind: "provide_values", Values: v}, err
	case *persistv1.Guidance_Skip:
		return GuidanceView{Kind: "skip"}, nil
	case *persistv1.Guidance_Retry:
		return GuidanceView{Kind: "retry"}, nil
	case *persistv1.Guidance_ReplaceStep:
		return GuidanceView{Kind: "replace_step", Code: k.ReplaceStep}, nil
	case *persistv1.Guidance_Answer:
		v, err := ValueFromStored(k.Answer)
		return GuidanceView{Kind: "answer", Answer: v}, err
	}
	return GuidanceView{}, nil
}
