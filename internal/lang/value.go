package lang

import (
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/cockroachdb/apd/v3"
)

// Kind is the type of a Value: one member of the platform's Value message.
type Kind uint8

// The kinds of values. The zero Kind is not a value: it marks an unset fact.
const (
	kindUnset Kind = iota
	KindNull
	KindBool
	KindNumber
	KindText
	KindDate
	KindTimeOfDay
	KindDateTime
	KindTimeZone
	KindDuration
	KindList
	KindDictionary
	KindFile
	KindTable
	KindSet
	kindAlias // a fact that refers to another fact (use … as …)
)

var kindNames = [...]string{"no value", "nothing", "boolean", "number", "text", "date", "time of day",
	"datetime", "time zone", "duration", "list", "dictionary", "file", "table", "set", "alias"}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// article returns "a number", "an item", "nothing".
func (k Kind) article() string {
	s := k.String()
	if k == KindNull {
		return s
	}
	if strings.ContainsRune("aeiou", rune(s[0])) {
		return "an " + s
	}
	return "a " + s
}

// Value is one value of the language. The zero Value is not a value (it marks
// an unset fact); use Null() for nothing. Lists, dictionaries, tables and sets
// are held by reference: copying a Value shares them.
//
// A Value is seven machine words, so that expressions return it (and its
// error) in registers: its fields serve several kinds.
type Value struct {
	k Kind
	e int32 // a number's exponent (its small form: see Number)
	// i is a number's coefficient (small form); a boolean (1 is true); a
	// date, a time of day; an alias's slot; for a text, 1 when it came
	// from outside the program (inputText)
	i int64
	s string
	p any // containers, datetimes, durations, files; a number's big form (*apd.Decimal); an alias's scope
}

// b2i is 1 for true, 0 for false.
func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// num returns the number held by v.
func (v *Value) num() Number {
	if v.p != nil {
		d, _ := v.p.(*apd.Decimal)
		return Number{big: d}
	}
	return Number{c: v.i, e: v.e}
}

// Date is a calendar date.
type Date struct{ Year, Month, Day int }

// TimeOfDay is a time of day with nanoseconds.
type TimeOfDay struct{ Hour, Minute, Second, Nanos int }

// Duration is a signed span of time: calendar months and days, and an exact
// time part in nanoseconds. It is written in ISO 8601 (P1Y2M3DT4H5M6S).
type Duration struct {
	Months int64
	Days   int64
	Nanos  int64
}

// File is a file value: a remote URL or inline content.
type File struct {
	Name    string
	URL     string
	Content []byte
}

// RemoteFile is the file at address u. Its name is the last segment of the
// URL's path, unescaped, as a browser names a download: a file uploaded to
// Prose is passed to a run as a signed URL ending with the name given at
// upload (…/files/download/{token}/orders.csv).
func RemoteFile(u string) *File {
	f := &File{URL: u}
	if p, err := url.Parse(u); err == nil {
		ep := p.EscapedPath()
		seg := ep[strings.LastIndexByte(ep, '/')+1:]
		if name, err := url.PathUnescape(seg); err == nil && name != "" {
			f.Name = name
		}
	}
	return f
}

// List is an ordered list of values.
type List struct{ Items []Value }

// Dictionary keeps its entries in insertion order; keys are unique.
type Dictionary struct {
	keys  []Value
	vals  []Value
	index map[string]int
}

// Table is a table: named columns of equal length.
type Table struct {
	Columns []Column
}

// Column is one column of a table.
type Column struct {
	Name   string
	Values []Value
}

// Set holds unique hashable values, in insertion order.
type Set struct {
	items []Value
	index map[string]int
}

// Null returns the null value (nothing).
func Null() Value { return Value{k: KindNull} }

// Bool returns a boolean value.
func Bool(b bool) Value { return Value{k: KindBool, i: b2i(b)} }

// arithSmall is a + b, a - b or a * b (op '+', '-', '*') of two numbers in
// the small form, in machine words; ok is false when either is in the big
// form or the result does not fit (the general path then gives it).
func arithSmall(op byte, a, b *Value) (Value, bool) {
	if a.p != nil || b.p != nil {
		return Value{}, false
	}
	var c int64
	var e int32
	var ok bool
	if op == '*' {
		c, e, ok = mulWords(a.i, a.e, b.i, b.e)
	} else {
		c, e, ok = addWords(a.i, a.e, b.i, b.e, op == '-')
	}
	return Value{k: KindNumber, i: c, e: e}, ok
}

// Num returns a number value.
func Num(n Number) Value {
	if n.big != nil {
		return Value{k: KindNumber, p: n.big}
	}
	return Value{k: KindNumber, i: n.c, e: n.e}
}

// Int returns an integer number value.
func Int(i int64) Value { return Num(NumberFromInt(i)) }

// Text returns a text value.
func Text(s string) Value { return Value{k: KindText, s: s} }

// DateValue returns a date value.
func DateValue(d Date) Value {
	return Value{k: KindDate, i: int64(d.Year)<<16 | int64(d.Month)<<8 | int64(d.Day)}
}

// TimeOfDayValue returns a time-of-day value.
func TimeOfDayValue(t TimeOfDay) Value {
	return Value{k: KindTimeOfDay, i: ((int64(t.Hour)*60+int64(t.Minute))*60+int64(t.Second))*1e9 + int64(t.Nanos)}
}

// DateTimeValue returns a datetime value; its location gives the offset or zone.
func DateTimeValue(t time.Time) Value { return Value{k: KindDateTime, p: t} }

// TimeZoneValue returns a time zone value (an IANA name such as "Europe/Lisbon").
func TimeZoneValue(id string) Value { return Value{k: KindTimeZone, s: id} }

// DurationValue returns a duration value.
func DurationValue(d Duration) Value { return Value{k: KindDuration, p: d} }

// ListValue returns a list holding items (not copied).
func ListValue(items ...Value) Value { return Value{k: KindList, p: &List{Items: items}} }

// DictValue returns a dictionary value.
func DictValue(d *Dictionary) Value { return Value{k: KindDictionary, p: d} }

// FileValue returns a file value.
func FileValue(f *File) Value { return Value{k: KindFile, p: f} }

// TableValue returns a table value.
func TableValue(t *Table) Value { return Value{k: KindTable, p: t} }

// SetValue returns a set value.
func SetValue(s *Set) Value { return Value{k: KindSet, p: s} }

// Kind returns the kind of v.
func (v Value) Kind() Kind { return v.k }

// IsValid reports whether v holds a value (the zero Value does not).
func (v Value) IsValid() bool { return v.k != kindUnset && v.k != kindAlias }

// AsBool returns the boolean held by v.
func (v Value) AsBool() bool { return v.k == KindBool && v.i != 0 }

// AsNumber returns the number held by v.
func (v Value) AsNumber() Number { return v.num() }

// AsText returns the text held by v (or the zone name of a time zone).
func (v Value) AsText() string { return v.s }

// AsDate returns the date held by v.
func (v Value) AsDate() Date {
	return Date{Year: int(v.i >> 16), Month: int(v.i>>8) & 0xff, Day: int(v.i & 0xff)}
}

// AsTimeOfDay returns the time of day held by v.
func (v Value) AsTimeOfDay() TimeOfDay {
	ns := v.i
	return TimeOfDay{Hour: int(ns / 3600e9), Minute: int(ns/60e9) % 60, Second: int(ns/1e9) % 60, Nanos: int(ns % 1e9)}
}

// AsDateTime returns the datetime held by v.
func (v Value) AsDateTime() time.Time { t, _ := v.p.(time.Time); return t }

// AsDuration returns the duration held by v.
func (v Value) AsDuration() Duration { d, _ := v.p.(Duration); return d }

// AsList returns the list held by v (shared, not copied).
func (v Value) AsList() *List { l, _ := v.p.(*List); return l }

// AsDictionary returns the dictionary held by v (shared).
func (v Value) AsDictionary() *Dictionary { d, _ := v.p.(*Dictionary); return d }

// AsFile returns the file held by v.
func (v Value) AsFile() *File { f, _ := v.p.(*File); return f }

// AsTable returns the table held by v (shared).
func (v Value) AsTable() *Table { t, _ := v.p.(*Table); return t }

// AsSet returns the set held by v (shared).
func (v Value) AsSet() *Set { s, _ := v.p.(*Set); return s }

// ---- dictionaries

// NewDictionary returns an empty dictionary.
func NewDictionary() *Dictionary { return &Dictionary{} }

// hashKey is the identity of a hashable value inside dictionaries and sets.
func hashKey(v Value) (string, bool) {
	switch v.k {
	case KindText:
		return "s" + v.s, true
	case KindNumber:
		// 1.0 and 1 are the same key.
		return "n" + v.num().reducedText(), true
	case KindBool:
		if v.i != 0 {
			return "btrue", true
		}
		return "bfalse", true
	case KindDate, KindTimeOfDay:
		return fmt.Sprintf("%d:%d", v.k, v.i), true
	case KindDateTime:
		return "t" + v.AsDateTime().UTC().Format(time.RFC3339Nano), true
	case KindDuration:
		return "d" + formatDuration(v.AsDuration()), true
	}
	return "", false
}

// Len returns the number of entries.
func (d *Dictionary) Len() int { return len(d.keys) }

// Entry returns the i-th entry in insertion order.
func (d *Dictionary) Entry(i int) (key, val Value) { return d.keys[i], d.vals[i] }

// Set stores val under key (a hashable value: text, number, boolean, date,
// time of day, datetime or duration); an existing key keeps its position.
func (d *Dictionary) Set(key, val Value) error {
	h, ok := hashKey(key)
	if !ok {
		return fmt.Errorf("%s cannot be a dictionary key", key.k.article())
	}
	if i, ok := d.index[h]; ok {
		d.vals[i] = val
		return nil
	}
	if d.index == nil {
		d.index = map[string]int{}
	}
	d.index[h] = len(d.keys)
	d.keys = append(d.keys, key)
	d.vals = append(d.vals, val)
	return nil
}

// SetText stores val under a text key.
func (d *Dictionary) SetText(key string, val Value) { _ = d.Set(Text(key), val) }

// Get returns the value under key.
func (d *Dictionary) Get(key Value) (Value, bool) {
	h, ok := hashKey(key)
	if !ok {
		return Value{}, false
	}
	i, ok := d.index[h]
	if !ok {
		return Value{}, false
	}
	return d.vals[i], true
}

// Delete removes key and reports whether it was there.
func (d *Dictionary) Delete(key Value) bool {
	h, ok := hashKey(key)
	if !ok {
		return false
	}
	i, ok := d.index[h]
	if !ok {
		return false
	}
	d.keys = append(d.keys[:i], d.keys[i+1:]...)
	d.vals = append(d.vals[:i], d.vals[i+1:]...)
	delete(d.index, h)
	for j := i; j < len(d.keys); j++ {
		hk, _ := hashKey(d.keys[j])
		d.index[hk] = j
	}
	return true
}

// findField finds a text key as a person would name it: exactly, then
// ignoring case, then also reading underscores as spaces.
func (d *Dictionary) findField(name string) (int, bool) {
	return d.findFieldKey("s"+name, name)
}

// findFieldKey is findField with the index key of the name ("s"+name)
// made once by the caller (refExpr keeps its fields' keys).
func (d *Dictionary) findFieldKey(key, name string) (int, bool) {
	if len(d.keys) <= 8 {
		// a few fields: comparing their names is quicker than hashing
		for i := range d.keys {
			if k := &d.keys[i]; k.k == KindText && k.s == name {
				return i, true
			}
		}
	} else if i, ok := d.index[key]; ok {
		return i, true
	}
	norm := normField(name)
	for i, k := range d.keys {
		if k.k == KindText && normField(k.s) == norm {
			return i, true
		}
	}
	return 0, false
}

func normField(s string) string {
	s = strings.ToLower(strings.ReplaceAll(s, "_", " "))
	return strings.Join(strings.Fields(s), " ")
}

// ---- sets

// NewSet returns an empty set.
func NewSet() *Set { return &Set{} }

// Add inserts v (a hashable value) and reports whether it was new.
func (s *Set) Add(v Value) (bool, error) {
	h, ok := hashKey(v)
	if !ok {
		return false, fmt.Errorf("%s cannot be in a set", v.k.article())
	}
	if _, dup := s.index[h]; dup {
		return false, nil
	}
	if s.index == nil {
		s.index = map[string]int{}
	}
	s.index[h] = len(s.items)
	s.items = append(s.items, v)
	return true, nil
}

// Items returns the members in insertion order (do not modify).
func (s *Set) Items() []Value { return s.items }

// Len returns the number of members.
func (s *Set) Len() int { return len(s.items) }

func (s *Set) remove(v Value) bool {
	h, ok := hashKey(v)
	if !ok {
		return false
	}
	i, ok := s.index[h]
	if !ok {
		return false
	}
	s.items = append(s.items[:i], s.items[i+1:]...)
	delete(s.index, h)
	for j := i; j < len(s.items); j++ {
		hk, _ := hashKey(s.items[j])
		s.index[hk] = j
	}
	return true
}

// ---- tables

// NumRows returns the number of rows.
func (t *Table) NumRows() int {
	if len(t.Columns) == 0 {
		return 0
	}
	return len(t.Columns[0].Values)
}

// Row returns row i as a dictionary from column name to cell.
func (t *Table) Row(i int) *Dictionary {
	d := NewDictionary()
	for _, c := range t.Columns {
		d.SetText(c.Name, c.Values[i])
	}
	return d
}

// AppendRow adds a row from a dictionary; missing cells are nothing, new
// columns are filled with nothing in earlier rows.
func (t *Table) AppendRow(row *Dictionary) {
	n := t.NumRows()
	seen := make([]bool, len(t.Columns))
	for i := range row.keys {
		name := valueText(row.keys[i])
		col := -1
		for j := range t.Columns {
			if t.Columns[j].Name == name {
				col = j
				break
			}
		}
		if col < 0 {
			vals := make([]Value, n, n+1)
			for k := range vals {
				vals[k] = Null()
			}
			t.Columns = append(t.Columns, Column{Name: name, Values: vals})
			seen = append(seen, false)
			col = len(t.Columns) - 1
		}
		if seen[col] {
			continue
		}
		seen[col] = true
		t.Columns[col].Values = append(t.Columns[col].Values, row.vals[i])
	}
	for j := range t.Columns {
		if !seen[j] {
			t.Columns[j].Values = append(t.Columns[j].Values, Null())
		}
	}
}

// ---- copying

// clone returns a deep copy of v's containers, so that assignment has value
// semantics. Scalars are returned as they are.
func clone(v Value) Value {
	return cloneDepth(v, 0)
}

func cloneDepth(v Value, depth int) Value {
	if depth > maxDepth {
		return v
	}
	switch v.k {
	case KindList:
		l := v.AsList()
		items := make([]Value, len(l.Items))
		for i, it := range l.Items {
			items[i] = cloneDepth(it, depth+1)
		}
		return ListValue(items...)
	case KindDictionary:
		d := v.AsDictionary()
		nd := &Dictionary{keys: append([]Value(nil), d.keys...), vals: make([]Value, len(d.vals))}
		if d.index != nil {
			nd.index = make(map[string]int, len(d.index))
			for k, i := range d.index {
				nd.index[k] = i
			}
		}
		for i, x := range d.vals {
			nd.vals[i] = cloneDepth(x, depth+1)
		}
		return DictValue(nd)
	case KindTable:
		t := v.AsTable()
		nt := &Table{Columns: make([]Column, len(t.Columns))}
		for i, c := range t.Columns {
			vals := make([]Value, len(c.Values))
			for j, x := range c.Values {
				vals[j] = cloneDepth(x, depth+1)
			}
			nt.Columns[i] = Column{Name: c.Name, Values: vals}
		}
		return TableValue(nt)
	case KindSet:
		s := v.AsSet()
		ns := &Set{items: append([]Value(nil), s.items...), index: make(map[string]int, len(s.items))}
		for k, i := range s.index {
			ns.index[k] = i
		}
		return SetValue(ns)
	}
	return v
}

// maxDepth bounds nesting of values when copying, writing and reading them.
const maxDepth = 512

// ---- equality and text form

// Equal reports whether two values are the same value (numbers by value:
// 1.0 equals 1).
func Equal(a, b Value) bool { return equalDepth(a, b, 0) }

func equalDepth(a, b Value, depth int) bool {
	if depth > maxDepth {
		return false
	}
	if a.k != b.k {
		return false
	}
	switch a.k {
	case KindNull:
		return true
	case KindBool:
		return a.i == b.i
	case KindNumber:
		return a.num().Cmp(b.num()) == 0
	case KindText, KindTimeZone:
		return a.s == b.s
	case KindDate, KindTimeOfDay:
		return a.i == b.i
	case KindDateTime:
		return a.AsDateTime().Equal(b.AsDateTime())
	case KindDuration:
		return a.AsDuration() == b.AsDuration()
	case KindList:
		x, y := a.AsList().Items, b.AsList().Items
		if len(x) != len(y) {
			return false
		}
		for i := range x {
			if !equalDepth(x[i], y[i], depth+1) {
				return false
			}
		}
		return true
	case KindDictionary:
		x, y := a.AsDictionary(), b.AsDictionary()
		if x.Len() != y.Len() {
			return false
		}
		for i := range x.keys {
			w, ok := y.Get(x.keys[i])
			if !ok || !equalDepth(x.vals[i], w, depth+1) {
				return false
			}
		}
		return true
	case KindSet:
		x, y := a.AsSet(), b.AsSet()
		if x.Len() != y.Len() {
			return false
		}
		for h := range x.index {
			if _, ok := y.index[h]; !ok {
				return false
			}
		}
		return true
	case KindTable:
		x, y := a.AsTable(), b.AsTable()
		if len(x.Columns) != len(y.Columns) {
			return false
		}
		for i := range x.Columns {
			if x.Columns[i].Name != y.Columns[i].Name || !equalDepth(ListValue(x.Columns[i].Values...), ListValue(y.Columns[i].Values...), depth+1) {
				return false
			}
		}
		return true
	case KindFile:
		x, y := a.AsFile(), b.AsFile()
		return x.Name == y.Name && x.URL == y.URL && string(x.Content) == string(y.Content)
	}
	return false
}

// valueText is the text form of a value, used when text is joined with other
// values and by say: numbers exactly, dates as in plain JSON, lists joined
// with ", ".
func valueText(v Value) string {
	switch v.k {
	case KindText, KindTimeZone:
		return v.s
	case KindNull:
		return "nothing"
	case KindList:
		parts := make([]string, len(v.AsList().Items))
		for i, it := range v.AsList().Items {
			parts[i] = valueText(it)
		}
		return strings.Join(parts, ", ")
	case KindFile:
		f := v.AsFile()
		if f.Name != "" {
			return f.Name
		}
		return f.URL
	}
	b, err := AppendPlain(nil, v)
	if err != nil {
		return v.k.String()
	}
	s := string(b)
	if len(s) >= 2 && s[0] == '"' {
		s = s[1 : len(s)-1]
	}
	return s
}

// String returns the text form of v.
func (v Value) String() string { return valueText(v) }
