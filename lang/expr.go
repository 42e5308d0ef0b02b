package lang

import (
	"strings"
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
	display string   // "the invoice's total"
	span    Span
	derive  *derivation // `the last line`: read when the fact has no value
}

func (e *refExpr) sp() Span { return e.span }

func (e *refExpr) eval(m *machine) (Value, error) {
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
	for i := 0; i < n; i++ {
		key := e.fields[i]
		found := false
		if v.k != KindDictionary && v.k != KindNull {
			if p, ok := m.property(e, i, key); ok {
				v = p
				continue
			}
		}
		switch v.k {
		case KindDictionary:
			d := v.AsDictionary()
			if j, ok := d.findField(key); ok {
				v, found = d.vals[j], true
			} else if x, ok, err := ordinalField(v, key); ok {
				if err != nil {
					return Value{}, err
				}
				v, found = x, true
			}
		case KindText:
			if x, ok := textPart(v.s, key); ok {
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
	a, err := e.l.eval(m)
	if err != nil {
		return a, err
	}
	b, err := e.r.eval(m)
	if err != nil {
		return b, err
	}
	if a.k != KindNumber || b.k != KindNumber {
		if err := m.growthOK(e.op, a, b); err != nil {
			return Value{}, err
		}
	}
	var v Value
	var r *raise
	switch e.op {
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
		return Num(v.n.Neg()), nil
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
)

type cmpExpr struct {
	op   cmpOp
	neg  bool
	l, r expr // r is nil for `is empty`
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
		c, ok := compare(a, b)
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
	if v.k != KindBool {
		return false, userErr("Could not use %s as a condition (expected true or false)", describe(v))
	}
	return v.b, nil
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
		acc := its[0]
		if acc.k != KindNumber && acc.k != KindDuration {
			return Value{}, userErr("Could not take the %s of a list holding %s", e.fn, describe(acc))
		}
		for _, it := range its[1:] {
			if it.k != acc.k {
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
			c, ok := compare(it, best)
			if !ok {
				return Value{}, userErr("Could not compare %s with %s", describe(it), describe(best))
			}
			if (e.fn == "maximum" && c > 0) || (e.fn == "minimum" && c < 0) {
				best = it
			}
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
	if v.k != KindNumber {
		if d := describe(v); d != v.k.article() {
			return Value{}, userErr("Could not round %s: it is %s", d, v.k.article())
		}
		return Value{}, userErr("Could not round %s: it is not a number", describe(v))
	}
	n, err := v.n.Round(e.places)
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
	span Span
}

func (e *clockExpr) sp() Span { return e.span }
func (e *clockExpr) eval(m *machine) (Value, error) {
	t, err := m.now()
	if err != nil {
		return Value{}, err
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
