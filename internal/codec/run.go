package codec

import (
	"encoding/json"
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/proserun/prose/internal/lang"
	"github.com/proserun/prose/store"
	persistv1 "github.com/proserun/prose/store/persist/v1"
)

// What a run keeps in the store, in the private, versioned messages of
// prose.persist.v1 (never the public API's messages, so that a change to
// the API is never a data migration; store migration 00014 rewrote the
// rows written before in the API's shapes):
//
//	Run.Steps: Steps
//	Run.UserInputs, Run.StepInputs, Run.Outputs, JournalEntry.Data: Values
//	Run.InvocationDetails: Invocation
//	Run.Resolution: Guidance
//	Exception.Details: the interpreter's lang.Exception, as JSON

// Phase is the phase of an automation a step belongs to.
type Phase int32

// The phases (the numbers of prose.persist.v1.Phase, and of the API's
// AutomationPhaseType).
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

// The sources (the numbers of prose.persist.v1.InvocationSource, and of
// the API's InvocationSource).
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
// are the platform's Value messages, exactly as they were given or made.
type RunData struct {
	Steps []Step
	// StepsInputs are the inputs kept with the steps (those of the first
	// step: the user inputs, as Invoke made them).
	StepsInputs Values
	// Inputs are the run's user inputs, as given.
	Inputs Values
	// Outputs are a completed run's outputs (nil before).
	Outputs Values
	// Invocation is how the run was started (nil: not recorded).
	Invocation *Invocation
}

// DecodeRun decodes what a stored run keeps. Outputs are decoded only for
// a completed run.
func DecodeRun(r store.Run) (RunData, error) {
	var d RunData
	steps, err := DecodeSteps(r.Steps)
	if err != nil {
		return d, err
	}
	// The steps' inputs are field 1 of Steps, with the shape of Values':
	// read at the byte level, as the API's values (see EncodeValues).
	if d.StepsInputs, err = DecodeValues(r.Steps); err != nil {
		return d, err
	}
	if len(d.StepsInputs) == 0 {
		d.StepsInputs = nil
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
	if d.Inputs, err = DecodeValues(r.UserInputs); err != nil {
		return d, err
	}
	if r.State == store.RunCompleted {
		if d.Outputs, err = DecodeOutputs(r); err != nil {
			return d, err
		}
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
func DecodeOutputs(r store.Run) (Values, error) {
	out, err := DecodeValues(r.Outputs)
	if err == nil && out == nil {
		out = Values{}
	}
	return out, err
}

// StepCode is the code of a run's step (false when the run has no such
// step or its steps cannot be read).
func StepCode(r store.Run, step int) (string, bool) {
	steps, err := DecodeSteps(r.Steps)
	if err != nil || step < 0 || step >= len(steps.GetSteps()) {
		return "", false
	}
	return steps.GetSteps()[step].GetCode(), true
}

// EncodeInvocation encodes how a run was started (nil for nil).
func EncodeInvocation(inv *Invocation) ([]byte, error) {
	if inv == nil {
		return nil, nil
	}
	return marshal.Marshal(&persistv1.Invocation{TriggerId: inv.TriggerID, UserId: inv.UserID, Source: persistv1.InvocationSource(inv.Source)})
}

// EncodeSteps encodes a run's steps, the inputs of its first step (as
// given) and its origin. The inputs are written at the byte level (see
// EncodeValues) ahead of the rest: the bytes are those of the
// deterministic encoding of the whole Steps message, whose inputs are
// field 1 (TestEncodeStepsIsPersistSteps).
func EncodeSteps(origin *persistv1.Origin, inputs Values, steps []Step) ([]byte, error) {
	p := &persistv1.Steps{Origin: origin}
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
	out, err := appendValues([]byte{}, inputs)
	if err != nil {
		return nil, err
	}
	return marshal.MarshalAppend(out, p)
}

// DecodeSteps decodes a run's steps.
func DecodeSteps(b []byte) (*persistv1.Steps, error) {
	s := &persistv1.Steps{}
	if err := proto.Unmarshal(b, s); err != nil {
		return nil, fmt.Errorf("decode steps: %w", err)
	}
	return s, nil
}

// ExceptionDetails decodes what the interpreter asks for in an exception
// (an empty description when none was kept).
func ExceptionDetails(x store.Exception) (*lang.Exception, error) {
	return DecodeException(x.Details)
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
