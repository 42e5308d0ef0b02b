package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	persistv1 "github.com/proserun/prose/gen/prose/persist/v1"
	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/lang"
	"github.com/proserun/prose/lang/protovalue"
	"github.com/proserun/prose/logctx"
	"github.com/proserun/prose/store"
)

// What a run keeps in the store is the engine's, in the private, versioned
// messages of prose.persist.v1 (never the public API's messages, so that a
// change to the API is never a data migration; store migration 00014
// rewrote the rows written before in the API's shapes):
//
//	Run.Steps: Steps
//	Run.UserInputs, Run.StepInputs, Run.Outputs, JournalEntry.Data: Values
//	Run.InvocationDetails: Invocation
//	Run.Resolution: Guidance
//	Exception.Details: the interpreter's lang.Exception, as JSON
//
// Values given by clients (run inputs) are kept member by member as given
// (persist.v1.Value mirrors the platform's Value); values the interpreter
// makes go through package protovalue, as they always did.

var marshal = proto.MarshalOptions{Deterministic: true}

// Phase is the phase of an automation a step belongs to.
type Phase int32

// The phases (the numbers of prose.persist.v1.Phase).
const (
	PhaseUnspecified Phase = 0
	PhasePre         Phase = 1
	PhaseMain        Phase = 2
	PhasePost        Phase = 3
)

// Step is one executable step of a run.
type Step struct {
	Code  string
	Phase Phase
	// BookConnections maps a book to its connection (none are made by
	// Invoke today; kept as stored).
	BookConnections map[string]BookConnection
}

// BookConnection is how a step reaches a book.
type BookConnection struct{ ConnectionID, Endpoint string }

// InvocationSource is what started a run.
type InvocationSource int32

// The sources (the numbers of prose.persist.v1.InvocationSource).
const (
	SourceUnspecified InvocationSource = 0
	SourceManual      InvocationSource = 1
	SourceTrigger     InvocationSource = 2
	SourceSchedule    InvocationSource = 3
)

// Invocation is how a run was started.
type Invocation struct {
	TriggerID string
	UserID    string
	Source    InvocationSource
}

// RunData is what a run keeps in its private blobs, decoded: the values
// are the platform's Value messages (the value vocabulary shared with
// package protovalue), exactly as they were given or made.
type RunData struct {
	Steps []Step
	// StepsInputs are the inputs kept with the steps (those of the first
	// step: the user inputs, as Invoke made them).
	StepsInputs map[string]*platformv1.Value
	// Inputs are the run's user inputs, as given.
	Inputs map[string]*platformv1.Value
	// Outputs are a completed run's outputs (nil before).
	Outputs map[string]*platformv1.Value
	// Invocation is how the run was started (nil: not recorded).
	Invocation *Invocation
}

// DecodeRun decodes what a stored run keeps. Outputs are decoded only for
// a completed run.
func DecodeRun(r store.Run) (RunData, error) {
	var d RunData
	steps, err := decodeSteps(r.Steps)
	if err != nil {
		return d, err
	}
	if d.StepsInputs, err = fromPersist(steps.GetInputs()); err != nil {
		return d, err
	}
	for _, s := range steps.GetSteps() {
		st := Step{Code: s.GetCode(), Phase: Phase(s.GetPhase())}
		for k, c := range s.GetBookConnections() {
			if st.BookConnections == nil {
				st.BookConnections = map[string]BookConnection{}
			}
			st.BookConnections[k] = BookConnection{ConnectionID: c.GetConnectionId(), Endpoint: c.GetEndpoint()}
		}
		d.Steps = append(d.Steps, st)
	}
	if d.Inputs, err = decodeValues(r.UserInputs); err != nil {
		return d, err
	}
	if r.State == store.RunCompleted {
		out, err := decodeValues(r.Outputs)
		if err != nil {
			return d, err
		}
		if out == nil {
			out = map[string]*platformv1.Value{}
		}
		d.Outputs = out
	}
	if len(r.InvocationDetails) > 0 {
		inv := &persistv1.Invocation{}
		if err := proto.Unmarshal(r.InvocationDetails, inv); err != nil {
			return d, fmt.Errorf("decode invocation: %w", err)
		}
		d.Invocation = &Invocation{TriggerID: inv.GetTriggerId(), UserID: inv.GetUserId(), Source: InvocationSource(inv.GetSource())}
	}
	return d, nil
}

// DecodeOutputs decodes a completed run's outputs (an empty map when it has
// none).
func DecodeOutputs(r store.Run) (map[string]*platformv1.Value, error) {
	out, err := decodeValues(r.Outputs)
	if err == nil && out == nil {
		out = map[string]*platformv1.Value{}
	}
	return out, err
}

// ExceptionDetails decodes what the interpreter asks for in an exception
// (an empty description when none was kept).
func ExceptionDetails(x store.Exception) (*lang.Exception, error) {
	return decodeException(x.Details)
}

// StepCode is the code of a run's step (false when the run has no such
// step or its steps cannot be read).
func StepCode(r store.Run, step int) (string, bool) {
	steps, err := decodeSteps(r.Steps)
	if err != nil || step < 0 || step >= len(steps.GetSteps()) {
		return "", false
	}
	return steps.GetSteps()[step].GetCode(), true
}

func encodeInvocation(inv *Invocation) ([]byte, error) {
	if inv == nil {
		return nil, nil
	}
	return marshal.Marshal(&persistv1.Invocation{TriggerId: inv.TriggerID, UserId: inv.UserID, Source: persistv1.InvocationSource(inv.Source)})
}

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

func encodeSteps(ctx context.Context, inputs map[string]*persistv1.Value, steps []Step) ([]byte, error) {
	p := &persistv1.Steps{Inputs: inputs, Origin: originOf(ctx)}
	for _, s := range steps {
		ps := &persistv1.Step{Code: s.Code, Phase: persistv1.Phase(s.Phase)}
		for k, c := range s.BookConnections {
			if ps.BookConnections == nil {
				ps.BookConnections = map[string]*persistv1.BookConnection{}
			}
			ps.BookConnections[k] = &persistv1.BookConnection{ConnectionId: c.ConnectionID, Endpoint: c.Endpoint}
		}
		p.Steps = append(p.Steps, ps)
	}
	return marshal.Marshal(p)
}

func decodeSteps(b []byte) (*persistv1.Steps, error) {
	s := &persistv1.Steps{}
	if err := proto.Unmarshal(b, s); err != nil {
		return nil, fmt.Errorf("decode steps: %w", err)
	}
	return s, nil
}

// toPersist converts values as given by a client to their stored form.
// persist.v1.Value mirrors platform.v1.Value field by field (a test checks
// it), so the conversion is the message's own encoding read as the other.
func toPersist(m map[string]*platformv1.Value) (map[string]*persistv1.Value, error) {
	if m == nil {
		return nil, nil
	}
	out := make(map[string]*persistv1.Value, len(m))
	for k, v := range m {
		p, err := valueToPersist(v)
		if err != nil {
			return nil, err
		}
		out[k] = p
	}
	return out, nil
}

func valueToPersist(v *platformv1.Value) (*persistv1.Value, error) {
	p := &persistv1.Value{}
	return p, Mirror(p, v)
}

// Mirror sets dst to src read as dst's type, for a prose.persist.v1
// message and the platform message it mirrors field by field, either way
// (the mirrors are checked by TestPersistValueMirrorsPlatformValue and
// TestPersistMirrorsPlatform): the one conversion between the stored
// shapes and the API's where they agree.
func Mirror(dst, src proto.Message) error {
	b, err := proto.Marshal(src)
	if err != nil {
		return err
	}
	return proto.Unmarshal(b, dst)
}

// fromPersist converts stored values back to the platform's messages.
func fromPersist(m map[string]*persistv1.Value) (map[string]*platformv1.Value, error) {
	if m == nil {
		return nil, nil
	}
	out := make(map[string]*platformv1.Value, len(m))
	for k, p := range m {
		v, err := valueFromPersist(p)
		if err != nil {
			return nil, err
		}
		out[k] = v
	}
	return out, nil
}

func valueFromPersist(p *persistv1.Value) (*platformv1.Value, error) {
	v := &platformv1.Value{}
	return v, Mirror(v, p)
}

// encodeValues encodes a map of values as a persist.v1.Values message (nil
// for nil). It writes the message's encoding itself, each entry's value
// being the platform Value's own encoding (which persist.v1.Value mirrors:
// TestPersistValueMirrorsPlatformValue), so that the values are encoded
// once, as when runs kept the API's messages.
func encodeValues(m map[string]*platformv1.Value) ([]byte, error) {
	if m == nil {
		return nil, nil
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := []byte{}
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

// valuesField is the number of persist.v1.Values.values.
const valuesField = 1

// decodeValues decodes a persist.v1.Values message (nil for nil), each
// value read as the platform Value it mirrors (see encodeValues).
func decodeValues(b []byte) (map[string]*platformv1.Value, error) {
	if b == nil {
		return nil, nil
	}
	out := map[string]*platformv1.Value{}
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

// encodeLangValues encodes interpreter values (never nil).
func encodeLangValues(m map[string]lang.Value) ([]byte, error) {
	p, err := protovalue.MapToProto(m)
	if err != nil {
		return nil, err
	}
	if p == nil {
		p = map[string]*platformv1.Value{}
	}
	return encodeValues(p)
}

// decodeLangValues decodes values into interpreter values.
func decodeLangValues(b []byte) (map[string]lang.Value, error) {
	p, err := decodeValues(b)
	if err != nil {
		return nil, err
	}
	return protovalue.MapFromProto(p)
}

// encodeGuidance keeps guidance for the run (see decodeGuidance).
func encodeGuidance(g Guidance) ([]byte, error) {
	p := &persistv1.Guidance{}
	switch g.Kind {
	case GuidanceProvideValues:
		if len(g.Expressions) > 0 {
			p.Kind = &persistv1.Guidance_ProvideExpressions{ProvideExpressions: &persistv1.Expressions{Expressions: g.Expressions}}
			break
		}
		vals, err := protovalue.MapToProto(g.Values)
		if err != nil {
			return nil, err
		}
		pv, err := toPersist(vals)
		if err != nil {
			return nil, err
		}
		p.Kind = &persistv1.Guidance_ProvideValues{ProvideValues: &persistv1.Values{Values: pv}}
	case GuidanceSkip:
		p.Kind = &persistv1.Guidance_Skip{Skip: true}
	case GuidanceRetry:
		p.Kind = &persistv1.Guidance_Retry{Retry: true}
	case GuidanceReplaceStep:
		p.Kind = &persistv1.Guidance_ReplaceStep{ReplaceStep: g.Code}
	case GuidanceAnswer:
		v, err := protovalue.ToProto(g.Answer)
		if err != nil {
			return nil, err
		}
		pv, err := valueToPersist(v)
		if err != nil {
			return nil, err
		}
		p.Kind = &persistv1.Guidance_Answer{Answer: pv}
	default:
		return nil, fmt.Errorf("no guidance given")
	}
	return marshal.Marshal(p)
}

// decodeGuidance turns stored guidance into an interpreter resolution. Nil
// guidance is a zero resolution (continue).
func decodeGuidance(b []byte) (lang.Resolution, error) {
	if b == nil {
		return lang.Resolution{}, nil
	}
	g := &persistv1.Guidance{}
	if err := proto.Unmarshal(b, g); err != nil {
		return lang.Resolution{}, fmt.Errorf("decode guidance: %w", err)
	}
	switch k := g.GetKind().(type) {
	case *persistv1.Guidance_ProvideValues:
		p, err := fromPersist(k.ProvideValues.GetValues())
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
		p, err := valueFromPersist(k.Answer)
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

// encodeException keeps the interpreter's description of an exception.
func encodeException(e *lang.Exception) ([]byte, error) { return json.Marshal(e) }

// decodeException decodes what encodeException made.
func decodeException(b []byte) (*lang.Exception, error) {
	e := &lang.Exception{}
	if len(b) == 0 {
		return e, nil
	}
	if err := json.Unmarshal(b, e); err != nil {
		return nil, fmt.Errorf("decode exception: %w", err)
	}
	return e, nil
}
