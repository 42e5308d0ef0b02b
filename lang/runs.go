package lang

import "strings"

// Parallel runs, as the language reads them:
//
//	start a run where
//	  the procedure is "compute the tax of the amount"
//	  the amount is 200
//	wait for the runs
//	process each run in the runs as follows
//	  say the run's result
//
// `start a run` runs the procedure named by the block's `the procedure`
// (a sentence, matched like a call against the program's procedures and
// then the books) with the block's other facts as its inputs, and adds a
// record of it to `the runs`: a dictionary with the procedure, the inputs,
// the status and the result. The interpreter runs the procedure as it
// starts it, so that `wait for the runs` finds every run completed; the
// result is the same as if the runs had gone on side by side, since each
// has its own facts.

// startRun runs the procedure of a `start a run` block, whose facts are the
// current (argument) scope.
func (m *machine) startRun(s *stmt) error {
	args := m.cur
	pv := args.get(m.syms.slot("procedure"))
	if pv.k == kindAlias {
		var err error
		if pv, err = m.deref(pv, "procedure"); err != nil {
			return err
		}
	}
	if pv.k != KindText || strings.TrimSpace(pv.s) == "" {
		return userErr("Could not start a run: its block must name the procedure, as in 'the procedure is \"compute the tax of the amount\"'")
	}
	sentence := strings.TrimSpace(pv.s)
	lx := &lexer{src: sentence}
	ln, err := lx.line(0, len(sentence), 1)
	if err != nil || ln == nil {
		return userErr("Could not start a run of %q: it is not a sentence", sentence)
	}
	p := &parser{lx: lx, syms: m.syms, procs: m.prog.procs}
	call := &stmt{op: opCall, span: s.span, text: sentence, call: &callStmt{toks: ln.toks, sentence: sentence, args: s.body, run: true}}
	p.calls = []*stmt{call}
	if err := p.resolveCalls(); err != nil {
		return userErr("Could not start a run of %q: %v", sentence, err)
	}
	if call.call.proc == nil {
		_, ok, err := m.matchBook(call)
		if err != nil {
			return err
		}
		if !ok {
			return m.unknown(call)
		}
	}

	// the record, in `the runs` of the scope that started it
	inputs := NewDictionary()
	for slot, v := range args.vals {
		name := m.syms.name(slot)
		if slot == aboveSlot || v.k == kindUnset || name == "procedure" {
			continue
		}
		if v.k == kindAlias {
			if v, err = m.deref(v, name); err != nil {
				continue
			}
		}
		c, err := m.clone(v)
		if err != nil {
			return err
		}
		inputs.SetText(name, c)
	}
	rec := NewDictionary()
	rec.SetText("procedure", Text(sentence))
	rec.SetText("inputs", DictValue(inputs))
	rec.SetText("status", Text("running"))
	runs, err := m.runsList(args.parent)
	if err != nil {
		return err
	}
	l := runs.AsList()
	l.Items = append(l.Items, DictValue(rec))
	if call.call.proc != nil {
		err = m.invoke(call, true)
	} else {
		err = m.bookCall(call, true)
	}
	if err != nil {
		// the run did not start (its inputs or the book failed): no record,
		// so that a retry or a skip leaves none behind
		l.Items = l.Items[:len(l.Items)-1]
	}
	return err
}

// runsList is the list fact `the runs` of a scope, made when there is none.
func (m *machine) runsList(sc *scope) (Value, error) {
	slot := m.syms.slot("runs")
	for x := sc; x != nil; x = x.parent {
		if v := x.get(slot); v.k != kindUnset {
			if v.k == kindAlias {
				var err error
				if v, err = m.deref(v, "runs"); err != nil {
					return Value{}, err
				}
			}
			if v.k != KindList {
				return Value{}, userErr("Could not start a run: the runs is %s, not a list", v.k.article())
			}
			return v, nil
		}
	}
	v := ListValue()
	sc.set(slot, v)
	return v, nil
}

func runStatus(v Value) string {
	if v.k != KindDictionary {
		return ""
	}
	if s, ok := v.AsDictionary().Get(Text("status")); ok && s.k == KindText {
		return s.s
	}
	return ""
}

// finishRun records the result of the run that the statement f stands at
// started: the last running record of `the runs`.
func (m *machine) finishRun(f *frame, v Value) error {
	runs, err := m.runsList(m.cur)
	if err != nil {
		return err
	}
	l := runs.AsList()
	for i := len(l.Items) - 1; i >= 0; i-- {
		if runStatus(l.Items[i]) == "running" {
			d := l.Items[i].AsDictionary()
			d.SetText("status", Text("completed"))
			c, err := m.clone(v)
			if err != nil {
				return err
			}
			d.SetText("result", c)
			m.cur.set(aboveSlot, l.Items[i])
			break
		}
	}
	f.pc++
	return nil
}

// waitRuns waits for the runs started so far: they are all completed by
// now (see startRun); `the above` is the list of their records.
func (m *machine) waitRuns(f *frame) error {
	slot := m.syms.slot("runs")
	v, err := m.read(slot, "runs")
	if err != nil {
		if isMissing(err) {
			return userErr("Could not wait for the runs: no run was started")
		}
		return err
	}
	m.cur.set(aboveSlot, v)
	f.pc++
	return nil
}
