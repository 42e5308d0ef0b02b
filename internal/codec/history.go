package codec

import (
	"google.golang.org/protobuf/proto"

	persistv1 "github.com/proserun/prose/store/persist/v1"
)

// HistoryEvent is an engine entry of a run's history, decoded (see
// DecodeHistoryEvent). Exactly one of Said, BookCall, ChildRunID,
// TruncatedAt and Facts is set.
type HistoryEvent struct {
	Step int
	// Said is a line written by `say`; SaidBytes its length when it was cut.
	Said      *string
	SaidBytes int64
	// BookCall is a book call.
	BookCall *BookCallEvent
	// ChildRunID is a child run started.
	ChildRunID string
	// TruncatedAt is the limit the history reached (0: not this entry).
	TruncatedAt int64
	// Facts are the facts consecutive statements set (one entry holds
	// them all), oldest first.
	Facts []FactEvent
}

// FactEvent is a fact set in a run's history: its value in the platform's
// form, or nil when it was too large to keep (Kind still says what it
// was), and the statement that set it (bytes of the step's code).
type FactEvent struct {
	Name, Kind string
	Values     Values // the one value, by the fact's name (empty: omitted)
	Start, End int64
}

// BookCallEvent is a book call in a run's history; the values are the
// platform's (see RunData).
type BookCallEvent struct {
	Book, Procedure, CallID string
	Inputs, Outputs         Values
	ValuesOmitted           bool
}

// DecodeHistoryEvent decodes the data of an engine entry of a run's
// history.
func DecodeHistoryEvent(b []byte) (HistoryEvent, error) {
	var out HistoryEvent
	ev := &persistv1.RunEvent{}
	if err := proto.Unmarshal(b, ev); err != nil {
		return out, err
	}
	out.Step = int(ev.GetStep())
	switch k := ev.GetKind().(type) {
	case *persistv1.RunEvent_Said:
		t := k.Said.GetText()
		out.Said, out.SaidBytes = &t, k.Said.GetBytes()
	case *persistv1.RunEvent_BookCall:
		c := k.BookCall
		bc := &BookCallEvent{Book: c.GetBook(), Procedure: c.GetProcedure(), CallID: c.GetCallId(), ValuesOmitted: c.GetValuesOmitted()}
		var err error
		if bc.Inputs, err = ValuesFromStored(c.GetInputs()); err != nil {
			return out, err
		}
		if bc.Outputs, err = ValuesFromStored(c.GetOutputs()); err != nil {
			return out, err
		}
		out.BookCall = bc
	case *persistv1.RunEvent_ChildRun:
		out.ChildRunID = k.ChildRun.GetRunId()
	case *persistv1.RunEvent_FactsSet:
		var err error
		if out.Facts, err = decodeFacts(k.FactsSet.GetFacts()); err != nil {
			return out, err
		}
	case *persistv1.RunEvent_Truncated:
		out.TruncatedAt = k.Truncated.GetLimit()
	default:
		return out, errUnknownEntry
	}
	return out, nil
}

// decodeFacts decodes the facts of one entry (FactsSet).
func decodeFacts(fs []*persistv1.FactSet) ([]FactEvent, error) {
	out := make([]FactEvent, len(fs))
	for i, f := range fs {
		out[i] = FactEvent{Name: f.GetName(), Kind: f.GetKind(), Start: f.GetStart(), End: f.GetEnd()}
		if f.GetValue() == nil {
			continue
		}
		var err error
		if out[i].Values, err = ValuesFromStored(map[string]*persistv1.Value{f.GetName(): f.GetValue()}); err != nil {
			return nil, err
		}
	}
	if len(out) == 0 {
		return nil, errNoFacts
	}
	return out, nil
}

type entryError string

func (e entryError) Error() string { return string(e) }

const (
	errUnknownEntry = entryError("a history entry of an unknown kind")
	errNoFacts      = entryError("a history entry of facts without a fact")
)
