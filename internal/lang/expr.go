package lang

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// expr is an expression node. eval returns a value or a *raise.
type expr interface {
	eval(m *machine) (Value, error)
	sp() Span
}

type litExpr struct {
	v    Value
	span Span
}

func (e *litExpr) eval(*machine) (Value, error) { return e.v, nil }
func (e *litExpr) sp() Span                     { return e.span }

// refExpr reads a fact, or a field of a dictionary through possessives
// (`the invoice's total`, `the total of the invoice`).
type refExpr struct {
	slot    int      // the fact
	name    string   // its canonical name, without "the"
	fields  []string // field keys, in order
	keys    []string // their dictionary index keys ("s"+field), made once
	display string   // "the invoice's total"
	span    Span
	derive  *derivation // `the last line`: read when the fact has no value
}

func (e *refExpr) sp() Span { return e.span }

func (e *refExpr) eval(m *machine) (Value, error) {
	if pv := m.lookup(e.slot); pv != nil && pv.k != kindAlias {
		// the fact has its value here, and its fields are those of
		// dictionaries: read in place, without copies on the way
		for i := range e.fields {
			if pv.k != KindDictionary {
				return e.walkFrom(m, *pv, i)
			}
			d, _ := pv.p.(*Dictionary)
			var j int
			var ok bool
			if i < len(e.keys) {
				j, ok = d.findFieldKey(e.keys[i], e.fields[i])
			} else {
				j, ok = d.findField(e.fields[i])
			}
			if !ok {
				return e.walkFrom(m, *pv, i)
			}
			pv = &d.vals[j]
		}
		return *pv, nil
	}
	if e.derive != nil && !m.has(e.slot) {
		if v, ok, err := m.derived(e.derive, e.span); ok {
			if err != nil || len(e.fields) == 0 {
				return v, err
			}
			return e.walk(m, v, len(e.fields))
		}
	}
	v, err := m.read(e.slot, e.name)
	if err != nil || len(e.fields) == 0 {
		return v, err
	}
	return e.walk(m, v, len(e.fields))
}

// walk follows the first n fields from v.
func (e *refExpr) walk(m *machine, v Value, n int) (Value, error) {
	return e.walkPath(m, v, 0, n)
}

// walkFrom follows the fields from the i-th on from v, the value of the
// fact with its first i fields.
func (e *refExpr) walkFrom(m *machine, v Value, i int) (Value, error) {
	return e.walkPath(m, v, i, len(e.fields))
}

// walkPath follows fields i to n-1 from v.
func (e *refExpr) walkPath(m *machine, v Value, i, n int) (Value, error) {
	for ; i < n; i++ {
		key := e.fields[i]
		found := false
		if v.k != KindDictionary && v.k != KindNull {
			if p, ok := m.property(e, i, key); ok {
				v = p
				continue
			}
			if p, ok := valueProperty(v, key); ok {
				// `the due date's year`: a part of the value
				v = p
				continue
			}
		}
		switch v.k {
		case KindDictionary:
			d := v.AsDictionary()
			var j int
			var ok bool
			if i < len(e.keys) {
				j, ok = d.findFieldKey(e.keys[i], key)
			} else {
				j, ok = d.findField(key)
			}
			if ok {
				v, found = d.vals[j], true
			} else if x, ok, err := ordinalField(v, key); ok {
				if err != nil {
					return Value{}, err
				}
				v, found = x, true
			} else if strings.HasPrefix(normField(key), "number of ") {
				// `the invoice's number of lines`
				v, found = valueProperty(v, key)
			}
		case KindText:
			if x, ok := textPart(v.s, key); ok {
				if isInput(v) {
					x = inputText(x) // an input's lines come from outside too
				}
				v, found = x, true
			} else if x, ok, err := ordinalField(v, key); ok {
				if err != nil {
					return Value{}, err
				}
				v, found = x, true
			}
			// else a property of the text, not set yet
		case KindNull:
		case KindTable:
			for _, c := range v.AsTable().Columns {
				if normField(c.Name) == normField(key) {
					if err := m.reserve(int64(len(c.Values))*valueSize + valueSize); err != nil {
						return Value{}, err
					}
					v, found = ListValue(append([]Value(nil), c.Values...)...), true
					break
				}
			}
		case KindFile:
			f := v.AsFile()
			switch normField(key) {
			case "name", "file name":
				v, found = Text(f.Name), true
			case "url":
				v, found = Text(f.URL), true
			}
		default:
			// a property of a value that is no dictionary, not set yet
		}
		if !found {
			var err error
			if v, err = m.fieldMissing(e, i); err != nil {
				return Value{}, err
			}
		}
	}
	return v, nil
}

// prefix is the display of the fact and its first i fields.
func (e *refExpr) prefix(i int) string {
	s := "the " + e.name
	for _, f := range e.fields[:i] {
		s += "'s " + fieldDisplay(f)
	}
	return s
}

func fieldDisplay(f string) string {
	for _, r := range f {
		if !(r == ' ' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r >= utf8.RuneSelf) {
			return `"` + f + `"`
		}
	}
	return f
}

type binExpr struct {
	op   byte // + - * /
	l, r expr
	span Span
}

func (e *binExpr) sp() Span { return e.span }

func (e *binExpr) eval(m *machine) (Value, error) {
	if c, x, ok := e.small(m); ok {
		return Value{k: KindNumber, i: c, e: x}, nil
	}
	a, err := e.l.eval(m)
	if err != nil {
		return a, err
	}
	b, err := e.r.eval(m)
	if err != nil {
		return b, err
	}
	return m.binary(e.op, a, b)
}

// small evaluates the expression in machine words when it is +, - and *
// of facts and literals that hold numbers in the small form (see Number)
// and the result fits: no Value is made on the way. ok is false otherwise,
// and nothing has happened (no answer read, no clock): the general path
// evaluates the expression then.
func (e *binExpr) small(m *machine) (int64, int32, bool) {
	if e.op == '/' {
		return 0, 0, false
	}
	a, ea, ok := smallOf(m, e.l)
	if !ok {
		return 0, 0, false
	}
	b, eb, ok := smallOf(m, e.r)
	if !ok {
		return 0, 0, false
	}
	if e.op == '*' {
		return mulWords(a, ea, b, eb)
	}
	return addWords(a, ea, b, eb, e.op == '-')
}

// smallOf is the value of x in the small form of a number (see
// binExpr.small).
func smallOf(m *machine, x expr) (int64, int32, bool) {
	switch x := x.(type) {
	case *refExpr:
		v := m.lookup(x.slot)
		for i := 0; v != nil && i < len(x.fields); i++ {
			// fields of dictionaries, found by name (see refExpr.eval)
			if v.k != KindDictionary || i >= len(x.keys) {
				return 0, 0, false
			}
			d, _ := v.p.(*Dictionary)
			j, ok := d.findFieldKey(x.keys[i], x.fields[i])
			if !ok {
				return 0, 0, false
			}
			v = &d.vals[j]
		}
		if v != nil && v.k == KindNumber && v.p == nil {
			return v.i, v.e, true
		}
	case *litExpr:
		return x.v.i, x.v.e, x.v.k == KindNumber && x.v.p == nil
	case *binExpr:
		return x.small(m)
	}
	return 0, 0, false
}

// addsRead reports whether a + b, one of them text, reads the text as the
// other's kind: a duration added to a date's text, or an input's text that
// reads as a number added to a number (`the amount + 1` of {"amount":
// "5"} is 6). Else text joins (`"Total: " + 5`).
func addsRead(a, b Value) bool {
	if a.k == KindDuration || b.k == KindDuration {
		return true
	}
	if isInput(a) && b.k == KindNumber {
		_, ok := readAs(a, KindNumber)
		return ok
	}
	if isInput(b) && a.k == KindNumber {
		_, ok := readAs(b, KindNumber)
		return ok
	}
	return false
}

// binary is a op b on the general path.
func (m *machine) binary(op byte, a, b Value) (Value, error) {
	if a.k != KindNumber || b.k != KindNumber {
		if (a.k == KindText) != (b.k == KindText) && (op != '+' || addsRead(a, b)) {
			// a text input used as a number, a date, … (see readPair)
			a, b, _ = readPair(a, b)
		} else if a.k == KindText && b.k == KindText && op != '+' {
			a, b, _ = readInputs(a, b) // `the end date - the start date`
		}
		if err := m.growthOK(op, a, b); err != nil {
			return Value{}, err
		}
	}
	var v Value
	var r *raise
	switch op {
	case '+':
		v, r = add(a, b)
	case '-':
		v, r = sub(a, b)
	case '*':
		v, r = mul(a, b)
	default:
		v, r = quo(a, b)
	}
	if r != nil {
		return v, r
	}
	return v, nil
}

type negExpr struct {
	x    expr
	span Span
}

func (e *negExpr) sp() Span { return e.span }
func (e *negExpr) eval(m *machine) (Value, error) {
	v, err := e.x.eval(m)
	if err != nil {
		return v, err
	}
	switch v.k {
	case KindNumber:
		return Num(v.num().Neg()), nil
	case KindDuration:
		d := v.AsDuration()
		return DurationValue(Duration{-d.Months, -d.Days, -d.Nanos}), nil
	}
	return Value{}, userErr("Could not negate %s", describe(v))
}

type cmpOp uint8

const (
	cmpEq cmpOp = iota + 1
	cmpLt
	cmpGt
	cmpLe
	cmpGe
	cmpContains
	cmpStarts
	cmpEnds
	cmpEmpty
	cmpIn
	cmpBetween
)

type cmpExpr struct {
	op   cmpOp
	neg  bool
	l, r expr // r is nil for `is empty`
	r2   expr // the upper end of `is between`
	span Span
}

func (e *cmpExpr) sp() Span { return e.span }

func (e *cmpExpr) eval(m *machine) (Value, error) {
	a, err := e.l.eval(m)
	if err != nil {
		return a, err
	}
	var b Value
	if e.r != nil {
		if b, err = e.r.eval(m); err != nil {
			return b, err
		}
	}
	var res bool
	switch e.op {
	case cmpEq:
		res = equalLoose(a, b)
	case cmpLt, cmpGt, cmpLe, cmpGe:
		c, ok := compareRead(a, b)
		if !ok {
			return Value{}, userErr("Could not compare %s with %s", describe(a), describe(b))
		}
		switch e.op {
		case cmpLt:
			res = c < 0
		case cmpGt:
			res = c > 0
		case cmpLe:
			res = c <= 0
		default:
			res = c >= 0
		}
	case cmpContains:
		var r *raise
		if res, r = contains(a, b); r != nil {
			return Value{}, r
		}
	case cmpIn:
		var r *raise
		if res, r = contains(b, a); r != nil {
			return Value{}, r
		}
	case cmpBetween:
		hi, err := e.r2.eval(m)
		if err != nil {
			return hi, err
		}
		lo := b
		c1, ok1 := compareRead(a, lo)
		c2, ok2 := compareRead(a, hi)
		if !ok1 || !ok2 {
			return Value{}, userErr("Could not check whether %s is between %s and %s", describe(a), describe(lo), describe(hi))
		}
		res = c1 >= 0 && c2 <= 0
	case cmpStarts, cmpEnds:
		if a.k == KindList {
			it := a.AsList().Items
			if len(it) > 0 {
				if e.op == cmpStarts {
					res = equalLoose(it[0], b)
				} else {
					res = equalLoose(it[len(it)-1], b)
				}
			}
			break
		}
		if a.k != KindText {
			return Value{}, userErr("Could not check how %s %s: it is not text", describe(a), map[bool]string{true: "starts", false: "ends"}[e.op == cmpStarts])
		}
		if e.op == cmpStarts {
			res = strings.HasPrefix(a.s, valueText(b))
		} else {
			res = strings.HasSuffix(a.s, valueText(b))
		}
	case cmpEmpty:
		res = isEmpty(a)
	}
	return Bool(res != e.neg), nil
}

type logicExpr struct {
	and  bool
	l, r expr
	span Span
}

func (e *logicExpr) sp() Span { return e.span }

func truth(v Value, x expr) (bool, error) {
	if r, ok := readAs(v, KindBool); ok {
		v = r // an input's "true"
	}
	if v.k != KindBool {
		return false, userErr("Could not use %s as a condition (expected true or false)", describe(v))
	}
	return v.i != 0, nil
}

func (e *logicExpr) eval(m *machine) (Value, error) {
	a, err := e.l.eval(m)
	if err != nil {
		return a, err
	}
	x, err := truth(a, e.l)
	if err != nil {
		return Value{}, err
	}
	if x != e.and {
		return Bool(x), nil
	}
	b, err := e.r.eval(m)
	if err != nil {
		return b, err
	}
	y, err := truth(b, e.r)
	if err != nil {
		return Value{}, err
	}
	return Bool(y), nil
}

type notExpr struct {
	x    expr
	span Span
}

func (e *notExpr) sp() Span { return e.span }
func (e *notExpr) eval(m *machine) (Value, error) {
	v, err := e.x.eval(m)
	if err != nil {
		return v, err
	}
	b, err := truth(v, e.x)
	if err != nil {
		return Value{}, err
	}
	return Bool(!b), nil
}

type aggExpr struct {
	fn   string // sum count average maximum minimum first last length
	x    expr
	span Span
}

func (e *aggExpr) sp() Span { return e.span }

func (e *aggExpr) eval(m *machine) (Value, error) {
	v, err := e.x.eval(m)
	if err != nil {
		return v, err
	}
	if e.fn == "length" || e.fn == "count" {
		switch v.k {
		case KindText:
			return Int(int64(utf8.RuneCountInString(v.s))), nil
		case KindDictionary:
			return Int(int64(v.AsDictionary().Len())), nil
		}
	}
	its, ok, err := m.items(v)
	if err != nil {
		return Value{}, err
	}
	if !ok {
		return Value{}, userErr("Could not take the %s of %s: it is not a list", aggName(e.fn), describe(v))
	}
	switch e.fn {
	case "count", "length":
		return Int(int64(len(its))), nil
	case "first", "last":
		if len(its) == 0 {
			return Value{}, userErr("Could not take the %s of an empty list", e.fn)
		}
		if e.fn == "first" {
			return its[0], nil
		}
		return its[len(its)-1], nil
	case "sum", "average":
		if len(its) == 0 {
			if e.fn == "sum" {
				return Int(0), nil
			}
			return Value{}, userErr("Could not take the average of an empty list")
		}
		acc := readNumber(its[0])
		if acc.k != KindNumber && acc.k != KindDuration {
			return Value{}, userErr("Could not take the %s of a list holding %s", e.fn, describe(acc))
		}
		for _, it := range its[1:] {
			if it = readNumber(it); it.k != acc.k {
				return Value{}, userErr("Could not take the %s of a list holding %s", e.fn, describe(it))
			}
			var r *raise
			if acc, r = add(acc, it); r != nil {
				return Value{}, r
			}
		}
		if e.fn == "average" {
			var r *raise
			if acc, r = quo(acc, Int(int64(len(its)))); r != nil {
				return Value{}, r
			}
		}
		return acc, nil
	case "maximum", "minimum":
		if len(its) == 0 {
			return Value{}, userErr("Could not take the %s of an empty list", e.fn)
		}
		best := its[0]
		for _, it := range its[1:] {
			c, ok := compareRead(it, best)
			if !ok {
				return Value{}, userErr("Could not compare %s with %s", describe(it), describe(best))
			}
			if (e.fn == "maximum" && c > 0) || (e.fn == "minimum" && c < 0) {
				best = it
			}
		}
		if x, ok := readAs(best, KindNumber); ok && x.k == KindNumber {
			return x, nil // of inputs' texts, the number
		}
		return best, nil
	}
	return Value{}, internalErr("unknown aggregate %s", e.fn)
}

func aggName(fn string) string {
	if fn == "count" {
		return "number"
	}
	return fn
}

type caseExpr struct {
	upper bool
	x     expr
	span  Span
}

func (e *caseExpr) sp() Span { return e.span }
func (e *caseExpr) eval(m *machine) (Value, error) {
	v, err := e.x.eval(m)
	if err != nil {
		return v, err
	}
	if v.k != KindText {
		return Value{}, userErr("Could not change the case of %s: it is not text", describe(v))
	}
	if err := m.textOK(int64(len(v.s))); err != nil {
		return Value{}, err
	}
	out := strings.ToLower(v.s)
	if e.upper {
		out = strings.ToUpper(v.s)
	}
	if err := m.checkText(out); err != nil {
		return Value{}, err
	}
	return Text(out), nil
}

// roundExpr is `X rounded [to N decimal places]`.
type roundExpr struct {
	x      expr
	places int
	span   Span
}

func (e *roundExpr) sp() Span { return e.span }
func (e *roundExpr) eval(m *machine) (Value, error) {
	v, err := e.x.eval(m)
	if err != nil {
		return v, err
	}
	if r, ok := readAs(v, KindNumber); ok {
		v = r // an input's "2.345"
	}
	if v.k != KindNumber {
		if isInput(v) {
			return Value{}, userErr("Could not round %s: it is not a number", describe(v))
		}
		if d := describe(v); d != v.k.article() {
			return Value{}, userErr("Could not round %s: it is %s", d, v.k.article())
		}
		return Value{}, userErr("Could not round %s: it is not a number", describe(v))
	}
	n, err := v.num().Round(e.places)
	if err != nil {
		return Value{}, userErr("Could not round %s to %s: %v", describe(v), plural(e.places, "decimal place"), err)
	}
	return Num(n), nil
}

type convertExpr struct {
	x    expr
	to   string
	span Span
}

func (e *convertExpr) sp() Span { return e.span }
func (e *convertExpr) eval(m *machine) (Value, error) {
	v, err := e.x.eval(m)
	if err != nil {
		return v, err
	}
	if err := m.convertOK(v, e.to); err != nil {
		return Value{}, err
	}
	r, rr := convert(v, e.to)
	if rr != nil {
		return Value{}, rr
	}
	return r, nil
}

// clockExpr is the current date, datetime or time of day, read from the
// run's clock and journaled.
type clockExpr struct {
	what string // date datetime time
	zone expr   // `today in "Europe/Paris"`: the time zone, else the run's
	span Span
}

func (e *clockExpr) sp() Span { return e.span }
func (e *clockExpr) eval(m *machine) (Value, error) {
	var loc *time.Location
	if e.zone != nil {
		z, err := e.zone.eval(m)
		if err != nil {
			return z, err
		}
		if z.k != KindText && z.k != KindTimeZone || z.s == "" || z.s == "Local" {
			return Value{}, userErr("Could not read the clock in %s: it is no time zone (such as \"Europe/Paris\")", describe(z))
		}
		if loc, err = time.LoadLocation(z.s); err != nil {
			return Value{}, userErr("Could not read the clock in %s: it is no time zone (such as \"Europe/Paris\")", describe(z))
		}
	}
	t, err := m.now()
	if err != nil {
		return Value{}, err
	}
	if loc != nil {
		t = t.In(loc)
	}
	switch e.what {
	case "date":
		return DateValue(dateOf(t)), nil
	case "time":
		return TimeOfDayValue(TimeOfDay{t.Hour(), t.Minute(), t.Second(), t.Nanosecond()}), nil
	}
	return DateTimeValue(t), nil
}

// newExpr makes a fresh empty container (`an empty list`).
type newExpr struct {
	kind Kind
	span Span
}

func (e *newExpr) sp() Span { return e.span }
func (e *newExpr) eval(*machine) (Value, error) {
	switch e.kind {
	case KindList:
		return ListValue(), nil
	case KindSet:
		return SetValue(NewSet()), nil
	case KindTable:
		return TableValue(&Table{}), nil
	}
	return DictValue(NewDictionary()), nil
}

// listExpr is a comma list written inside parentheses or after `are`.
type listExpr struct {
	items []expr
	span  Span
}

func (e *listExpr) sp() Span { return e.span }
func (e *listExpr) eval(m *machine) (Value, error) {
	out := make([]Value, len(e.items))
	for i, x := range e.items {
		v, err := x.eval(m)
		if err != nil {
			return v, err
		}
		if out[i], err = m.clone(v); err != nil {
			return Value{}, err
		}
	}
	return ListValue(out...), nil
}

// wordExpr is an unquoted word or file name given as a value in a block
// (`the unit is metric`, `the file is Uber-Receipt.pdf`): the fact of that
// name when there is one, else the text as written, with a note in the
// run's history (Options.SayAt) saying so.
type wordExpr struct {
	text string
	name string // the fact it may name ("" for a file name)
	slot int
	span Span
}

func (e *wordExpr) sp() Span { return e.span }
func (e *wordExpr) eval(m *machine) (Value, error) {
	if e.slot >= 0 && m.has(e.slot) {
		return m.read(e.slot, e.name)
	}
	if m.opts.SayAt != nil {
		m.opts.SayAt(fmt.Sprintf("note: %s is read as the text %q (no fact is named 'the %s')", e.text, e.text, strings.ToLower(e.text)), m.currentSpan())
	}
	return Text(e.text), nil
}
