package engine

import (
	"context"

	"google.golang.org/protobuf/proto"

	"github.com/proserun/prose/internal/codec"
	"github.com/proserun/prose/internal/lang"
	"github.com/proserun/prose/internal/logctx"
	persistv1 "github.com/proserun/prose/store/persist/v1"
)

// What a run keeps in the store is the engine's, in the private, versioned
// messages of prose.persist.v1 (see package codec, which converts between
// them, the API's messages and the language's values). The engine
// computes on the stored shapes and the language's values; the values a
// client gives (codec.Values) it hands to the codec as they are.

var marshal = proto.MarshalOptions{Deterministic: true}

// The engine's shapes of what a run keeps, defined with their conversions
// in package codec.
type (
	// Phase is the phase of an automation a step belongs to.
	Phase = codec.Phase
	// Step is one executable step of a run.
	Step = codec.Step
	// BookConnection is how a step reaches a book.
	BookConnection = codec.BookConnection
	// InvocationSource is what started a run.
	InvocationSource = codec.InvocationSource
	// Invocation is how a run was started.
	Invocation = codec.Invocation
)

// The phases and the sources (see codec).
const (
	PhaseUnspecified = codec.PhaseUnspecified
	PhasePre         = codec.PhasePre
	PhaseMain        = codec.PhaseMain
	PhasePost        = codec.PhasePost

	SourceUnspecified = codec.SourceUnspecified
	SourceManual      = codec.SourceManual
	SourceTrigger     = codec.SourceTrigger
	SourceSchedule    = codec.SourceSchedule
)

// The conversions the engine makes, by the names its code calls them.
var (
	encodeInvocation = codec.EncodeInvocation
	decodeSteps      = codec.DecodeSteps
	encodeValues     = codec.EncodeValues
	encodeLangValues = codec.EncodeLangValues
	decodeLangValues = codec.DecodeLangValues
	decodeGuidance   = codec.DecodeGuidance
	encodeException  = codec.EncodeException
	decodeException  = codec.DecodeException
)

// originOf is the origin of a run made under ctx: the request's id (from
// the log fields of a request, or of the parent run executing) and its
// trace context.
func originOf(ctx context.Context) *persistv1.Origin {
	o := &persistv1.Origin{RequestId: logctx.Get(ctx, logctx.RequestID)}
	o.Traceparent, o.Tracestate = traceContextOf(ctx)
	if o.RequestId == "" && o.Traceparent == "" {
		return nil
	}
	return o
}

// encodeSteps encodes a run's steps made under ctx, with the inputs of
// its first step as given.
func encodeSteps(ctx context.Context, inputs codec.Values, steps []Step) ([]byte, error) {
	return codec.EncodeSteps(originOf(ctx), inputs, steps)
}

// encodeGuidance keeps guidance for the run (codec.EncodeGuidance).
func encodeGuidance(g Guidance) ([]byte, error) {
	res, err := g.resolution()
	if err != nil {
		return nil, err
	}
	return codec.EncodeGuidance(res)
}

// GuidanceOf is the guidance res, read by the codec from an API request;
// err, when set, is why it could not be read (Guidance.Unreadable).
func GuidanceOf(res lang.Resolution, err error) Guidance {
	if err != nil {
		return Guidance{Unreadable: err}
	}
	g := Guidance{Values: res.Values, Expressions: res.Expressions, Code: res.Code, Answer: res.Answer}
	switch res.Kind {
	case lang.ProvideValues:
		g.Kind = GuidanceProvideValues
	case lang.Skip:
		g.Kind = GuidanceSkip
	case lang.Retry:
		g.Kind = GuidanceRetry
	case lang.ReplaceStep:
		g.Kind = GuidanceReplaceStep
	case lang.Answer:
		g.Kind = GuidanceAnswer
	}
	return g
}

// Resolution is g in the interpreter's vocabulary, which the codec renders
// (an error for unreadable guidance, or none given).
func (g Guidance) Resolution() (lang.Resolution, error) { return g.resolution() }
