package lang

import (
	"errors"
	"strings"
)

// exec runs one statement. On an error nothing has changed and the frame
// still stands at the statement, so that it can run again.
func (m *machine) exec(f *frame, s *stmt) error {
	switch s.op {
	case opAdd, opSubtract, opMultiply, opDivide:
		return m.arith(f, s)
	case opAssign:
		return m.execAssign(f, s)
	case opAlias:
		return m.execAlias(f, s)
	case opImagine:
		return m.execImagine(f, s)
	case opGet, opFind:
		return m.execGet(f, s)
	case opAsk:
		return m.execAsk(f, s)
	case opIf:
		return m.execIf(f, s)
	case opEach:
		return m.execEach(f, s)
	case opValidate:
		return m.execValidate(f, s)
	case opSay:
		return m.execSay(f, s)
	case opStop:
		return errStop
	case opRemove:
		return m.remove(f, s)
	case opReturn:
		return m.ret(s)
	case opStartRun:
		m.push(fArgs, f.src, s.body, &scope{parent: m.cur}, f.origin)
		return nil
	case opWaitRuns:
		return m.waitRuns(f)
	case opCall:
		return m.call(f, s)
	}
	return internalErr("unknown statement")
}

// execAssign runs `the X is E`, `the Xs are A, B`, `set the X to E`.
func (m *machine) execAssign(f *frame, s *stmt) error {
	if s.call == nil && s.list == nil && !s.plural && len(s.target.fields) == 0 {
		// a number in the small form, set in the current scope (see
		// binExpr.small); an alias there takes the general path
		if c, e, ok := smallOf(m, s.x); ok && !m.cur.isAlias(s.target.slot) {
			m.cur.setNum(s.target.slot, c, e)
			m.cur.setNum(aboveSlot, c, e)
			if m.opts.SetAt != nil {
				m.setAt(s.target, *m.lookup(s.target.slot))
			}
			f.pc++
			return nil
		}
	}
	if s.call != nil {
		// `round the X`: a procedure or book procedure of that sentence
		// takes the statement's place (see yields).
		if ok, err := m.callable(s); err != nil {
			return err
		} else if ok {
			return m.call(f, s)
		}
	}
	var v Value
	if s.list != nil || s.plural {
		xs := s.list
		if xs == nil {
			xs = []expr{s.x}
		}
		items := make([]Value, len(xs))
		for i, x := range xs {
			it, err := x.eval(m)
			if err != nil {
				return err
			}
			if items[i], err = m.clone(it); err != nil {
				return err
			}
		}
		if len(items) == 1 && (items[0].k == KindList || items[0].k == KindSet || items[0].k == KindTable) {
			v = items[0]
		} else {
			v = ListValue(items...)
		}
	} else {
		x, err := s.x.eval(m)
		if err != nil {
			return err
		}
		if v, err = m.clone(x); err != nil {
			return err
		}
	}
	if err := m.assign(s.target, v); err != nil {
		return err
	}
	m.cur.set(aboveSlot, v)
	f.pc++
	return nil
}

// execAlias runs `use the X as the Y`: Y refers to X (a fact alone), else takes its value.
func (m *machine) execAlias(f *frame, s *stmt) error {
	if ref, ok := s.x.(*refExpr); ok && len(ref.fields) == 0 && ref.name != "above" {
		v, err := ref.eval(m)
		if err != nil {
			return err
		}
		hs, hslot := m.holder(ref.slot, false)
		if len(s.target.fields) == 0 {
			if hs != m.cur || hslot != s.target.slot { // not `use the X as the X`
				m.cur.set(s.target.slot, Value{k: kindAlias, i: int64(hslot), p: hs})
			}
			m.cur.set(aboveSlot, v)
			f.pc++
			return nil
		}
	}
	v, err := s.x.eval(m)
	if err != nil {
		return err
	}
	if err := m.assign(s.target, v); err != nil {
		return err
	}
	m.cur.set(aboveSlot, v)
	f.pc++
	return nil
}

// execImagine runs `imagine a report` (or a procedure of the sentence `create a …`).
func (m *machine) execImagine(f *frame, s *stmt) error {
	if ok, err := m.callable(s); err != nil {
		return err
	} else if ok {
		return m.call(f, s)
	}
	if s.call != nil && !strings.HasPrefix(strings.ToLower(s.text), "imagine") && notDictionary(s.target.name) {
		// `create a sample table`: no book makes one, and an empty
		// dictionary is not what was asked for
		return m.unknown(s)
	}
	v := DictValue(NewDictionary())
	if err := m.assign(s.target, v); err != nil {
		return err
	}
	m.cur.set(aboveSlot, v)
	f.pc++
	return nil
}

// execGet runs `get E` and `find E` (a fact, else a procedure of the sentence, else the question).
func (m *machine) execGet(f *frame, s *stmt) error {
	if s.op == opFind || s.call != nil {
		m.noAnswers = true
	}
	v, err := s.x.eval(m)
	m.noAnswers = false
	if err != nil && s.call != nil && isMissing(err) {
		// no fact of that name: a procedure of the sentence, else the question
		ok, cerr := m.callable(s)
		if cerr != nil {
			return cerr
		}
		if ok {
			return m.call(f, s)
		}
		if s.op == opGet && m.answers != nil {
			v, err = s.x.eval(m)
		}
	}
	if err != nil {
		var r *raise
		if s.op == opFind && errors.As(err, &r) && r.group == GroupMissingValues {
			v = Null()
			if ref, ok := s.x.(*refExpr); ok && len(ref.fields) == 0 && ref.name != "above" && !m.has(ref.slot) {
				// `find the X` that finds nothing: the X is nothing
				if err := m.assign(ref, Null()); err != nil {
					return err
				}
			}
		} else {
			return err
		}
	}
	if s.target != nil {
		c, err := m.clone(v)
		if err != nil {
			return err
		}
		if err := m.assign(s.target, c); err != nil {
			return err
		}
	}
	if ref, ok := s.x.(*refExpr); ok && s.bare && f.kind == fArgs && len(ref.fields) == 0 && ref.name != "above" {
		// `the resume` alone in an argument block passes the fact
		// under its own name
		m.cur.set(ref.slot, clone(v))
	}
	m.cur.set(aboveSlot, v)
	f.pc++
	return nil
}

// execAsk runs `ask E`: the answer given up front, else the question.
func (m *machine) execAsk(f *frame, s *stmt) error {
	q, err := s.x.eval(m)
	if err != nil {
		return err
	}
	if err := m.convertOK(q, "text"); err != nil {
		return err
	}
	question := valueText(q)
	var choices []Value
	for _, c := range s.choices {
		v, err := c.eval(m)
		if err != nil {
			return err
		}
		choices = append(choices, v)
	}
	if v, ok := m.answer(question); ok {
		m.cur.set(aboveSlot, v)
		m.cur.set(m.syms.slot("answer"), clone(v))
		f.pc++
		return nil
	}
	return &raise{group: GroupMissingValues, msg: question, question: question, choices: choices}
}

// execIf enters the first branch whose condition holds.
func (m *machine) execIf(f *frame, s *stmt) error {
	for _, br := range s.branches {
		if br.cond != nil {
			c, err := br.cond.eval(m)
			if err != nil {
				return err
			}
			ok, err := truth(c, br.cond)
			if err != nil {
				return err
			}
			if !ok {
				continue
			}
		}
		f.pc++
		m.push(fBlock, f.src, br.body, m.cur, f.origin)
		return nil
	}
	f.pc++
	return nil
}

// execEach enters the loop of `process each`.
func (m *machine) execEach(f *frame, s *stmt) error {
	var list Value
	if s.x != nil {
		v, err := s.x.eval(m)
		if err != nil {
			return err
		}
		list = v
	} else {
		found := false
		for _, n := range s.plurals {
			slot, ok := m.syms.lookup(n)
			if !ok {
				continue
			}
			v, err := m.read(slot, n)
			if err == nil {
				list, found = v, true
				break
			}
		}
		if !found {
			return missing("the " + s.plurals[len(s.plurals)-1])
		}
	}
	its, ok, err := m.items(list)
	if err != nil {
		return err
	}
	if !ok {
		return userErr("Could not go through each %s: %s is not a list", s.item, describe(list))
	}
	f.pc++
	if len(its) == 0 {
		return nil
	}
	its = its[:len(its):len(its)]
	saved := m.cur.get(s.itemSlot)
	sc := m.cur
	lf := m.push(fLoop, f.src, s.body, sc, f.origin)
	lf.items, lf.slot, lf.saved = its, s.itemSlot, saved
	sc.set(s.itemSlot, its[0])
	return nil
}

// execValidate checks every `ensure` and raises one exception for the failed ones.
func (m *machine) execValidate(f *frame, s *stmt) error {
	var failed []string
	for _, c := range s.checks {
		v, err := c.cond.eval(m)
		if err != nil {
			return err
		}
		ok, err := truth(v, c.cond)
		if err != nil {
			return err
		}
		if !ok {
			failed = append(failed, c.text)
		}
	}
	if len(failed) > 0 {
		return &raise{group: GroupMissingValues, msg: "Please review the following facts: " + strings.Join(failed, "; "), failed: failed}
	}
	f.pc++
	return nil
}

// execSay writes a line to the run's log.
func (m *machine) execSay(f *frame, s *stmt) error {
	if ok, err := m.callable(s); err != nil {
		return err
	} else if ok {
		return m.call(f, s)
	}
	v, err := s.x.eval(m)
	if err != nil {
		return err
	}
	if err := m.convertOK(v, "text"); err != nil {
		return err
	}
	line := valueText(v)
	if err := m.reserve(int64(len(line))); err != nil {
		return err
	}
	m.log = append(m.log, line)
	m.logBytes += int64(len(line)) + 16
	if m.opts.Say != nil {
		m.opts.Say(line)
	}
	if m.opts.SayAt != nil {
		m.opts.SayAt(line, m.currentSpan())
	}
	f.pc++
	return nil
}

func isMissing(err error) bool {
	var r *raise
	return errors.As(err, &r) && r.group == GroupMissingValues
}

// unsetList reports whether target names, alone, a fact with a plural name
// that has no value: `add X to the Ys` then starts the list.
func (m *machine) unsetList(target expr) bool {
	r, ok := target.(*refExpr)
	return ok && len(r.fields) == 0 && !m.has(r.slot) && isPluralName(r.name)
}

// arith runs add/subtract/multiply/divide.
func (m *machine) arith(f *frame, s *stmt) error {
	if s.op != opDivide && len(s.target.fields) == 0 {
		// numbers in the small form: the target's value is changed where
		// it is (see binExpr.small)
		if xc, xe, ok := smallOf(m, s.x); ok {
			if t := m.lookup(s.target.slot); t != nil && t.k == KindNumber && t.p == nil {
				var c int64
				var e int32
				switch s.op {
				case opAdd:
					c, e, ok = addWords(t.i, t.e, xc, xe, false)
				case opSubtract:
					c, e, ok = addWords(t.i, t.e, xc, xe, true)
				default:
					c, e, ok = mulWords(t.i, t.e, xc, xe)
				}
				if ok {
					t.i, t.e = c, e
					m.cur.setNum(aboveSlot, c, e)
					if m.opts.SetAt != nil {
						m.setAt(s.target, *t)
					}
					f.pc++
					return nil
				}
			}
		}
	}
	x, err := s.x.eval(m)
	if err != nil {
		return err
	}
	t, err := s.target.eval(m)
	if err != nil {
		if s.op != opAdd || !isMissing(err) || !m.unsetList(s.target) {
			return err
		}
		t = ListValue() // `add X to the Ys`, the Ys never set: a new list
	}
	if (t.k == KindText) != (x.k == KindText) && t.k != KindList && t.k != KindSet {
		// a text input used as a number, a date, … (see readPair)
		var read bool
		if t, x, read = readPair(t, x); !read && (t.k == KindText && t.i != 0 && x.k != KindNull || x.k == KindText && x.i != 0 && t.k != KindNull) {
			txt, other := t, x
			if x.k == KindText {
				txt, other = x, t
			}
			return userErr("Could not %s: %s is not %s", s.text, describe(txt), kindWanted(other))
		}
	}
	if t.k != KindNumber || x.k != KindNumber {
		if err := m.arithOK(s, t, x); err != nil {
			return err
		}
	}
	var v Value
	var r *raise
	switch s.op {
	case opAdd:
		switch {
		case t.k == KindNumber && x.k == KindNumber:
			if r, ok := arithSmall('+', &t, &x); ok {
				v = r
				break
			}
			n, err := t.num().Add(x.num())
			if err != nil {
				return numErr("add", t, x, err)
			}
			v = Num(n)
		case t.k == KindList:
			l := t.AsList()
			l.Items = append(l.Items, clone(x)) // counted by arithOK
			v = t
		case t.k == KindSet:
			if _, err := t.AsSet().Add(x); err != nil {
				return userErr("Could not add %s to %s: %v", describe(x), s.target.display, err)
			}
			v = t
		case t.k == KindTable:
			if x.k != KindDictionary {
				return userErr("Could not add %s to %s: a table takes rows (dictionaries)", describe(x), s.target.display)
			}
			t.AsTable().AppendRow(x.AsDictionary())
			v = t
		case t.k == KindDictionary && x.k == KindDictionary:
			d := t.AsDictionary()
			xd := x.AsDictionary()
			for i := range xd.keys {
				_ = d.Set(xd.keys[i], clone(xd.vals[i])) // counted by arithOK
			}
			v = t
		case t.k == KindText && x.k == KindText:
			v = Text(t.s + x.s)
		case t.k == KindNumber || t.k == KindText:
			return userErr("Could not add %s to %s (%s)", describe(x), s.target.display, t.k.article())
		default:
			v, r = addOther(t, x, 1)
		}
	case opSubtract:
		v, r = sub(t, x)
	case opMultiply:
		v, r = mul(t, x)
	case opDivide:
		v, r = quo(t, x)
	}
	if r != nil {
		return r
	}
	if err := m.update(s.target, v); err != nil {
		return err
	}
	m.cur.set(aboveSlot, v)
	f.pc++
	return nil
}

func (m *machine) remove(f *frame, s *stmt) error {
	x, err := s.x.eval(m)
	if err != nil {
		return err
	}
	t, err := s.target.eval(m)
	if err != nil {
		return err
	}
	switch t.k {
	case KindList:
		l := t.AsList()
		out := l.Items[:0:0]
		for _, it := range l.Items {
			if !equalLoose(it, x) {
				out = append(out, it)
			}
		}
		l.Items = out
	case KindSet:
		t.AsSet().remove(x)
	case KindDictionary:
		d := t.AsDictionary()
		if x.k == KindText {
			if i, ok := d.findField(x.s); ok {
				d.Delete(d.keys[i])
			}
		} else {
			d.Delete(x)
		}
	case KindText:
		v := Text(strings.ReplaceAll(t.s, valueText(x), ""))
		if err := m.update(s.target, v); err != nil {
			return err
		}
		t = v
	default:
		return userErr("Could not remove %s from %s: it is %s", describe(x), s.target.display, t.k.article())
	}
	m.cur.set(aboveSlot, t)
	f.pc++
	return nil
}

// ret ends the procedure body with a result.
func (m *machine) ret(s *stmt) error {
	bi := -1
	for i := len(m.frames) - 1; i >= 0; i-- {
		if m.frames[i].kind == fBody {
			bi = i
			break
		}
		if m.frames[i].kind == fArgs {
			break
		}
	}
	if bi < 0 {
		return userErr("Could not return: this is not inside a procedure")
	}
	var v Value
	if s.x != nil {
		x, err := s.x.eval(m)
		if err != nil {
			return err
		}
		if v, err = m.clone(x); err != nil {
			return err
		}
	} else {
		v = Null()
	}
	for len(m.frames)-1 > bi {
		top := &m.frames[len(m.frames)-1]
		if top.kind == fLoop {
			top.sc.set(top.slot, top.saved)
		}
		m.pop()
	}
	body := &m.frames[bi]
	body.sc.set(m.resultSlot(), v)
	body.pc = len(body.blk.stmts)
	return nil
}

// finishFrame is reached when a frame has run all its statements.
func (m *machine) finishFrame() error {
	f := &m.frames[len(m.frames)-1]
	switch f.kind {
	case fLoop:
		f.idx++
		if f.idx < len(f.items) {
			f.sc.set(f.slot, f.items[f.idx])
			f.pc = 0
			return nil
		}
		f.sc.set(f.slot, f.saved)
		m.pop()
	case fArgs:
		caller := &m.frames[len(m.frames)-2]
		if s := caller.blk.stmts[caller.pc]; s.op == opStartRun {
			return m.startRun(s)
		}
		return m.invoke(caller.blk.stmts[caller.pc], true)
	case fBody:
		if r := f.sc.ptr(m.resultSlot()); r != nil && r.k == KindNumber && r.p == nil {
			// a number in the small form, to a call without `as the Y`:
			// handed over a field at a time (see setNum)
			c, e := r.i, r.e
			m.depth--
			m.pop()
			m.recycle(f.sc)
			caller := &m.frames[len(m.frames)-1]
			if s := caller.blk.stmts[caller.pc]; s.op != opStartRun && (s.call == nil || s.call.as == nil) {
				m.cur.setNum(aboveSlot, c, e)
				caller.pc++
				return nil
			}
			return m.deliver(Value{k: KindNumber, i: c, e: e})
		}
		v := f.sc.get(m.resultSlot())
		if v.k == kindAlias {
			v, _ = m.deref(v, "result")
		}
		if !v.IsValid() {
			v = Null()
		}
		m.depth--
		m.pop()
		m.recycle(f.sc)
		return m.deliver(v)
	default:
		m.pop()
	}
	return nil
}

func (m *machine) call(f *frame, s *stmt) error {
	if s.call.args != nil {
		if s.call.proc == nil && !s.call.run {
			// a sentence nobody knows is said before its block runs, so
			// that the block's statements (`repeat 3 times` and its body)
			// do not run once as inputs of a call that cannot be made
			if ok, err := m.callable(s); err != nil {
				return err
			} else if !ok {
				return m.unknown(s)
			}
		}
		m.push(fArgs, f.src, s.call.args, &scope{parent: m.cur}, f.origin)
		return nil
	}
	return m.invoke(s, false)
}

// invoke calls the procedure of a call statement, once its argument block
// (if any, the top frame) has run.
func (m *machine) invoke(s *stmt, hasArgs bool) error {
	c := s.call
	if c.proc == nil {
		return m.bookCall(s, hasArgs)
	}
	if m.depth >= m.opts.MaxCallDepth {
		return userErr("Could not %s: procedures call each other more than %d deep", c.sentence, m.opts.MaxCallDepth)
	}
	callee := m.takeScope()
	for i := range c.params {
		p := &c.params[i]
		if n, e, ok := smallOf(m, p.x); ok {
			callee.setNum(p.slot, n, e)
			continue
		}
		v, err := p.x.eval(m)
		if err != nil {
			if p.soft && isMissing(err) {
				continue
			}
			return err
		}
		if isContainer(v.k) {
			if v, err = m.cloneContainer(v); err != nil {
				return err
			}
		}
		callee.set(p.slot, v)
	}
	if hasArgs {
		if err := m.copyArgs(callee); err != nil {
			return err
		}
		m.pop()
	}
	m.depth++
	m.push(fBody, -1, c.proc.body, callee, nil)
	return nil
}

// copyArgs copies the facts of the argument block (the top frame) to the callee.
func (m *machine) copyArgs(callee *scope) error {
	args := m.cur
	for slot, v := range args.vals {
		if slot == aboveSlot || v.k == kindUnset {
			continue
		}
		if v.k == kindAlias {
			var err error
			if v, err = m.deref(v, m.syms.name(slot)); err != nil {
				continue
			}
		}
		c, err := m.clone(v)
		if err != nil {
			return err
		}
		callee.set(slot, c)
	}
	return nil
}

// deliver hands a call's result to the calling statement: `the above`, and
// the `as the Y` fact.
func (m *machine) deliver(v Value) error {
	f := &m.frames[len(m.frames)-1]
	s := f.blk.stmts[f.pc]
	if s.op == opStartRun {
		return m.finishRun(f, v)
	}
	m.cur.set(aboveSlot, v)
	if s.call != nil && s.call.as != nil {
		c, err := m.clone(v)
		if err != nil {
			return err
		}
		if err := m.assign(s.call.as, c); err != nil {
			return err
		}
	}
	f.pc++
	return nil
}

func (m *machine) unknown(s *stmt) error {
	msg := "I don't know how to " + s.call.sentence
	if s.call.hint != "" {
		msg += " (" + s.call.hint + ")"
	}
	return &raise{group: GroupUserSystemError, msg: msg}
}

// callable reports whether a keyword statement's sentence is also a
// procedure or book procedure call (see altCall).
func (m *machine) callable(s *stmt) (bool, error) {
	if s.call == nil {
		return false, nil
	}
	if s.call.proc != nil {
		return true, nil
	}
	_, ok, err := m.matchBook(s)
	return ok, err
}

// notDictionary reports whether a name's last word names a kind of thing
// that an empty dictionary cannot stand for (`create a sample table`).
func notDictionary(name string) bool {
	switch name[strings.LastIndexByte(name, ' ')+1:] {
	case "table", "list", "set", "file", "document", "spreadsheet", "sheet", "workbook", "csv", "pdf", "image",
		"email", "message", "text", "number", "date", "folder", "directory":
		return true
	}
	return false
}

// takeScope is an empty scope for a procedure's facts: one a finished
// call left (recycle), so that a loop that calls a procedure does not
// allocate a scope on every call.
func (m *machine) takeScope() *scope {
	if n := len(m.freeScopes); n > 0 {
		s := m.freeScopes[n-1]
		m.freeScopes = m.freeScopes[:n-1]
		return s
	}
	return &scope{}
}

// recycle keeps the scope of a procedure whose call has returned, its
// facts cleared (a scope's slots past its length must be zero). Nothing
// refers to that scope any more: its result was read, the inputs it got
// were copies, its argument blocks and loops are gone, and no scope
// outside it can alias into it (a procedure sees no facts but its own, so
// an alias made in it lives in it).
func (m *machine) recycle(s *scope) {
	if len(m.freeScopes) >= 16 || cap(s.vals) > 4096 || s.parent != nil {
		return
	}
	clear(s.vals)
	s.vals = s.vals[:0]
	m.freeScopes = append(m.freeScopes, s)
}
