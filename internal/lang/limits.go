package lang

import (
	"strconv"
	"time"
	"unsafe"
)

// Limits bound what one run may cost its server. A zero field takes its
// value from DefaultLimits; a negative field means no limit.
//
// The memory limits are checked before a value grows (a text joined, a
// list extended, a container copied), so a run never allocates what it is
// not allowed to hold: the statement raises a user_system_error exception
// naming the limit instead. The step and time limits bound the execution
// from the start or from the last guidance (a run stopped, given up for a
// turn or recovered from a checkpoint goes on with what is left): their
// exception may be retried, which goes on with a fresh budget, or skipped.
type Limits struct {
	// MaxTextBytes bounds the length of one text, in bytes.
	MaxTextBytes int
	// MaxItems bounds the elements of one list, set or dictionary and the
	// rows of one table.
	MaxItems int
	// MaxFactsBytes bounds the memory the run's facts take together (their
	// estimated in-memory size: texts, containers and the log of `say`).
	MaxFactsBytes int64
	// MaxJournalBytes bounds the journal: the book results and clock
	// readings the run keeps so that it never repeats them.
	MaxJournalBytes int64
	// MaxStateBytes bounds the saved state of the run (what is stored at
	// each checkpoint and suspension). A state over it cannot be saved: the
	// run fails.
	MaxStateBytes int
	// MaxSteps bounds the statements executed.
	MaxSteps int64
	// MaxDuration bounds the wall time executing (book calls included).
	MaxDuration time.Duration
	// MaxChildRuns bounds the runs one run starts with `start a run` (with
	// Options.Runs: child runs of their own).
	MaxChildRuns int
	// MaxRunDepth bounds how deep child runs nest: a run no run started is
	// at depth 0, its children at 1; a run at MaxRunDepth starts none. The
	// run engine enforces it (it knows a run's parents).
	MaxRunDepth int
}

// DefaultLimits are the limits of a run whose Options leave them zero.
var DefaultLimits = Limits{
	MaxTextBytes:    4 << 20,
	MaxItems:        1_000_000,
	MaxFactsBytes:   64 << 20,
	MaxJournalBytes: 16 << 20,
	MaxStateBytes:   96 << 20,
	MaxSteps:        50_000_000,
	MaxDuration:     60 * time.Second,
	MaxChildRuns:    1_000,
	MaxRunDepth:     2,
}

// Effective is l as a run applies it: zero fields from DefaultLimits,
// negative ones "no limit" (a very large number).
func (l Limits) Effective() Limits { return l.withDefaults() }

// withDefaults fills zero fields from DefaultLimits and turns negative ones
// into "no limit".
func (l Limits) withDefaults() Limits {
	const noLimit = int64(1) << 62
	pick := func(v, def int64) int64 {
		switch {
		case v == 0:
			return def
		case v < 0:
			return noLimit
		}
		return v
	}
	d := DefaultLimits
	return Limits{
		MaxTextBytes:    int(pick(int64(l.MaxTextBytes), int64(d.MaxTextBytes))),
		MaxItems:        int(pick(int64(l.MaxItems), int64(d.MaxItems))),
		MaxFactsBytes:   pick(l.MaxFactsBytes, d.MaxFactsBytes),
		MaxJournalBytes: pick(l.MaxJournalBytes, d.MaxJournalBytes),
		MaxStateBytes:   int(pick(int64(l.MaxStateBytes), int64(d.MaxStateBytes))),
		MaxSteps:        pick(l.MaxSteps, d.MaxSteps),
		MaxDuration:     time.Duration(pick(int64(l.MaxDuration), int64(d.MaxDuration))),
		MaxChildRuns:    int(pick(int64(l.MaxChildRuns), int64(d.MaxChildRuns))),
		MaxRunDepth:     int(pick(int64(l.MaxRunDepth), int64(d.MaxRunDepth))),
	}
}

// valueSize is the memory a Value takes in a slice or a scope.
const valueSize = int64(unsafe.Sizeof(Value{}))

// entryOverhead is the extra memory of a dictionary entry or set member:
// its key in the index map.
const entryOverhead = 48

// formatBytes writes a byte count as a person reads it: "4 MiB",
// "1,048,577 bytes".
func formatBytes(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return strconv.FormatInt(n>>30, 10) + " GiB"
	case n >= 1<<20 && n%(1<<20) == 0:
		return strconv.FormatInt(n>>20, 10) + " MiB"
	case n >= 1<<10 && n%(1<<10) == 0:
		return strconv.FormatInt(n>>10, 10) + " KiB"
	case n >= 1<<20:
		return strconv.FormatFloat(float64(n)/(1<<20), 'f', 1, 64) + " MiB"
	}
	return formatCount(n) + " bytes"
}

// formatCount writes 1234567 as "1,234,567".
func formatCount(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := n < 0
	if neg {
		s = s[1:]
	}
	var out []byte
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	if neg {
		return "-" + string(out)
	}
	return string(out)
}

// limitErr is the exception of a value that would exceed a limit.
func limitErr(what string, got, limit int64, unit func(int64) string) *raise {
	return userErr("Could not go on: %s would be %s, more than the run's limit of %s", what, unit(got), unit(limit))
}

func items64(n int64) string { return formatCount(n) + " items" }

// textOK checks that a text of n bytes may be made.
func (m *machine) textOK(n int64) error {
	if n > int64(m.lim.MaxTextBytes) {
		return limitErr("the text", n, int64(m.lim.MaxTextBytes), formatBytes)
	}
	return m.reserve(n + valueSize)
}

// itemsOK checks that a container of n items may be made or grown to n.
func (m *machine) itemsOK(n int64, kind Kind) error {
	if n > int64(m.lim.MaxItems) {
		return userErr("Could not go on: the %s would hold %s, more than the run's limit of %s", kind, items64(n), items64(int64(m.lim.MaxItems)))
	}
	return nil
}

// reserve accounts for n more bytes of facts about to be made. The count of
// what was made since the last measure only grows; when it says the facts
// may be over the limit, the facts are measured (what was made and dropped
// since is then forgotten) and only a real excess raises.
func (m *machine) reserve(n int64) error {
	m.grown += n
	if m.live+m.grown <= m.lim.MaxFactsBytes {
		return nil
	}
	m.live = m.measure()
	m.grown = n
	if m.live+n > m.lim.MaxFactsBytes {
		return limitErr("the run's facts", m.live+n, m.lim.MaxFactsBytes, formatBytes)
	}
	return nil
}

// measure is the estimated memory of everything the run holds: the facts of
// every open scope, the lists loops go through, and the log.
func (m *machine) measure() int64 {
	w := &sizer{seen: map[any]bool{}}
	for i := range m.frames {
		f := &m.frames[i]
		for s := f.sc; s != nil; s = s.parent {
			w.scope(s)
		}
		if f.kind == fLoop {
			w.n += int64(len(f.items)) * valueSize
			for _, it := range f.items {
				w.val(it, 0)
			}
			w.val(f.saved, 0)
		}
	}
	if m.top != nil {
		w.scope(m.top)
	}
	return w.n + m.logBytes
}

// sizer adds up the estimated memory of values, each container and scope
// once.
type sizer struct {
	seen map[any]bool
	n    int64
}

func (w *sizer) scope(s *scope) {
	if w.seen[s] {
		return
	}
	w.seen[s] = true
	w.n += int64(cap(s.vals)) * valueSize
	for _, v := range s.vals {
		w.val(v, 0)
	}
}

func (w *sizer) val(v Value, depth int) {
	if depth > maxDepth {
		return
	}
	switch v.k {
	case KindText, KindTimeZone:
		w.n += int64(len(v.s))
	case KindFile:
		f := v.AsFile()
		w.n += int64(len(f.Name) + len(f.URL) + len(f.Content))
	case KindList, KindDictionary, KindSet, KindTable:
		if w.seen[v.p] {
			return
		}
		w.seen[v.p] = true
		switch v.k {
		case KindList:
			its := v.AsList().Items
			w.n += int64(cap(its)) * valueSize
			for _, it := range its {
				w.val(it, depth+1)
			}
		case KindSet:
			s := v.AsSet()
			w.n += int64(cap(s.items)) * (valueSize + entryOverhead)
			for _, it := range s.items {
				w.val(it, depth+1)
			}
		case KindDictionary:
			d := v.AsDictionary()
			w.n += int64(cap(d.keys)+cap(d.vals))*valueSize + int64(len(d.keys))*entryOverhead
			for i := range d.keys {
				w.val(d.keys[i], depth+1)
				w.val(d.vals[i], depth+1)
			}
		case KindTable:
			for _, c := range v.AsTable().Columns {
				w.n += int64(len(c.Name)) + int64(cap(c.Values))*valueSize
				for _, x := range c.Values {
					w.val(x, depth+1)
				}
			}
		}
	case kindAlias:
		if s, ok := v.p.(*scope); ok {
			w.scope(s)
		}
	}
}

// sizeOf is the estimated memory of one value (containers counted each
// time they appear).
func sizeOf(v Value) int64 {
	w := &sizer{seen: map[any]bool{}}
	w.val(v, 0)
	return w.n + valueSize
}

// textLen is the length in bytes of valueText(v), or an estimate from
// above for containers written as JSON; it stops counting past limit.
func textLen(v Value, limit int64) int64 {
	switch v.k {
	case KindText, KindTimeZone:
		return int64(len(v.s))
	case KindNull:
		return int64(len("nothing"))
	case KindFile:
		f := v.AsFile()
		return int64(max(len(f.Name), len(f.URL)))
	case KindList:
		var n int64
		for i, it := range v.AsList().Items {
			if i > 0 {
				n += 2
			}
			if n += textLen(it, limit-n); n > limit {
				return n
			}
		}
		return n
	case KindDictionary, KindSet, KindTable:
		// JSON: at most six bytes per byte of text (\u0000), and some
		// punctuation per value.
		return 6*sizeOf(v) + 64
	}
	return 64
}

// checkText checks a text made by an operation that could not be measured
// before (a change of case): it is dropped if too long.
func (m *machine) checkText(s string) error {
	if len(s) > m.lim.MaxTextBytes {
		return limitErr("the text", int64(len(s)), int64(m.lim.MaxTextBytes), formatBytes)
	}
	return nil
}

// clone is clone(v), with the copy's memory counted against the facts
// limit before it is made.
func (m *machine) clone(v Value) (Value, error) {
	if isContainer(v.k) {
		return m.cloneContainer(v)
	}
	return v, nil // a scalar is its own copy
}

// isContainer reports whether values of kind k hold others by reference
// (clone copies them).
func isContainer(k Kind) bool {
	return k == KindList || k == KindDictionary || k == KindTable || k == KindSet
}

func (m *machine) cloneContainer(v Value) (Value, error) {
	if err := m.reserve(sizeOf(v)); err != nil {
		return Value{}, err
	}
	return clone(v), nil
}

// journalOK checks, before the run adds to its journal, that the journal
// has room.
func (m *machine) journalOK() error {
	if m.journalBytes >= m.lim.MaxJournalBytes {
		return userErr("Could not go on: the run's journal of book results and clock readings holds %s, the run's limit", formatBytes(m.lim.MaxJournalBytes))
	}
	return nil
}

// childRunsOK checks that the run may start one more run: fewer than
// MaxChildRuns were started (the journal's starts, counted once and then
// as they are added).
func (m *machine) childRunsOK() error {
	if m.childRuns < 0 {
		m.childRuns = 0
		for _, e := range m.journal {
			if e.kind == "book" && e.proc == startRunKey {
				m.childRuns++
			}
		}
	}
	if int64(m.childRuns) >= int64(m.lim.MaxChildRuns) {
		return userErr("Could not start a run: this run has started %s runs, the run's limit", formatCount(int64(m.lim.MaxChildRuns)))
	}
	return nil
}

// journalSize is the estimated size of a journal entry.
func journalSize(e journalEntry) int64 {
	n := int64(64 + len(e.proc))
	for k, v := range e.outputs {
		n += int64(len(k)) + sizeOf(v)
	}
	return n
}

// budgetErr is the exception of a run that used its step or time budget.
func (m *machine) budgetErr(what string) *raise {
	return userErr("Could not go on: this execution of the run reached its %s. Retry to go on with a fresh budget, or skip the statement", what)
}

// budget checks the step and time budgets of this execution, and whether
// the run should give its worker up for a while. It runs every 1,024
// statements.
func (m *machine) budget() (*raise, bool) {
	if time.Since(m.started) > m.lim.MaxDuration {
		return m.budgetErr("time limit of " + m.lim.MaxDuration.String()), false
	}
	if m.opts.Yield != nil && m.opts.Yield() {
		return nil, true
	}
	return nil, false
}

// growthOK checks, before a op b is computed, that its result stays within
// the limits: a text joined or repeated, two lists joined.
func (m *machine) growthOK(op byte, a, b Value) error {
	switch op {
	case '+':
		if a.k == KindNumber && b.k == KindNumber {
			return nil
		}
		if a.k == KindText || b.k == KindText {
			limit := int64(m.lim.MaxTextBytes) + 1
			n := textLen(a, limit)
			if n <= limit {
				n += textLen(b, limit-n)
			}
			return m.textOK(n)
		}
		if a.k == KindList && b.k == KindList {
			n := int64(len(a.AsList().Items) + len(b.AsList().Items))
			if err := m.itemsOK(n, KindList); err != nil {
				return err
			}
			return m.reserve(n*valueSize + valueSize)
		}
	case '*':
		if a.k == KindText && b.k == KindNumber {
			if i, ok := b.num().Int64(); ok && i > 0 {
				n := int64(len(a.s))
				if n > 0 && i > (1<<62)/n {
					return m.textOK(1 << 62)
				}
				return m.textOK(n * i)
			}
		}
	}
	return nil
}

// convertOK checks a conversion that makes a text or a list.
func (m *machine) convertOK(v Value, to string) error {
	switch to {
	case "text":
		limit := int64(m.lim.MaxTextBytes) + 1
		return m.textOK(textLen(v, limit))
	case "list", "set":
		switch v.k {
		case KindTable:
			return m.reserve(int64(v.AsTable().NumRows()) * valueSize * 2)
		case KindSet:
			return m.reserve(int64(v.AsSet().Len()) * valueSize * 2)
		}
	}
	return nil
}

// items is items(v), with the rows a table makes counted against the facts
// limit before they are made.
func (m *machine) items(v Value) ([]Value, bool, error) {
	if v.k == KindTable {
		t := v.AsTable()
		if err := m.reserve(int64(t.NumRows()) * (valueSize + int64(len(t.Columns))*(2*valueSize+entryOverhead))); err != nil {
			return nil, false, err
		}
	}
	its, ok := items(v)
	return its, ok, nil
}

// arithOK checks, before an add or multiply statement changes its target t
// with x, that the result stays within the limits.
func (m *machine) arithOK(s *stmt, t, x Value) error {
	switch s.op {
	case opMultiply:
		return m.growthOK('*', t, x)
	case opAdd:
	default:
		return nil
	}
	switch t.k {
	case KindList:
		if err := m.itemsOK(int64(len(t.AsList().Items))+1, KindList); err != nil {
			return err
		}
		return m.reserve(sizeOf(x))
	case KindSet:
		if err := m.itemsOK(int64(t.AsSet().Len())+1, KindSet); err != nil {
			return err
		}
		return m.reserve(sizeOf(x) + entryOverhead)
	case KindTable:
		if err := m.itemsOK(int64(t.AsTable().NumRows())+1, KindTable); err != nil {
			return err
		}
		if x.k == KindDictionary {
			return m.reserve(sizeOf(x) + int64(len(t.AsTable().Columns))*valueSize)
		}
	case KindDictionary:
		if x.k == KindDictionary {
			if err := m.itemsOK(int64(t.AsDictionary().Len()+x.AsDictionary().Len()), KindDictionary); err != nil {
				return err
			}
			return m.reserve(sizeOf(x))
		}
	case KindText:
		if x.k == KindText {
			return m.growthOK('+', t, x)
		}
	default:
		return m.growthOK('+', t, x)
	}
	return nil
}
