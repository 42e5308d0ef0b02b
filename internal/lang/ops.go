package lang

import (
	"errors"
	"strings"
	"time"
)

// numberText is the text of a number as people write one, ready for
// ParseNumber: without the spaces around it, thousands separators (",")
// and a currency sign before it ("$1,200.50", "-€5").
func numberText(s string) string {
	s = strings.TrimSpace(strings.ReplaceAll(s, ",", ""))
	sign := ""
	if strings.HasPrefix(s, "-") {
		sign, s = "-", s[1:]
	}
	for _, c := range []string{"$", "€", "£"} {
		if strings.HasPrefix(s, c) {
			s = strings.TrimSpace(s[len(c):])
			break
		}
	}
	return sign + s
}

func numErr(verb string, a, b Value, err error) *raise {
	if errors.Is(err, ErrDivisionByZero) {
		return userErr("Could not divide %s by zero", describe(a))
	}
	return userErr("Could not %s %s and %s: %v", verb, describe(a), describe(b), err)
}

// describe names a value in a message: short values by their text, others by kind.
func describe(v Value) string {
	switch v.k {
	case KindNumber, KindBool, KindDate, KindTimeOfDay, KindDuration:
		return valueText(v)
	case KindText:
		if len(v.s) <= 40 {
			return `"` + v.s + `"`
		}
	}
	return v.k.article()
}

// add is a + b: numbers, text joined with anything, a date or datetime and a
// duration, two durations, a time of day and a duration, two lists.
func add(a, b Value) (Value, *raise) {
	if a.k == KindNumber && b.k == KindNumber {
		n, err := a.num().Add(b.num())
		if err != nil {
			return Value{}, numErr("add", a, b, err)
		}
		return Num(n), nil
	}
	if a.k == KindText || b.k == KindText {
		return Text(valueText(a) + valueText(b)), nil
	}
	return addOther(a, b, 1)
}

func addOther(a, b Value, sign int64) (Value, *raise) {
	verb := "add"
	if sign < 0 {
		verb = "subtract"
	}
	switch {
	case a.k == KindDate && b.k == KindDuration:
		if v, ok := addToDate(a.AsDate(), b.AsDuration(), sign); ok {
			return v, nil
		}
		return Value{}, userErr("Could not %s %s and %s: the date is out of range", verb, describe(a), describe(b))
	case a.k == KindDuration && b.k == KindDate && sign > 0:
		return addOther(b, a, sign)
	case a.k == KindDateTime && b.k == KindDuration:
		if v, ok := addToDateTime(a.AsDateTime(), b.AsDuration(), sign); ok {
			return v, nil
		}
		return Value{}, userErr("Could not %s %s and %s: the datetime is out of range", verb, describe(a), describe(b))
	case a.k == KindDuration && b.k == KindDateTime && sign > 0:
		return addOther(b, a, sign)
	case a.k == KindDuration && b.k == KindDuration:
		d, e := a.AsDuration(), b.AsDuration()
		return DurationValue(Duration{Months: d.Months + sign*e.Months, Days: d.Days + sign*e.Days, Nanos: d.Nanos + sign*e.Nanos}), nil
	case a.k == KindTimeOfDay && b.k == KindDuration:
		ns := (a.i + sign*b.AsDuration().Nanos) % (86400e9)
		if ns < 0 {
			ns += 86400e9
		}
		return Value{k: KindTimeOfDay, i: ns}, nil
	case a.k == KindList && b.k == KindList && sign > 0:
		items := append(append([]Value{}, a.AsList().Items...), b.AsList().Items...)
		return ListValue(items...), nil
	case sign < 0 && a.k == KindDate && b.k == KindDate:
		return DurationValue(Duration{Days: daysBetween(a.AsDate(), b.AsDate())}), nil
	case sign < 0 && a.k == KindDateTime && b.k == KindDateTime:
		return DurationValue(Duration{Nanos: int64(a.AsDateTime().Sub(b.AsDateTime()))}), nil
	case sign < 0 && a.k == KindDateTime && b.k == KindDate:
		return DurationValue(Duration{Nanos: int64(a.AsDateTime().Sub(b.AsDate().time()))}), nil
	case sign < 0 && a.k == KindDate && b.k == KindDateTime:
		return DurationValue(Duration{Nanos: int64(a.AsDate().time().Sub(b.AsDateTime()))}), nil
	case sign < 0 && a.k == KindTimeOfDay && b.k == KindTimeOfDay:
		return DurationValue(Duration{Nanos: a.i - b.i}), nil
	}
	if a.k == kindUnset || b.k == kindUnset {
		return Value{}, internalErr("an unset value in arithmetic")
	}
	if sign < 0 {
		return Value{}, userErr("Could not subtract %s from %s", describe(b), describe(a))
	}
	return Value{}, userErr("Could not add %s to %s", describe(b), describe(a))
}

func sub(a, b Value) (Value, *raise) {
	if a.k == KindNumber && b.k == KindNumber {
		n, err := a.num().Sub(b.num())
		if err != nil {
			return Value{}, numErr("subtract", a, b, err)
		}
		return Num(n), nil
	}
	return addOther(a, b, -1)
}

func mul(a, b Value) (Value, *raise) {
	if a.k == KindNumber && b.k == KindNumber {
		n, err := a.num().Mul(b.num())
		if err != nil {
			return Value{}, numErr("multiply", a, b, err)
		}
		return Num(n), nil
	}
	if a.k == KindNumber && b.k == KindDuration {
		a, b = b, a
	}
	if a.k == KindDuration && b.k == KindNumber {
		if i, ok := b.num().Int64(); ok && i > -1e6 && i < 1e6 {
			d := a.AsDuration()
			return DurationValue(Duration{Months: d.Months * i, Days: d.Days * i, Nanos: d.Nanos * i}), nil
		}
		return Value{}, userErr("Could not multiply %s by %s: only by a whole number", describe(a), describe(b))
	}
	if a.k == KindText && b.k == KindNumber {
		// The caller checked the length against the run's text limit
		// (machine.growthOK); this only guards the multiplication.
		if i, ok := b.num().Int64(); ok && i >= 0 && i < 1<<31 && i*int64(len(a.s)) < 1<<31 {
			return Text(strings.Repeat(a.s, int(i))), nil
		}
	}
	return Value{}, userErr("Could not multiply %s by %s", describe(a), describe(b))
}

func quo(a, b Value) (Value, *raise) {
	if a.k == KindNumber && b.k == KindNumber {
		n, err := a.num().Quo(b.num())
		if err != nil {
			return Value{}, numErr("divide", a, b, err)
		}
		return Num(n), nil
	}
	if a.k == KindDuration && b.k == KindNumber {
		if b.num().IsZero() {
			return Value{}, userErr("Could not divide %s by zero", describe(a))
		}
		if i, ok := b.num().Int64(); ok {
			d := a.AsDuration()
			if d.Months%i == 0 && d.Days%i == 0 {
				return DurationValue(Duration{Months: d.Months / i, Days: d.Days / i, Nanos: d.Nanos / i}), nil
			}
			total := d.Days*86400e9 + d.Nanos
			if d.Months == 0 {
				return DurationValue(Duration{Nanos: total / i}), nil
			}
		}
	}
	return Value{}, userErr("Could not divide %s by %s", describe(a), describe(b))
}

// compare orders two values of the same kind: numbers, text, dates, times,
// datetimes, durations. ok is false when they cannot be ordered.
func compare(a, b Value) (int, bool) {
	switch {
	case a.k == KindNumber && b.k == KindNumber:
		return a.num().Cmp(b.num()), true
	case a.k == KindText && b.k == KindText:
		return strings.Compare(a.s, b.s), true
	case (a.k == KindDate || a.k == KindTimeOfDay) && a.k == b.k:
		return cmpInt(a.i, b.i), true
	case a.k == KindDateTime && b.k == KindDateTime:
		return a.AsDateTime().Compare(b.AsDateTime()), true
	case a.k == KindDate && b.k == KindDateTime:
		return a.AsDate().time().Compare(b.AsDateTime()), true
	case a.k == KindDateTime && b.k == KindDate:
		return a.AsDateTime().Compare(b.AsDate().time()), true
	case a.k == KindDuration && b.k == KindDuration:
		x, y := durationNanos(a.AsDuration()), durationNanos(b.AsDuration())
		switch {
		case x < y:
			return -1, true
		case x > y:
			return 1, true
		}
		return 0, true
	case a.k == KindBool && b.k == KindBool:
		return int(a.i - b.i), true
	}
	return 0, false
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// equalLoose is `is` between two values: Equal, and a date equals a datetime
// at its midnight.
func equalLoose(a, b Value) bool {
	if a.k != b.k && (isInput(a) || isInput(b)) {
		// an input's text read as the other value's kind: `the count is 3`
		// of {"count": "3"}, `the approved is true` of {"approved": "true"}
		if x, y, ok := readPair(a, b); ok {
			a, b = x, y
		}
	}
	if a.k != b.k {
		if c, ok := compare(a, b); ok {
			return c == 0
		}
		return false
	}
	return Equal(a, b)
}

func isEmpty(v Value) bool {
	switch v.k {
	case KindNull:
		return true
	case KindText:
		return strings.TrimSpace(v.s) == ""
	case KindList:
		return len(v.AsList().Items) == 0
	case KindDictionary:
		return v.AsDictionary().Len() == 0
	case KindSet:
		return v.AsSet().Len() == 0
	case KindTable:
		return v.AsTable().NumRows() == 0
	}
	return false
}

// contains is `A contains B`: text containing text, a list, set or
// dictionary (its keys) containing a value.
func contains(a, b Value) (bool, *raise) {
	switch a.k {
	case KindText:
		return strings.Contains(a.s, valueText(b)), nil
	case KindList:
		for _, it := range a.AsList().Items {
			if equalLoose(it, b) {
				return true, nil
			}
		}
		return false, nil
	case KindSet:
		for _, it := range a.AsSet().items {
			if equalLoose(it, b) {
				return true, nil
			}
		}
		return false, nil
	case KindDictionary:
		if b.k == KindText {
			_, ok := a.AsDictionary().findField(b.s)
			return ok, nil
		}
		_, ok := a.AsDictionary().Get(b)
		return ok, nil
	case KindNull:
		return false, nil
	}
	return false, userErr("Could not look inside %s", describe(a))
}

// items returns the values a loop or an aggregate goes over: a list's items,
// a set's members, a table's rows (as dictionaries).
func items(v Value) ([]Value, bool) {
	switch v.k {
	case KindList:
		return v.AsList().Items, true
	case KindSet:
		return v.AsSet().items, true
	case KindTable:
		t := v.AsTable()
		rows := make([]Value, t.NumRows())
		for i := range rows {
			rows[i] = DictValue(t.Row(i))
		}
		return rows, true
	case KindNull:
		return nil, true
	}
	return nil, false
}

func convert(v Value, to string) (Value, *raise) {
	fail := func() (Value, *raise) {
		return Value{}, userErr("Could not convert %s to %s", describe(v), articleFor(to))
	}
	switch to {
	case "text":
		return Text(valueText(v)), nil
	case "integer":
		n, r := convert(v, "number")
		if r != nil {
			return fail()
		}
		if _, ok := n.num().Int64(); !ok {
			return Value{}, userErr("Could not convert %s to a whole number: it has a fractional part (round or truncate it first)", describe(v))
		}
		return n, nil
	case "number":
		switch v.k {
		case KindNumber:
			return v, nil
		case KindText:
			n, err := ParseNumber(numberText(v.s))
			if err != nil {
				return fail()
			}
			return Num(n), nil
		case KindBool:
			return Int(v.i), nil
		}
	case "date", "datetime", "time", "duration", "time zone":
		if t, ok := convertTime(v, to); ok {
			return t, nil
		}
	case "boolean":
		switch v.k {
		case KindBool:
			return v, nil
		case KindText:
			switch strings.ToLower(strings.TrimSpace(v.s)) {
			case "true", "yes", "y", "1":
				return Bool(true), nil
			case "false", "no", "n", "0":
				return Bool(false), nil
			}
		case KindNumber:
			return Bool(!v.num().IsZero()), nil
		}
	case "list":
		switch v.k {
		case KindList:
			return v, nil
		case KindSet, KindTable:
			it, _ := items(v)
			return ListValue(append([]Value(nil), it...)...), nil
		case KindNull:
			return ListValue(), nil
		}
		return ListValue(v), nil
	case "set":
		s := NewSet()
		it, ok := items(v)
		if !ok {
			it = []Value{v}
		}
		for _, x := range it {
			if _, err := s.Add(x); err != nil {
				return fail()
			}
		}
		return SetValue(s), nil
	}
	return fail()
}

// convertTime converts v to one of the kinds of dates and times (to is
// "date", "datetime", "time", "duration" or "time zone"); false when v
// cannot be one.
func convertTime(v Value, to string) (Value, bool) {
	switch to {
	case "date":
		switch v.k {
		case KindDate:
			return v, true
		case KindDateTime:
			return DateValue(dateOf(v.AsDateTime())), true
		case KindText:
			if d, ok := parseDate(v.s); ok {
				return DateValue(d), true
			}
		}
	case "datetime":
		switch v.k {
		case KindDateTime:
			return v, true
		case KindDate:
			return DateTimeValue(v.AsDate().time()), true
		case KindText:
			if t, ok := parseDateTime(v.s); ok {
				return DateTimeValue(t), true
			}
		}
	case "time":
		switch v.k {
		case KindTimeOfDay:
			return v, true
		case KindDateTime:
			t := v.AsDateTime()
			return TimeOfDayValue(TimeOfDay{t.Hour(), t.Minute(), t.Second(), t.Nanosecond()}), true
		case KindText:
			if t, ok := parseTimeOfDay(v.s); ok {
				return TimeOfDayValue(t), true
			}
		}
	case "duration":
		switch v.k {
		case KindDuration:
			return v, true
		case KindText:
			if d, ok := parseDuration(v.s); ok {
				return DurationValue(d), true
			}
		}
	case "time zone":
		switch v.k {
		case KindTimeZone:
			return v, true
		case KindText:
			if _, err := time.LoadLocation(v.s); err == nil && v.s != "" && v.s != "Local" {
				return TimeZoneValue(v.s), true
			}
		}
	}
	return Value{}, false
}

func articleFor(t string) string {
	switch t {
	case "text":
		return "text"
	}
	if strings.ContainsRune("aeiou", rune(t[0])) {
		return "an " + t
	}
	return "a " + t
}
