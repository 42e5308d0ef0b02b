package lang

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// Program is a parsed program. It is immutable and may be shared by any
// number of runs at once.
type Program struct {
	src    string
	top    *block
	procs  []*procDef
	blocks []*block
	syms   *symtab
	hash   string
}

// Source returns the program text.
func (p *Program) Source() string { return p.src }

// Statements returns the spans of every statement of the program (those
// of procedure bodies and argument blocks included), in no particular
// order: what Options.Visit may report.
func (p *Program) Statements() []Span {
	var out []Span
	for _, b := range p.blocks {
		for _, s := range b.stmts {
			out = append(out, s.span)
		}
	}
	return out
}

// symtab maps canonical fact names (without "the") to slots. A run extends
// its program's table with names the program never mentions (inputs,
// provided values, replacement code) without changing the program.
type symtab struct {
	base  *symtab
	names []string
	idx   map[string]int
}

const aboveSlot = 0

func newSymtab() *symtab {
	s := &symtab{idx: map[string]int{}}
	s.slot("above")
	return s
}

func (s *symtab) size() int {
	n := len(s.names)
	if s.base != nil {
		n += s.base.size()
	}
	return n
}

func (s *symtab) lookup(name string) (int, bool) {
	if s.base != nil {
		if i, ok := s.base.lookup(name); ok {
			return i, true
		}
	}
	i, ok := s.idx[name]
	if !ok {
		return 0, false
	}
	if s.base != nil {
		i += s.base.size()
	}
	return i, true
}

func (s *symtab) slot(name string) int {
	if i, ok := s.lookup(name); ok {
		return i
	}
	s.idx[name] = len(s.names)
	s.names = append(s.names, name)
	return s.size() - 1
}

func (s *symtab) name(slot int) string {
	if s.base != nil {
		if n := s.base.size(); slot < n {
			return s.base.name(slot)
		} else {
			slot -= n
		}
	}
	if slot < 0 || slot >= len(s.names) {
		return ""
	}
	return s.names[slot]
}

// Parse reads a program. A program that cannot be read gives a *SyntaxError
// with the span of the offending text.
func Parse(src string) (*Program, error) {
	prog := &Program{src: src, syms: newSymtab()}
	sum := sha256.Sum256([]byte(src))
	prog.hash = hex.EncodeToString(sum[:12])
	p := &parser{lx: &lexer{src: src}, syms: prog.syms}
	lines, err := p.lx.lines()
	if err != nil {
		return nil, err
	}
	top, err := p.block(lines, true)
	if err != nil {
		return nil, err
	}
	prog.top = top
	prog.procs = p.procs
	prog.blocks = p.allBlocks()
	if err := p.resolveCalls(); err != nil {
		return nil, err
	}
	return prog, nil
}

type parser struct {
	// inline counts the one-line blocks being parsed (a one-line if's
	// statements, a where clause on its call's line); late holds their
	// blocks, numbered after all others by allBlocks: a run's state names
	// blocks by number, and a state saved before these forms were read
	// (an unknown `send it where the x is 1`) must find its blocks where
	// they were.
	inline int
	late   []*block
	// nested counts the blocks being parsed below the top level: an
	// unquoted word is a value only there (see wordExpr).
	nested int
	lx     *lexer
	syms   *symtab
	blocks []*block
	procs  []*procDef
	calls  []*stmt
	// badArgs holds the error of each line whose argument block did not
	// parse (see buildCall).
	badArgs map[*srcLine]error
}

func (p *parser) errAt(sp Span, format string, args ...any) *SyntaxError {
	return p.lx.errAt(sp.Start, sp.End, format, args...)
}

func (p *parser) text(sp Span) string { return p.lx.src[sp.Start:sp.End] }

func (p *parser) block(lines []*srcLine, top bool) (*block, error) {
	if !top {
		p.nested++
		defer func() { p.nested-- }()
	}
	b := &block{id: len(p.blocks)}
	if p.inline > 0 {
		// numbered after the others (see allBlocks)
		p.late = append(p.late, b)
	} else {
		p.blocks = append(p.blocks, b)
	}
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		first := l.toks[0]
		if first.is("to") {
			if !top {
				return nil, p.errAt(l.span, "a procedure (a line starting with 'to') can be defined only at the top level")
			}
			if err := p.procDef(l); err != nil {
				return nil, err
			}
			continue
		}
		if first.is("else") || first.is("otherwise") {
			return nil, p.errAt(l.span, "'%s' without an 'if' before it", first.raw)
		}
		s, err := p.stmt(l)
		if err != nil {
			return nil, err
		}
		if s.op == opIf && !s.inlineElse {
			for i+1 < len(lines) && (lines[i+1].toks[0].is("else") || lines[i+1].toks[0].is("otherwise")) {
				i++
				done, err := p.elseBranch(s, lines[i])
				if err != nil {
					return nil, err
				}
				if done {
					if i+1 < len(lines) && (lines[i+1].toks[0].is("else") || lines[i+1].toks[0].is("otherwise")) {
						return nil, p.errAt(lines[i+1].span, "nothing can follow the final 'else'")
					}
					break
				}
			}
		}
		b.stmts = append(b.stmts, s)
	}
	return b, nil
}

// opener reports whether the line ends in a word that opens a block.
func opener(toks []token) bool {
	n := len(toks)
	last := toks[n-1]
	if last.is("where") || last.is("with") || last.is("then") {
		return true
	}
	return n >= 2 && (last.is("follows") && toks[n-2].is("as") || last.is("following") && toks[n-2].is("the"))
}

func (p *parser) needBlock(l *srcLine) error {
	if len(l.children) == 0 {
		return p.errAt(l.span, "this line opens a block, but no indented lines follow it")
	}
	return nil
}

func (p *parser) noBlock(l *srcLine) error {
	if len(l.children) > 0 {
		return p.errAt(l.children[0].span, "unexpected indentation: the line above does not open a block")
	}
	if opener(l.toks) && !l.toks[len(l.toks)-1].is("with") {
		return p.errAt(l.span, "this line opens a block, but no indented lines follow it")
	}
	return nil
}

func (p *parser) stmt(l *srcLine) (*stmt, error) {
	s := &stmt{span: l.span, text: p.text(l.span)}
	toks := l.toks
	first := toks[0]
	var err error
	switch {
	case first.is("if"):
		err = p.ifStmt(s, l)
	case (first.is("process") || first.is("for") || first.is("repeat")) && len(toks) > 1 && toks[1].is("each"):
		err = p.eachStmt(s, l)
	case first.is("validate"):
		err = p.validateStmt(s, l)
	case first.is("ensure") || first.is("check") && len(toks) > 1 && toks[1].is("that"):
		err = p.ensureStmt(s, l)
	case isStartRun(toks):
		s.op = opStartRun
		if err = p.needBlock(l); err == nil {
			s.body, err = p.block(l.children, false)
		}
	case isWaitRuns(toks):
		s.op = opWaitRuns
		err = p.noBlock(l)
	case first.is("ask"):
		s.op = opAsk
		err = p.askStmt(s, l)
	case first.is("the"):
		err = p.assignStmt(s, l)
	case bareAssign(toks):
		// `invoice's total is 100`, the concept named before
		if err = p.assignStmt(s, l); err != nil {
			*s = stmt{span: l.span, text: p.text(l.span)}
			err = p.callStmt(s, l)
		}
	default:
		var handled bool
		kt := toks
		if n := len(kt); (first.is("get") || first.is("find")) && n > 1 && (kt[n-1].is("with") || kt[n-1].is("where")) {
			kt = kt[:n-1] // `get the new id with` and a block of inputs
		}
		handled, err = p.simpleStmt(s, kt)
		if handled && err == nil {
			if s.op == opGet || s.op == opFind {
				// get/find read a fact if there is one, else call a
				// procedure of that sentence (a block gives it inputs).
				err = p.altCall(s, l)
			} else if err = p.noBlock(l); err == nil && s.op != opCall && yields(first) {
				err = p.altCall(s, l)
			}
		}
		if err == nil && !handled {
			err = p.callStmt(s, l)
		}
		if err != nil && handled {
			// A sentence that starts with a keyword but has not that
			// keyword's form is a procedure call.
			err = p.keywordCall(s, l, err)
		}
	}
	if err != nil && s.op == opAsk {
		err = p.keywordCall(s, l, err)
	}
	if err != nil {
		return nil, err
	}
	markOutput(s)
	return s, nil
}

// stmtKeywords begin statements of their own: `set invoice's total to 5`
// is no assignment to "set invoice".
var stmtKeywords = map[string]bool{"if": true, "validate": true, "ensure": true, "check": true, "ask": true, "stop": true,
	"say": true, "print": true, "log": true, "write": true, "return": true, "set": true, "use": true, "imagine": true,
	"create": true, "make": true, "convert": true, "get": true, "find": true, "add": true, "subtract": true,
	"remove": true, "round": true, "multiply": true, "divide": true, "process": true, "send": true, "start": true, "wait": true}

// bareAssign reports whether a line starts as `invoice's total is …` or
// `purchase order's total are …`: one or two words, a possessive, and
// later `is` or `are`.
func bareAssign(toks []token) bool {
	for i := 0; i < len(toks) && i < 3; i++ {
		t := toks[i]
		if t.kind == tPoss {
			if i == 0 {
				return false
			}
			for _, x := range toks[i+1:] {
				if x.is("is") || x.is("are") {
					return true
				}
			}
			return false
		}
		if t.kind != tWord || t.is("the") || t.is("a") || t.is("an") || stopWords[t.text] || callPrefixes[t.text] || i == 0 && stmtKeywords[t.text] {
			return false
		}
	}
	return false
}

// markOutput notes whether the statement sets an output fact.
func markOutput(s *stmt) {
	t := s.target
	if s.call != nil && s.call.as != nil && (t == nil || s.op == opCall) {
		t = s.call.as
	}
	if r, ok := s.x.(*refExpr); ok && t == nil && (s.op == opGet || s.op == opFind) {
		t = r // `get the output total`: the value it obtains defines it
	}
	if t != nil && isOutputName(t.name) {
		s.out, s.outSlot = true, t.slot
	}
}

// isOutputName reports whether a fact name (without "the") names an output.
func isOutputName(name string) bool {
	return name == "output" || strings.HasPrefix(name, "output ")
}

// simpleStmt parses the one-line keyword forms; handled is false when the
// line is not one of them.
func (p *parser) simpleStmt(s *stmt, toks []token) (bool, error) {
	q := p.ep(toks)
	first := q.next()
	var err error
	switch first.text {
	case "stop":
		s.op = opStop
	case "say", "print", "log", "write":
		s.op = opSay
		s.x, err = q.expr()
	case "return":
		s.op = opReturn
		if !q.done() {
			s.x, err = q.expr()
		}
	case "set":
		s.op = opAssign
		if s.target, err = q.target(); err == nil {
			if err = q.want("to"); err == nil {
				s.x, err = q.expr()
			}
		}
	case "use":
		s.op = opAlias
		if s.x, err = q.expr(); err == nil {
			if q.done() {
				s.op = opGet // `use the document`: reads it, like get
				break
			}
			if err = q.want("as"); err == nil {
				s.target, err = q.target()
			}
		}
	case "imagine", "create", "make":
		if first.text != "imagine" && !(q.peek().is("a") || q.peek().is("an")) {
			return false, nil
		}
		s.op = opImagine
		if !q.peek().is("a") && !q.peek().is("an") && !q.peek().is("the") {
			return true, q.errHere("expected 'a' or 'an' and a name, as in 'imagine a report'")
		}
		art := q.next()
		words, sp := q.nameWords()
		if len(words) == 0 {
			return true, q.errHere("expected a name after '%s'", art.raw)
		}
		name := strings.Join(words, " ")
		s.target = &refExpr{slot: p.syms.slot(name), name: name, display: "the " + name, span: Span{art.span.Start, sp.End}}
	case "convert":
		// `convert "2024-03-01" to a datetime [as the Y]`: the result is the above
		q.i = 0
		s.op = opGet
		if s.x, err = q.expr(); err == nil && q.peek().is("as") {
			q.next()
			s.target, err = q.target()
		}
	case "get", "find":
		s.op = opGet
		if first.text == "find" {
			s.op = opFind
		}
		if s.x, err = q.expr(); err == nil && q.peek().is("as") {
			q.next()
			if q.peek().is("the") {
				s.target, err = q.target()
			} else {
				err = q.asKind(s)
			}
		}
	case "add", "subtract", "remove":
		s.op = map[string]opcode{"add": opAdd, "subtract": opSubtract, "remove": opRemove}[first.text]
		prep := map[string]string{"add": "to", "subtract": "from", "remove": "from"}[first.text]
		if s.x, err = q.expr(); err == nil {
			if err = q.want(prep); err == nil {
				s.target, err = q.arithTarget()
			}
		}
	case "round":
		// `round the X to N decimal places` (or `round the X`, to a whole
		// number) sets the fact to its rounded value.
		s.op = opAssign
		if s.target, err = q.target(); err == nil {
			places := 0
			if !q.done() {
				places, err = q.roundPlaces()
			}
			s.x = &roundExpr{x: s.target, places: places, span: s.target.span}
		}
	case "multiply", "divide":
		s.op = opMultiply
		if first.text == "divide" {
			s.op = opDivide
		}
		if s.target, err = q.arithTarget(); err == nil {
			if err = q.want("by"); err == nil {
				s.x, err = q.expr()
			}
		}
	default:
		return false, nil
	}
	if err != nil {
		return true, err
	}
	return true, q.end()
}

func (p *parser) assignStmt(s *stmt, l *srcLine) error {
	if err := p.noBlock(l); err != nil {
		return err
	}
	q := p.ep(l.toks)
	var err error
	s.op = opAssign
	if s.target, err = q.target(); err != nil {
		return err
	}
	verb := q.peek()
	switch {
	case verb.is("is") || verb.is("are") || verb.is("was") || verb.is("were") || verb.kind == tOp && verb.text == "=":
		q.next()
	default:
		// A noun phrase alone (`the document`, `the first line in the
		// document`) reads it, like get.
		errVerb := q.errHere("expected 'is' or 'are' after %s", s.target.display)
		bq := p.ep(l.toks)
		x, err := bq.expr()
		if err != nil || !bq.done() {
			return errVerb
		}
		if _, isCmp := x.(*cmpExpr); isCmp {
			return errVerb
		}
		s.op, s.x, s.target, s.bare = opGet, x, nil, true
		return nil
	}
	s.plural = verb.is("are") || verb.is("were")
	if p.nested > 0 {
		if w := p.unquoted(q); w != nil {
			// `the unit is metric` in a block (see wordExpr)
			s.x = w
			return nil
		}
	}
	for {
		x, err := q.expr()
		if err != nil {
			return err
		}
		s.list = append(s.list, x)
		if q.peek().kind == tOp && q.peek().text == "," {
			q.next()
			if q.peek().is("and") {
				q.next()
			}
			continue
		}
		if q.peek().is("and") && len(s.list) > 0 && (s.plural || len(s.list) > 1) {
			q.next()
			continue
		}
		break
	}
	if len(s.list) == 1 && !s.plural {
		s.x, s.list = s.list[0], nil
	}
	return q.end()
}

func (p *parser) ifStmt(s *stmt, l *srcLine) error {
	s.op = opIf
	br, err := p.condBranch(l, l.toks[1:])
	if err != nil {
		return err
	}
	s.branches = append(s.branches, br)
	if br.inlineElse != nil {
		s.branches = append(s.branches, *br.inlineElse)
		s.branches[0].inlineElse = nil
		s.inlineElse = true
	}
	return nil
}

func (p *parser) condBranch(l *srcLine, toks []token) (branch, error) {
	var inline []token // `if C then S`: the statement after then
	if len(toks) > 0 && toks[len(toks)-1].is("then") {
		toks = toks[:len(toks)-1]
	} else {
		for i, t := range toks {
			if t.is("then") {
				toks, inline = toks[:i], toks[i+1:]
				break
			}
		}
	}
	toks = trimComma(toks) // `if the total > 10, then …`
	if len(toks) == 0 {
		return branch{}, p.errAt(l.span, "expected a condition")
	}
	q := p.ep(toks)
	cond, err := q.expr()
	if err != nil {
		return branch{}, err
	}
	if err := q.end(); err != nil {
		return branch{}, err
	}
	if inline != nil {
		return p.inlineBranch(l, cond, inline)
	}
	if err := p.needBlock(l); err != nil {
		return branch{}, err
	}
	body, err := p.block(l.children, false)
	if err != nil {
		return branch{}, err
	}
	return branch{cond: cond, body: body, span: l.span}, nil
}

// trimComma drops a comma that ends toks, as people write one before
// `then` and `else`.
func trimComma(toks []token) []token {
	if n := len(toks); n > 0 && toks[n-1].kind == tOp && toks[n-1].text == "," {
		return toks[:n-1]
	}
	return toks
}

// inlineBranch is the branch of a one-line conditional, `if C then S` or
// `if C then S1 else S2`: each statement is a block of one line. An else
// on the line belongs to this if (a nested one-line if takes no else).
func (p *parser) inlineBranch(l *srcLine, cond expr, toks []token) (branch, error) {
	if len(l.children) > 0 {
		return branch{}, p.errAt(l.children[0].span, "unexpected indentation: a one-line 'if … then …' opens no block")
	}
	var elseToks []token
	for i, t := range toks {
		if t.is("else") || t.is("otherwise") {
			toks, elseToks = toks[:i], toks[i+1:]
			if len(elseToks) == 0 {
				return branch{}, p.errAt(t.span, "expected a statement after '%s'", t.raw)
			}
			break
		}
	}
	toks = trimComma(toks) // `… then S1, else S2`
	if len(toks) == 0 {
		return branch{}, p.errAt(l.span, "expected a statement after 'then'")
	}
	body, err := p.inlineBlock(l, toks)
	if err != nil {
		return branch{}, err
	}
	br := branch{cond: cond, body: body, span: l.span}
	if elseToks != nil {
		eb, err := p.inlineBlock(l, elseToks)
		if err != nil {
			return branch{}, err
		}
		br.inlineElse = &branch{body: eb, span: l.span}
	}
	return br, nil
}

// allBlocks numbers the one-line blocks after the others and returns all.
func (p *parser) allBlocks() []*block {
	for _, b := range p.late {
		b.id = len(p.blocks)
		p.blocks = append(p.blocks, b)
	}
	p.late = nil
	return p.blocks
}

// inlineBlock is a block of the one statement written by toks, part of
// the line l. It is transparent for outputs: a one-line `if` at the top
// level sets outputs as a statement of the top level does.
func (p *parser) inlineBlock(l *srcLine, toks []token) (*block, error) {
	sl := &srcLine{num: l.num, indent: l.indent, span: Span{toks[0].span.Start, toks[len(toks)-1].span.End}, toks: toks}
	p.inline++
	b, err := p.block([]*srcLine{sl}, false)
	p.inline--
	if err != nil {
		return nil, err
	}
	b.inline = true
	return b, nil
}

// elseBranch adds an else or else-if line; done is true after a final else.
func (p *parser) elseBranch(s *stmt, l *srcLine) (bool, error) {
	toks := l.toks[1:]
	if len(toks) > 0 && toks[0].is("if") {
		br, err := p.condBranch(l, toks[1:])
		if err != nil {
			return false, err
		}
		if el := br.inlineElse; el != nil {
			br.inlineElse = nil
			s.branches = append(s.branches, br, *el)
			return true, nil
		}
		s.branches = append(s.branches, br)
		return false, nil
	}
	if len(toks) > 0 && !(len(toks) == 1 && toks[0].is("then")) {
		if len(l.children) > 0 {
			return false, p.errAt(toks[0].span, "expected the end of the line after 'else'")
		}
		// `else S` on one line
		body, err := p.inlineBlock(l, toks)
		if err != nil {
			return false, err
		}
		s.branches = append(s.branches, branch{body: body, span: l.span})
		return true, nil
	}
	if err := p.needBlock(l); err != nil {
		return false, err
	}
	body, err := p.block(l.children, false)
	if err != nil {
		return false, err
	}
	s.branches = append(s.branches, branch{body: body, span: l.span})
	return true, nil
}

func (p *parser) eachStmt(s *stmt, l *srcLine) error {
	s.op = opEach
	toks := l.toks[2:]
	n := len(toks)
	if n >= 2 && toks[n-1].is("follows") && toks[n-2].is("as") {
		toks = toks[:n-2]
	} else if n >= 1 && (toks[n-1].is("do") || toks[n-1].is("then")) {
		toks = toks[:n-1]
	}
	if len(toks) == 0 {
		return p.errAt(l.span, "expected the name of an item, as in 'process each page as follows'")
	}
	q := p.ep(toks)
	if toks[0].is("in") {
		return p.errAt(toks[0].span, "expected the name of an item before 'in', as in 'process each invoice in the invoices as follows'")
	}
	words, sp := q.nameWords()
	if len(words) == 0 {
		return q.errHere("expected the name of an item, as in 'process each page as follows'")
	}
	s.item = strings.Join(words, " ")
	s.itemSlot = p.syms.slot(s.item)
	if q.peek().is("in") || q.peek().is("of") {
		q.next()
		x, err := q.expr()
		if err != nil {
			return err
		}
		s.x = x
	} else {
		s.plurals = pluralNames(s.item)
		for _, n := range s.plurals {
			p.syms.slot(n)
		}
		_ = sp
	}
	if err := q.end(); err != nil {
		return err
	}
	if err := p.needBlock(l); err != nil {
		return err
	}
	body, err := p.block(l.children, false)
	if err != nil {
		return err
	}
	s.body = body
	return nil
}

func (p *parser) validateStmt(s *stmt, l *srcLine) error {
	s.op = opValidate
	if err := p.needBlock(l); err != nil {
		return err
	}
	for _, c := range l.children {
		if len(c.children) > 0 {
			return p.errAt(c.children[0].span, "unexpected indentation inside validate")
		}
		if !c.toks[0].is("ensure") && !(c.toks[0].is("check") && len(c.toks) > 1 && c.toks[1].is("that")) {
			return p.errAt(c.span, "every line of 'validate the following' must start with 'ensure'")
		}
		if err := p.addCheck(s, c); err != nil {
			return err
		}
	}
	return nil
}

func (p *parser) ensureStmt(s *stmt, l *srcLine) error {
	s.op = opValidate
	if err := p.noBlock(l); err != nil {
		return err
	}
	return p.addCheck(s, l)
}

func (p *parser) addCheck(s *stmt, l *srcLine) error {
	toks := l.toks[1:]
	if l.toks[0].is("check") {
		toks = toks[1:]
	}
	if len(toks) > 0 && toks[0].is("that") {
		toks = toks[1:]
	}
	if len(toks) == 0 {
		return p.errAt(l.span, "expected a condition after 'ensure'")
	}
	q := p.ep(toks)
	x, err := q.expr()
	if err != nil {
		return err
	}
	if err := q.end(); err != nil {
		return err
	}
	s.checks = append(s.checks, check{cond: x, text: p.text(Span{toks[0].span.Start, toks[len(toks)-1].span.End})})
	return nil
}

func (p *parser) askStmt(s *stmt, l *srcLine) error {
	s.op = opAsk
	toks := l.toks[1:]
	if n := len(toks); n > 0 && (toks[n-1].is("with") || toks[n-1].is("where")) {
		toks = toks[:n-1]
	}
	if len(toks) == 0 {
		return p.errAt(l.span, "expected a question after 'ask'")
	}
	q := p.ep(toks)
	var err error
	if s.x, err = q.expr(); err != nil {
		return err
	}
	// one line: `ask "Approve?" the choices are "yes", "no"` (also after
	// a comma or `with`)
	if q.isOp(",") || q.peek().is("with") || q.peek().is("where") {
		if q.at(1).is("the") {
			q.next()
		}
	}
	if q.peek().is("the") {
		if err := p.choices(s, q); err != nil {
			return err
		}
	}
	if err := q.end(); err != nil {
		return err
	}
	for _, c := range l.children {
		if len(c.children) > 0 {
			return p.errAt(c.children[0].span, "unexpected indentation")
		}
		cq := p.ep(c.toks)
		if err := p.choices(s, cq); err != nil {
			return err
		}
		if err := cq.end(); err != nil {
			return err
		}
	}
	return nil
}

// choices reads `the choices are A, B or C` into an ask statement.
func (p *parser) choices(s *stmt, q *ep) error {
	start := q.peek().span
	t, err := q.target()
	if err != nil || t.name != "choices" && t.name != "options" || len(t.fields) > 0 {
		return p.errAt(start, "the block of 'ask' may only set 'the choices are …'")
	}
	if !q.peek().is("are") && !q.peek().is("is") {
		return q.errHere("expected 'are' after the choices")
	}
	q.next()
	for {
		x, err := q.additive() // a value: `or` separates choices
		if err != nil {
			return err
		}
		s.choices = append(s.choices, x)
		if q.isOp(",") || q.peek().is("or") {
			q.next()
			continue
		}
		return nil
	}
}

func (p *parser) callStmt(s *stmt, l *srcLine) error {
	c, err := p.buildCall(l)
	if err != nil {
		return err
	}
	s.op = opCall
	s.call = c
	p.calls = append(p.calls, s)
	return nil
}

// yields reports whether a keyword statement is an undocumented synonym
// (`print`, `log`, `write` for say; `create a`, `make a` for imagine) or a
// keyword added after programs could use its word (`round`) that gives way
// to a procedure or book procedure of the same sentence.
func yields(first token) bool {
	switch first.text {
	case "print", "log", "write", "create", "make", "round":
		return true
	}
	return false
}

// altCall gives a keyword statement the call it also reads as: the
// procedure (or, at run time, the book procedure) that matches its sentence.
func (p *parser) altCall(s *stmt, l *srcLine) error {
	c, err := p.buildCall(l)
	if err != nil {
		return err
	}
	s.call = c
	p.calls = append(p.calls, s)
	return nil
}

// keywordCall reads a line that starts with a keyword but does not have the
// keyword's form as a procedure call; the keyword's complaint is kept for
// the message when no procedure matches.
func (p *parser) keywordCall(s *stmt, l *srcLine, kwErr error) error {
	*s = stmt{span: l.span, text: p.text(l.span)}
	if err := p.callStmt(s, l); err != nil {
		return kwErr
	}
	var se *SyntaxError
	if errors.As(kwErr, &se) {
		s.call.hint = fmt.Sprintf("as %s statement: %s", article(l.toks[0].text), se.Msg)
	}
	return nil
}

func (p *parser) buildCall(l *srcLine) (*callStmt, error) {
	toks := l.toks
	c := &callStmt{}
	n := len(toks)
	if n > 1 && (toks[n-1].is("where") || toks[n-1].is("with")) {
		toks = toks[:n-1]
		if err := p.needBlock(l); err != nil {
			return nil, err
		}
	}
	if len(l.children) == 0 && c.args == nil {
		// `welcome a guest where the guest is "Bo"`: the block on the line
		if args, rest, err := p.inlineWhere(l, toks); err != nil {
			return nil, err
		} else if args != nil {
			c.args, toks = args, rest
		}
	}
	if len(l.children) > 0 {
		// A block that did not parse is not parsed again: a line whose
		// keyword form failed is read again as a call (keywordCall), and
		// re-parsing its block at each level of a nest of such lines took
		// time exponential in the depth (FuzzParse: 22 nested `get the x
		// with` lines took 26 s).
		if err, ok := p.badArgs[l]; ok {
			return nil, err
		}
		args, err := p.block(l.children, false)
		if err != nil {
			if p.badArgs == nil {
				p.badArgs = map[*srcLine]error{}
			}
			p.badArgs[l] = err
			return nil, err
		}
		c.args = args
	}
	// `… as the Y` names the result.
	for i := len(toks) - 2; i > 0; i-- {
		if toks[i].is("as") && toks[i+1].is("the") {
			q := p.ep(toks[i+1:])
			if t, err := q.target(); err == nil && q.done() {
				c.as = t
				toks = toks[:i]
			}
			break
		}
	}
	c.toks = toks
	c.sentence = p.text(Span{toks[0].span.Start, toks[len(toks)-1].span.End})
	return c, nil
}

// inlineWhere reads a `where` clause on a call's own line as its argument
// block: the statements after `where`, split before each `and the` or
// `, the`. args is nil when the line has no such clause. A `with` clause
// is read so too when all its statements set facts (`greet with the
// person is "Bo"`); else `with` belongs to the sentence (`join the names
// with the separator`).
func (p *parser) inlineWhere(l *srcLine, toks []token) (*block, []token, error) {
	w := -1
	for i := 1; i < len(toks)-1; i++ {
		if toks[i].is("where") && toks[i+1].is("the") {
			w = i
			break
		}
	}
	if w < 0 {
		for i := 1; i < len(toks)-1; i++ {
			if toks[i].is("with") && toks[i+1].is("the") {
				// a clause that is no block of facts belongs to the sentence
				if args, err := p.whereBlock(l, toks[i+1:]); err == nil && setsFacts(args) {
					return args, toks[:i], nil
				}
				return nil, nil, nil
			}
		}
		return nil, nil, nil
	}
	args, err := p.whereBlock(l, toks[w+1:])
	if err != nil {
		return nil, nil, err
	}
	return args, toks[:w], nil
}

// setsFacts reports whether every statement of b sets a fact (`the X is E`).
func setsFacts(b *block) bool {
	for _, s := range b.stmts {
		if s.op != opAssign || s.call != nil {
			return false
		}
	}
	return len(b.stmts) > 0
}

// whereBlock parses the statements of a clause on a call's line (toks,
// from its first `the`), split before each `and the` or `, the`.
func (p *parser) whereBlock(l *srcLine, toks []token) (*block, error) {
	var lines []*srcLine
	start := 0
	for i := start; i <= len(toks); i++ {
		if i < len(toks) && !(i > start && i+1 < len(toks) && toks[i+1].is("the") && (toks[i].is("and") || toks[i].kind == tOp && toks[i].text == ",")) {
			continue
		}
		part := toks[start:i]
		if len(part) > 0 {
			lines = append(lines, &srcLine{num: l.num, indent: l.indent + " ", span: Span{part[0].span.Start, part[len(part)-1].span.End}, toks: part})
		}
		start = i + 1
	}
	p.inline++
	args, err := p.block(lines, false)
	p.inline--
	return args, err
}

func (p *parser) procDef(l *srcLine) error {
	if err := p.needBlock(l); err != nil {
		return err
	}
	toks := l.toks[1:]
	if n := len(toks); n > 1 && (toks[n-1].is("with") || toks[n-1].is("where")) {
		toks = toks[:n-1]
	} else if n > 2 && toks[n-1].is("follows") && toks[n-2].is("as") {
		toks = toks[:n-2]
	}
	if len(toks) == 0 {
		return p.errAt(l.span, "expected a sentence after 'to', as in 'to compute the tax of an amount'")
	}
	sig, _, err := parseSignature(toks)
	if err != nil {
		return p.errAt(l.span, "%s", err.Error())
	}
	for i := range sig {
		if sig[i].word == "" {
			sig[i].slot = p.syms.slot(strings.Join(sig[i].param, " "))
		}
	}
	body, err := p.block(l.children, false)
	if err != nil {
		return err
	}
	p.procs = append(p.procs, &procDef{sig: sig, text: p.text(Span{toks[0].span.Start, toks[len(toks)-1].span.End}), body: body, span: l.span,
		def: p.definition(l)})
	return nil
}

// definition is the text of a line and its block, from the start of the
// line to the end of its last descendant, with the line's indentation
// taken off every line.
func (p *parser) definition(l *srcLine) string {
	last := l
	for len(last.children) > 0 {
		last = last.children[len(last.children)-1]
	}
	text := p.lx.src[l.span.Start-len(l.indent) : last.span.End]
	if l.indent == "" {
		return text
	}
	lines := strings.Split(text, "\n")
	for i, ln := range lines {
		lines[i] = strings.TrimPrefix(ln, l.indent)
	}
	return strings.Join(lines, "\n")
}

// resolveCalls matches each call against the program's procedures.
func (p *parser) resolveCalls() error {
	for _, s := range p.calls {
		c := s.call
		if len(c.toks) > 1 && callPrefixes[c.toks[0].text] && c.toks[0].kind == tWord {
			c.bare = c.toks[1:]
			if len(c.bare) > 1 && c.bare[0].is("the") && c.bare[1].is("procedure") {
				c.bare = c.bare[2:] // `run the procedure to make apple pie`
			}
			if len(c.bare) == 1 && c.bare[0].kind == tStr && c.bare[0].raw == `"`+c.bare[0].text+`"` {
				// `run "make apple pie"`: the sentence in quotes
				t := c.bare[0]
				if ln, err := p.lx.line(t.span.Start+1, t.span.End-1, 0); err == nil && ln != nil {
					c.bare = ln.toks
				}
			}
			if len(c.bare) > 1 && c.bare[0].is("to") {
				c.bare = c.bare[1:]
			}
			if len(c.bare) == 0 {
				c.bare = nil
			}
		}
		if !p.matchProc(c, c.toks) && c.bare != nil && p.matchProc(c, c.bare) {
			// `run calculate the fee`: the program's procedure
			c.toks, c.bare = c.bare, nil
			c.sentence = p.text(Span{c.toks[0].span.Start, c.toks[len(c.toks)-1].span.End})
		}
		if c.proc != nil && (s.op == opSay || s.op == opImagine) {
			// a synonym gives way to the procedure of its sentence
			s.op = opCall
		}
	}
	return nil
}

// callPrefixes are the words of the older style that call a procedure
// named by the rest of the sentence: `run calculate the fee`,
// `invoke compute the bonus with`. The whole sentence is matched first
// (a procedure may start with one of them).
var callPrefixes = map[string]bool{"run": true, "invoke": true, "call": true, "execute": true, "perform": true}

// matchProc binds the call to the first procedure of the program whose
// signature toks match.
func (p *parser) matchProc(c *callStmt, toks []token) bool {
	for _, proc := range p.procs {
		if binds, ok := matchSignature(p, proc.sig, toks, c.args != nil); ok {
			c.proc = proc
			c.params = c.params[:0]
			for _, b := range binds {
				c.params = append(c.params, param{slot: proc.sig[b.elem].slot, x: b.x, soft: b.soft})
			}
			return true
		}
	}
	return false
}

// irregularPlurals are the irregular English plurals the language knows, by
// singular; irregularPluralSet the plurals.
var irregularPlurals = map[string]string{"person": "people", "child": "children", "man": "men", "woman": "women", "mouse": "mice", "foot": "feet", "tooth": "teeth", "datum": "data", "criterion": "criteria", "index": "indices"}

var irregularPluralSet = func() map[string]bool {
	m := make(map[string]bool, len(irregularPlurals))
	for _, pl := range irregularPlurals {
		m[pl] = true
	}
	return m
}()

// pluralNames are the plural fact names that `process each NAME` may go over.
func pluralNames(item string) []string {
	i := strings.LastIndexByte(item, ' ')
	head, last := item[:i+1], item[i+1:]
	var out []string
	addp := func(s string) { out = append(out, head+s) }
	if pl, ok := irregularPlurals[last]; ok {
		addp(pl)
	}
	switch {
	case strings.HasSuffix(last, "y") && len(last) > 1 && !strings.ContainsRune("aeiou", rune(last[len(last)-2])):
		addp(last[:len(last)-1] + "ies")
	case strings.HasSuffix(last, "s") || strings.HasSuffix(last, "x") || strings.HasSuffix(last, "z") || strings.HasSuffix(last, "ch") || strings.HasSuffix(last, "sh"):
		addp(last + "es")
	case strings.HasSuffix(last, "fe"):
		addp(last[:len(last)-2] + "ves")
	case strings.HasSuffix(last, "f"):
		addp(last[:len(last)-1] + "ves")
	case strings.HasSuffix(last, "o"):
		addp(last + "es")
	}
	addp(last + "s")
	return out
}

// isPluralName reports whether the last word of a fact's name is a regular
// or common irregular English plural (`backorders`, `entries`, `boxes`,
// `people`), not a singular that ends in s (`status`, `address`, `basis`).
func isPluralName(name string) bool {
	last := name[strings.LastIndexByte(name, ' ')+1:]
	if irregularPluralSet[last] {
		return true
	}
	if len(last) < 3 || !strings.HasSuffix(last, "s") {
		return false
	}
	for _, end := range []string{"ss", "us", "is", "news", "series", "species"} {
		if strings.HasSuffix(last, end) {
			return false
		}
	}
	return true
}

// article is a keyword with its indefinite article, quoted: "an 'ask'".
func article(word string) string {
	if strings.ContainsRune("aeiou", rune(word[0])) {
		return "an '" + word + "'"
	}
	return "a '" + word + "'"
}

// isStartRun: `start a run where` (or `with`), or `start a new run where`.
func isStartRun(toks []token) bool {
	if len(toks) < 4 || !toks[0].is("start") {
		return false
	}
	words := []string{"start", "a", "run"}
	if len(toks) == 5 && toks[2].is("new") {
		toks = append(toks[:2:2], toks[3:]...)
	}
	if len(toks) != 4 || !(toks[3].is("where") || toks[3].is("with")) {
		return false
	}
	for i, w := range words {
		if !toks[i].is(w) {
			return false
		}
	}
	return true
}

// isWaitRuns: `wait for the runs`, `wait for all the runs`, `wait for all
// runs`, optionally followed by `to finish` or `to complete`.
func isWaitRuns(toks []token) bool {
	if len(toks) < 4 || !toks[0].is("wait") || !toks[1].is("for") {
		return false
	}
	var ws []string
	for _, t := range toks {
		if t.kind != tWord {
			return false
		}
		ws = append(ws, t.text)
	}
	s := strings.Join(ws, " ")
	s = strings.TrimSuffix(strings.TrimSuffix(s, " to finish"), " to complete")
	switch s {
	case "wait for the runs", "wait for all the runs", "wait for all runs", "wait for the runs to end":
		return true
	}
	return false
}

// unquoted reads the rest of an assignment in a block as an unquoted word
// or file name (`metric`, `Uber-Receipt.pdf`, `ana@example.com`) when it
// is one and no expression: words, digits and the marks of wordMarks
// written together (no space but between words), as in a file name, an
// email address or a web address. Nil when it is not.
// wordMarks may stand inside an unquoted word: Uber-Receipt.pdf,
// ana@example.com, https://example.com/a?b=1.
const wordMarks = "-.@:/?=&%#+~"

func (p *parser) unquoted(q *ep) expr {
	rest := q.toks[q.i:]
	if len(rest) == 0 || rest[0].kind != tWord {
		return nil
	}
	switch rest[0].text {
	case "the", "a", "an", "true", "false", "yes", "no", "nothing", "null", "none", "today", "now", "convert", "not":
		return nil
	}
	sub := p.ep(rest)
	if _, err := sub.expr(); err == nil && sub.done() {
		return nil
	}
	var words []string
	for i, t := range rest {
		switch {
		case t.kind == tWord:
			if stopWords[t.text] && i > 0 {
				return nil
			}
			words = append(words, t.text)
		case t.kind == tNum:
		case t.kind == tOp && strings.Contains(wordMarks, t.text):
			last := i == len(rest)-1
			if i == 0 || rest[i-1].span.End != t.span.Start || last && t.text != "/" || !last && rest[i+1].span.Start != t.span.End {
				return nil // a mark inside the word (an address may end with /)
			}
			words = nil // a file name names no fact
		default:
			return nil
		}
	}
	sp := Span{rest[0].span.Start, rest[len(rest)-1].span.End}
	w := &wordExpr{text: p.text(sp), span: sp, slot: -1}
	if words != nil {
		w.name = strings.Join(words, " ")
		w.slot = p.syms.slot(w.name)
	}
	q.i = len(q.toks)
	return w
}
