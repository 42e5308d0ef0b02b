package lang

import "strings"

// Input is a fact a program reads that it never sets itself: what a run
// of it needs from outside (an input given when it is invoked, else a
// question to a person). Kind is what its uses tell of its type: KindNumber
// when it takes part in arithmetic or is compared with a number, KindDate
// when compared with a date, else kindUnset (Known false).
type Input struct {
	Name  string // as the code names it, without "the"
	Kind  Kind
	Known bool
	Span  Span // where it is first read
}

// Inputs lists the program's inputs in the order the code first reads
// them: the facts its top level (and the blocks in it) reads and no
// statement sets. A fact a book call's sentence names is not seen (the
// sentence is matched when the run reaches it), nor what procedure
// bodies read (their inputs are their parameters).
func (p *Program) Inputs() []Input {
	w := &inputWalker{set: map[string]bool{"above": true, "answer": true, "result": true}, kinds: map[string]Kind{}, seen: map[string]int{}}
	w.assigned(p.top)
	w.block(p.top)
	for i := range w.out {
		if k, ok := w.kinds[w.out[i].Name]; ok {
			w.out[i].Kind, w.out[i].Known = k, true
		}
	}
	return w.out
}

type inputWalker struct {
	set   map[string]bool
	kinds map[string]Kind
	seen  map[string]int
	out   []Input
}

// assigned notes every fact the block (and its nested blocks) sets.
func (w *inputWalker) assigned(b *block) {
	if b == nil {
		return
	}
	for _, s := range b.stmts {
		if s.target != nil && !readsTarget(s.op) {
			w.set[s.target.name] = true
		}
		if s.call != nil && s.call.as != nil {
			w.set[s.call.as.name] = true
		}
		if s.op == opEach {
			w.set[s.item] = true
		}
		for _, br := range s.branches {
			w.assigned(br.body)
		}
		w.assigned(s.body)
		if s.call != nil {
			w.assigned(s.call.args)
		}
	}
}

func (w *inputWalker) block(b *block) {
	if b == nil {
		return
	}
	for _, s := range b.stmts {
		w.stmt(s)
	}
}

func (w *inputWalker) stmt(s *stmt) {
	switch s.op {
	case opAdd, opSubtract, opMultiply, opDivide:
		w.expr(s.x)
		w.number(s.x)
		w.ref(s.target)
		w.number(s.target)
	case opGet, opFind:
		if s.call == nil || !strings.Contains(s.text, " of ") {
			w.expr(s.x)
		}
	default:
		w.expr(s.x)
	}
	for _, x := range s.list {
		w.expr(x)
	}
	for _, br := range s.branches {
		w.expr(br.cond)
		w.block(br.body)
	}
	for _, c := range s.checks {
		w.expr(c.cond)
	}
	w.block(s.body)
	if s.call != nil {
		w.block(s.call.args)
	}
}

// ref records a fact read, when nothing sets it.
func (w *inputWalker) ref(r *refExpr) {
	if r == nil || w.set[r.name] || r.derive != nil {
		return
	}
	if _, ok := w.seen[r.name]; ok {
		return
	}
	w.seen[r.name] = len(w.out)
	w.out = append(w.out, Input{Name: r.name, Span: r.span})
}

// number and date note what a use tells of a fact's type.
func (w *inputWalker) number(x expr) { w.kind(x, KindNumber) }

func (w *inputWalker) kind(x expr, k Kind) {
	if r, ok := x.(*refExpr); ok && len(r.fields) == 0 {
		if _, known := w.kinds[r.name]; !known {
			w.kinds[r.name] = k
		}
	}
}

func (w *inputWalker) expr(x expr) {
	switch e := x.(type) {
	case *refExpr:
		w.ref(e)
	case *binExpr:
		w.expr(e.l)
		w.expr(e.r)
		if !isTextLit(e.l) && !isTextLit(e.r) {
			w.number(e.l)
			w.number(e.r)
		}
	case *cmpExpr:
		w.expr(e.l)
		w.expr(e.r)
		w.expr(e.r2)
		w.compared(e.l, e.r)
		w.compared(e.r, e.l)
	case *logicExpr:
		w.expr(e.l)
		w.expr(e.r)
	case *negExpr:
		w.expr(e.x)
		w.number(e.x)
	case *notExpr:
		w.expr(e.x)
	case *aggExpr:
		w.expr(e.x)
	case *caseExpr:
		w.expr(e.x)
	case *roundExpr:
		w.expr(e.x)
		w.number(e.x)
	case *convertExpr:
		w.expr(e.x)
	case *listExpr:
		for _, it := range e.items {
			w.expr(it)
		}
	case *stdExpr:
		w.expr(e.x)
		w.expr(e.arg)
	case *partExpr:
		w.expr(e.x)
	}
}

// compared notes the type of a fact compared with a literal number or date.
func (w *inputWalker) compared(x, other expr) {
	lit, ok := other.(*litExpr)
	if !ok {
		return
	}
	switch lit.v.k {
	case KindNumber, KindDate:
		w.kind(x, lit.v.k)
	}
}

// readsTarget: the statement reads its target before it sets it
// (`add the tax to the amount`), or reads into it from outside (`get`).
func readsTarget(op opcode) bool {
	switch op {
	case opGet, opAdd, opSubtract, opMultiply, opDivide:
		return true
	}
	return false
}

func isTextLit(x expr) bool {
	l, ok := x.(*litExpr)
	return ok && l.v.k == KindText
}
