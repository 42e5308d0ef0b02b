package lang

import (
	"context"
	"errors"
	"sort"
	"strings"
)

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
//
// With Options.Runs (the run engine), `start a run` starts a run of its own
// instead (a child run, durable like any other) and the record holds its
// name under `run`; `wait for the runs` ends the segment (Waiting) until
// every started run has settled, then fills in each record's status and
// result (or error).

// Runs starts child runs and reads their outcomes (see Options.Runs).
type Runs interface {
	// Start starts a run of req and returns its name. It is called at most
	// once per journal position (see JournalIndex, which ctx carries): a run
	// recovered before its checkpoint calls it again with the same
	// position, and it must then return the same run.
	Start(ctx context.Context, req RunRequest) (string, error)
	// Settled returns the outcomes of the named runs (in their order) when
	// every one of them has settled, and settled false (no outcomes) while
	// one has not. An error raises an internal_error exception at `wait for
	// the runs` (a retry asks again).
	Settled(ctx context.Context, names []string) (outcomes []RunOutcome, settled bool, err error)
}

// RunRequest is a run started by `start a run`.
type RunRequest struct {
	// Procedure is the sentence the run calls ("compute the tax of the
	// amount").
	Procedure string
	// Code is a program that runs it on its own: the program's procedure
	// definitions, the call with its inputs, and `the output is the above`
	// (so the run's output `output` is the procedure's result).
	Code string
	// Inputs are the facts of the block, by name without "the"
	// ("amount"); the code reads them as its inputs.
	Inputs map[string]Value
}

// RunOutcome is how a started run settled.
type RunOutcome struct {
	// Status is "completed" or "failed".
	Status string
	// Result is the procedure's result (completed).
	Result Value
	// Error says why it failed (failed).
	Error string
}

// startRunKey is the journal's name of a `start a run`.
const startRunKey = "prose/start a run"

// errWaiting ends a segment at `wait for the runs` (see machine.wait).
var errWaiting = errors.New("waiting for runs")

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
	if len(sentence) > 3 && strings.EqualFold(sentence[:3], "to ") {
		// `the procedure is "to make apple pie"`, as its definition reads
		sentence = strings.TrimSpace(sentence[3:])
	}
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
	if m.opts.Runs != nil {
		name, err := m.startChild(sentence, inputs)
		if err != nil {
			return err
		}
		rec.SetText("run", Text(name))
		l := runs.AsList()
		l.Items = append(l.Items, DictValue(rec))
		m.pop()
		m.cur.set(aboveSlot, l.Items[len(l.Items)-1])
		m.frames[len(m.frames)-1].pc++
		return nil
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

// startChild starts a run of its own through Options.Runs, journaled like
// a book call: a replay takes the run's name from the journal.
func (m *machine) startChild(sentence string, inputs *Dictionary) (string, error) {
	names := make([]string, 0, inputs.Len())
	in := make(map[string]Value, inputs.Len())
	for i, k := range inputs.keys {
		n := k.s
		names = append(names, n)
		in[n] = inputs.vals[i]
	}
	sort.Strings(names)
	var code strings.Builder
	for _, p := range m.prog.procs {
		code.WriteString(p.def)
		code.WriteString("\n")
	}
	code.WriteString(sentence)
	if len(names) > 0 {
		code.WriteString(" with\n")
		for _, n := range names {
			code.WriteString("  the " + n + "\n")
		}
	} else {
		code.WriteString("\n")
	}
	code.WriteString("the output is the above\n")
	req := RunRequest{Procedure: sentence, Code: code.String(), Inputs: in}
	if m.cursor >= len(m.journal) { // a new start, not a replay
		if err := m.childRunsOK(); err != nil {
			return "", err
		}
	}
	out, err := m.journaled(startRunKey, func(ctx context.Context) (map[string]Value, error) {
		name, err := m.opts.Runs.Start(ctx, req)
		if err != nil {
			return nil, err
		}
		return map[string]Value{"run": Text(name)}, nil
	}, "start a run of "+sentence)
	if err != nil {
		return "", err
	}
	if m.childRuns >= 0 {
		m.childRuns++
	}
	v := out["run"]
	if v.k != KindText || v.s == "" {
		return "", internalErr("the journal holds no run where the run starts one")
	}
	return v.s, nil
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

// waitRuns waits for the runs started so far: inline, they are all
// completed by now (see startRun); with Options.Runs, the segment ends
// (errWaiting) until they have settled. `the above` is the list of their
// records.
func (m *machine) waitRuns(f *frame) error {
	slot := m.syms.slot("runs")
	v, err := m.read(slot, "runs")
	if err != nil {
		if isMissing(err) {
			return userErr("Could not wait for the runs: no run was started")
		}
		return err
	}
	if m.opts.Runs != nil && v.k == KindList {
		if err := m.settle(v.AsList()); err != nil {
			return err
		}
	}
	m.cur.set(aboveSlot, v)
	f.pc++
	return nil
}

// settle fills in the records of started runs that are still running, once
// every one of them has settled; errWaiting while one has not.
func (m *machine) settle(l *List) error {
	var names []string
	var recs []*Dictionary
	for _, it := range l.Items {
		if runStatus(it) != "running" {
			continue
		}
		d := it.AsDictionary()
		if n, ok := d.Get(Text("run")); ok && n.k == KindText {
			names = append(names, n.s)
			recs = append(recs, d)
		}
	}
	if len(names) == 0 {
		return nil
	}
	outs, settled, err := m.opts.Runs.Settled(m.ctx, names)
	if err != nil {
		if m.ctx.Err() != nil {
			return errCancelled
		}
		return internalErr("could not read the started runs: %v", err)
	}
	if !settled {
		return errWaiting
	}
	if len(outs) != len(names) {
		return internalErr("%d outcomes for %d runs", len(outs), len(names))
	}
	for i, d := range recs {
		o := outs[i]
		d.SetText("status", Text(o.Status))
		switch {
		case o.Status == "completed":
			r := o.Result
			if !r.IsValid() {
				r = Null()
			}
			d.SetText("result", r)
		case o.Error != "":
			d.SetText("error", Text(o.Error))
		}
	}
	return nil
}
