package lang

import (
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Noun phrases that name a part of another fact, read when no fact has the
// phrase's own name:
//
//	the last line               the last of `the lines`
//	the number of team members  the number of `the team members`
//	the document's first address  the first of the document's addresses
//	the text's lines, words, characters  the parts of a text

var ordinals = map[string]int{
	"first": 1, "second": 2, "third": 3, "fourth": 4, "fifth": 5,
	"sixth": 6, "seventh": 7, "eighth": 8, "ninth": 9, "tenth": 10, "last": -1,
}

// derivation is how a fact name that has no value may still be read.
type derivation struct {
	ord   int    // an ordinal: 1-based, -1 for the last
	count int    // `the first 3 scores`: the first (ord 1) or last (-1) count items
	agg   string // an aggregate over the fact of slots[0]
	slots []int  // the facts it reads (for an ordinal: the plural names)
	names []string
}

// deriveName gives a fact name its derivation, if it has one.
func deriveName(syms *symtab, words []string) *derivation {
	if len(words) < 2 {
		return nil
	}
	if n, ok := ordinals[words[0]]; ok && (n == 1 || n == -1) && len(words) > 2 && isDigits(words[1]) {
		// `the first 3 scores`: the first three of `the scores`
		count, err := strconv.Atoi(words[1])
		if err != nil || count > 1_000_000 || words[0] != "first" && words[0] != "last" {
			return nil
		}
		d := &derivation{ord: n, count: count}
		noun := strings.Join(words[2:], " ")
		for _, pl := range append([]string{noun}, pluralNames(noun)...) {
			d.slots = append(d.slots, syms.slot(pl))
			d.names = append(d.names, pl)
		}
		return d
	}
	if n, ok := ordinals[words[0]]; ok {
		d := &derivation{ord: n}
		for _, pl := range pluralNames(strings.Join(words[1:], " ")) {
			d.slots = append(d.slots, syms.slot(pl))
			d.names = append(d.names, pl)
		}
		return d
	}
	if fn, ok := aggregates[words[0]]; ok && len(words) > 2 && words[1] == "of" {
		name := strings.Join(words[2:], " ")
		return &derivation{agg: fn, slots: []int{syms.slot(name)}, names: []string{name}}
	}
	return nil
}

// has reports whether a fact has a value in the current scopes (answers
// given up front do not count).
func (m *machine) has(slot int) bool {
	for s := m.cur; s != nil; s = s.parent {
		if v := s.get(slot); v.k != kindUnset {
			return true
		}
	}
	return false
}

// derived reads a derivation; ok is false when none of its facts is known.
func (m *machine) derived(d *derivation, span Span) (Value, bool, error) {
	for i, slot := range d.slots {
		if !m.has(slot) {
			continue
		}
		ref := &refExpr{slot: slot, name: d.names[i], display: "the " + d.names[i], span: span}
		if d.agg != "" {
			v, err := (&aggExpr{fn: d.agg, x: ref, span: span}).eval(m)
			return v, true, err
		}
		v, err := ref.eval(m)
		if err != nil {
			return Value{}, true, err
		}
		its, ok := items(v)
		if !ok {
			return Value{}, true, userErr("Could not take an item of the %s: it is %s, not a list", d.names[i], v.k.article())
		}
		if d.count > 0 {
			n := min(d.count, len(its))
			if d.ord > 0 {
				return ListValue(slices.Clone(its[:n])...), true, nil
			}
			return ListValue(slices.Clone(its[len(its)-n:])...), true, nil
		}
		v, err = pick(its, d.ord, "the "+d.names[i])
		return v, true, err
	}
	return Value{}, false, nil
}

// pick takes the nth item (1-based, -1 the last).
func pick(its []Value, n int, of string) (Value, error) {
	i := n - 1
	if n < 0 {
		i = len(its) + n
	}
	if i < 0 || i >= len(its) {
		return Value{}, userErr("Could not take the %s item of %s: it has %d", ordinalWord(n), of, len(its))
	}
	return its[i], nil
}

func ordinalWord(n int) string {
	for w, k := range ordinals {
		if k == n {
			return w
		}
	}
	return "?"
}

// textPart reads the lines, words or characters of a text.
func textPart(s, key string) (Value, bool) {
	var parts []string
	switch normField(key) {
	case "lines":
		s = strings.ReplaceAll(s, "\r\n", "\n")
		s = strings.TrimSuffix(s, "\n")
		if s != "" {
			parts = strings.Split(s, "\n")
		}
	case "words":
		parts = strings.Fields(s)
	case "characters", "letters":
		parts = make([]string, 0, utf8.RuneCountInString(s))
		for _, r := range s {
			parts = append(parts, string(r))
		}
	default:
		return Value{}, false
	}
	out := make([]Value, len(parts))
	for i, p := range parts {
		out[i] = Text(p)
	}
	return ListValue(out...), true
}

// ordinalField reads `first address` of a dictionary (the first of its
// addresses) or `last line` of a text; ok is false when the key is no
// ordinal or the value has nothing of that name.
func ordinalField(v Value, key string) (Value, bool, error) {
	words := strings.Fields(normField(key))
	if len(words) < 2 {
		return Value{}, false, nil
	}
	n, isOrd := ordinals[words[0]]
	if !isOrd {
		return Value{}, false, nil
	}
	noun := strings.Join(words[1:], " ")
	// the plural field (`addresses`), else a singular one that holds a
	// list (`address`)
	for _, pl := range append(pluralNames(noun), noun) {
		var list Value
		found := false
		switch v.k {
		case KindDictionary:
			if j, ok := v.AsDictionary().findField(pl); ok {
				list, found = v.AsDictionary().vals[j], true
			}
		case KindText:
			list, found = textPart(v.s, pl)
		}
		if !found {
			continue
		}
		its, ok := items(list)
		if !ok {
			return Value{}, true, userErr("Could not take an item of the %s: it is %s, not a list", pl, list.k.article())
		}
		x, err := pick(its, n, "the "+pl)
		return x, true, err
	}
	return Value{}, false, nil
}
