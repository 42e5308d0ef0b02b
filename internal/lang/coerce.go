package lang

// Inputs arrive as JSON, where a date, a time or a number is often text
// ("2024-02-27"). A text is read as the value its use needs — a date where a
// duration is added to it, a number where it is compared with one — when it
// reads as one; where it does not, the statement raises a user error that
// says what was wanted. Only uses that had no meaning for a text before
// read it so: `"Total: " + 5` still joins text.

// inputText marks a text that came from outside the program (a run input,
// a value given as guidance) as one to read as its use needs; a text the
// program writes keeps its kind ("3" * 2.50 is a user error). The mark
// is the text's i (1), which text values do not otherwise use; the state
// keeps it. The texts inside a list, dictionary or table that came from
// outside are marked too, in place (`{"prices": ["1.50", "2.25"]}`).
func inputText(v Value) Value {
	return markInput(v, 0)
}

func markInput(v Value, depth int) Value {
	if depth > maxDepth {
		return v
	}
	switch v.k {
	case KindText:
		v.i = 1
	case KindList:
		for i, it := range v.AsList().Items {
			v.AsList().Items[i] = markInput(it, depth+1)
		}
	case KindDictionary:
		d := v.AsDictionary()
		for i, x := range d.vals {
			d.vals[i] = markInput(x, depth+1)
		}
	case KindTable:
		for _, c := range v.AsTable().Columns {
			for i, x := range c.Values {
				c.Values[i] = markInput(x, depth+1)
			}
		}
	}
	return v
}

// readNumber is an input's text read as a number when it reads as one
// (the items of `the sum of the amounts`), else v.
func readNumber(v Value) Value {
	if r, ok := readAs(v, KindNumber); ok {
		return r
	}
	return v
}

// isInput reports whether v is a text from outside the program (inputText).
func isInput(v Value) bool { return v.k == KindText && v.i != 0 }

// readInputs reads two texts from outside as numbers, else as dates or
// datetimes, when both read so: `the end date - the start date`, `the
// amount > the limit` of inputs {"amount": "250", "limit": "1000"}.
func readInputs(a, b Value) (Value, Value, bool) {
	if !isInput(a) || !isInput(b) {
		return a, b, false
	}
	if x, ok := readAs(a, KindNumber); ok {
		if y, ok := readAs(b, KindNumber); ok {
			return x, y, true
		}
	}
	if x, ok := readDated(a); ok {
		if y, ok := readDated(b); ok {
			return x, y, true
		}
	}
	return a, b, false
}

// readAs reads a text from outside (inputText) as a value of kind want
// (number, boolean, date, datetime, time of day, duration); ok is false
// when it does not read so, or the text is the program's own.
func readAs(t Value, want Kind) (Value, bool) {
	if t.k != KindText || t.i == 0 {
		return Value{}, false
	}
	var to string
	switch want {
	case KindNumber:
		to = "number"
	case KindBool:
		to = "boolean"
	case KindDate:
		to = "date"
	case KindDateTime:
		to = "datetime"
	case KindTimeOfDay:
		to = "time"
	case KindDuration:
		to = "duration"
	default:
		return Value{}, false
	}
	if want == KindDate {
		// a datetime's text where a date is wanted stays a datetime
		if d, ok := parseDate(t.s); ok && len(t.s) <= 10 {
			return DateValue(d), true
		}
		if dt, ok := parseDateTime(t.s); ok {
			return DateTimeValue(dt), true
		}
		return Value{}, false
	}
	v, r := convert(t, to)
	if r != nil {
		return Value{}, false
	}
	return v, true
}

// readDated reads a text that a duration is added to or taken from: a
// date, else a datetime, else a time of day.
func readDated(t Value) (Value, bool) {
	if t.k != KindText {
		return Value{}, false
	}
	if v, ok := readAs(t, KindDate); ok {
		return v, true
	}
	return readAs(t, KindTimeOfDay)
}

// readPair reads whichever of a and b is text as the other's kind, for
// arithmetic and comparison; changed is false when neither was read.
func readPair(a, b Value) (Value, Value, bool) {
	switch {
	case a.k == KindText && b.k == KindText:
		return readInputs(a, b)
	case a.k == KindText:
		if b.k == KindDuration {
			if v, ok := readDated(a); ok {
				return v, b, true
			}
			return a, b, false
		}
		if v, ok := readAs(a, b.k); ok {
			return v, b, true
		}
	case b.k == KindText:
		if a.k == KindDuration {
			if v, ok := readAs(b, KindDuration); ok {
				return a, v, true
			}
			return a, b, false
		}
		if v, ok := readAs(b, a.k); ok {
			return a, v, true
		}
	}
	return a, b, false
}

// compareRead is compare, reading a text as the other value's kind when
// the two cannot be ordered as they are.
func compareRead(a, b Value) (int, bool) {
	if x, y, ok := readInputs(a, b); ok {
		// two inputs' texts that read as numbers (or dates) are ordered so,
		// not as text ("250" < "1000")
		return compare(x, y)
	}
	if c, ok := compare(a, b); ok {
		return c, true
	}
	if x, y, ok := readPair(a, b); ok {
		return compare(x, y)
	}
	return 0, false
}

// kindWanted names the kind a text would have had to read as, for the
// message of a use that needs it: "a date".
func kindWanted(other Value) string {
	if other.k == KindDuration {
		return "a date"
	}
	return other.k.article()
}

// ReadText reads s as a value of kind k the way the language reads a text
// from outside where k is wanted ("2024-05-01" a date, "10:30" a time of
// day, "PT1H" or "2 hours" a duration, "120.50" a number, "yes" a
// boolean); false when it does not read as one. A date's text that is a
// datetime gives a datetime: callers check the kind they got.
func ReadText(s string, k Kind) (Value, bool) { return readAs(inputText(Text(s)), k) }
