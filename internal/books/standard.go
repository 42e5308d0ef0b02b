package books

import (
	"context"
	"crypto/rand"
	"fmt"
	"math/big"
	"strings"
	"time"
	"unicode"

	bookv1 "github.com/proserun/prose/gen/prose/book/v1"
	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/internal/lang"
)

// The standard book's name and version.
const (
	StandardName    = "standard"
	StandardVersion = "1.0.0"
)

// Clock tells the time; the standard book's "get the current time" reads it.
type Clock func() time.Time

// Standard returns the standard built-in book: small utilities for
// automations that need no network. Its clock is now (time.Now when nil).
//
//	get the new id (the id)                        → a random UUID (version 4)
//	get the current time (the current time)        → the clock's reading (UTC)
//	format a number as text (the formatted number) → "1,234.50"; inputs
//	    "decimal places" (default 2) and "thousands separator" (default ",")
//	count the words of a text (the word count)     → the number of words
//
// The first two are not deterministic, which is why they are book calls: the
// run's journal records their results. Signatures follow the language's
// convention: `a`/`an` and a noun is an input; other words are fixed.
func Standard(now Clock) *Builtin {
	if now == nil {
		now = time.Now
	}
	text := scalar(bookv1.ConceptScalarType_ConceptScalarTypeText)
	number := scalar(bookv1.ConceptScalarType_ConceptScalarTypeNumber)
	never := bookv1.ConnectionRequired_Never
	procs := []*bookv1.Procedure{
		{
			Id:                 "new_id",
			Signature:          Signature("get the new id (the id)"),
			Outputs:            []*bookv1.Concept{concept("id", scalar(bookv1.ConceptScalarType_ConceptScalarTypeUUID), "A random UUID (version 4).", nil)},
			ShortDescription:   "Generates a random unique identifier.",
			ConnectionRequired: never,
			Examples:           []*bookv1.Example{{Description: "A new order number", Snippet: "get the new id\nthe order number is the above"}},
			SearchHints:        []string{"uuid", "identifier", "random"},
		},
		{
			Id:                 "get_current_time",
			Signature:          Signature("get the current time (the current time)"),
			Outputs:            []*bookv1.Concept{concept("current time", scalar(bookv1.ConceptScalarType_ConceptScalarTypeDatetime), "The time now, in UTC.", nil)},
			ShortDescription:   "Reads the clock.",
			ConnectionRequired: never,
			Examples:           []*bookv1.Example{{Description: "Stamp a record", Snippet: "get the current time\nthe received time is the above"}},
			SearchHints:        []string{"now", "clock", "timestamp", "date"},
		},
		{
			Id:        "format_number",
			Signature: Signature("format a number as text (the formatted number)"),
			Inputs: []*bookv1.Concept{
				concept("number", number, "The number to format.", nil),
				concept("decimal places", number, "Digits after the decimal point (0-28); the number is rounded half away from zero.",
					&platformv1.BdkValue{Kind: &platformv1.BdkValue_NumberValue{NumberValue: 2}}),
				concept("thousands separator", text, "Put between groups of three digits; empty for none.",
					&platformv1.BdkValue{Kind: &platformv1.BdkValue_TextValue{TextValue: ","}}),
			},
			Outputs:            []*bookv1.Concept{concept("formatted number", text, "The number as text.", nil)},
			ShortDescription:   "Formats a number as text with grouped thousands and fixed decimals.",
			ConnectionRequired: never,
			Examples:           []*bookv1.Example{{Description: "An amount for an invoice", Snippet: "format the total as text where\n  the decimal places is 2\nthe amount text is the above"}},
			SearchHints:        []string{"round", "currency", "thousands"},
		},
		{
			Id:                 "count_words",
			Signature:          Signature("count the words of a text (the word count)"),
			Inputs:             []*bookv1.Concept{concept("text", text, "The text whose words are counted.", nil)},
			Outputs:            []*bookv1.Concept{concept("word count", number, "The number of words (runs of letters or digits).", nil)},
			ShortDescription:   "Counts the words of a text.",
			ConnectionRequired: never,
			SearchHints:        []string{"length", "words"},
		},
	}
	funcs := map[string]Func{
		"new_id": func(context.Context, map[string]lang.Value) (map[string]lang.Value, error) {
			id, err := newUUID()
			if err != nil {
				return nil, err
			}
			return map[string]lang.Value{"id": lang.Text(id)}, nil
		},
		"get_current_time": func(context.Context, map[string]lang.Value) (map[string]lang.Value, error) {
			return map[string]lang.Value{"current time": lang.DateTimeValue(now().UTC())}, nil
		},
		"format_number": formatNumber,
		"count_words":   countWords,
	}
	procs, funcs = withLanguageProcedures(procs, funcs)
	book := &bookv1.Book{
		Id:                StandardName,
		Name:              StandardName,
		DisplayName:       "Standard",
		Version:           StandardVersion,
		ShortDescription:  "Everyday utilities: identifiers, the clock, number formatting, word counts, and the language's standard library for text, numbers, dates and lists.",
		LongDescription:   "The standard book is built into Prose. Its procedures run inside the server and need no connection or network.",
		Author:            "Prose",
		Tags:              []string{"built-in", "utilities"},
		NounPhrase:        Phrase("standard", "book"),
		Procedures:        procs,
		BdkRuntimeVersion: "",
		EnvironmentInformation: &bookv1.EnvironmentInformation{
			RuntimeName: "prose-builtin",
			Version:     StandardVersion,
		},
	}
	return &Builtin{Book: book, Funcs: funcs}
}

// withLanguageProcedures adds the language's standard library
// (lang.StandardProcedures) to the standard book, so that the catalog and
// the editor list them. A run calls them in the interpreter, not through
// the book (RunBooks.Lookup leaves them out), so they are not journaled;
// a call through the book API runs the same code.
func withLanguageProcedures(procs []*bookv1.Procedure, funcs map[string]Func) ([]*bookv1.Procedure, map[string]Func) {
	for _, sp := range lang.StandardProcedures() {
		p := &bookv1.Procedure{
			Id:                 sp.ID,
			Signature:          Signature(sp.Signature),
			Outputs:            []*bookv1.Concept{concept(sp.Output, anyType, "The result; also the above.", nil)},
			ShortDescription:   sp.Description,
			ConnectionRequired: bookv1.ConnectionRequired_Never,
			SearchHints:        append([]string{"standard", "language"}, sp.Hints...),
		}
		for _, in := range sp.Inputs {
			p.Inputs = append(p.Inputs, concept(in, anyType, "", nil))
		}
		if sp.Example != "" {
			p.Examples = []*bookv1.Example{{Description: sp.Description, Snippet: sp.Example}}
		}
		procs = append(procs, p)
		id, out := sp.ID, sp.Output
		funcs[id] = func(ctx context.Context, in map[string]lang.Value) (map[string]lang.Value, error) {
			v, err := lang.CallStandard(ctx, id, in)
			if err != nil {
				return nil, &InputError{Message: err.Error()}
			}
			return map[string]lang.Value{out: v}, nil
		}
	}
	return procs, funcs
}

// isLanguageProcedure reports whether a procedure of a book is one the
// interpreter runs itself (see withLanguageProcedures).
func isLanguageProcedure(b *bookv1.Book, p *bookv1.Procedure) bool {
	return b.GetName() == StandardName && lang.IsStandardProcedure(p.GetId())
}

func scalar(t bookv1.ConceptScalarType) *bookv1.ConceptType {
	return &bookv1.ConceptType{Kind: &bookv1.ConceptType_ScalarType{ScalarType: t}}
}

func concept(name string, t *bookv1.ConceptType, description string, def *platformv1.BdkValue) *bookv1.Concept {
	return &bookv1.Concept{
		NounPhrases:  phrases(strings.Fields(name)),
		Type:         t,
		Description:  description,
		DefaultValue: def,
	}
}

func newUUID() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16]), nil
}

// InputError is a problem with a call's inputs (a user error of the run).
type InputError struct{ Message string }

func (e *InputError) Error() string { return e.Message }

func input(in map[string]lang.Value, name string, kind lang.Kind) (lang.Value, error) {
	v, ok := in[name]
	if !ok || !v.IsValid() {
		return lang.Value{}, &InputError{Message: fmt.Sprintf("Please provide the %s", name)}
	}
	if v.Kind() != kind {
		return lang.Value{}, &InputError{Message: fmt.Sprintf("Could not use %s as the %s: it must be a %s", v.Kind(), name, kind)}
	}
	return v, nil
}

func formatNumber(_ context.Context, in map[string]lang.Value) (map[string]lang.Value, error) {
	n, err := input(in, "number", lang.KindNumber)
	if err != nil {
		return nil, err
	}
	dp, err := input(in, "decimal places", lang.KindNumber)
	if err != nil {
		return nil, err
	}
	sep, err := input(in, "thousands separator", lang.KindText)
	if err != nil {
		return nil, err
	}
	places, ok := dp.AsNumber().Int64()
	if !ok || places < 0 || places > 28 {
		return nil, &InputError{Message: fmt.Sprintf("Could not format with %s decimal places: it must be a whole number from 0 to 28", dp.AsNumber())}
	}
	s := FormatDecimal(n.AsNumber().String(), int(places), sep.AsText())
	return map[string]lang.Value{"formatted number": lang.Text(s)}, nil
}

// FormatDecimal rounds the plain decimal s ("-1234.567") to places fractional
// digits, half away from zero, and groups the integer digits by three with
// sep.
func FormatDecimal(s string, places int, sep string) string {
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	intPart, frac, _ := strings.Cut(s, ".")
	digits := intPart + frac
	m, _ := new(big.Int).SetString(digits, 10)
	if m == nil {
		m = new(big.Int)
	}
	scale := len(frac)
	switch {
	case places < scale:
		div := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(scale-places)), nil)
		q, r := new(big.Int).QuoRem(m, div, new(big.Int))
		if r.Mul(r, big.NewInt(2)).Cmp(div) >= 0 {
			q.Add(q, big.NewInt(1))
		}
		m = q
	case places > scale:
		m.Mul(m, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(places-scale)), nil))
	}
	d := m.String()
	if len(d) <= places {
		d = strings.Repeat("0", places-len(d)+1) + d
	}
	ip, fp := d[:len(d)-places], d[len(d)-places:]
	var b strings.Builder
	if neg && m.Sign() != 0 {
		b.WriteByte('-')
	}
	for i, r := range ip {
		if i > 0 && (len(ip)-i)%3 == 0 {
			b.WriteString(sep)
		}
		b.WriteRune(r)
	}
	if places > 0 {
		b.WriteByte('.')
		b.WriteString(fp)
	}
	return b.String()
}

func countWords(_ context.Context, in map[string]lang.Value) (map[string]lang.Value, error) {
	t, err := input(in, "text", lang.KindText)
	if err != nil {
		return nil, err
	}
	n := 0
	for _, w := range strings.FieldsFunc(t.AsText(), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '\'' && r != '-'
	}) {
		if strings.IndexFunc(w, func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }) >= 0 {
			n++
		}
	}
	return map[string]lang.Value{"word count": lang.Int(int64(n))}, nil
}
