package lang

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Span is a byte range in the program text: Start inclusive, End exclusive,
// counted in UTF-8 bytes.
type Span struct {
	Start int `json:"start_byte"`
	End   int `json:"end_byte"`
}

// SyntaxError is a program that cannot be read, with where it happened.
type SyntaxError struct {
	Msg  string
	Span Span
	Line int // 1-based
	Col  int // 1-based, in bytes
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("line %d, column %d: %s", e.Line, e.Col, e.Msg)
}

type tokKind uint8

const (
	tWord tokKind = iota + 1
	tNum
	tStr
	tOp   // + - * / ( ) , = != < > <= >= : and . @ (parts of unquoted file names)
	tPoss // 's or ' (possessive)
)

type token struct {
	kind tokKind
	text string // word: lowercase; number: literal; string: the value; op: the operator
	raw  string // word as written
	span Span
}

func (t token) is(word string) bool { return t.kind == tWord && t.text == word }

// srcLine is one non-blank line of the program.
type srcLine struct {
	num      int
	indent   string // the spaces and tabs before the first token
	span     Span   // first non-space byte to last non-space byte before any comment
	toks     []token
	children []*srcLine
}

type lexer struct {
	src string
}

func (lx *lexer) errAt(start, end int, format string, args ...any) *SyntaxError {
	ls := strings.LastIndexByte(lx.src[:start], '\n')
	line := strings.Count(lx.src[:start], "\n") + 1
	col := start - ls
	if end <= start {
		end = start + 1
		if end > len(lx.src) {
			end = len(lx.src)
		}
	}
	return &SyntaxError{Msg: fmt.Sprintf(format, args...), Span: Span{start, end}, Line: line, Col: col}
}

// lines splits the source into tokenized lines and builds the block tree.
func (lx *lexer) lines() ([]*srcLine, error) {
	src := lx.src
	if !utf8.ValidString(src) {
		i := 0
		for i < len(src) {
			r, n := utf8.DecodeRuneInString(src[i:])
			if r == utf8.RuneError && n <= 1 {
				break
			}
			i += n
		}
		return nil, lx.errAt(i, i+1, "the program is not valid UTF-8 text")
	}
	var flat []*srcLine
	num := 0
	for pos := 0; pos < len(src); {
		num++
		end := strings.IndexByte(src[pos:], '\n')
		if end < 0 {
			end = len(src)
		} else {
			end += pos
		}
		ln, err := lx.line(pos, end, num)
		if err != nil {
			return nil, err
		}
		if ln != nil {
			flat = append(flat, ln)
		}
		pos = end + 1
	}
	root, rest, err := lx.block(flat, "")
	if err != nil {
		return nil, err
	}
	if len(rest) > 0 {
		l := rest[0]
		return nil, lx.errAt(l.span.Start, l.span.End, "this line is indented less than its block but more than the block around it")
	}
	return root, nil
}

// block reads consecutive lines at one indentation; deeper lines become the
// children of the line before them. A deeper block's indentation starts with
// its parent's; a tab is one level like any run of spaces, but the lines of a
// block must indent with the same characters.
func (lx *lexer) block(ls []*srcLine, indent string) ([]*srcLine, []*srcLine, error) {
	var out []*srcLine
	for len(ls) > 0 {
		l := ls[0]
		switch {
		case l.indent == indent:
			out = append(out, l)
			ls = ls[1:]
		case len(l.indent) > len(indent) && strings.HasPrefix(l.indent, indent):
			if len(out) == 0 {
				return nil, nil, lx.errAt(l.span.Start, l.span.End, "unexpected indentation")
			}
			kids, rest, err := lx.block(ls, l.indent)
			if err != nil {
				return nil, nil, err
			}
			out[len(out)-1].children = kids
			ls = rest
			if len(ls) > 0 && ls[0].indent != indent && strings.HasPrefix(ls[0].indent, indent) {
				return nil, nil, lx.errAt(ls[0].span.Start, ls[0].span.End, "this line's indentation matches no block around it")
			}
		case strings.HasPrefix(indent, l.indent):
			return out, ls, nil
		default:
			return nil, nil, lx.errAt(l.span.Start-len(l.indent), l.span.Start, "this line indents with %s where its block indents with %s (a block must not mix tabs and spaces)", describeIndent(l.indent), describeIndent(indent))
		}
	}
	return out, nil, nil
}

// describeIndent names the characters of an indentation.
func describeIndent(s string) string {
	tabs := strings.Count(s, "\t")
	spaces := len(s) - tabs
	switch {
	case tabs == 0:
		return plural(spaces, "space")
	case spaces == 0:
		return plural(tabs, "tab")
	}
	return plural(tabs, "tab") + " and " + plural(spaces, "space")
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// line tokenizes src[start:end]; it returns nil for a blank or comment line.
func (lx *lexer) line(start, end, num int) (*srcLine, error) {
	src := lx.src
	if end > start && src[end-1] == '\r' {
		end--
	}
	i := start
	for i < end && (src[i] == ' ' || src[i] == '\t') {
		i++
	}
	if i == end || src[i] == '#' {
		return nil, nil
	}
	ln := &srcLine{num: num, indent: src[start:i]}
	ln.span.Start = i
	last := i
	for i < end {
		c := src[i]
		switch {
		case c == ' ' || c == '\t' || c == '\r':
			i++
			continue
		case c == '#':
			i = end
			continue
		case c == '"' || strings.HasPrefix(src[i:end], "“"):
			s, j, err := lx.str(i, end)
			if err != nil {
				return nil, err
			}
			ln.toks = append(ln.toks, token{kind: tStr, text: s, raw: src[i:j], span: Span{i, j}})
			i = j
		case c >= '0' && c <= '9' || (c == '$' || c == 0xE2 || c == 0xC2) && currencyAt(src, i, end) > 0:
			// `$120.20` is the number 120.20: a currency sign before a
			// number is read and dropped (there is no money kind)
			numStart := i + currencyAt(src, i, end)
			j := numStart
			for j < end && src[j] >= '0' && src[j] <= '9' {
				j++
			}
			if j+1 < end && src[j] == '.' && src[j+1] >= '0' && src[j+1] <= '9' {
				j++
				for j < end && src[j] >= '0' && src[j] <= '9' {
					j++
				}
			}
			if j < end && isWordByte(src, j) {
				return nil, lx.errAt(i, j+1, "a number must not run into a word (write a space between them)")
			}
			ln.toks = append(ln.toks, token{kind: tNum, text: src[numStart:j], raw: src[i:j], span: Span{i, j}})
			i = j
		case c == '\'' || strings.HasPrefix(src[i:end], "’"):
			w := 1
			if c != '\'' {
				w = len("’")
			}
			j := i + w
			if j < end && (src[j] == 's' || src[j] == 'S') && !isWordByte(src, j+1) {
				ln.toks = append(ln.toks, token{kind: tPoss, text: "'s", raw: src[i : j+1], span: Span{i, j + 1}})
				i = j + 1
			} else if !isWordByte(src, j) && len(ln.toks) > 0 && ln.toks[len(ln.toks)-1].kind == tWord {
				ln.toks = append(ln.toks, token{kind: tPoss, text: "'", raw: src[i:j], span: Span{i, j}})
				i = j
			} else {
				return nil, lx.errAt(i, j, "unexpected apostrophe (quote text with double quotes)")
			}
		case isWordByte(src, i):
			j := i
			for j < end && isWordByte(src, j) {
				_, n := utf8.DecodeRuneInString(src[j:])
				j += n
			}
			raw := src[i:j]
			ln.toks = append(ln.toks, token{kind: tWord, text: strings.ToLower(raw), raw: raw, span: Span{i, j}})
			i = j
		default:
			op := ""
			for _, o := range []string{">=", "<=", "!=", "<>", "==", "+", "-", "*", "/", "(", ")", ",", "=", "<", ">", ":", "×", "÷", "≥", "≤", "≠", ".", "@"} {
				if strings.HasPrefix(src[i:end], o) {
					op = o
					break
				}
			}
			if op == "" {
				r, n := utf8.DecodeRuneInString(src[i:])
				return nil, lx.errAt(i, i+n, "unexpected character %q", r)
			}
			canon := map[string]string{"<>": "!=", "==": "=", "×": "*", "÷": "/", "≥": ">=", "≤": "<=", "≠": "!="}
			text := op
			if c, ok := canon[op]; ok {
				text = c
			}
			ln.toks = append(ln.toks, token{kind: tOp, text: text, raw: op, span: Span{i, i + len(op)}})
			i += len(op)
		}
		last = ln.toks[len(ln.toks)-1].span.End
	}
	ln.span.End = last
	if len(ln.toks) == 0 {
		return nil, nil
	}
	return ln, nil
}

// currencyAt is the length of a currency sign ($ € £) at src[i] that a
// digit follows, else 0.
func currencyAt(src string, i, end int) int {
	for _, sign := range []string{"$", "€", "£"} {
		if strings.HasPrefix(src[i:end], sign) {
			if k := i + len(sign); k < end && src[k] >= '0' && src[k] <= '9' {
				return len(sign)
			}
			return 0
		}
	}
	return 0
}

func isWordByte(src string, i int) bool {
	if i >= len(src) {
		return false
	}
	c := src[i]
	if c < utf8.RuneSelf {
		return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
	}
	r, _ := utf8.DecodeRuneInString(src[i:])
	return r != '’' && r != '“' && r != '”' && (unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r))
}

// str reads a double-quoted text literal starting at i; \" and \\ escape
// (and \n, \t for convenience).
func (lx *lexer) str(i, end int) (string, int, error) {
	src := lx.src
	closeQ := "\""
	j := i + 1
	if src[i] != '"' {
		closeQ = "”"
		j = i + len("“")
	}
	var b strings.Builder
	for j < end {
		c := src[j]
		if c == '\\' && j+1 < end {
			switch src[j+1] {
			case '"', '\\':
				b.WriteByte(src[j+1])
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			default:
				return "", 0, lx.errAt(j, j+2, "unknown escape \\%c in text (use \\\" or \\\\)", src[j+1])
			}
			j += 2
			continue
		}
		if strings.HasPrefix(src[j:end], closeQ) || (closeQ == "”" && c == '"') {
			n := len(closeQ)
			if c == '"' {
				n = 1
			}
			return b.String(), j + n, nil
		}
		b.WriteByte(c)
		j++
	}
	return "", 0, lx.errAt(i, end, "text is not closed (a \" is missing)")
}
