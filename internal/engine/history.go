package engine

import (
	"slices"
	"unicode/utf8"

	"google.golang.org/protobuf/proto"

	"github.com/proserun/prose/internal/codec"
	"github.com/proserun/prose/internal/lang"
	"github.com/proserun/prose/store"
	persistv1 "github.com/proserun/prose/store/persist/v1"
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
	NodeKindSetFact   = "SetFact"
)

// Default history limits (Options.History).
const (
	DefaultMaxHistoryEvents     = 10_000
	DefaultMaxHistoryEventBytes = 64 << 10
	// A run's facts are recorded while its history has fewer entries than
	// DefaultMaxFactEvents (a loop that sets a fact a million times must not
	// fill the history), each value while it has at most DefaultMaxFactItems
	// items and DefaultMaxFactBytes bytes (else its kind alone).
	DefaultMaxFactEvents = 1_000
	DefaultMaxFactItems  = 100
	DefaultMaxFactBytes  = 4 << 10
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
	// MaxFactEvents: facts set are recorded while the run's history has
	// fewer entries (default DefaultMaxFactEvents; negative: none).
	MaxFactEvents int
	// MaxFactItems and MaxFactBytes bound a fact's value kept in its entry
	// (defaults DefaultMaxFactItems, DefaultMaxFactBytes).
	MaxFactItems int
	MaxFactBytes int
}

func (l HistoryLimits) withDefaults() HistoryLimits {
	if l.MaxEvents == 0 {
		l.MaxEvents = DefaultMaxHistoryEvents
	}
	if l.MaxEventBytes <= 0 {
		l.MaxEventBytes = DefaultMaxHistoryEventBytes
	}
	if l.MaxFactEvents == 0 {
		l.MaxFactEvents = DefaultMaxFactEvents
	}
	if l.MaxFactItems <= 0 {
		l.MaxFactItems = DefaultMaxFactItems
	}
	if l.MaxFactBytes <= 0 {
		l.MaxFactBytes = DefaultMaxFactBytes
	}
	return l
}

// history collects a run's entries between two writes.
type history struct {
	lim      HistoryLimits
	step     int
	recorded int // the run's entries, written and pending
	pending  []store.RunEvent
	// factAt: the statements whose fact is recorded (a loop's statement
	// once, however many times it runs)
	factAt map[lang.Span]struct{}
	// facts: the facts set since the last other entry, stored as one
	// entry (at: from the first one's start to the last one's end) when
	// another entry comes or at flush; each is counted in recorded.
	facts     *persistv1.FactsSet
	factsAt   lang.Span
	factsStep int
	spans     []lang.Span // the statements seen, while they are few (see seen)
	// group, groupEv and cells: the current entry's messages, reused
	// (used: the cells it holds)
	group   persistv1.FactsSet
	groupEv persistv1.RunEvent
	groupK  persistv1.RunEvent_FactsSet
	cells   []factCell
	used    int
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
	h.endFacts()
	if h.full() {
		if h.recorded > h.lim.MaxEvents {
			return // the end is recorded
		}
		nodeKind = NodeKindTruncated
		ev = &persistv1.RunEvent{Kind: &persistv1.RunEvent_Truncated{Truncated: &persistv1.HistoryTruncated{Limit: int64(h.lim.MaxEvents)}}}
	}
	ev.Step = int32(h.step)
	if h.push(nodeKind, ev, at) {
		h.recorded++
	}
}

// full reports whether the history holds as many entries as it may.
func (h *history) full() bool {
	return h.lim.MaxEvents >= 0 && h.recorded >= h.lim.MaxEvents
}

// push appends an entry to the pending ones (false: it could not be
// encoded, and is not recorded; the run goes on).
func (h *history) push(nodeKind string, ev *persistv1.RunEvent, at lang.Span) bool {
	data, err := marshal.Marshal(ev)
	if err != nil {
		return false
	}
	h.pending = append(h.pending, store.RunEvent{
		Kind: store.RunEventEngine, NodeKind: nodeKind, Data: data,
		Location: store.Location{Start: int64(at.Start), End: int64(at.End)},
	})
	return true
}

// endFacts turns the facts set since the last entry into their entry.
func (h *history) endFacts() {
	if h.facts == nil {
		return
	}
	h.groupK.FactsSet = h.facts
	h.groupEv = persistv1.RunEvent{Kind: &h.groupK, Step: int32(h.factsStep)}
	h.push(NodeKindSetFact, &h.groupEv, h.factsAt)
	// encoded: the messages are free for the next entry
	clear(h.group.Facts)
	h.group.Facts, h.facts, h.used = h.group.Facts[:0], nil, 0
}

// addFact appends f to the facts' entry, starting one when needed.
func (h *history) addFact(f *persistv1.FactSet, at lang.Span) {
	if h.facts != nil && h.factsStep != h.step {
		h.endFacts()
	}
	f.Start, f.End = int64(at.Start), int64(at.End)
	if h.facts == nil {
		h.facts, h.factsAt, h.factsStep = &h.group, at, h.step
		if h.group.Facts == nil {
			h.group.Facts = make([]*persistv1.FactSet, 0, factCells)
		}
	}
	h.facts.Facts = append(h.facts.Facts, f)
	h.factsAt.Start, h.factsAt.End = min(h.factsAt.Start, at.Start), max(h.factsAt.End, at.End)
	h.recorded++
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

// setFact records a fact a statement set, with its value when it is
// small: the item count is looked at before anything is converted, so a
// large table costs nothing but its kind. A statement's fact is recorded
// the first time it runs while the run executes (a loop's line once): a
// loop costs a map look-up per turn, not an entry.
func (h *history) setFact(name string, v lang.Value, at lang.Span) {
	if h == nil || h.recorded >= h.lim.MaxFactEvents || h.seen(at) {
		return
	}
	if h.full() {
		h.add("", nil, at) // the end of the history, once
		return
	}
	c := h.cell()
	f := &c.f
	f.Name, f.Kind = name, v.Kind().String()
	switch {
	case c.scalar(v):
		if v.Kind() == lang.KindText && len(v.AsText()) > h.lim.MaxFactBytes {
			f.ValueOmitted = true
		} else {
			f.Value = &c.v
		}
	case items(v) > h.lim.MaxFactItems:
		f.ValueOmitted = true
	default:
		if pv, err := persistValues(map[string]lang.Value{name: v}); err != nil || proto.Size(pv[name]) > h.lim.MaxFactBytes {
			f.ValueOmitted = true
		} else {
			f.Value = pv[name]
		}
	}
	h.addFact(f, at)
}

// seen reports whether the fact of the statement at was recorded while
// the run executes, and marks it: a short list while a few are (the
// common case, no map), a map past them.
func (h *history) seen(at lang.Span) bool {
	if h.factAt != nil {
		if _, ok := h.factAt[at]; ok {
			return true
		}
		h.factAt[at] = struct{}{}
		return false
	}
	if slices.Contains(h.spans, at) {
		return true
	}
	if len(h.spans) < maxSeenList {
		if h.spans == nil {
			h.spans = make([]lang.Span, 0, 16)
		}
		h.spans = append(h.spans, at)
		return false
	}
	h.factAt = make(map[lang.Span]struct{}, 2*maxSeenList)
	for _, sp := range h.spans {
		h.factAt[sp] = struct{}{}
	}
	h.factAt[at], h.spans = struct{}{}, nil
	return false
}

// maxSeenList: how many statements seen are kept in a list before a map.
const maxSeenList = 32

// factCell holds a fact's messages, reused from entry to entry (an entry
// is encoded before the next one starts): a number, a text or a yes/no
// costs no allocation.
type factCell struct {
	f    persistv1.FactSet
	v    persistv1.Value
	num  persistv1.Value_Number
	n    persistv1.Number
	txt  persistv1.Value_Text
	b    persistv1.Value_BoolValue
	null persistv1.Value_NullValue
}

// cell is a cleared cell for the next fact of the current entry. The
// cells run out in an entry of many facts: the next ones come from new
// cells, twice as many (those of the entry stay where they are).
func (h *history) cell() *factCell {
	if h.used == len(h.cells) {
		h.cells = make([]factCell, max(factCells, 2*len(h.cells)))
	}
	c := &h.cells[h.used]
	h.used++
	*c = factCell{}
	return c
}

// factCells: the cells first made (a short program's facts).
const factCells = 16

// scalar makes c.v the stored form of a number, a text, a yes/no or
// nothing (false: v is none of them): the common facts skip the general
// conversion (through the API's form).
func (c *factCell) scalar(v lang.Value) bool {
	switch v.Kind() {
	case lang.KindNumber:
		c.n.Lo, c.n.Mid, c.n.Hi, c.n.Flags = v.AsNumber().Parts()
		c.num.Number = &c.n
		c.v.Kind = &c.num
	case lang.KindText:
		c.txt.Text = v.AsText()
		c.v.Kind = &c.txt
	case lang.KindBool:
		c.b.BoolValue = v.AsBool()
		c.v.Kind = &c.b
	case lang.KindNull:
		c.v.Kind = &c.null
	default:
		return false
	}
	return true
}

// items is how many items a value holds at its top level (a table: its
// cells).
func items(v lang.Value) int {
	switch v.Kind() {
	case lang.KindList:
		return len(v.AsList().Items)
	case lang.KindDictionary:
		return v.AsDictionary().Len()
	case lang.KindSet:
		return v.AsSet().Len()
	case lang.KindTable:
		t := v.AsTable()
		return t.NumRows() * len(t.Columns)
	}
	return 1
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
	h.endFacts()
	p := h.pending
	h.pending = nil
	return p
}

// persistValues keeps a book call's values in the run's history (see
// codec.LangToStored).
var persistValues = codec.LangToStored
