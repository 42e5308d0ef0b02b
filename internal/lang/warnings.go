package lang

import "fmt"

// Warning is something a program's author likely did not mean, found
// without running it: the program still runs.
type Warning struct {
	Msg  string
	Span Span
	Line int // 1-based
	Col  int // 1-based, in bytes
}

// Warnings lists what the syntax check says of a parsed program beside its
// errors: an `output` fact set only inside a block (an if, a loop, an
// argument block, a procedure) is no output of the run (LANGUAGE.md,
// "Outputs"), which authors do not expect; the warning stands at the
// statement that sets it.
func (p *Program) Warnings() []Warning {
	top := map[int]bool{}
	var markTop func(b *block)
	markTop = func(b *block) {
		for _, s := range b.stmts {
			if s.out {
				top[s.outSlot] = true
			}
			for _, br := range s.branches {
				if br.body.inline {
					markTop(br.body) // a one-line if stands at the top level
				}
			}
		}
	}
	markTop(p.top)
	var out []Warning
	seen := map[int]bool{}
	lx := &lexer{src: p.src}
	for _, b := range p.blocks {
		if b == p.top || topInline(p.top, b) {
			continue
		}
		for _, s := range b.stmts {
			if !s.out || top[s.outSlot] || seen[s.outSlot] {
				continue
			}
			seen[s.outSlot] = true
			name := p.syms.name(s.outSlot)
			e := lx.errAt(s.span.Start, s.span.End, "'the %s' is set only inside a block, so it is no output of the run: set it at the top level too (for instance 'the %s is nothing' before the block)", name, name)
			out = append(out, Warning{Msg: e.Msg, Span: s.span, Line: e.Line, Col: e.Col})
		}
	}
	return out
}

// topInline reports whether b is the block of a one-line if that stands
// at the top level (directly or through other one-line ifs).
func topInline(top, b *block) bool {
	for _, s := range top.stmts {
		for _, br := range s.branches {
			if br.body.inline && (br.body == b || topInline(br.body, b)) {
				return true
			}
		}
	}
	return false
}

func (w Warning) String() string { return fmt.Sprintf("line %d, column %d: %s", w.Line, w.Col, w.Msg) }
