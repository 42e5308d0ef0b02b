package lang

import (
	"strconv"
	"strings"
)

// ep parses an expression from a slice of one line's tokens.
type ep struct {
	p     *parser
	toks  []token
	i     int
	depth int
}

func (p *parser) ep(toks []token) *ep { return &ep{p: p, toks: toks} }

var eofTok = token{}

func (q *ep) peek() token { return q.at(0) }

func (q *ep) at(k int) token {
	if q.i+k < len(q.toks) {
		return q.toks[q.i+k]
	}
	return eofTok
}

func (q *ep) next() token {
	t := q.peek()
	if q.i < len(q.toks) {
		q.i++
	}
	return t
}

func (q *ep) done() bool { return q.i >= len(q.toks) }

func (q *ep) isOp(op string) bool { t := q.peek(); return t.kind == tOp && t.text == op }

func (q *ep) errHere(format string, args ...any) *SyntaxError {
	if q.done() {
		end := 0
		if len(q.toks) > 0 {
			end = q.toks[len(q.toks)-1].span.End
		}
		return q.p.lx.errAt(end, end, format, args...)
	}
	t := q.peek()
	return q.p.lx.errAt(t.span.Start, t.span.End, format, args...)
}

func (q *ep) want(word string) error {
	if !q.peek().is(word) {
		if q.done() {
			return q.errHere("expected '%s' at the end of the line", word)
		}
		return q.errHere("expected '%s', found '%s'", word, q.peek().raw)
	}
	q.next()
	return nil
}

func (q *ep) end() error {
	if !q.done() {
		return q.errHere("unexpected '%s'", q.peek().raw)
	}
	return nil
}

func (q *ep) spanFrom(start int) Span {
	end := start
	if q.i > 0 && q.i <= len(q.toks) {
		end = q.toks[q.i-1].span.End
	}
	return Span{start, end}
}

// stopWords end a fact name.
var stopWords = map[string]bool{
	"is": true, "are": true, "was": true, "were": true, "isn": true, "aren": true, "in": true, "as": true, "to": true,
	"by": true, "from": true, "and": true, "or": true, "not": true, "then": true, "where": true, "with": true,
	"contains": true, "contain": true, "includes": true, "include": true, "equals": true, "than": true,
	"plus": true, "minus": true, "times": true, "into": true, "if": true, "else": true, "does": true, "do": true,
	"for": true,
}

// nameWords reads the words of a name, up to a stop word, an operator or
// the end. A whole number written after the first word is a word of the name
// (`the address line 1`, as the input `address_line_1`).
func (q *ep) nameWords() ([]string, Span) {
	var words []string
	start := q.peek().span.Start
	for {
		t := q.peek()
		if t.kind == tNum && len(words) > 0 && isDigits(t.raw) {
			words = append(words, t.text)
			q.next()
			continue
		}
		if t.kind != tWord {
			break
		}
		if len(words) > 0 {
			if stopWords[t.text] {
				break
			}
			if (t.text == "starts" || t.text == "start" || t.text == "ends" || t.text == "end") && q.at(1).is("with") {
				break
			}
			if t.text == "of" && (q.at(1).is("the") || q.at(1).kind != tWord) {
				break
			}
			if t.text == "rounded" && q.roundTail(1) > 0 {
				break // `the total rounded to 2 decimal places`
			}
			if q.postfixWord(0) {
				break // `the code trimmed`, `the names joined with ", "`
			}
		}
		words = append(words, strings.ReplaceAll(t.text, "_", " "))
		q.next()
	}
	return words, q.spanFrom(start)
}

// isDigits reports whether s is digits only (a whole number, no sign).
func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

func (q *ep) expr() (expr, error) {
	q.depth++
	defer func() { q.depth-- }()
	if q.depth > 200 {
		return nil, q.errHere("the expression is nested too deeply")
	}
	return q.or()
}

func (q *ep) or() (expr, error) {
	l, err := q.and()
	if err != nil {
		return nil, err
	}
	for q.peek().is("or") {
		q.next()
		r, err := q.and()
		if err != nil {
			return nil, err
		}
		l = &logicExpr{l: l, r: r, span: Span{l.sp().Start, r.sp().End}}
	}
	return l, nil
}

func (q *ep) and() (expr, error) {
	l, err := q.not()
	if err != nil {
		return nil, err
	}
	for q.peek().is("and") {
		q.next()
		r, err := q.not()
		if err != nil {
			return nil, err
		}
		l = &logicExpr{and: true, l: l, r: r, span: Span{l.sp().Start, r.sp().End}}
	}
	return l, nil
}

func (q *ep) not() (expr, error) {
	if q.peek().is("not") {
		t := q.next()
		q.depth++
		defer func() { q.depth-- }()
		if q.depth > 200 {
			return nil, q.errHere("the expression is nested too deeply")
		}
		x, err := q.not()
		if err != nil {
			return nil, err
		}
		return &notExpr{x: x, span: Span{t.span.Start, x.sp().End}}, nil
	}
	return q.cmp()
}

func (q *ep) cmp() (expr, error) {
	l, err := q.additive()
	if err != nil {
		return nil, err
	}
	c := &cmpExpr{l: l}
	t := q.peek()
	switch {
	case t.kind == tOp && (t.text == "=" || t.text == "!=" || t.text == "<" || t.text == ">" || t.text == "<=" || t.text == ">="):
		q.next()
		c.op = map[string]cmpOp{"=": cmpEq, "!=": cmpEq, "<": cmpLt, ">": cmpGt, "<=": cmpLe, ">=": cmpGe}[t.text]
		c.neg = t.text == "!="
	case t.is("is") || t.is("are") || t.is("was") || t.is("were"):
		q.next()
		if q.peek().is("not") {
			q.next()
			c.neg = true
		}
		if x, err := q.isForm(c); err != nil || x != nil {
			return x, err
		}
	case t.is("contains") || t.is("contain") || t.is("includes") || t.is("include"):
		q.next()
		c.op = cmpContains
	case t.is("equals"):
		q.next()
		c.op = cmpEq
	case (t.is("does") || t.is("do")) && q.at(1).is("not"):
		q.i += 2
		c.neg = true
		switch w := q.next(); {
		case w.is("contain") || w.is("include"):
			c.op = cmpContains
		case w.is("start") && q.peek().is("with"):
			q.next()
			c.op = cmpStarts
		case w.is("end") && q.peek().is("with"):
			q.next()
			c.op = cmpEnds
		case w.is("equal"):
			c.op = cmpEq
		default:
			q.i--
			return nil, q.errHere("expected 'contain', 'start with' or 'end with' after 'not'")
		}
	case (t.is("starts") || t.is("start")) && q.at(1).is("with"):
		q.i += 2
		c.op = cmpStarts
	case (t.is("ends") || t.is("end")) && q.at(1).is("with"):
		q.i += 2
		c.op = cmpEnds
	default:
		return l, nil
	}
	if c.op != cmpEmpty {
		r, err := q.additive()
		if err != nil {
			return nil, err
		}
		c.r = r
		c.span = Span{l.sp().Start, r.sp().End}
	} else {
		c.span = q.spanFrom(l.sp().Start)
	}
	return c, nil
}

// isForm reads what follows `is` (or `is not`) in a comparison: the
// operator into c, and nothing more (the right side is read by cmp), or the
// whole comparison for `is one of …` and `is between … and …`.
func (q *ep) isForm(c *cmpExpr) (expr, error) {
	l := c.l
	switch w := q.peek(); {
	case w.is("empty") || w.is("blank"):
		q.next()
		c.op = cmpEmpty
	case w.is("greater") || w.is("more") || w.is("larger") || w.is("bigger") || w.is("higher") || w.is("later"):
		q.next()
		if err := q.want("than"); err != nil {
			return nil, err
		}
		c.op = cmpGt
		if q.peek().is("or") && q.at(1).is("equal") {
			q.i += 2
			if err := q.want("to"); err != nil {
				return nil, err
			}
			c.op = cmpGe
		}
	case w.is("less") || w.is("fewer") || w.is("smaller") || w.is("lower") || w.is("earlier"):
		q.next()
		if err := q.want("than"); err != nil {
			return nil, err
		}
		c.op = cmpLt
		if q.peek().is("or") && q.at(1).is("equal") {
			q.i += 2
			if err := q.want("to"); err != nil {
				return nil, err
			}
			c.op = cmpLe
		}
	case w.is("after"):
		q.next()
		c.op = cmpGt
	case w.is("before"):
		q.next()
		c.op = cmpLt
	case w.is("at") && (q.at(1).is("least") || q.at(1).is("most")):
		q.next()
		c.op = cmpGe
		if q.next().is("most") {
			c.op = cmpLe
		}
	case w.is("equal") && q.at(1).is("to"):
		q.i += 2
		c.op = cmpEq
	case w.is("one") && q.at(1).is("of"):
		// `is one of "open", "pending" or "held"`
		q.i += 2
		c.op = cmpIn
		return q.oneOf(c)
	case w.is("between"):
		// `is between 10 and 20`, both ends included
		q.next()
		c.op = cmpBetween
		lo, err := q.additive()
		if err != nil {
			return nil, err
		}
		if err := q.want("and"); err != nil {
			return nil, err
		}
		hi, err := q.additive()
		if err != nil {
			return nil, err
		}
		c.r, c.r2 = lo, hi
		c.span = Span{l.sp().Start, hi.sp().End}
		return c, nil
	case w.is("in"):
		q.next()
		c.op = cmpIn
	case (w.is("started") || w.is("ended")) && q.at(1).is("by"):
		// `is started by "Jen"`: starts with
		q.i += 2
		c.op = cmpStarts
		if w.is("ended") {
			c.op = cmpEnds
		}
	default:
		c.op = cmpEq
	}
	return nil, nil
}

// oneOf reads the choices of `is one of A, B or C`: one choice is a list
// (or text) to look in, as `is in`; more are a list of their own.
func (q *ep) oneOf(c *cmpExpr) (expr, error) {
	var items []expr
	for {
		x, err := q.additive()
		if err != nil {
			return nil, err
		}
		items = append(items, x)
		if q.isOp(",") {
			q.next()
			if q.peek().is("or") {
				q.next()
			}
			continue
		}
		if q.peek().is("or") {
			q.next()
			continue
		}
		break
	}
	c.r = items[0]
	if len(items) > 1 {
		c.r = &listExpr{items: items, span: Span{items[0].sp().Start, items[len(items)-1].sp().End}}
	}
	c.span = Span{c.l.sp().Start, c.r.sp().End}
	return c, nil
}

func (q *ep) additive() (expr, error) {
	l, err := q.mult()
	if err != nil {
		return nil, err
	}
	for {
		t := q.peek()
		var op byte
		switch {
		case t.kind == tOp && (t.text == "+" || t.text == "-"):
			op = t.text[0]
		case t.is("plus"):
			op = '+'
		case t.is("minus"):
			op = '-'
		default:
			return l, nil
		}
		q.next()
		r, err := q.mult()
		if err != nil {
			return nil, err
		}
		l = &binExpr{op: op, l: l, r: r, span: Span{l.sp().Start, r.sp().End}}
	}
}

func (q *ep) mult() (expr, error) {
	l, err := q.unary()
	if err != nil {
		return nil, err
	}
	for {
		t := q.peek()
		var op byte
		switch {
		case t.kind == tOp && (t.text == "*" || t.text == "/"):
			op = t.text[0]
		case t.is("times"):
			op = '*'
		case t.is("divided") && q.at(1).is("by"):
			q.next()
			op = '/'
		default:
			return l, nil
		}
		q.next()
		r, err := q.unary()
		if err != nil {
			return nil, err
		}
		l = &binExpr{op: op, l: l, r: r, span: Span{l.sp().Start, r.sp().End}}
	}
}

func (q *ep) unary() (expr, error) {
	if q.isOp("-") {
		t := q.next()
		q.depth++
		defer func() { q.depth-- }()
		if q.depth > 200 {
			return nil, q.errHere("the expression is nested too deeply")
		}
		x, err := q.unary()
		if err != nil {
			return nil, err
		}
		sp := Span{t.span.Start, x.sp().End}
		if lit, ok := x.(*litExpr); ok && lit.v.k == KindNumber {
			return &litExpr{v: Num(lit.v.num().Neg()), span: sp}, nil
		}
		return &negExpr{x: x, span: sp}, nil
	}
	if q.isOp("+") {
		q.next()
	}
	return q.postfix()
}

func (q *ep) postfix() (expr, error) {
	x, err := q.primary()
	if err != nil {
		return nil, err
	}
	for {
		t := q.peek()
		switch {
		case t.kind == tPoss:
			q.next()
			key, sp, err := q.fieldKey()
			if err != nil {
				return nil, err
			}
			if ref, ok := x.(*refExpr); ok {
				x = ref.withField(key, sp.End)
			} else {
				// `today's year`, `(the a + the b)'s …`: a part of a value
				x = &partExpr{x: x, key: key, span: Span{x.sp().Start, sp.End}}
			}
		case t.is("in") && (q.at(1).is("uppercase") || q.at(1).is("lowercase") || q.at(1).is("capitals") ||
			(q.at(1).is("upper") || q.at(1).is("lower")) && q.at(2).is("case")):
			q.next()
			w := q.next()
			if q.peek().is("case") {
				q.next()
			}
			x = &caseExpr{upper: w.is("uppercase") || w.is("upper") || w.is("capitals"), x: x, span: q.spanFrom(x.sp().Start)}
		case q.postfixWord(0):
			var err error
			if x, err = q.stdPostfix(x); err != nil {
				return nil, err
			}
		case t.is("rounded"):
			q.next()
			places := 0
			if q.roundTail(0) > 0 || q.peek().is("to") && (q.at(1).kind == tNum || q.at(1).kind == tOp && q.at(1).text == "-") {
				var err error
				if places, err = q.roundPlaces(); err != nil {
					return nil, err
				}
			}
			x = &roundExpr{x: x, places: places, span: q.spanFrom(x.sp().Start)}
		default:
			return x, nil
		}
	}
}

// postfixWord reports whether the token at offset k starts a postfix
// operation of the standard library: `trimmed`, `truncated`, `sorted`,
// `joined with S`, `split by S`.
func (q *ep) postfixWord(k int) bool {
	t := q.at(k)
	switch {
	case t.is("trimmed") || t.is("truncated") || t.is("sorted"):
		return true
	case t.is("joined"):
		n := q.at(k + 1)
		return n.is("with") || n.is("by") || n.is("using")
	case t.is("split"):
		n := q.at(k + 1)
		return n.is("by") || n.is("on") || n.is("at")
	}
	return false
}

// stdPostfix reads a postfix operation of the standard library after x.
func (q *ep) stdPostfix(x expr) (expr, error) {
	t := q.next()
	e := &stdExpr{op: t.text, x: x}
	switch t.text {
	case "joined", "split":
		q.next() // with, by, using, on, at
		arg, err := q.postfix()
		if err != nil {
			return nil, err
		}
		e.arg = arg
	case "sorted":
		if q.peek().is("in") && (q.at(1).is("descending") || q.at(1).is("reverse")) && q.at(2).is("order") {
			q.i += 3
			e.desc = true
		} else if q.peek().is("in") && q.at(1).is("ascending") && q.at(2).is("order") {
			q.i += 3
		}
	}
	e.span = q.spanFrom(x.sp().Start)
	return e, nil
}

// roundTail is the number of tokens of `to N decimal places` (or `decimal
// place`, `places`, `place`) at offset k, N being one token; 0 when they are
// not there.
func (q *ep) roundTail(k int) int {
	if !q.at(k).is("to") || q.at(k+1).kind == 0 {
		return 0
	}
	j := k + 2
	if q.at(j).is("decimal") {
		j++
	}
	if q.at(j).is("places") || q.at(j).is("place") {
		return j + 1 - k
	}
	return 0
}

// roundPlaces reads `to N decimal places`, N a whole number from 0 to
// MaxScale.
func (q *ep) roundPlaces() (int, error) {
	n := q.roundTail(0)
	if n == 0 {
		if q.peek().is("to") {
			return 0, q.errHere("expected a whole number and 'decimal places' after 'to', as in 'to 2 decimal places'")
		}
		return 0, q.errHere("expected 'to' and a number of decimal places, as in 'to 2 decimal places'")
	}
	t := q.at(1)
	v, err := strconv.Atoi(t.raw)
	if t.kind != tNum || !isDigits(t.raw) || err != nil || v > MaxScale {
		return 0, q.p.errAt(t.span, "the number of decimal places must be a whole number from 0 to %d, as in 'to 2 decimal places'", MaxScale)
	}
	q.i += n
	return v, nil
}

func (q *ep) fieldKey() (string, Span, error) {
	t := q.peek()
	if t.kind == tStr {
		q.next()
		return t.text, t.span, nil
	}
	if t.kind != tWord {
		return "", Span{}, q.errHere("expected a field name after 's")
	}
	start := q.i
	words, sp := q.nameWords()
	raw := make([]string, len(words))
	for i := range words {
		raw[i] = q.toks[start+i].raw
	}
	return strings.Join(raw, " "), sp, nil
}

func (e *refExpr) withField(key string, end int) *refExpr {
	n := &refExpr{slot: e.slot, name: e.name, fields: append(append([]string(nil), e.fields...), key), span: Span{e.span.Start, end}, derive: e.derive,
		keys: append(append([]string(nil), e.keys...), "s"+key)}
	n.display = e.display + "'s " + fieldDisplay(key)
	return n
}

var aggregates = map[string]string{
	"sum": "sum", "number": "count", "count": "count", "average": "average", "mean": "average",
	"maximum": "maximum", "max": "maximum", "highest": "maximum", "largest": "maximum",
	"minimum": "minimum", "min": "minimum", "lowest": "minimum", "smallest": "minimum",
	"first": "first", "last": "last", "length": "length", "size": "count",
}

var units = map[string]bool{"year": true, "years": true, "month": true, "months": true, "week": true, "weeks": true,
	"day": true, "days": true, "hour": true, "hours": true, "minute": true, "minutes": true, "second": true, "seconds": true,
	"millisecond": true, "milliseconds": true}

// dateLiteral reads a date written without quotes, `2024-02-27` (digits
// and dashes together): a date, not a subtraction. One that is no date
// (2024-13-45) is a syntax error at it.
func (q *ep) dateLiteral() (expr, bool, error) {
	if q.i+5 > len(q.toks) {
		return nil, false, nil
	}
	parts := q.toks[q.i : q.i+5]
	for k := 1; k < len(parts); k++ {
		if parts[k].span.Start != parts[k-1].span.End {
			return nil, false, nil
		}
	}
	dash := func(t token) bool { return t.kind == tOp && t.text == "-" }
	digits := func(t token, n int) bool {
		return t.kind == tNum && isDigits(t.raw) && len(t.raw) >= n && len(t.raw) <= 2
	}
	if parts[0].kind != tNum || len(parts[0].raw) != 4 || !isDigits(parts[0].raw) || !dash(parts[1]) || !digits(parts[2], 1) ||
		!dash(parts[3]) || !digits(parts[4], 1) {
		return nil, false, nil
	}
	if k := q.i + 5; k < len(q.toks) && q.toks[k].span.Start == parts[4].span.End && (q.toks[k].kind == tWord || q.toks[k].kind == tNum) {
		return nil, false, nil // `2024-02-27T10:00` is not read so
	}
	sp := Span{parts[0].span.Start, parts[4].span.End}
	pad := func(s string) string { return strings.Repeat("0", 2-len(s)) + s }
	text := parts[0].raw + "-" + pad(parts[2].raw) + "-" + pad(parts[4].raw)
	q.i += 5
	d, ok := parseDate(text)
	if !ok {
		return nil, true, q.p.errAt(sp, "%s is not a date (write a date as year-month-day, such as 2024-02-27)", q.p.text(sp))
	}
	return &litExpr{v: DateValue(d), span: sp}, true, nil
}

func (q *ep) primary() (expr, error) {
	t := q.peek()
	switch t.kind {
	case tNum:
		if d, ok, err := q.dateLiteral(); ok {
			return d, err
		}
		q.next()
		n, err := ParseNumber(t.text)
		if err != nil {
			return nil, q.p.errAt(t.span, "%s", err.Error())
		}
		if w := q.peek(); w.kind == tWord && units[w.text] {
			q.next()
			u, _ := durationUnit(w.text)
			d, ok := scaleUnit(n, u)
			if !ok {
				return nil, q.p.errAt(Span{t.span.Start, w.span.End}, "this duration is out of range")
			}
			return &litExpr{v: DurationValue(d), span: Span{t.span.Start, w.span.End}}, nil
		}
		return &litExpr{v: Num(n), span: t.span}, nil
	case tStr:
		q.next()
		return &litExpr{v: Text(t.text), span: t.span}, nil
	case tOp:
		if t.text == "(" {
			q.next()
			x, err := q.expr()
			if err != nil {
				return nil, err
			}
			if q.isOp(",") {
				items := []expr{x}
				for q.isOp(",") {
					q.next()
					y, err := q.expr()
					if err != nil {
						return nil, err
					}
					items = append(items, y)
				}
				x = &listExpr{items: items}
			}
			if !q.isOp(")") {
				return nil, q.errHere("expected ')'")
			}
			q.next()
			if l, ok := x.(*listExpr); ok {
				l.span = q.spanFrom(t.span.Start)
			}
			return x, nil
		}
		return nil, q.errHere("unexpected '%s'", t.raw)
	case tWord:
	default:
		if q.done() {
			return nil, q.errHere("expected a value at the end of the line")
		}
		return nil, q.errHere("unexpected '%s'", t.raw)
	}
	switch t.text {
	case "true", "yes":
		q.next()
		return &litExpr{v: Bool(true), span: t.span}, nil
	case "false", "no":
		q.next()
		return &litExpr{v: Bool(false), span: t.span}, nil
	case "nothing", "null", "none":
		q.next()
		return &litExpr{v: Null(), span: t.span}, nil
	case "today":
		q.next()
		return q.inZone(&clockExpr{what: "date", span: t.span})
	case "now":
		q.next()
		return q.inZone(&clockExpr{what: "datetime", span: t.span})
	case "convert":
		q.next()
		x, err := q.expr()
		if err != nil {
			return nil, err
		}
		if err := q.want("to"); err != nil {
			return nil, err
		}
		to, err := q.typeName()
		if err != nil {
			return nil, err
		}
		return &convertExpr{x: x, to: to, span: q.spanFrom(t.span.Start)}, nil
	case "a", "an":
		if q.at(1).is("empty") || q.at(1).is("new") {
			k, ok := map[string]Kind{"list": KindList, "dictionary": KindDictionary, "set": KindSet, "table": KindTable, "record": KindDictionary}[q.at(2).text]
			if ok {
				q.i += 3
				return &newExpr{kind: k, span: q.spanFrom(t.span.Start)}, nil
			}
		}
	case "the":
		return q.the()
	}
	at := q.i
	if r := q.bareConcept(); r != nil {
		return r, nil
	}
	q.i = at
	// the error covers the whole unquoted word as written
	// (`Uber-Receipt.pdf`), not its first part
	end := at
	for end+1 < len(q.toks) && q.toks[end+1].span.Start == q.toks[end].span.End && q.toks[end+1].kind != tStr && q.toks[end+1].kind != tPoss {
		end++
	}
	sp := Span{t.span.Start, q.toks[end].span.End}
	word := t.raw
	if src := q.p.lx.src; sp.End <= len(src) {
		word = src[sp.Start:sp.End]
	}
	return nil, q.p.errAt(sp, "unexpected '%s' (a fact starts with 'the'; text goes in double quotes)", word)
}

func (q *ep) typeName() (string, error) {
	if q.peek().is("a") || q.peek().is("an") {
		q.next()
	}
	w := q.next()
	switch w.text {
	case "date":
		if q.peek().is("and") && q.at(1).is("time") {
			q.i += 2
			return "datetime", nil
		}
		if q.peek().is("time") {
			q.next()
			return "datetime", nil
		}
		return "date", nil
	case "datetime", "timestamp":
		return "datetime", nil
	case "number", "decimal", "amount", "float":
		return "number", nil
	case "integer", "int":
		return "integer", nil
	case "whole":
		if q.peek().is("number") {
			q.next()
			return "integer", nil
		}
	case "text", "string":
		return "text", nil
	case "duration", "period":
		return "duration", nil
	case "time":
		if q.peek().is("of") && q.at(1).is("day") {
			q.i += 2
		} else if q.peek().is("zone") {
			q.next()
			return "time zone", nil
		}
		return "time", nil
	case "boolean", "bool", "yes":
		return "boolean", nil
	case "list":
		return "list", nil
	case "set":
		return "set", nil
	}
	q.i--
	return "", q.errHere("expected a type after 'to': a date, a datetime, a time, a number, text, a duration, a boolean, a list, a set or a time zone")
}

// inZone reads `in ZONE` after a clock reading: `today in
// "America/New_York"`, `the current datetime in the office's time zone`.
func (q *ep) inZone(c *clockExpr) (expr, error) {
	if !q.peek().is("in") || !(q.at(1).kind == tStr || q.at(1).is("the")) {
		return c, nil
	}
	q.next()
	z, err := q.postfix()
	if err != nil {
		return nil, err
	}
	c.zone = z
	c.span = Span{c.span.Start, z.sp().End}
	return c, nil
}

// asKind reads the rest of `get X as <kind>`: a type converts the value
// (`get the body as text`, `as a number`, `as a date`); another noun
// (`as a scanned document`) names the fact that holds it.
func (q *ep) asKind(s *stmt) error {
	at := q.i
	if to, err := q.typeName(); err == nil && q.done() {
		s.x = &convertExpr{x: s.x, to: to, span: q.spanFrom(s.x.sp().Start)}
		return nil
	}
	q.i = at
	art := q.peek()
	if art.is("a") || art.is("an") {
		q.next()
	}
	words, sp := q.nameWords()
	if len(words) == 0 {
		return q.errHere("expected a kind (text, a number, a date, …) or a fact after 'as'")
	}
	name := strings.Join(words, " ")
	s.target = &refExpr{slot: q.p.syms.slot(name), name: name, display: "the " + name, span: Span{art.span.Start, sp.End}}
	return nil
}

// bareConcept reads a concept named without `the` before a possessive:
// `yaml's "Movies"`, `invoice's total` is `the invoice's total`. It is
// nil when the words at the cursor are not followed by 's.
func (q *ep) bareConcept() *refExpr {
	k := q.i
	for k < len(q.toks) && q.toks[k].kind == tWord && !stopWords[q.toks[k].text] && !q.toks[k].is("the") && !q.toks[k].is("a") && !q.toks[k].is("an") {
		k++
	}
	if k == q.i || k >= len(q.toks) || q.toks[k].kind != tPoss {
		return nil
	}
	start := q.toks[q.i].span.Start
	words, sp := q.nameWords()
	if q.i != k {
		q.i = k
		return nil
	}
	name := strings.Join(words, " ")
	return &refExpr{slot: q.p.syms.slot(name), name: name, display: "the " + name, span: Span{start, sp.End}}
}

// the parses an expression that starts with `the`: a fact, a field through
// `of`, an aggregate, the above or the current date.
func (q *ep) the() (expr, error) {
	t := q.next()
	w := q.peek()
	if w.kind != tWord || w.is("the") {
		return nil, q.errHere("expected a name after 'the'")
	}
	if fn, ok := aggregates[w.text]; ok && q.at(1).is("of") {
		if nx := q.at(2); nx.is("the") || nx.kind == tOp && nx.text == "(" || nx.kind == tStr || nx.kind == tNum {
			q.i += 2
			q.depth++
			defer func() { q.depth-- }()
			if q.depth > 200 {
				return nil, q.errHere("the expression is nested too deeply")
			}
			x, err := q.postfix()
			if err != nil {
				return nil, err
			}
			if r, ok := x.(*roundExpr); ok {
				// `the sum of the amounts rounded to 2 decimal places`
				// rounds the sum.
				r.x = &aggExpr{fn: fn, x: r.x, span: Span{t.span.Start, r.x.sp().End}}
				r.span.Start = t.span.Start
				return r, nil
			}
			return &aggExpr{fn: fn, x: x, span: Span{t.span.Start, x.sp().End}}, nil
		}
	}
	if (w.is("unique") || w.is("distinct")) && (q.at(1).is("items") || q.at(1).is("values")) && q.at(2).is("of") {
		// `the unique items of the tags`
		q.i += 3
		x, err := q.postfix()
		if err != nil {
			return nil, err
		}
		return &stdExpr{op: "unique", x: x, span: Span{t.span.Start, x.sp().End}}, nil
	}
	if (w.is("first") || w.is("last")) && q.at(1).kind == tNum && q.at(2).kind == tWord && q.at(3).is("of") {
		// `the first 3 items of the list`, `the last 2 lines of the text`
		n, err := ParseNumber(q.at(1).text)
		if err != nil {
			return nil, q.p.errAt(q.at(1).span, "%s", err.Error())
		}
		part := q.at(2).text
		q.i += 4
		x, err := q.postfix()
		if err != nil {
			return nil, err
		}
		return &stdExpr{op: w.text, x: x, n: n, part: part, span: Span{t.span.Start, x.sp().End}}, nil
	}
	if w.is("current") {
		switch n := q.at(1); {
		case n.is("date") && q.at(2).is("and") && q.at(3).is("time"):
			q.i += 4
			return q.inZone(&clockExpr{what: "datetime", span: q.spanFrom(t.span.Start)})
		case n.is("date") || n.is("datetime") || n.is("time"):
			q.i += 2
			what := n.text
			if what == "time" && q.peek().is("of") && q.at(1).is("day") {
				q.i += 2
			}
			return q.inZone(&clockExpr{what: what, span: q.spanFrom(t.span.Start)})
		}
	}
	words, sp := q.nameWords()
	name := strings.Join(words, " ")
	ref := &refExpr{slot: q.p.syms.slot(name), name: name, display: "the " + name, span: Span{t.span.Start, sp.End}, derive: deriveName(q.p.syms, words)}
	if (q.peek().is("of") || q.peek().is("in")) && q.at(1).is("the") {
		// `the total of the invoice` is the invoice's total; so is
		// `the first line in the document` the document's first line.
		q.next()
		q.depth++
		defer func() { q.depth-- }()
		if q.depth > 200 {
			return nil, q.errHere("the expression is nested too deeply")
		}
		obj, err := q.postfix()
		if err != nil {
			return nil, err
		}
		round, _ := obj.(*roundExpr)
		if round != nil {
			// `the total of the invoice rounded to 2 decimal places`
			// rounds the invoice's total.
			obj = round.x
		}
		base, ok := obj.(*refExpr)
		if !ok {
			return nil, q.p.errAt(obj.sp(), "expected a fact after 'of'")
		}
		raw := make([]string, 0, len(words))
		for _, tk := range q.toks {
			if tk.span.Start >= sp.Start && tk.span.End <= sp.End {
				raw = append(raw, tk.raw)
			}
		}
		field := base.withField(strings.Join(raw, " "), obj.sp().End)
		if round != nil {
			round.x, round.span.Start = field, t.span.Start
			return round, nil
		}
		return field, nil
	}
	return ref, nil
}

// target parses an assignable fact: `the X` with possessives.
// arithTarget is the target of add, subtract, multiply and divide: a
// fact, or `the above` (`add 5 days to the above`).
func (q *ep) arithTarget() (*refExpr, error) {
	if q.peek().is("the") && q.i+1 < len(q.toks) && q.toks[q.i+1].is("above") {
		x, err := q.postfix()
		if err != nil {
			return nil, err
		}
		if r, ok := x.(*refExpr); ok {
			return r, nil
		}
		return nil, q.p.errAt(x.sp(), "this cannot be changed; expected a fact such as 'the total'")
	}
	return q.target()
}

func (q *ep) target() (*refExpr, error) {
	if at := q.i; !q.peek().is("the") && q.peek().kind == tWord {
		// `invoice's total`: a concept named without `the` (a field of it)
		if x, err := q.postfix(); err == nil {
			if r, ok := x.(*refExpr); ok && len(r.fields) > 0 {
				return r, nil
			}
		}
		q.i = at
	}
	if !q.peek().is("the") {
		if q.done() {
			return nil, q.errHere("expected a fact (a name starting with 'the')")
		}
		return nil, q.errHere("expected a fact (a name starting with 'the'), found '%s'", q.peek().raw)
	}
	start := q.i
	x, err := q.postfix()
	if err != nil {
		return nil, err
	}
	r, ok := x.(*refExpr)
	if !ok || r.name == "above" && len(r.fields) == 0 {
		return nil, q.p.errAt(q.spanFrom(q.toks[start].span.Start), "this cannot be set; expected a fact such as 'the total'")
	}
	return r, nil
}
