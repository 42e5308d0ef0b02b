package lang

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"
)

// stateVersion is the version of the serialised state. A state of another
// version is refused rather than misread.
// Version 2 added Outputs; a version 1 state counts every output fact of
// the top level as defined (the rule before outputs were top-level only).
const stateVersion = 2

type stateJSON struct {
	V         int           `json:"v"`
	Program   string        `json:"program"`
	Names     []string      `json:"names,omitempty"`
	Top       int           `json:"top"`
	Scopes    []scopeJSON   `json:"scopes"`
	Heap      []heapJSON    `json:"heap,omitempty"`
	Frames    []frameJSON   `json:"frames"`
	Journal   []journalJSON `json:"journal,omitempty"`
	Cursor    int           `json:"cursor"`
	Patches   []string      `json:"patches,omitempty"`
	Outputs   []string      `json:"outputs,omitempty"`
	Exception *excJSON      `json:"exception,omitempty"`
	// BookAnswers are the answers given to the questions a book asked at
	// the call the run stands at, by question id (see BookQuestion).
	BookAnswers []factJSON `json:"book_answers,omitempty"`
	// Used is the step and time budget this execution used (see Limits):
	// a run continued from a state without an exception (stopped, given up
	// for a turn, recovered from a checkpoint) goes on with what is left of
	// it; guidance for an exception gives a fresh budget.
	Used *usedJSON `json:"used,omitempty"`
}

type usedJSON struct {
	Steps int64 `json:"steps"`
	Nanos int64 `json:"nanos"`
}

type excJSON struct {
	Group   Group  `json:"group"`
	Message string `json:"message"`
	Span    Span   `json:"location"`
	Fact    string `json:"fact,omitempty"`
	// BookQuestion is the id of the question a book asked (the exception
	// is that question): an answer is given to the book, which is called
	// again.
	BookQuestion string `json:"book_question,omitempty"`
}

type scopeJSON struct {
	Parent int        `json:"parent"`
	Facts  []factJSON `json:"facts,omitempty"`
}

type factJSON struct {
	Name  string  `json:"n"`
	Value valJSON `json:"v"`
}

type valJSON struct {
	T     string `json:"t"`
	B     bool   `json:"b,omitempty"`
	S     string `json:"s,omitempty"`
	Z     string `json:"z,omitempty"`
	I     int64  `json:"i,omitempty"`
	M     int64  `json:"m,omitempty"`
	D     int64  `json:"d,omitempty"`
	U     string `json:"u,omitempty"`
	C     string `json:"c,omitempty"`
	Scope int    `json:"scope,omitempty"`
}

type heapJSON struct {
	T     string    `json:"t"`
	Items []valJSON `json:"items,omitempty"`
	Keys  []valJSON `json:"keys,omitempty"`
	Cols  []colJSON `json:"cols,omitempty"`
}

type colJSON struct {
	Name string    `json:"name"`
	Vals []valJSON `json:"vals"`
}

type frameJSON struct {
	Kind   frameKind `json:"k"`
	Src    int       `json:"src"`
	Block  int       `json:"b"`
	PC     int       `json:"pc"`
	Scope  int       `json:"s"`
	Origin *Span     `json:"origin,omitempty"`
	Items  []valJSON `json:"items,omitempty"`
	Idx    int       `json:"idx,omitempty"`
	Slot   string    `json:"slot,omitempty"`
	Saved  *valJSON  `json:"saved,omitempty"`
}

type journalJSON struct {
	Kind    string     `json:"kind"`
	Proc    string     `json:"proc,omitempty"`
	Outputs []factJSON `json:"outputs,omitempty"`
	Time    string     `json:"time,omitempty"`
}

type encoder struct {
	m      *machine
	scopes map[*scope]int
	sq     []*scope
	heap   map[any]int
	hq     []Value
	out    stateJSON
}

func (m *machine) encode(exc *Exception) ([]byte, error) {
	e := &encoder{m: m, scopes: map[*scope]int{}, heap: map[any]int{}}
	st := &e.out
	st.V = stateVersion
	st.Program = m.prog.hash
	st.Names = append([]string(nil), m.syms.names...)
	st.Cursor = m.cursor
	for _, slot := range m.outs {
		st.Outputs = append(st.Outputs, m.syms.name(slot))
	}
	for _, p := range m.patches {
		st.Patches = append(st.Patches, p.code)
	}
	if exc != nil {
		st.Exception = &excJSON{Group: exc.Group, Message: exc.Message, Span: exc.Span, Fact: exc.Fact, BookQuestion: m.bookAsked}
	}
	for _, k := range sortedKeys(m.bookAnswers) {
		st.BookAnswers = append(st.BookAnswers, factJSON{Name: k, Value: e.val(m.bookAnswers[k])})
	}
	st.Used = &usedJSON{Steps: m.steps, Nanos: int64(time.Since(m.started))}
	st.Top = e.scope(m.top)
	for i := range m.frames {
		f := &m.frames[i]
		fj := frameJSON{Kind: f.kind, Src: f.src, Block: f.blk.id, PC: f.pc, Scope: e.scope(f.sc), Origin: f.origin, Idx: f.idx}
		if f.kind == fLoop {
			for _, it := range f.items {
				fj.Items = append(fj.Items, e.val(it))
			}
			fj.Slot = m.syms.name(f.slot)
			sv := e.val(f.saved)
			fj.Saved = &sv
		}
		st.Frames = append(st.Frames, fj)
	}
	for _, j := range m.journal {
		jj := journalJSON{Kind: j.kind, Proc: j.proc}
		if j.kind == "clock" {
			jj.Time = j.time.Format(time.RFC3339Nano)
		}
		for _, k := range sortedKeys(j.outputs) {
			jj.Outputs = append(jj.Outputs, factJSON{Name: k, Value: e.val(j.outputs[k])})
		}
		st.Journal = append(st.Journal, jj)
	}
	// Scopes and containers found on the way are encoded until none is left.
	for si := 0; si < len(e.sq) || len(st.Heap) < len(e.hq); {
		if si < len(e.sq) {
			s := e.sq[si]
			sj := scopeJSON{Parent: -1}
			if s.parent != nil {
				sj.Parent = e.scope(s.parent)
			}
			for slot, v := range s.vals {
				if v.k == kindUnset {
					continue
				}
				sj.Facts = append(sj.Facts, factJSON{Name: m.syms.name(slot), Value: e.val(v)})
			}
			st.Scopes = append(st.Scopes, sj)
			si++
			continue
		}
		st.Heap = append(st.Heap, e.container(e.hq[len(st.Heap)]))
	}
	b, err := json.Marshal(st)
	if err != nil {
		return nil, err
	}
	if len(b) > m.lim.MaxStateBytes {
		return nil, &stateTooLarge{size: int64(len(b)), limit: int64(m.lim.MaxStateBytes)}
	}
	return b, nil
}

// stateTooLarge is the error of a state over Limits.MaxStateBytes.
type stateTooLarge struct{ size, limit int64 }

func (e *stateTooLarge) Error() string {
	return fmt.Sprintf("Could not save the run: its state would be %s, more than the run's limit of %s", formatBytes(e.size), formatBytes(e.limit))
}

// encodeFailure describes a state that could not be encoded.
func encodeFailure(err error) string {
	var big *stateTooLarge
	if errors.As(err, &big) {
		return big.Error()
	}
	return "Internal error: " + err.Error()
}

func sortedKeys(m map[string]Value) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func (e *encoder) scope(s *scope) int {
	if i, ok := e.scopes[s]; ok {
		return i
	}
	e.scopes[s] = len(e.sq)
	e.sq = append(e.sq, s)
	return len(e.sq) - 1
}

func (e *encoder) val(v Value) valJSON {
	switch v.k {
	case kindUnset:
		return valJSON{T: "unset"}
	case KindNull:
		return valJSON{T: "null"}
	case KindBool:
		return valJSON{T: "bool", B: v.i != 0}
	case KindNumber:
		return valJSON{T: "num", S: v.num().String()}
	case KindText:
		return valJSON{T: "text", S: v.s, B: v.i != 0}
	case KindTimeZone:
		return valJSON{T: "tz", S: v.s}
	case KindDate:
		return valJSON{T: "date", I: v.i}
	case KindTimeOfDay:
		return valJSON{T: "tod", I: v.i}
	case KindDateTime:
		t := v.AsDateTime()
		return valJSON{T: "dt", S: t.Format(time.RFC3339Nano), Z: t.Location().String()}
	case KindDuration:
		d := v.AsDuration()
		return valJSON{T: "dur", M: d.Months, D: d.Days, I: d.Nanos}
	case KindFile:
		f := v.AsFile()
		return valJSON{T: "file", S: f.Name, U: f.URL, C: base64.StdEncoding.EncodeToString(f.Content)}
	case kindAlias:
		s, _ := v.p.(*scope)
		if s == nil {
			return valJSON{T: "unset"}
		}
		return valJSON{T: "alias", Scope: e.scope(s), S: e.m.syms.name(int(v.i))}
	}
	// containers, by identity
	if i, ok := e.heap[v.p]; ok {
		return valJSON{T: "ref", I: int64(i)}
	}
	e.heap[v.p] = len(e.hq)
	e.hq = append(e.hq, v)
	return valJSON{T: "ref", I: int64(len(e.hq) - 1)}
}

func (e *encoder) vals(vs []Value) []valJSON {
	out := make([]valJSON, len(vs))
	for i, v := range vs {
		out[i] = e.val(v)
	}
	return out
}

func (e *encoder) container(v Value) heapJSON {
	switch v.k {
	case KindList:
		return heapJSON{T: "list", Items: e.vals(v.AsList().Items)}
	case KindSet:
		return heapJSON{T: "set", Items: e.vals(v.AsSet().items)}
	case KindDictionary:
		d := v.AsDictionary()
		return heapJSON{T: "dict", Keys: e.vals(d.keys), Items: e.vals(d.vals)}
	case KindTable:
		t := v.AsTable()
		h := heapJSON{T: "table"}
		for _, c := range t.Columns {
			h.Cols = append(h.Cols, colJSON{Name: c.Name, Vals: e.vals(c.Values)})
		}
		return h
	}
	return heapJSON{T: "list"}
}

// ---- decoding

type decoder struct {
	m      *machine
	st     *stateJSON
	scopes []*scope
	heap   []Value
}

func (m *machine) decode(data []byte) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("damaged run state: %v", r)
		}
	}()
	var st stateJSON
	if err := json.Unmarshal(data, &st); err != nil {
		return fmt.Errorf("damaged run state: %w", err)
	}
	if st.V != stateVersion && st.V != 1 {
		return fmt.Errorf("run state version %d is not supported (this interpreter reads version %d)", st.V, stateVersion)
	}
	if st.Program != m.prog.hash {
		return errors.New("the run state belongs to another program")
	}
	for _, n := range st.Names {
		m.syms.slot(n)
	}
	if err := m.decodePatches(st.Patches); err != nil {
		return err
	}
	d := &decoder{m: m, st: &st}
	d.scopes = make([]*scope, len(st.Scopes))
	for i := range d.scopes {
		d.scopes[i] = &scope{}
	}
	if err := d.decodeHeap(); err != nil {
		return err
	}
	if err := d.decodeScopes(); err != nil {
		return err
	}
	if st.Top < 0 || st.Top >= len(d.scopes) {
		return errors.New("damaged run state: no top scope")
	}
	m.top = d.scopes[st.Top]
	for _, n := range st.Outputs {
		m.defineOutput(m.syms.slot(n))
	}
	if st.V == 1 {
		for slot, v := range m.top.vals {
			if v.k != kindUnset && isOutputName(m.syms.name(slot)) {
				m.defineOutput(slot)
			}
		}
	}
	if len(st.Frames) == 0 {
		return errors.New("damaged run state: no frames")
	}
	if err := d.decodeFrames(); err != nil {
		return err
	}
	if err := d.decodeJournal(); err != nil {
		return err
	}
	if st.Cursor < 0 || st.Cursor > len(m.journal) {
		return errors.New("damaged run state: journal cursor")
	}
	m.cursor = st.Cursor
	for _, a := range st.BookAnswers {
		v, err := d.val(a.Value)
		if err != nil {
			return err
		}
		if m.bookAnswers == nil {
			m.bookAnswers = map[string]Value{}
		}
		m.bookAnswers[a.Name] = v
	}
	if st.Exception != nil {
		m.bookAsked = st.Exception.BookQuestion
	}
	if st.Exception == nil && st.Used != nil && st.Used.Steps >= 0 && st.Used.Nanos >= 0 {
		m.steps = st.Used.Steps
		m.started = time.Now().Add(-time.Duration(st.Used.Nanos))
	}
	return nil
}

// decodePatches parses again the replacement code given as guidance.
func (m *machine) decodePatches(codes []string) error {
	for _, code := range codes {
		p := &parser{lx: &lexer{src: code}, syms: m.syms, procs: m.prog.procs}
		lines, err := p.lx.lines()
		if err != nil {
			return fmt.Errorf("damaged run state: %w", err)
		}
		top, err := p.block(lines, false)
		if err != nil {
			return fmt.Errorf("damaged run state: %w", err)
		}
		_ = p.resolveCalls()
		m.patches = append(m.patches, &patch{code: code, top: top, blocks: p.allBlocks()})
	}
	return nil
}

// decodeHeap makes the state's containers, then fills them (they may
// refer to each other).
func (d *decoder) decodeHeap() error {
	st := d.st
	d.heap = make([]Value, len(st.Heap))
	for i, h := range st.Heap {
		switch h.T {
		case "list":
			d.heap[i] = ListValue()
		case "set":
			d.heap[i] = SetValue(NewSet())
		case "dict":
			d.heap[i] = DictValue(NewDictionary())
		case "table":
			d.heap[i] = TableValue(&Table{})
		default:
			return fmt.Errorf("damaged run state: container %q", h.T)
		}
	}
	for i, h := range st.Heap {
		if err := d.fill(d.heap[i], h); err != nil {
			return err
		}
	}
	return nil
}

// decodeScopes fills the scopes with their facts and links their parents,
// which must not loop.
func (d *decoder) decodeScopes() error {
	m, st := d.m, d.st
	for i, sj := range st.Scopes {
		s := d.scopes[i]
		if sj.Parent >= 0 {
			if sj.Parent >= len(d.scopes) || sj.Parent == i {
				return errors.New("damaged run state: scope parent")
			}
			s.parent = d.scopes[sj.Parent]
		}
		for _, f := range sj.Facts {
			v, err := d.val(f.Value)
			if err != nil {
				return err
			}
			s.set(m.syms.slot(f.Name), v)
		}
	}
	// a scope's parents must not loop
	for _, s := range d.scopes {
		n := 0
		for x := s; x != nil; x = x.parent {
			if n++; n > len(d.scopes) {
				return errors.New("damaged run state: scopes loop")
			}
		}
	}
	return nil
}

// decodeFrames restores the open blocks, loops and calls, each checked to
// stand where its program (or replacement) has such a block.
func (d *decoder) decodeFrames() error {
	m, st := d.m, d.st
	for i, fj := range st.Frames {
		var blocks []*block
		switch {
		case fj.Src == -1:
			blocks = m.prog.blocks
		case fj.Src >= 0 && fj.Src < len(m.patches):
			blocks = m.patches[fj.Src].blocks
		default:
			return errors.New("damaged run state: frame source")
		}
		if fj.Block < 0 || fj.Block >= len(blocks) || fj.Scope < 0 || fj.Scope >= len(d.scopes) {
			return errors.New("damaged run state: frame")
		}
		f := frame{kind: fj.Kind, src: fj.Src, blk: blocks[fj.Block], pc: fj.PC, sc: d.scopes[fj.Scope], origin: fj.Origin, idx: fj.Idx}
		if f.pc < 0 || f.pc > len(f.blk.stmts) || f.kind > fBody {
			return errors.New("damaged run state: frame position")
		}
		if i > 0 {
			// frames above others stand on their caller's statement
			c := &m.frames[i-1]
			if (f.kind == fArgs || f.kind == fBody) && (c.pc >= len(c.blk.stmts) || !callsAt(c.blk.stmts[c.pc])) {
				return errors.New("damaged run state: a call frame without its call")
			}
			if f.kind == fArgs && !argsOf(c.blk.stmts[c.pc], f.blk) {
				return errors.New("damaged run state: argument block")
			}
		} else if f.kind != fBlock {
			return errors.New("damaged run state: first frame")
		}
		if f.kind == fLoop {
			for _, it := range fj.Items {
				v, err := d.val(it)
				if err != nil {
					return err
				}
				f.items = append(f.items, v)
			}
			if f.idx < 0 || f.idx >= len(f.items) {
				return errors.New("damaged run state: loop position")
			}
			f.slot = m.syms.slot(fj.Slot)
			if fj.Saved != nil {
				v, err := d.val(*fj.Saved)
				if err != nil {
					return err
				}
				f.saved = v
			}
		}
		if f.kind == fBody {
			m.depth++
		}
		m.frames = append(m.frames, f)
	}
	return nil
}

// decodeJournal restores the book results and clock readings.
func (d *decoder) decodeJournal() error {
	m, st := d.m, d.st
	for _, jj := range st.Journal {
		j := journalEntry{kind: jj.Kind, proc: jj.Proc}
		switch jj.Kind {
		case "clock":
			t, err := time.Parse(time.RFC3339Nano, jj.Time)
			if err != nil {
				return fmt.Errorf("damaged run state: %w", err)
			}
			j.time = t
		case "book":
			j.outputs = map[string]Value{}
			for _, o := range jj.Outputs {
				v, err := d.val(o.Value)
				if err != nil {
					return err
				}
				j.outputs[o.Name] = v
			}
		default:
			return errors.New("damaged run state: journal")
		}
		m.journal = append(m.journal, j)
		m.journalBytes += journalSize(j)
	}
	return nil
}

func (d *decoder) vals(in []valJSON) ([]Value, error) {
	out := make([]Value, len(in))
	for i, x := range in {
		v, err := d.val(x)
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

func (d *decoder) fill(c Value, h heapJSON) error {
	switch c.k {
	case KindList:
		items, err := d.vals(h.Items)
		if err != nil {
			return err
		}
		c.AsList().Items = items
	case KindSet:
		items, err := d.vals(h.Items)
		if err != nil {
			return err
		}
		for _, it := range items {
			if _, err := c.AsSet().Add(it); err != nil {
				return fmt.Errorf("damaged run state: %w", err)
			}
		}
	case KindDictionary:
		keys, err := d.vals(h.Keys)
		if err != nil {
			return err
		}
		vals, err := d.vals(h.Items)
		if err != nil {
			return err
		}
		if len(keys) != len(vals) {
			return errors.New("damaged run state: dictionary")
		}
		for i := range keys {
			if err := c.AsDictionary().Set(keys[i], vals[i]); err != nil {
				return fmt.Errorf("damaged run state: %w", err)
			}
		}
	case KindTable:
		t := c.AsTable()
		for _, col := range h.Cols {
			vals, err := d.vals(col.Vals)
			if err != nil {
				return err
			}
			if len(t.Columns) > 0 && len(vals) != len(t.Columns[0].Values) {
				return errors.New("damaged run state: table columns differ in length")
			}
			t.Columns = append(t.Columns, Column{Name: col.Name, Values: vals})
		}
	}
	return nil
}

func (d *decoder) val(x valJSON) (Value, error) {
	bad := func() (Value, error) { return Value{}, fmt.Errorf("damaged run state: value %q", x.T) }
	switch x.T {
	case "unset":
		return Value{}, nil
	case "null":
		return Null(), nil
	case "bool":
		return Bool(x.B), nil
	case "num":
		n, err := ParseNumber(x.S)
		if err != nil {
			return bad()
		}
		return Num(n), nil
	case "text":
		return Value{k: KindText, s: x.S, i: b2i(x.B)}, nil
	case "tz":
		return TimeZoneValue(x.S), nil
	case "date":
		v := Value{k: KindDate, i: x.I}
		if !validDate(v.AsDate()) {
			return bad()
		}
		return v, nil
	case "tod":
		if x.I < 0 || x.I >= 86400e9 {
			return bad()
		}
		return Value{k: KindTimeOfDay, i: x.I}, nil
	case "dt":
		t, err := time.Parse(time.RFC3339Nano, x.S)
		if err != nil {
			return bad()
		}
		if x.Z != "" && x.Z != "UTC" && x.Z != "Local" {
			if loc, err := time.LoadLocation(x.Z); err == nil {
				t = t.In(loc)
			}
		}
		return DateTimeValue(t), nil
	case "dur":
		return DurationValue(Duration{Months: x.M, Days: x.D, Nanos: x.I}), nil
	case "file":
		c, err := base64.StdEncoding.DecodeString(x.C)
		if err != nil {
			return bad()
		}
		if len(c) == 0 {
			c = nil
		}
		return FileValue(&File{Name: x.S, URL: x.U, Content: c}), nil
	case "alias":
		if x.Scope < 0 || x.Scope >= len(d.scopes) {
			return bad()
		}
		return Value{k: kindAlias, i: int64(d.m.syms.slot(x.S)), p: d.scopes[x.Scope]}, nil
	case "ref":
		if x.I < 0 || x.I >= int64(len(d.heap)) {
			return bad()
		}
		return d.heap[x.I], nil
	}
	return bad()
}

// callsAt reports whether a statement may stand below a call frame: a call,
// a keyword statement that called a procedure of its sentence, a started run.
func callsAt(s *stmt) bool {
	return s.op == opCall || s.call != nil || s.op == opStartRun
}

// argsOf reports whether b is the argument block of the statement.
func argsOf(s *stmt, b *block) bool {
	if s.op == opStartRun {
		return s.body == b
	}
	return s.call != nil && s.call.args == b
}

// Fact is a fact's name and value.
type Fact struct {
	Name  string
	Value Value
}

// StateFacts returns the facts a suspended or stopped run's state holds
// where it stopped (state as Result.State gives it, prog the program it
// came from): those of the innermost scope and of the scopes its reads
// fall through to, a name once (its innermost value), in the order the
// program first named them. Facts not set yet are left out.
func StateFacts(prog *Program, state []byte) ([]Fact, error) {
	m := newMachine(context.Background(), prog, Options{})
	if err := m.decode(state); err != nil {
		return nil, err
	}
	sc := m.top
	if n := len(m.frames); n > 0 && m.frames[n-1].sc != nil {
		sc = m.frames[n-1].sc
	}
	vals := map[int]Value{}
	for s := sc; s != nil; s = s.parent {
		for slot, v := range s.vals {
			if _, ok := vals[slot]; !ok && v.IsValid() {
				vals[slot] = v
			}
		}
	}
	slots := make([]int, 0, len(vals))
	for slot := range vals {
		slots = append(slots, slot)
	}
	slices.Sort(slots)
	out := make([]Fact, 0, len(slots))
	for _, slot := range slots {
		out = append(out, Fact{Name: m.syms.name(slot), Value: vals[slot]})
	}
	return out, nil
}
