package lang

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"
)

// The standard library: procedures every program may call without a book,
// for text, numbers, dates and lists. They are pure and deterministic, so
// they run in the interpreter and are not journaled. A procedure of the
// program, or of a book, whose sentence matches wins over a standard one
// (see machine.matchBook). The catalog lists them as the `standard` book's
// procedures (StandardProcedures); docs/language.md documents them.

// StandardProcedure describes a procedure of the standard library.
type StandardProcedure struct {
	// ID names it ("split_text_by"); the standard book uses it as its
	// procedure id.
	ID string
	// Signature is its sentence without `to`, its output in parentheses
	// ("split a text by a separator (the parts)"), as a book procedure's.
	Signature string
	// Inputs are its inputs' nouns, in the signature's order.
	Inputs      []string
	Output      string
	Description string
	Example     string
	Hints       []string
}

type stdProc struct {
	StandardProcedure
	fn  func(m *machine, in map[string]Value) (Value, error)
	sig []sigElem
	// mutates is the input whose fact takes the result (`add a row to
	// the table` changes the table); it may have no value yet.
	mutates string
	// keepsInput: the texts of the result of an input's text (its parts,
	// trimmed) come from outside too (see inputText).
	keepsInput bool
	// word is the input that the sentence must name by its own words, as
	// a keyword (`add a row to …`): `add 5 to the above` is no row.
	word string
}

// stdProcs are the standard procedures, in the order they are tried: a
// longer sentence before one it extends.
var stdProcs = []*stdProc{
	{StandardProcedure: StandardProcedure{ID: "add_row", Signature: "add a row to a table (the table)", Output: "table",
		Description: "Adds a row to a table (or a list): the facts of the block are its fields. A table that has no value yet is started.",
		Example:     "add a row to the orders where the customer is \"Ana\" and the total is 12.50", Hints: []string{"append", "insert", "record"}}, fn: stdAddRow, mutates: "table", word: "row"},
	{StandardProcedure: StandardProcedure{ID: "add_new_row", Signature: "add a new row to a table (the table)", Output: "table",
		Description: "Adds a row to a table, like 'add a row to a table'.", Example: "add a new row to the orders where\n  the customer is \"Ana\""}, fn: stdAddRow, mutates: "table", word: "new row"},
	{StandardProcedure: StandardProcedure{ID: "split_text_by", Signature: "split a text by a separator (the parts)", Output: "parts",
		Description: "Splits a text at each separator; the parts (a list of texts) are the above.",
		Example:     "split the line by \";\"\nthe fruits are the above", Hints: []string{"separate", "tokenize", "divide", "csv"}}, fn: stdSplitBy, keepsInput: true},
	{StandardProcedure: StandardProcedure{ID: "split_text_on", Signature: "split a text on a separator (the parts)", Output: "parts",
		Description: "Splits a text at each separator, like 'split a text by a separator'.",
		Example:     "split the path on \"/\"", Hints: []string{"separate"}}, fn: stdSplitBy, keepsInput: true},
	{StandardProcedure: StandardProcedure{ID: "split_text_into_lines", Signature: "split a text into lines (the lines)", Output: "lines",
		Description: "Splits a text into its lines.", Example: "split the body into lines\nthe rows are the above"}, fn: stdSplitLines, keepsInput: true},
	{StandardProcedure: StandardProcedure{ID: "split_text_into_parts", Signature: "split a text into parts (the parts)", Output: "parts",
		Description: "Splits a text into its words (runs of characters between spaces).", Example: "split the title into parts"}, fn: stdSplitWords, keepsInput: true},
	{StandardProcedure: StandardProcedure{ID: "split_text_into_words", Signature: "split a text into words (the words)", Output: "words",
		Description: "Splits a text into its words.", Example: "split the title into words"}, fn: stdSplitWords, keepsInput: true},
	{StandardProcedure: StandardProcedure{ID: "split_text", Signature: "split a text (the parts)", Output: "parts",
		Description: "Splits a text into its words (runs of characters between spaces).", Example: "split the title\nthe words are the above"}, fn: stdSplitWords, keepsInput: true},
	{StandardProcedure: StandardProcedure{ID: "trim_text", Signature: "trim a text (the trimmed text)", Output: "trimmed text",
		Description: "Removes the spaces, tabs and line breaks around a text. The expression 'the code trimmed' does the same.",
		Example:     "trim the code\nthe clean code is the above", Hints: []string{"strip", "whitespace", "spaces"}}, fn: stdTrim, keepsInput: true},
	{StandardProcedure: StandardProcedure{ID: "join_list_with", Signature: "join a list with a separator (the text)", Output: "text",
		Description: "Joins the items of a list into one text, with the separator between them. The expression 'the names joined with \", \"' does the same.",
		Example:     "join the names with \", \"\nthe label is the above", Hints: []string{"concatenate", "combine"}}, fn: stdJoin},
	{StandardProcedure: StandardProcedure{ID: "join_list", Signature: "join a list (the text)", Output: "text",
		Description: "Joins the items of a list into one text, with nothing between them.", Example: "join the letters"}, fn: stdJoin},
	{StandardProcedure: StandardProcedure{ID: "replace_in_text", Signature: "replace a target with a replacement in a text (the text)", Output: "text",
		Description: "Replaces every occurrence of the target in a text; the new text is the above.",
		Example:     "replace \"-\" with \"/\" in the date text\nthe slashed date is the above", Hints: []string{"substitute", "swap"}}, fn: stdReplace},
	{StandardProcedure: StandardProcedure{ID: "replace_in_text_by", Signature: "replace a target in a text with a replacement (the text)", Output: "text",
		Description: "Replaces every occurrence of the target in a text.", Example: "replace \" \" in the code with \"\""}, fn: stdReplace},
	{StandardProcedure: StandardProcedure{ID: "uppercase_text", Signature: "convert a text to uppercase (the text)", Output: "text",
		Description: "The text in capitals ('the name in uppercase' as an expression).", Example: "convert the code to uppercase", Hints: []string{"capitals", "upper case"}}, fn: stdUpper},
	{StandardProcedure: StandardProcedure{ID: "lowercase_text", Signature: "convert a text to lowercase (the text)", Output: "text",
		Description: "The text in small letters ('the name in lowercase' as an expression).", Example: "convert the email to lowercase", Hints: []string{"lower case"}}, fn: stdLower},
	{StandardProcedure: StandardProcedure{ID: "uppercase_text_words", Signature: "convert a text to upper case (the text)", Output: "text",
		Description: "The text in capitals.", Example: "convert the code to upper case"}, fn: stdUpper},
	{StandardProcedure: StandardProcedure{ID: "lowercase_text_words", Signature: "convert a text to lower case (the text)", Output: "text",
		Description: "The text in small letters.", Example: "convert the email to lower case"}, fn: stdLower},
	{StandardProcedure: StandardProcedure{ID: "replace_in_text_by_word", Signature: "replace a target by a replacement in a text (the text)", Output: "text",
		Description: "Replaces every occurrence of the target in a text.", Example: "replace \"-\" by \"/\" in the date text"}, fn: stdReplace},
	{StandardProcedure: StandardProcedure{ID: "uppercase", Signature: "uppercase a text (the text)", Output: "text",
		Description: "The text in capitals.", Example: "uppercase the code"}, fn: stdUpper},
	{StandardProcedure: StandardProcedure{ID: "lowercase", Signature: "lowercase a text (the text)", Output: "text",
		Description: "The text in small letters.", Example: "lowercase the email"}, fn: stdLower},
	{StandardProcedure: StandardProcedure{ID: "capitalize", Signature: "capitalize a text (the text)", Output: "text",
		Description: "The text with the first letter of each word a capital.", Example: "capitalize the name"}, fn: stdCapitalize},
	{StandardProcedure: StandardProcedure{ID: "truncate_text", Signature: "truncate a text to a length (the text)", Output: "text",
		Description: "The first characters of a text, at most the length.", Example: "truncate the description to 100"}, fn: stdTruncateText},
	{StandardProcedure: StandardProcedure{ID: "truncate_number", Signature: "truncate a number (the number)", Output: "number",
		Description: "The whole part of a number, the fraction dropped (toward zero). The expression 'the amount truncated' does the same.",
		Example:     "truncate the hours\nthe whole hours is the above", Hints: []string{"integer", "floor", "whole"}}, fn: stdTruncate},
	{StandardProcedure: StandardProcedure{ID: "sort_list_descending", Signature: "sort a list in descending order (the sorted list)", Output: "sorted list",
		Description: "The items of a list from the largest to the smallest.", Example: "sort the scores in descending order"}, fn: stdSortDesc},
	{StandardProcedure: StandardProcedure{ID: "sort_list_ascending", Signature: "sort a list in ascending order (the sorted list)", Output: "sorted list",
		Description: "The items of a list from the smallest to the largest.", Example: "sort the scores in ascending order"}, fn: stdSort},
	{StandardProcedure: StandardProcedure{ID: "sort_list_by_descending", Signature: "sort a list by a field in descending order (the sorted list)", Output: "sorted list",
		Description: "The dictionaries (or table rows) of a list from the largest to the smallest value of one field.", Example: "sort the invoices by \"total\" in descending order"}, fn: stdSortByDesc},
	{StandardProcedure: StandardProcedure{ID: "sort_list_alphabetically", Signature: "sort a list in alphabetical order (the sorted list)", Output: "sorted list",
		Description: "The items of a list in alphabetical order.", Example: "sort the names in alphabetical order"}, fn: stdSort},
	{StandardProcedure: StandardProcedure{ID: "sort_list_by", Signature: "sort a list by a field (the sorted list)", Output: "sorted list",
		Description: "The dictionaries (or table rows) of a list in the order of one field.", Example: "sort the invoices by \"due date\""}, fn: stdSortBy},
	{StandardProcedure: StandardProcedure{ID: "sort_list", Signature: "sort a list (the sorted list)", Output: "sorted list",
		Description: "The items of a list from the smallest to the largest (numbers, texts, dates). 'the names sorted' does the same.",
		Example:     "sort the names\nthe roster is the above", Hints: []string{"order", "arrange"}}, fn: stdSort},
	{StandardProcedure: StandardProcedure{ID: "reverse_list", Signature: "reverse a list (the reversed list)", Output: "reversed list",
		Description: "The items of a list (or the characters of a text) in reverse order.", Example: "reverse the steps"}, fn: stdReverse},
	{StandardProcedure: StandardProcedure{ID: "deduplicate_list", Signature: "deduplicate a list (the unique items)", Output: "unique items",
		Description: "The items of a list without repeats, in their first order. 'the unique items of the tags' does the same.",
		Example:     "deduplicate the tags", Hints: []string{"unique", "distinct", "duplicates"}}, fn: stdUnique},
	{StandardProcedure: StandardProcedure{ID: "remove_duplicates", Signature: "remove duplicates from a list (the unique items)", Output: "unique items",
		Description: "The items of a list without repeats, in their first order.", Example: "remove duplicates from the emails"}, fn: stdUnique},
}

// stdSigs parses the signatures once.
var stdSigs = sync.OnceValue(func() bool {
	for _, p := range stdProcs {
		lx := &lexer{src: p.Signature}
		ln, err := lx.line(0, len(p.Signature), 1)
		if err != nil {
			panic(err)
		}
		sig, outs, err := parseSignature(ln.toks)
		if err != nil || len(outs) != 1 {
			panic("standard procedure " + p.ID + ": bad signature")
		}
		p.sig = sig
		for _, e := range sig {
			if e.word == "" {
				p.Inputs = append(p.Inputs, strings.Join(e.param, " "))
			}
		}
	}
	return true
})

// StandardProcedures lists the standard library's procedures.
func StandardProcedures() []StandardProcedure {
	stdSigs()
	out := make([]StandardProcedure, len(stdProcs))
	for i, p := range stdProcs {
		out[i] = p.StandardProcedure
		out[i].Inputs = slices.Clone(p.Inputs)
	}
	return out
}

// IsStandardProcedure reports whether id names a standard procedure.
func IsStandardProcedure(id string) bool { return stdByID(id) != nil }

func stdByID(id string) *stdProc {
	for _, p := range stdProcs {
		if p.ID == id {
			return p
		}
	}
	return nil
}

// CallStandard runs a standard procedure with its inputs by noun (the
// standard book's procedures call it), under the default limits.
func CallStandard(ctx context.Context, id string, inputs map[string]Value) (Value, error) {
	p := stdByID(id)
	if p == nil {
		return Value{}, userErr("I don't know the standard procedure %s", id)
	}
	stdSigs()
	for _, in := range p.Inputs {
		if v, ok := inputs[in]; !ok || !v.IsValid() {
			return Value{}, missing("the " + in)
		}
	}
	m := newMachine(ctx, &Program{syms: newSymtab()}, Options{})
	return p.fn(m, inputs)
}

// matchStd finds the standard procedure of a call's sentence (or of the
// sentence without a leading `run`).
func (m *machine) matchStd(s *stmt) (bookMatch, bool) {
	stdSigs()
	c := s.call
	p := &parser{lx: &lexer{src: m.srcOf(s)}, syms: m.syms}
	for _, toks := range [][]token{c.toks, c.bare} {
		if toks == nil {
			continue
		}
		for _, sp := range stdProcs {
			if binds, ok := matchSignature(p, sp.sig, toks, c.args != nil); ok && !sp.givenAs(binds) {
				return bookMatch{sig: sp.sig, outs: []string{sp.Output}, binds: binds, std: sp}, true
			}
		}
	}
	return bookMatch{}, false
}

// givenAs reports whether binds give the procedure's keyword input (word)
// as a value rather than by its own words.
func (sp *stdProc) givenAs(binds []binding) bool {
	for _, b := range binds {
		if sp.word != "" && strings.Join(sp.sig[b.elem].param, " ") == sp.word {
			return true
		}
	}
	return false
}

// partOf is the part of v named key: a text's words, lines or characters,
// a dictionary's field (by its plural name too), a property (valueProperty).
func partOf(v Value, key string) (Value, bool) {
	switch v.k {
	case KindText:
		if p, ok := textPart(v.s, key); ok {
			return p, true
		}
	case KindDictionary:
		d := v.AsDictionary()
		for _, name := range append([]string{key}, pluralNames(key)...) {
			if j, ok := d.findField(name); ok {
				return d.vals[j], true
			}
		}
		return Value{}, false
	}
	return valueProperty(v, key)
}

// tableProperty is a table's `rows` (a list of dictionaries), `number of
// rows` (`row count`), `first row` (… `last row`), `columns` (their names).
// A column of that name wins: it is read as the column's values.
func tableProperty(t *Table, k string) (Value, bool) {
	for _, c := range t.Columns {
		if normField(c.Name) == k {
			return Value{}, false
		}
	}
	switch k {
	case "rows", "records", "entries":
		rows, _ := items(TableValue(t))
		return ListValue(rows...), true
	case "row count", "count", "length", "size":
		return Int(int64(t.NumRows())), true
	case "columns", "column names", "headers":
		names := make([]Value, len(t.Columns))
		for i, c := range t.Columns {
			names[i] = Text(c.Name)
		}
		return ListValue(names...), true
	}
	if words := strings.Fields(k); len(words) == 2 && (words[1] == "row" || words[1] == "record") {
		if n, ok := ordinals[words[0]]; ok {
			i := n - 1
			if n < 0 {
				i = t.NumRows() + n
			}
			if i >= 0 && i < t.NumRows() {
				return DictValue(t.Row(i)), true
			}
		}
	}
	return Value{}, false
}

// need reads an input of a standard procedure as a kind.
func need(in map[string]Value, name string, kinds ...Kind) (Value, error) {
	v, ok := in[name]
	if !ok || !v.IsValid() {
		return Value{}, missing("the " + name)
	}
	for _, k := range kinds {
		if v.k == k {
			return v, nil
		}
		if r, ok := readAs(v, k); ok {
			return r, nil
		}
	}
	return Value{}, userErr("Could not use %s as the %s: it must be %s", describe(v), name, kinds[0].article())
}

func (m *machine) textList(parts []string) (Value, error) {
	if err := m.itemsOK(int64(len(parts)), KindList); err != nil {
		return Value{}, err
	}
	out := make([]Value, len(parts))
	var n int64
	for i, p := range parts {
		out[i] = Text(p)
		n += int64(len(p)) + valueSize
	}
	if err := m.reserve(n); err != nil {
		return Value{}, err
	}
	return ListValue(out...), nil
}

func (m *machine) newText(s string) (Value, error) {
	if err := m.checkText(s); err != nil {
		return Value{}, err
	}
	if err := m.reserve(int64(len(s))); err != nil {
		return Value{}, err
	}
	return Text(s), nil
}

func stdSplitBy(m *machine, in map[string]Value) (Value, error) {
	t, err := need(in, "text", KindText)
	if err != nil {
		return Value{}, err
	}
	sep, err := need(in, "separator", KindText)
	if err != nil {
		return Value{}, err
	}
	return m.splitText(t.s, sep.s)
}

// splitText splits at each separator; an empty separator splits into
// words.
func (m *machine) splitText(s, sep string) (Value, error) {
	if sep == "" {
		return m.textList(strings.Fields(s))
	}
	if s == "" {
		return ListValue(), nil
	}
	if n := strings.Count(s, sep) + 1; n > m.lim.MaxItems {
		return Value{}, m.itemsOK(int64(n), KindList)
	}
	return m.textList(strings.Split(s, sep))
}

func stdSplitWords(m *machine, in map[string]Value) (Value, error) {
	t, err := need(in, "text", KindText)
	if err != nil {
		return Value{}, err
	}
	return m.textList(strings.Fields(t.s))
}

func stdSplitLines(m *machine, in map[string]Value) (Value, error) {
	t, err := need(in, "text", KindText)
	if err != nil {
		return Value{}, err
	}
	v, _ := textPart(t.s, "lines")
	return v, m.reserve(sizeOf(v))
}

func stdTrim(m *machine, in map[string]Value) (Value, error) {
	t, err := need(in, "text", KindText)
	if err != nil {
		return Value{}, err
	}
	return Text(strings.TrimSpace(t.s)), nil
}

func stdJoin(m *machine, in map[string]Value) (Value, error) {
	l, ok := in["list"]
	if !ok || !l.IsValid() {
		return Value{}, missing("the list")
	}
	sep := ""
	if s, ok := in["separator"]; ok {
		if s.k != KindText {
			return Value{}, userErr("Could not use %s as the separator: it must be text", describe(s))
		}
		sep = s.s
	}
	return m.joinList(l, sep)
}

// joinList writes the items of a list as text with sep between them.
func (m *machine) joinList(l Value, sep string) (Value, error) {
	its, ok, err := m.items(l)
	if err != nil {
		return Value{}, err
	}
	if !ok {
		if l.k == KindText {
			return l, nil
		}
		return Value{}, userErr("Could not join %s: it is not a list", describe(l))
	}
	var n int64
	for _, it := range its {
		if it.k == KindText {
			n += int64(len(it.s))
		} else {
			n += 32
		}
		n += int64(len(sep))
	}
	if err := m.textOK(n); err != nil {
		return Value{}, err
	}
	var b strings.Builder
	for i, it := range its {
		if i > 0 {
			b.WriteString(sep)
		}
		b.WriteString(valueText(it))
	}
	return m.newText(b.String())
}

func stdReplace(m *machine, in map[string]Value) (Value, error) {
	t, err := need(in, "text", KindText)
	if err != nil {
		return Value{}, err
	}
	old, ok := in["target"]
	if !ok || !old.IsValid() {
		return Value{}, missing("the target")
	}
	nw, ok := in["replacement"]
	if !ok || !nw.IsValid() {
		return Value{}, missing("the replacement")
	}
	o, r := valueText(old), valueText(nw)
	if o == "" {
		return t, nil
	}
	if n := int64(strings.Count(t.s, o)) * int64(len(r)-len(o)); n > 0 {
		if err := m.textOK(int64(len(t.s)) + n); err != nil {
			return Value{}, err
		}
	}
	return m.newText(strings.ReplaceAll(t.s, o, r))
}

func stdUpper(m *machine, in map[string]Value) (Value, error) {
	t, err := need(in, "text", KindText)
	if err != nil {
		return Value{}, err
	}
	return m.newText(strings.ToUpper(t.s))
}

func stdLower(m *machine, in map[string]Value) (Value, error) {
	t, err := need(in, "text", KindText)
	if err != nil {
		return Value{}, err
	}
	return m.newText(strings.ToLower(t.s))
}

func stdCapitalize(m *machine, in map[string]Value) (Value, error) {
	t, err := need(in, "text", KindText)
	if err != nil {
		return Value{}, err
	}
	var b strings.Builder
	start := true
	for _, r := range t.s {
		if unicode.IsSpace(r) {
			start = true
			b.WriteRune(r)
			continue
		}
		if start {
			b.WriteRune(unicode.ToUpper(r))
		} else {
			b.WriteRune(unicode.ToLower(r))
		}
		start = false
	}
	return m.newText(b.String())
}

func stdTruncateText(m *machine, in map[string]Value) (Value, error) {
	t, err := need(in, "text", KindText)
	if err != nil {
		return Value{}, err
	}
	n, err := need(in, "length", KindNumber)
	if err != nil {
		return Value{}, err
	}
	k, ok := n.num().Int64()
	if !ok || k < 0 {
		return Value{}, userErr("Could not truncate a text to %s characters: it must be a whole number, 0 or more", describe(n))
	}
	if int64(utf8.RuneCountInString(t.s)) <= k {
		return t, nil
	}
	i := 0
	for j := range t.s {
		if int64(i) == k {
			return Text(t.s[:j]), nil
		}
		i++
	}
	return t, nil
}

func stdTruncate(_ *machine, in map[string]Value) (Value, error) {
	n, err := need(in, "number", KindNumber)
	if err != nil {
		return Value{}, err
	}
	return truncateNumber(n)
}

// truncateNumber drops the fraction of a number, toward zero.
func truncateNumber(v Value) (Value, error) {
	if v.k != KindNumber {
		return Value{}, userErr("Could not truncate %s: it is not a number", describe(v))
	}
	if v.num().Scale() <= 0 {
		return v, nil
	}
	s := v.num().String()
	if i := strings.IndexByte(s, '.'); i >= 0 {
		s = s[:i]
	}
	if s == "-0" {
		s = "0"
	}
	n, err := ParseNumber(s)
	if err != nil {
		return Value{}, userErr("Could not truncate %s: %v", describe(v), err)
	}
	return Num(n), nil
}

// listOf reads the list input of a list procedure: a list, a set, a
// table's rows.
func (m *machine) listOf(in map[string]Value) ([]Value, error) {
	l, ok := in["list"]
	if !ok || !l.IsValid() {
		return nil, missing("the list")
	}
	its, ok, err := m.items(l)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, userErr("Could not use %s as a list", describe(l))
	}
	return its, nil
}

func stdSort(m *machine, in map[string]Value) (Value, error) {
	its, err := m.listOf(in)
	if err != nil {
		return Value{}, err
	}
	return m.sorted(its, false, "")
}

func stdSortDesc(m *machine, in map[string]Value) (Value, error) {
	its, err := m.listOf(in)
	if err != nil {
		return Value{}, err
	}
	return m.sorted(its, true, "")
}

func stdSortBy(m *machine, in map[string]Value) (Value, error) {
	its, err := m.listOf(in)
	if err != nil {
		return Value{}, err
	}
	f, err := need(in, "field", KindText)
	if err != nil {
		return Value{}, err
	}
	return m.sorted(its, false, f.s)
}

func stdSortByDesc(m *machine, in map[string]Value) (Value, error) {
	its, err := m.listOf(in)
	if err != nil {
		return Value{}, err
	}
	f, err := need(in, "field", KindText)
	if err != nil {
		return Value{}, err
	}
	return m.sorted(its, true, f.s)
}

// sorted is a new list of the items in order (stable), by a field of
// each when field is not empty.
func (m *machine) sorted(its []Value, desc bool, field string) (Value, error) {
	if err := m.reserve(int64(len(its)) * valueSize); err != nil {
		return Value{}, err
	}
	key := func(v Value) Value {
		if field == "" {
			return v
		}
		if v.k == KindDictionary {
			if j, ok := v.AsDictionary().findField(field); ok {
				return v.AsDictionary().vals[j]
			}
		}
		return Null()
	}
	out := slices.Clone(its)
	var bad *raise
	slices.SortStableFunc(out, func(a, b Value) int {
		x, y := key(a), key(b)
		c, ok := compareRead(x, y)
		if !ok && bad == nil {
			bad = userErr("Could not sort: %s and %s cannot be put in order", describe(x), describe(y))
		}
		if desc {
			return -c
		}
		return c
	})
	if bad != nil {
		return Value{}, bad
	}
	return ListValue(out...), nil
}

func stdReverse(m *machine, in map[string]Value) (Value, error) {
	if t, ok := in["list"]; ok && t.k == KindText {
		r := []rune(t.s)
		slices.Reverse(r)
		return Text(string(r)), nil
	}
	its, err := m.listOf(in)
	if err != nil {
		return Value{}, err
	}
	if err := m.reserve(int64(len(its)) * valueSize); err != nil {
		return Value{}, err
	}
	out := slices.Clone(its)
	slices.Reverse(out)
	return ListValue(out...), nil
}

func stdUnique(m *machine, in map[string]Value) (Value, error) {
	its, err := m.listOf(in)
	if err != nil {
		return Value{}, err
	}
	return m.unique(its)
}

// unique is a new list of the items without repeats, in first order.
func (m *machine) unique(its []Value) (Value, error) {
	if err := m.reserve(int64(len(its)) * valueSize); err != nil {
		return Value{}, err
	}
	out := make([]Value, 0, len(its))
	seen := map[string]bool{}
	for _, it := range its {
		if k, ok := hashKey(it); ok {
			if seen[k] {
				continue
			}
			seen[k] = true
			out = append(out, it)
			continue
		}
		if !slices.ContainsFunc(out, func(o Value) bool { return Equal(o, it) }) {
			out = append(out, it)
		}
	}
	return ListValue(out...), nil
}

// stdExpr is an expression of the standard library: `X trimmed`,
// `X truncated`, `X sorted`, `X joined with S`, `X split by S`,
// `the unique items of X`, `the first N items of X`.
type stdExpr struct {
	op   string
	x    expr
	arg  expr
	desc bool
	n    Number // first, last
	part string // first, last: items, lines, words, characters
	span Span
}

func (e *stdExpr) sp() Span { return e.span }

func (e *stdExpr) eval(m *machine) (Value, error) {
	v, err := e.x.eval(m)
	if err != nil {
		return v, err
	}
	var arg Value
	if e.arg != nil {
		if arg, err = e.arg.eval(m); err != nil {
			return arg, err
		}
	}
	switch e.op {
	case "trimmed":
		if v.k != KindText {
			return Value{}, userErr("Could not trim %s: it is not text", describe(v))
		}
		t := Text(strings.TrimSpace(v.s))
		if isInput(v) {
			t = inputText(t)
		}
		return t, nil
	case "truncated":
		if r, ok := readAs(v, KindNumber); ok {
			v = r
		}
		return truncateNumber(v)
	case "sorted":
		its, ok, err := m.items(v)
		if err != nil {
			return Value{}, err
		}
		if !ok {
			return Value{}, userErr("Could not sort %s: it is not a list", describe(v))
		}
		return m.sorted(its, e.desc, "")
	case "joined":
		if arg.k != KindText {
			return Value{}, userErr("Could not join with %s: the separator must be text", describe(arg))
		}
		return m.joinList(v, arg.s)
	case "split":
		if v.k != KindText || arg.k != KindText {
			return Value{}, userErr("Could not split %s by %s: both must be text", describe(v), describe(arg))
		}
		parts, err := m.splitText(v.s, arg.s)
		if err == nil && isInput(v) {
			parts = inputText(parts) // an input's parts come from outside too
		}
		return parts, err
	case "unique":
		its, ok, err := m.items(v)
		if err != nil {
			return Value{}, err
		}
		if !ok {
			return Value{}, userErr("Could not take the unique items of %s: it is not a list", describe(v))
		}
		return m.unique(its)
	case "first", "last":
		return m.firstN(e, v)
	}
	return Value{}, internalErr("unknown operation %s", e.op)
}

// firstN is `the first N items of X` (or last; lines, words, characters
// of a text).
func (m *machine) firstN(e *stdExpr, v Value) (Value, error) {
	k, ok := e.n.Int64()
	if !ok || k < 0 {
		return Value{}, userErr("Could not take the %s %s %s: it must be a whole number", e.op, e.n, e.part)
	}
	chars := false
	var its []Value
	if v.k == KindText {
		part := e.part
		if part == "items" || part == "parts" {
			part = "words"
		}
		l, ok := textPart(v.s, part)
		if !ok {
			return Value{}, userErr("Could not take the %s %s of a text: a text has lines, words and characters", e.op, e.part)
		}
		its = l.AsList().Items
		chars = part == "characters" || part == "letters"
	} else {
		var ok bool
		var err error
		if its, ok, err = m.items(v); err != nil {
			return Value{}, err
		} else if !ok {
			return Value{}, userErr("Could not take the %s %s %s of %s: it is not a list", e.op, e.n, e.part, describe(v))
		}
	}
	if k > int64(len(its)) {
		k = int64(len(its))
	}
	var out []Value
	if e.op == "first" {
		out = slices.Clone(its[:k])
	} else {
		out = slices.Clone(its[int64(len(its))-k:])
	}
	if chars {
		var b strings.Builder
		for _, c := range out {
			b.WriteString(c.s)
		}
		return Text(b.String()), nil
	}
	if err := m.reserve(int64(len(out)) * valueSize); err != nil {
		return Value{}, err
	}
	return ListValue(out...), nil
}

var weekdays = [...]string{"Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"}

// valueProperty is a property of a value that is no dictionary: a date's
// year, month, day and weekday (an English day name), a datetime's also
// hour, minute, second, date and time, a text's or list's length. A text
// that came from outside and reads as a date has the date's.
func valueProperty(v Value, key string) (Value, bool) {
	k := normField(key)
	if rest, ok := strings.CutPrefix(k, "number of "); ok {
		// `the text's number of words`, `the number of rows in the orders`
		if part, ok := partOf(v, rest); ok {
			if its, ok := items(part); ok {
				return Int(int64(len(its))), true
			}
		}
		return Value{}, false
	}
	if v.k == KindTable {
		return tableProperty(v.AsTable(), k)
	}
	if v.k == KindText {
		if k == "length" {
			return Int(int64(utf8.RuneCountInString(v.s))), true
		}
		if d, ok := readAs(v, KindDate); ok {
			v = d
		} else if t, ok := readAs(v, KindTimeOfDay); ok {
			v = t
		} else {
			return Value{}, false
		}
	}
	var t time.Time
	switch v.k {
	case KindDate:
		t = v.AsDate().time()
	case KindDateTime:
		t = v.AsDateTime()
		switch k {
		case "date":
			return DateValue(dateOf(t)), true
		case "time", "time of day":
			return TimeOfDayValue(TimeOfDay{t.Hour(), t.Minute(), t.Second(), t.Nanosecond()}), true
		}
	case KindTimeOfDay:
		tod := v.AsTimeOfDay()
		switch k {
		case "hour", "hours":
			return Int(int64(tod.Hour)), true
		case "minute", "minutes":
			return Int(int64(tod.Minute)), true
		case "second", "seconds":
			return Int(int64(tod.Second)), true
		}
		return Value{}, false
	case KindList, KindSet:
		its, _ := items(v)
		if k == "length" || k == "count" || k == "size" {
			return Int(int64(len(its))), true
		}
		// `the names's first item`, `the rows's last`
		words := strings.Fields(k)
		if n, ok := ordinals[words[0]]; ok && len(words) <= 2 {
			i := n - 1
			if n < 0 {
				i = len(its) + n
			}
			if i >= 0 && i < len(its) {
				return its[i], true
			}
		}
		return Value{}, false
	default:
		return Value{}, false
	}
	switch k {
	case "year":
		return Int(int64(t.Year())), true
	case "month", "month number":
		return Int(int64(t.Month())), true
	case "month name":
		return Text(t.Month().String()), true
	case "day", "day of the month", "day of month":
		return Int(int64(t.Day())), true
	case "weekday", "day of the week", "day of week", "week day", "day name":
		return Text(weekdays[t.Weekday()]), true
	case "quarter":
		return Int(int64(t.Month()-1)/3 + 1), true
	case "day of the year", "day of year":
		return Int(int64(t.YearDay())), true
	}
	if v.k == KindDateTime {
		switch k {
		case "hour", "hours":
			return Int(int64(t.Hour())), true
		case "minute", "minutes":
			return Int(int64(t.Minute())), true
		case "second", "seconds":
			return Int(int64(t.Second())), true
		}
	}
	return Value{}, false
}

// stdAddRow adds the inputs other than the table as a row.
func stdAddRow(m *machine, in map[string]Value) (Value, error) {
	row := NewDictionary()
	names := make([]string, 0, len(in))
	for k := range in {
		if k != "table" && k != "row" && k != "new row" {
			names = append(names, k)
		}
	}
	slices.Sort(names)
	for _, k := range names {
		row.SetText(k, in[k])
	}
	if row.Len() == 0 {
		return Value{}, userErr("Could not add a row: give its fields in a block, as in 'add a row to the table where the name is \"Ana\"'")
	}
	t, ok := in["table"]
	if !ok || t.k == KindNull {
		t = TableValue(&Table{})
	}
	if err := m.reserve(sizeOf(DictValue(row))); err != nil {
		return Value{}, err
	}
	switch t.k {
	case KindTable:
		if err := m.itemsOK(int64(t.AsTable().NumRows())+1, KindTable); err != nil {
			return Value{}, err
		}
		t.AsTable().AppendRow(row)
	case KindList:
		if err := m.itemsOK(int64(len(t.AsList().Items))+1, KindList); err != nil {
			return Value{}, err
		}
		l := t.AsList()
		l.Items = append(l.Items, DictValue(row))
	default:
		return Value{}, userErr("Could not add a row to %s: it is not a table", describe(t))
	}
	return t, nil
}

// partExpr is a field or property of a value that is no fact: `today's
// year`, `the current datetime's hour`.
type partExpr struct {
	x    expr
	key  string
	span Span
}

func (e *partExpr) sp() Span { return e.span }
func (e *partExpr) eval(m *machine) (Value, error) {
	v, err := e.x.eval(m)
	if err != nil {
		return v, err
	}
	if v.k == KindDictionary {
		if j, ok := v.AsDictionary().findField(e.key); ok {
			return v.AsDictionary().vals[j], nil
		}
	} else if p, ok := valueProperty(v, e.key); ok {
		return p, nil
	}
	return Value{}, userErr("Could not read the %s of %s", e.key, describe(v))
}
