package engine

import (
	"unicode/utf8"

	"google.golang.org/protobuf/proto"

	persistv1 "github.com/proserun/prose/gen/prose/persist/v1"
	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/lang"
	"github.com/proserun/prose/lang/protovalue"
	"github.com/proserun/prose/store"
)

// The run's history: besides the states it enters and its exceptions
// (which the store records with the transitions themselves), the engine
// records what a run does — each `say`, each book call with its inputs and
// outputs, each child run started — as prose.persist.v1.RunEvent entries.
// They are kept in memory until the write that persists the run's
// progress (a checkpoint, the next step, an outcome) and written in its
// transaction, never one write per statement: what a crash loses is what
// the run does again from its last checkpoint, and is recorded then.

// The node kinds of the engine's entries (the reference's node_kind, which
// ListRunEvents filters on).
const (
	NodeKindSay       = "Say"
	NodeKindBookCall  = "FunctionCall"
	NodeKindStartRun  = "StartRun"
	NodeKindTruncated = "HistoryTruncated"
)

// Default history limits (Options.History).
const (
	DefaultMaxHistoryEvents     = 10_000
	DefaultMaxHistoryEventBytes = 64 << 10
)

// HistoryLimits bound what the engine records of one run.
type HistoryLimits struct {
	// MaxEvents bounds the engine's entries of a run (says, book calls,
	// child runs; not its states or exceptions): past it, one entry says
	// the history stops there and nothing more is recorded. Default
	// DefaultMaxHistoryEvents; negative: no limit.
	MaxEvents int
	// MaxEventBytes bounds one entry: a longer `say` line is cut there, a
	// book call whose inputs and outputs are larger is recorded without
	// them. Default DefaultMaxHistoryEventBytes.
	MaxEventBytes int64
}

func (l HistoryLimits) withDefaults() HistoryLimits {
	if l.MaxEvents == 0 {
		l.MaxEvents = DefaultMaxHistoryEvents
	}
	if l.MaxEventBytes <= 0 {
		l.MaxEventBytes = DefaultMaxHistoryEventBytes
	}
	return l
}

// history collects a run's entries between two writes.
type history struct {
	lim      HistoryLimits
	step     int
	recorded int // the run's entries, written and pending
	pending  []store.RunEvent
}

func newHistory(lim HistoryLimits, recorded int) *history {
	return &history{lim: lim.withDefaults(), recorded: recorded}
}

// add records one entry, or the end of the history when the run reached
// the limit.
func (h *history) add(nodeKind string, ev *persistv1.RunEvent, at lang.Span) {
	if h == nil {
		return
	}
	if h.lim.MaxEvents >= 0 && h.recorded >= h.lim.MaxEvents {
		if h.recorded > h.lim.MaxEvents {
			return // the end is recorded
		}
		nodeKind = NodeKindTruncated
		ev = &persistv1.RunEvent{Kind: &persistv1.RunEvent_Truncated{Truncated: &persistv1.HistoryTruncated{Limit: int64(h.lim.MaxEvents)}}}
	}
	ev.Step = int32(h.step)
	data, err := marshal.Marshal(ev)
	if err != nil {
		return // a value the history cannot hold is not recorded; the run goes on
	}
	h.recorded++
	h.pending = append(h.pending, store.RunEvent{
		Kind: store.RunEventEngine, NodeKind: nodeKind, Data: data,
		Location: store.Location{Start: int64(at.Start), End: int64(at.End)},
	})
}

// say records a line written by `say`, cut at the entry size.
func (h *history) say(line string, at lang.Span) {
	s := &persistv1.Said{Text: line}
	if int64(len(line)) > h.lim.MaxEventBytes {
		cut := int(h.lim.MaxEventBytes)
		for cut > 0 && !utf8.RuneStart(line[cut]) {
			cut--
		}
		s.Text, s.Bytes = line[:cut], int64(len(line))
	}
	h.add(NodeKindSay, &persistv1.RunEvent{Kind: &persistv1.RunEvent_Said{Said: s}}, at)
}

// bookCall records a book call made (not one answered from the journal:
// that one was recorded when it was made).
func (h *history) bookCall(proc lang.BookProcedure, callID string, inputs, outputs map[string]lang.Value, at lang.Span) {
	if h == nil {
		return
	}
	c := &persistv1.BookCall{Book: proc.Book, Procedure: proc.Name, CallId: callID}
	in, err1 := persistValues(inputs)
	out, err2 := persistValues(outputs)
	if err1 != nil || err2 != nil {
		c.ValuesOmitted = true
	} else {
		c.Inputs, c.Outputs = in, out
		if int64(proto.Size(c)) > h.lim.MaxEventBytes {
			c.Inputs, c.Outputs, c.ValuesOmitted = nil, nil, true
		}
	}
	h.add(NodeKindBookCall, &persistv1.RunEvent{Kind: &persistv1.RunEvent_BookCall{BookCall: c}}, at)
}

// childRun records a child run started.
func (h *history) childRun(id string, at lang.Span) {
	h.add(NodeKindStartRun, &persistv1.RunEvent{Kind: &persistv1.RunEvent_ChildRun{ChildRun: &persistv1.ChildRunStarted{RunId: id}}}, at)
}

// flush returns the entries since the last flush, for the write that
// persists them.
func (h *history) flush() []store.RunEvent {
	if h == nil {
		return nil
	}
	p := h.pending
	h.pending = nil
	return p
}

func persistValues(m map[string]lang.Value) (map[string]*persistv1.Value, error) {
	p, err := protovalue.MapToProto(m)
	if err != nil {
		return nil, err
	}
	return toPersist(p)
}

// HistoryEvent is an engine entry of a run's history, decoded (see
// DecodeHistoryEvent). Exactly one of Said, BookCall, ChildRunID and
// TruncatedAt is set.
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
}

// BookCallEvent is a book call in a run's history; the values are the
// platform's (see RunData).
type BookCallEvent struct {
	Book, Procedure, CallID string
	Inputs, Outputs         map[string]*platformv1.Value
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
		if bc.Inputs, err = fromPersist(c.GetInputs()); err != nil {
			return out, err
		}
		if bc.Outputs, err = fromPersist(c.GetOutputs()); err != nil {
			return out, err
		}
		out.BookCall = bc
	case *persistv1.RunEvent_ChildRun:
		out.ChildRunID = k.ChildRun.GetRunId()
	case *persistv1.RunEvent_Truncated:
		out.TruncatedAt = k.Truncated.GetLimit()
	default:
		return out, errUnknownEntry
	}
	return out, nil
}

type entryError string

func (e entryError) Error() string { return string(e) }

const errUnknownEntry = entryError("a history entry of an unknown kind")

// GuidanceView is guidance as kept with a resolution (the data of a
// resolved exception's history entry), for display: Kind is one of
// provide_values, skip, retry, replace_step, answer.
type GuidanceView struct {
	Kind   string
	Values map[string]*platformv1.Value
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
		v, err := fromPersist(k.ProvideValues.GetValues())
		return GuidanceView{Kind: "provide_values", Values: v}, err
	case *persistv1.Guidance_Skip:
		return GuidanceView{Kind: "skip"}, nil
	case *persistv1.Guidance_Retry:
		return GuidanceView{Kind: "retry"}, nil
	case *persistv1.Guidance_ReplaceStep:
		return GuidanceView{Kind: "replace_step", Code: k.ReplaceStep}, nil
	case *persistv1.Guidance_Answer:
		v, err := valueFromPersist(k.Answer)
		return GuidanceView{Kind: "answer", Answer: v}, err
	}
	return GuidanceView{}, nil
}
