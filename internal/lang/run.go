package lang

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"
)

// Options configure one run (or one resumption of it).
type Options struct {
	// Clock gives the current time; it defaults to time.Now. Every reading is
	// journaled, so a resumed or replayed run sees the same values.
	Clock func() time.Time
	// Location is the time zone of `the current date`; UTC when nil.
	Location *time.Location
	// Books resolves sentences that match no procedure of the program. Nil
	// means no books: such sentences raise "I don't know how to …".
	Books Books
	// Answers resolves missing values and questions without waiting: a fact
	// name ("the invoice date") or a question's text, to its value.
	Answers map[string]Value
	// Checkpoint, when set, receives the run's state right after each book
	// result has been journaled and before the run goes on. Resuming from it
	// (with a zero Resolution) does not call the book again. An error from
	// Checkpoint fails the run.
	Checkpoint func(state []byte) error
	// Say, when set, receives each line written by `say` as it is written.
	Say func(line string)
	// SayAt, when set, receives each line written by `say` with the span of
	// the statement that wrote it (in the step's code: a statement of a
	// replacement has the span of the statement it replaced).
	SayAt func(line string, at Span)
	// SetAt, when set, receives each fact a statement sets (`the total is
	// …`, `add 1 to the count`), named as the code names it ("total",
	// "invoice's total"), with the statement's span. The value is the
	// run's own: read it, do not keep or change it.
	SetAt func(fact string, v Value, at Span)
	// MaxCallDepth bounds nested procedure calls (default 200).
	MaxCallDepth int
	// Limits bound the memory, steps and time of the run (zero fields:
	// DefaultLimits).
	Limits Limits
	// Yield, when set, is asked every 1,024 statements whether the run
	// should give its worker up for a while: when it answers true the run
	// stops between statements (Stopped, as for a cancelled context) and is
	// continued later with a zero Resolution.
	Yield func() bool
	// Runs, when set, starts the runs of `start a run` as runs of their own
	// (the run engine's child runs) and tells when they have settled; the
	// run then waits (Waiting) at `wait for the runs` until they have. Nil:
	// a started run runs at once, inside this one (see docs/language.md).
	Runs Runs
	// Visit, when set, receives the span of each statement of the program
	// as it starts to run (not those of replacement code given as
	// guidance): what a test covered (see Program.Statements).
	Visit func(at Span)
}

// Status is how a run segment ended.
type Status int

// The statuses of a Result.
const (
	// Completed: the run finished; Outputs hold its outputs.
	Completed Status = iota + 1
	// Suspended: an exception was raised; the run waits for guidance.
	// Exception says why; State continues it (see Resume).
	Suspended
	// Failed: the run cannot go on; Failure says why.
	Failed
	// Stopped: the context was cancelled between statements; State
	// continues the run with a zero Resolution.
	Stopped
	// Waiting: `wait for the runs` found runs started through Options.Runs
	// that have not settled. State continues the run with a zero
	// Resolution (it waits again, or goes on when they have settled).
	Waiting
)

func (s Status) String() string {
	switch s {
	case Completed:
		return "completed"
	case Suspended:
		return "awaiting_guidance"
	case Failed:
		return "failed"
	case Stopped:
		return "stopped"
	case Waiting:
		return "waiting"
	}
	return "unknown"
}

// Result is the outcome of Start or Resume.
type Result struct {
	Status Status
	// Outputs are the top-level facts named `the output…`, by name without
	// "the" ("output total"), as they stand.
	Outputs map[string]Value
	// Log holds the lines written by `say` during this segment.
	Log       []string
	Exception *Exception // when Suspended
	Failure   *Failure   // when Failed
	// State is the self-contained, versioned state of a Suspended or Stopped
	// run, to store and pass to Resume later, in any process.
	State []byte
}

// Failure is an error the run cannot recover from.
type Failure struct {
	Description string
	Span        Span
}

// ResolutionKind is the kind of guidance that resolves an exception.
type ResolutionKind int

// The kinds of guidance.
const (
	// Retry runs the statement again as it is (also: continue a Stopped run,
	// or one restored from a checkpoint).
	Retry ResolutionKind = iota
	// ProvideValues sets facts (Resolution.Values), then runs the statement again.
	ProvideValues
	// Skip goes on after the statement (for validate: accepts the facts).
	Skip
	// ReplaceStep runs Resolution.Code instead of the statement.
	ReplaceStep
	// Answer answers an ask: Resolution.Answer becomes `the above` and `the answer`.
	Answer
)

// Resolution is guidance for a suspended run.
type Resolution struct {
	Kind ResolutionKind
	// Values maps fact names ("the invoice date", "the invoice's total";
	// "invoice date" also works) to values, for ProvideValues.
	Values map[string]Value
	// Expressions maps fact names to Prose expressions ("the subtotal +
	// the tax"), for ProvideValues: each is evaluated over the run's facts
	// where it stopped, before any is set, and its value set like Values'.
	// An expression that does not parse or cannot be evaluated (a fact it
	// reads has no value, …) makes Resume fail; the state stays valid.
	Expressions map[string]string
	// Code is the replacement, for ReplaceStep (one or more lines).
	Code string
	// Answer is the answer, for Answer.
	Answer Value
}

// Start runs a program from its beginning with the given inputs (names as
// in the legacy API: "invoice_number" is `the invoice number`). The run takes
// the inputs' lists, dictionaries, tables and sets over and may change them
// (`add 1 to the items`); pass copies if the caller still needs them.
func Start(ctx context.Context, prog *Program, inputs map[string]Value, opts Options) *Result {
	m := newMachine(ctx, prog, opts)
	// The top scope holds the program's facts: one allocation for all of
	// them instead of one each time a higher slot is first set.
	m.top = &scope{vals: make([]Value, 0, prog.syms.size())}
	m.frames = append(m.frames, frame{kind: fBlock, src: -1, blk: prog.top, sc: m.top})
	keys := make([]string, 0, len(inputs))
	for k := range inputs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := inputs[k]
		if !v.IsValid() {
			continue
		}
		name := FactName(k)
		if name == "" {
			continue
		}
		m.top.set(m.syms.slot(name), inputText(v))
	}
	m.live = m.measure()
	return m.run()
}

// Resume continues a Suspended or Stopped run from its state with the given
// guidance. The program must be the one the state came from. An error means
// the run could not be continued (a damaged state, another program, invalid
// guidance such as replacement code that does not parse); the state is then
// still valid for another attempt.
func Resume(ctx context.Context, prog *Program, state []byte, res Resolution, opts Options) (*Result, error) {
	r, err := PrepareResume(ctx, prog, state, res, opts)
	if err != nil {
		return nil, err
	}
	return r.Run(), nil
}

// Resumption is a suspended run with its guidance applied, ready to go on
// (see PrepareResume).
type Resumption struct{ m *machine }

// PrepareResume is the first half of Resume: it restores the state and
// applies the guidance (an error leaves nothing done: the state is still
// valid), without going on. Run goes on.
func PrepareResume(ctx context.Context, prog *Program, state []byte, res Resolution, opts Options) (*Resumption, error) {
	m := newMachine(ctx, prog, opts)
	if err := m.decode(state); err != nil {
		return nil, err
	}
	if err := m.resolve(res); err != nil {
		return nil, err
	}
	m.live = m.measure()
	return &Resumption{m: m}, nil
}

// Run goes on from where the guidance left the run, as Resume does.
func (r *Resumption) Run() *Result { return r.m.run() }

type frameKind uint8

const (
	fBlock frameKind = iota
	fLoop
	fArgs
	fBody
)

type frame struct {
	kind frameKind
	src  int // -1: the program; else the index of a replacement
	blk  *block
	pc   int
	sc   *scope
	// origin is the span reported for statements of replacement code: that
	// of the statement it replaced.
	origin *Span
	// loops
	items []Value
	idx   int
	slot  int
	saved Value
}

// scope holds the facts of the top level, of a procedure body or of a
// call's argument block (whose reads fall through to the caller).
type scope struct {
	vals   []Value
	parent *scope
}

// ptr is where the fact in slot is kept in s, or nil when s has no room for it.
func (s *scope) ptr(slot int) *Value {
	if slot < len(s.vals) {
		return &s.vals[slot]
	}
	return nil
}

func (s *scope) get(slot int) Value {
	if slot < len(s.vals) {
		return s.vals[slot]
	}
	return Value{}
}

// setNum sets the fact in slot to the number c·10^e (its small form),
// one field at a time. Building the Value and assigning it copies it from
// where its fields were just stored one by one, a read the processor
// cannot forward from those stores: it waits for them, which costs more
// than the rest of the statement. (Such values are read a field at a time
// too: smallOf.)
func (s *scope) setNum(slot int, c int64, e int32) {
	if slot >= len(s.vals) {
		s.set(slot, Value{})
	}
	p := &s.vals[slot]
	if p.p != nil || p.s != "" {
		p.s, p.p = "", nil // (only what held a pointer needs the stores that GC watches)
	}
	p.k, p.e, p.i = KindNumber, e, c
}

// isAlias reports whether the fact in slot is an alias in s (use … as …).
func (s *scope) isAlias(slot int) bool {
	return slot < len(s.vals) && s.vals[slot].k == kindAlias
}

func (s *scope) set(slot int, v Value) {
	if slot >= len(s.vals) {
		if slot < cap(s.vals) {
			// The slots between len and cap were never set (a scope only
			// grows), so they are still zero.
			s.vals = s.vals[:slot+1]
		} else {
			n := make([]Value, slot+1, slot+1+8)
			copy(n, s.vals)
			s.vals = n
		}
	}
	s.vals[slot] = v
}

type journalEntry struct {
	kind    string // "book" or "clock"
	proc    string
	outputs map[string]Value
	time    time.Time
}

type patch struct {
	code   string
	top    *block
	blocks []*block
}

type machine struct {
	ctx        context.Context
	prog       *Program
	opts       Options
	syms       *symtab
	frames     []frame
	top        *scope
	cur        *scope
	journal    []journalEntry
	cursor     int
	stepCursor int
	log        []string
	patches    []*patch
	answers    map[string]Value
	noAnswers  bool
	// bookAnswers are the answers given to the questions a book asked at
	// the call the run stands at (by question id); bookAsked is the id of
	// the question the run is suspended on, if a book asked it.
	bookAnswers map[string]Value
	bookAsked   string
	steps       int64
	depth       int
	outs        []int // the output facts a top-level statement set, by slot
	// bookMatches caches the book procedure (or none) of each call sentence
	bookMatches map[*callStmt]bookMatch
	// freeScopes are the scopes of finished calls (see recycle)
	freeScopes []*scope
	// result is the slot of `the result` (a procedure's), 0 until known
	result int

	// budgets (see Limits)
	lim          Limits
	started      time.Time
	live         int64 // the facts' memory when last measured
	grown        int64 // memory made since
	logBytes     int64
	journalBytes int64
	// childRuns counts the runs started (`start a run`'s journal entries);
	// -1 until first counted (childRunsOK).
	childRuns int
	// called is set by a book call: the context is checked before the
	// next statement, so a run stopped while it waited on a book stops
	// right after the call, with its result journaled.
	called bool
}

func newMachine(ctx context.Context, prog *Program, opts Options) *machine {
	if ctx == nil {
		ctx = context.Background()
	}
	if opts.Clock == nil {
		opts.Clock = time.Now
	}
	if opts.Location == nil {
		opts.Location = time.UTC
	}
	if opts.MaxCallDepth <= 0 {
		opts.MaxCallDepth = 200
	}
	m := &machine{ctx: ctx, prog: prog, opts: opts, childRuns: -1, syms: &symtab{base: prog.syms, idx: map[string]int{}},
		lim: opts.Limits.withDefaults(), started: time.Now()}
	if len(opts.Answers) > 0 {
		m.answers = make(map[string]Value, len(opts.Answers))
		for k, v := range opts.Answers {
			m.answers[normKey(k)] = v
		}
	}
	return m
}

// FactName is the canonical name of a fact, as inputs, outputs and guidance
// use it: "invoice_number", "The Invoice  Number" and "the invoice number"
// are all "invoice number".
func FactName(s string) string {
	s = strings.ToLower(strings.ReplaceAll(s, "_", " "))
	f := strings.Fields(s)
	if len(f) > 0 && f[0] == "the" {
		f = f[1:]
	}
	return strings.Join(f, " ")
}

func normKey(s string) string {
	return strings.Join(strings.Fields(strings.ToLower(strings.ReplaceAll(s, "_", " "))), " ")
}

func (m *machine) answer(key string) (Value, bool) {
	if m.answers == nil || m.noAnswers {
		return Value{}, false
	}
	k := normKey(key)
	if v, ok := m.answers[k]; ok {
		return clone(v), true
	}
	if strings.HasPrefix(k, "the ") {
		if v, ok := m.answers[k[4:]]; ok {
			return clone(v), true
		}
	}
	return Value{}, false
}

// resultSlot is the slot of `the result`, the fact a procedure's result
// is read from.
func (m *machine) resultSlot() int {
	if m.result == 0 {
		m.result = m.syms.slot("result")
	}
	return m.result
}

// rootScope is the scope that owns facts read through an argument block:
// the nearest scope that is not an argument block.
func (m *machine) rootScope() *scope {
	s := m.cur
	for s.parent != nil {
		s = s.parent
	}
	return s
}

// lookup is where the fact in slot has its value, as read finds it (an
// alias included), or nil when no scope has it.
func (m *machine) lookup(slot int) *Value {
	for s := m.cur; s != nil; s = s.parent {
		if slot < len(s.vals) {
			if v := &s.vals[slot]; v.k != kindUnset {
				return v
			}
		}
	}
	return nil
}

func (m *machine) read(slot int, name string) (Value, error) {
	for s := m.cur; s != nil; s = s.parent {
		if slot < len(s.vals) {
			if v := s.vals[slot]; v.k != kindUnset {
				if v.k == kindAlias {
					return m.deref(v, name)
				}
				return v, nil
			}
		}
	}
	if v, ok := m.answer("the " + name); ok {
		m.rootScope().set(slot, v)
		return v, nil
	}
	return Value{}, missing("the " + name)
}

func (m *machine) deref(v Value, name string) (Value, error) {
	for i := 0; v.k == kindAlias && i < 64; i++ {
		s, _ := v.p.(*scope)
		if s == nil {
			return Value{}, internalErr("a broken alias")
		}
		v = s.get(int(v.i))
	}
	if v.k == kindUnset {
		return Value{}, missing("the " + name)
	}
	if v.k == kindAlias {
		return Value{}, userErr("Could not read the %s: it refers to itself", name)
	}
	return v, nil
}

// holder returns the scope and slot that a write to the fact goes to: an
// alias's target, else the scope that has the fact, else the current scope.
func (m *machine) holder(slot int, local bool) (*scope, int) {
	s := m.cur
	if !local {
		for x := m.cur; x != nil; x = x.parent {
			if x.get(slot).k != kindUnset {
				s = x
				break
			}
		}
	}
	for i := 0; i < 64; i++ {
		v := s.get(slot)
		if v.k != kindAlias {
			break
		}
		t, _ := v.p.(*scope)
		if t == nil {
			break
		}
		s, slot = t, int(v.i)
	}
	return s, slot
}

// propSlot is the fact that holds the properties of the fact in slot when
// its value is no dictionary: `the first field's format` beside the value
// of `the first field`. Its name cannot be written in a program.
func (m *machine) propSlot(slot int) int {
	return m.syms.slot(m.syms.name(slot) + " 's")
}

// propName is the name of the hidden fact that holds the properties of
// the value at the fact of ref with its first i fields, when that value is
// no dictionary: "first field 's" beside `the first field`, "invoice 's
// total 's" beside `the invoice's total`. It cannot be written in a program.
func propName(ref *refExpr, i int) string {
	var b strings.Builder
	b.WriteString(ref.name)
	for _, f := range ref.fields[:i] {
		b.WriteString(" 's ")
		b.WriteString(f)
	}
	b.WriteString(" 's")
	return b.String()
}

// property reads a property kept beside the value at the fact of e with its
// first i fields.
func (m *machine) property(e *refExpr, i int, key string) (Value, bool) {
	slot, ok := m.syms.lookup(propName(e, i))
	if !ok {
		return Value{}, false
	}
	for s := m.cur; s != nil; s = s.parent {
		if v := s.get(slot); v.k == KindDictionary {
			d := v.AsDictionary()
			if j, ok := d.findField(key); ok {
				return d.vals[j], true
			}
			return Value{}, false
		}
	}
	return Value{}, false
}

// missingField handles a field that is not there: answered up front, or a
// missing value for `the invoice's total`.
func (m *machine) fieldMissing(e *refExpr, i int) (Value, error) {
	disp := e.prefix(i + 1)
	if v, ok := m.answer(disp); ok {
		if err := m.setPath(e, i+1, v, false); err != nil {
			return Value{}, err
		}
		return v, nil
	}
	return Value{}, missing(disp)
}

// assign sets a fact (in the current scope) or a field of it.
func (m *machine) assign(ref *refExpr, v Value) error {
	if err := m.setPath(ref, len(ref.fields), v, true); err != nil {
		return err
	}
	m.setAt(ref, v)
	return nil
}

// setAt tells Options.SetAt of a fact set.
func (m *machine) setAt(ref *refExpr, v Value) {
	if m.opts.SetAt == nil || ref.name == "above" {
		return
	}
	name := ref.name // a fact without fields (most): its name, not a new string
	if len(ref.fields) > 0 {
		name = strings.TrimPrefix(ref.prefix(len(ref.fields)), "the ")
	}
	m.opts.SetAt(name, v, m.currentSpan())
}

// update writes the new value of a fact where it lives (arithmetic statements).
func (m *machine) update(ref *refExpr, v Value) error {
	if err := m.setPath(ref, len(ref.fields), v, false); err != nil {
		return err
	}
	m.setAt(ref, v)
	return nil
}

// setPath sets the fact with its first n fields to v, making dictionaries
// on the way where there is nothing.
func (m *machine) setPath(ref *refExpr, n int, v Value, local bool) error {
	s, slot := m.holder(ref.slot, local)
	if n == 0 {
		s.set(slot, v)
		return nil
	}
	if s == m.cur && local && s.get(slot).k == kindUnset {
		// a field of a fact this scope does not have: the caller's, through an argument block
		s, slot = m.holder(ref.slot, false)
	}
	base := s.get(slot)
	if base.k == kindUnset || base.k == KindNull {
		base = DictValue(NewDictionary())
		s.set(slot, base)
	}
	props := func(i int) Value {
		// a value that is no dictionary keeps its properties beside it
		ps := m.syms.slot(propName(ref, i))
		if i == 0 {
			ps = m.propSlot(slot)
		}
		v := s.get(ps)
		if v.k != KindDictionary {
			v = DictValue(NewDictionary())
			s.set(ps, v)
		}
		return v
	}
	if base.k != KindDictionary {
		base = props(0)
	}
	for i := 0; i < n; i++ {
		if base.k != KindDictionary {
			if base.k == kindUnset {
				return userErr("Could not set %s: %s has no value", ref.prefix(n), ref.prefix(i))
			}
			base = props(i)
		}
		d := base.AsDictionary()
		key := ref.fields[i]
		j, ok := d.findField(key)
		if !ok && i < n-1 {
			// `the document's first address's city`: through an item of
			// the list field `addresses`, as reading goes (the last name
			// of a path is always a field of its own: see README)
			if x, isOrd, err := ordinalField(base, key); isOrd {
				if err != nil {
					return err
				}
				if x.k != KindNull {
					base = x
					continue
				}
				// a null item: a field of that name, as before
			}
		}
		if !ok {
			if err := m.itemsOK(int64(d.Len())+1, KindDictionary); err != nil {
				return err
			}
			if err := m.reserve(2*valueSize + entryOverhead + int64(len(key))); err != nil {
				return err
			}
		}
		if i == n-1 {
			if ok {
				d.vals[j] = v
			} else {
				d.SetText(key, v)
			}
			return nil
		}
		if !ok || d.vals[j].k == KindNull {
			nd := DictValue(NewDictionary())
			if ok {
				d.vals[j] = nd
			} else {
				d.SetText(key, nd)
			}
			base = nd
			continue
		}
		base = d.vals[j]
	}
	return nil
}

func (m *machine) now() (time.Time, error) {
	if m.cursor < len(m.journal) {
		e := m.journal[m.cursor]
		if e.kind != "clock" {
			return time.Time{}, internalErr("the journal holds a book call where the run reads the clock")
		}
		m.cursor++
		return e.time.In(m.opts.Location), nil
	}
	if err := m.journalOK(); err != nil {
		return time.Time{}, err
	}
	t := m.opts.Clock().In(m.opts.Location)
	m.journal = append(m.journal, journalEntry{kind: "clock", time: t})
	m.journalBytes += journalSize(journalEntry{})
	m.cursor++
	return t, nil
}

var errStop = errors.New("stop")

// push pushes a frame of kind for the block blk, whose facts are in sc;
// the caller sets the rest of the frame it returns. The frame is written
// where it stands: one built and copied there is read back before its
// fields are stored, which costs more than the statement.
func (m *machine) push(kind frameKind, src int, blk *block, sc *scope, origin *Span) *frame {
	n := len(m.frames)
	if n == cap(m.frames) {
		m.frames = append(m.frames, frame{})
	} else {
		m.frames = m.frames[:n+1]
	}
	f := &m.frames[n]
	*f = frame{kind: kind, src: src, blk: blk, sc: sc, origin: origin}
	m.cur = sc
	return f
}

func (m *machine) pop() {
	m.frames = m.frames[:len(m.frames)-1]
	if len(m.frames) > 0 {
		m.cur = m.frames[len(m.frames)-1].sc
	}
}

// run executes until the program ends, stops, or raises an exception.
func (m *machine) run() (res *Result) {
	defer func() {
		if r := recover(); r != nil {
			res = m.suspend(internalErr("%v", r))
		}
	}()
	if len(m.frames) > 0 {
		m.cur = m.frames[len(m.frames)-1].sc
	}
	for len(m.frames) > 0 {
		top := len(m.frames) - 1
		f := &m.frames[top]
		m.stepCursor = m.cursor
		if f.pc >= len(f.blk.stmts) {
			if err := m.finishFrame(); err != nil {
				return m.suspend(err)
			}
			continue
		}
		m.steps++
		if m.steps > m.lim.MaxSteps {
			return m.suspend(m.budgetErr("step limit of " + formatCount(m.lim.MaxSteps) + " statements"))
		}
		if m.called && m.ctx.Err() != nil {
			return m.pause()
		}
		if m.steps&1023 == 0 {
			if m.ctx.Err() != nil {
				return m.pause()
			}
			if r, yield := m.budget(); r != nil {
				return m.suspend(r)
			} else if yield {
				return m.pause()
			}
		}
		m.called = false
		s := f.blk.stmts[f.pc]
		if m.opts.Visit != nil && f.src < 0 {
			m.opts.Visit(s.span)
		}
		if err := m.exec(f, s); err != nil {
			if errors.Is(err, errStop) {
				break
			}
			if errors.Is(err, errWaiting) {
				return m.wait()
			}
			return m.suspend(err)
		}
		if s.out && m.topLevel(top) {
			m.defineOutput(s.outSlot)
		}
	}
	return &Result{Status: Completed, Outputs: m.outputs(), Log: m.log}
}

// topLevel reports whether the frame at index i runs statements of the top
// level of the program: the program's own block, or replacement code given
// for a top-level statement.
func (m *machine) topLevel(i int) bool {
	for ; i > 0; i-- {
		f := &m.frames[i]
		if f.kind == fBlock && f.blk.inline {
			continue
		}
		if f.kind != fBlock || f.src < 0 || f.src >= len(m.patches) || f.blk != m.patches[f.src].top {
			return false
		}
	}
	return i == 0
}

// defineOutput records that a top-level statement set an output fact.
func (m *machine) defineOutput(slot int) {
	for _, s := range m.outs {
		if s == slot {
			return
		}
	}
	m.outs = append(m.outs, slot)
}

// outputs are the facts named `the output…` that a top-level statement
// set, with their values as they stand.
func (m *machine) outputs() map[string]Value {
	out := map[string]Value{}
	for _, slot := range m.outs {
		v := m.top.get(slot)
		if v.k == kindUnset {
			continue
		}
		name := m.syms.name(slot)
		if v.k == kindAlias {
			var err error
			if v, err = m.deref(v, name); err != nil {
				continue
			}
		}
		out[name] = v
	}
	return out
}

// wait ends the segment at `wait for the runs`, to be continued when the
// runs it waits for have settled.
func (m *machine) wait() *Result {
	r := m.pause()
	if r.Status == Stopped {
		r.Status = Waiting
	}
	return r
}

func (m *machine) pause() *Result {
	state, err := m.encode(nil)
	if err != nil {
		return &Result{Status: Failed, Failure: &Failure{Description: encodeFailure(err), Span: m.currentSpan()}, Log: m.log}
	}
	return &Result{Status: Stopped, Outputs: m.outputs(), Log: m.log, State: state}
}

// currentSpan is the span of the statement the run stands at.
func (m *machine) currentSpan() Span {
	for i := len(m.frames) - 1; i >= 0; i-- {
		f := &m.frames[i]
		if f.origin != nil {
			return *f.origin
		}
		if f.pc < len(f.blk.stmts) {
			return f.blk.stmts[f.pc].span
		}
	}
	return Span{}
}

func (m *machine) suspend(err error) *Result {
	if errors.Is(err, errCancelled) {
		return m.pause()
	}
	var r *raise
	if !errors.As(err, &r) {
		var se *SyntaxError
		if errors.As(err, &se) {
			r = userErr("Could not read the code: %s", se.Msg)
		} else {
			r = internalErr("%v", err)
		}
	}
	exc := &Exception{Group: r.group, Message: r.msg, Span: m.currentSpan(), Fact: r.fact, Question: r.question, Choices: r.choices, AnswerType: r.answerType, Failed: r.failed}
	m.bookAsked = r.bookQuestion
	state, encErr := m.encode(exc)
	if encErr != nil {
		return &Result{Status: Failed, Failure: &Failure{Description: encodeFailure(encErr), Span: exc.Span}, Log: m.log}
	}
	return &Result{Status: Suspended, Outputs: m.outputs(), Log: m.log, Exception: exc, State: state}
}

// advance moves past the current statement (skip, answer, replace).
func (m *machine) advance() {
	f := &m.frames[len(m.frames)-1]
	if f.pc >= len(f.blk.stmts) && f.kind == fArgs {
		m.pop()
		f = &m.frames[len(m.frames)-1]
	}
	if f.pc < len(f.blk.stmts) {
		f.pc++
	}
}

func (m *machine) resolve(res Resolution) error {
	if len(m.frames) == 0 {
		return errors.New("the run has ended")
	}
	m.cur = m.frames[len(m.frames)-1].sc
	asked := m.bookAsked
	m.bookAsked = ""
	if res.Kind == Skip || res.Kind == ReplaceStep {
		// the call the answers were for is not made again
		m.bookAnswers = nil
	}
	switch res.Kind {
	case Retry:
	case ProvideValues:
		if len(res.Values) == 0 && len(res.Expressions) == 0 {
			return errors.New("no values provided")
		}
		vals := make(map[string]Value, len(res.Values)+len(res.Expressions))
		for k, v := range res.Values {
			vals[k] = inputText(clone(v))
		}
		for k, src := range res.Expressions {
			v, err := m.evalText(src)
			if err != nil {
				return fmt.Errorf("%s: %w", k, err)
			}
			vals[k] = v
		}
		keys := make([]string, 0, len(vals))
		for k := range vals {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			ref, err := m.parseRef(k)
			if err != nil {
				return err
			}
			root := m.cur
			m.cur = m.rootScope()
			err = m.setPath(ref, len(ref.fields), vals[k], false)
			m.cur = root
			if err != nil {
				return errors.New(err.Error())
			}
		}
	case Skip:
		m.advance()
	case Answer:
		if !res.Answer.IsValid() {
			return errors.New("the answer has no value")
		}
		if asked != "" {
			// A book asked: it gets the answer and the call is made again.
			if m.bookAnswers == nil {
				m.bookAnswers = map[string]Value{}
			}
			m.bookAnswers[asked] = clone(res.Answer)
			break
		}
		m.cur.set(aboveSlot, res.Answer)
		m.cur.set(m.syms.slot("answer"), clone(res.Answer))
		m.advance()
	case ReplaceStep:
		p := &parser{lx: &lexer{src: res.Code}, syms: m.syms, procs: m.prog.procs}
		lines, err := p.lx.lines()
		if err != nil {
			return err
		}
		if len(lines) == 0 {
			return errors.New("the replacement code is empty")
		}
		top, err := p.block(lines, false)
		if err != nil {
			return err
		}
		if err := p.resolveCalls(); err != nil {
			return err
		}
		origin := m.currentSpan()
		m.advance()
		m.patches = append(m.patches, &patch{code: res.Code, top: top, blocks: p.allBlocks()})
		m.push(fBlock, len(m.patches)-1, top, m.cur, &origin)
	default:
		return errors.New("unknown resolution")
	}
	return nil
}

// evalText evaluates a Prose expression given by guidance over the facts
// where the run stands.
func (m *machine) evalText(src string) (Value, error) {
	e, err := m.parseExpr(src)
	if err != nil {
		return Value{}, err
	}
	v, err := e.eval(m)
	if err != nil {
		return Value{}, errors.New(err.Error())
	}
	if !v.IsValid() {
		return Value{}, errors.New("the expression has no value")
	}
	return clone(v), nil
}

// parseExpr parses one expression with the program's names.
func (m *machine) parseExpr(src string) (expr, error) {
	p := &parser{lx: &lexer{src: strings.TrimSpace(src)}, syms: m.syms, procs: m.prog.procs}
	lines, err := p.lx.lines()
	if err != nil {
		return nil, err
	}
	if len(lines) != 1 {
		return nil, errors.New("an expression is one line: " + src)
	}
	q := p.ep(lines[0].toks)
	e, err := q.expr()
	if err != nil {
		return nil, err
	}
	if err := q.end(); err != nil {
		return nil, err
	}
	return e, nil
}

// CheckExpression reports whether src parses as one Prose expression.
func CheckExpression(src string) error {
	p := &parser{lx: &lexer{src: strings.TrimSpace(src)}, syms: newSymtab()}
	lines, err := p.lx.lines()
	if err != nil {
		return err
	}
	if len(lines) != 1 {
		return errors.New("an expression is one line")
	}
	q := p.ep(lines[0].toks)
	if _, err := q.expr(); err != nil {
		return err
	}
	return q.end()
}

// parseRef reads a fact name given by guidance: "the invoice date",
// "invoice date", "the invoice's total".
func (m *machine) parseRef(name string) (*refExpr, error) {
	src := strings.TrimSpace(name)
	if !strings.HasPrefix(strings.ToLower(src), "the ") {
		src = "the " + strings.ReplaceAll(src, "_", " ")
	}
	p := &parser{lx: &lexer{src: src}, syms: m.syms}
	lines, err := p.lx.lines()
	if err != nil || len(lines) != 1 {
		return nil, errors.New("not a fact name: " + name)
	}
	q := p.ep(lines[0].toks)
	ref, err := q.target()
	if err != nil || !q.done() {
		return nil, errors.New("not a fact name: " + name)
	}
	return ref, nil
}
