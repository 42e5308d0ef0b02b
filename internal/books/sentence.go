package books

import (
	"strings"
	"unicode"

	bookv1 "github.com/proserun/prose/gen/prose/book/v1"
	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
)

// Slot is the object or the target of a call sentence: either the words of a
// noun phrase (articles dropped, e.g. ["current", "time"]) or a value
// expression (a literal, a calculation, a fact the words do not name), or
// nothing.
type Slot struct {
	// Words of the noun phrase, lower case, without articles. Empty when the
	// slot is a value expression or absent.
	Words []string
	// IsValue is true when the slot holds a value expression rather than a
	// noun phrase.
	IsValue bool
}

// Present reports whether the slot is filled.
func (s Slot) Present() bool { return s.IsValue || len(s.Words) > 0 }

// Sentence is a procedure call as the language parsed it: `send an email to
// "ana@example.com"` is verbs [send], object {email}, preposition "to",
// target {value}.
type Sentence struct {
	Verbs       []string
	Object      Slot
	Preposition string
	Target      Slot
}

// prepositions that separate an object from a target in signatures.
var prepositions = map[string]bool{
	"to": true, "from": true, "of": true, "for": true, "in": true, "into": true, "on": true,
	"as": true, "with": true, "by": true, "at": true, "about": true, "between": true, "onto": true,
}

var articles = map[string]bool{"a": true, "an": true, "the": true, "some": true}

// ParseSentence splits a plain English call such as `format 12.5 as text`,
// `count the words of "a b c"` or `generate an id` into a Sentence. The first
// word is the verb; the object runs to the first preposition; the rest is the
// target. Quoted text, numbers and any other non-word token make the slot a
// value. A `(parenthesised)` tail (the outputs of a signature) is ignored.
// It is a convenience for tests, tools and signature authors; the language's
// parser builds Sentences from its own syntax tree.
func ParseSentence(english string) Sentence {
	if i := strings.IndexByte(english, '('); i >= 0 {
		english = english[:i]
	}
	toks := tokenize(english)
	var s Sentence
	if len(toks) == 0 {
		return s
	}
	s.Verbs = []string{strings.ToLower(toks[0])}
	cur := &s.Object
	for _, t := range toks[1:] {
		lt := strings.ToLower(t)
		if cur == &s.Object && prepositions[lt] && s.Preposition == "" {
			s.Preposition = lt
			cur = &s.Target
			continue
		}
		if articles[lt] {
			continue
		}
		if isWord(t) {
			cur.Words = append(cur.Words, lt)
		} else {
			cur.IsValue = true
		}
	}
	// A slot with any value token is a value expression as a whole.
	if s.Object.IsValue {
		s.Object.Words = nil
	}
	if s.Target.IsValue {
		s.Target.Words = nil
	}
	return s
}

// tokenize splits on spaces, keeping "quoted strings" as one token.
func tokenize(s string) []string {
	var toks []string
	var b strings.Builder
	inQuote := false
	flush := func() {
		if b.Len() > 0 {
			toks = append(toks, b.String())
			b.Reset()
		}
	}
	for _, r := range s {
		switch {
		case r == '"':
			b.WriteRune(r)
			if inQuote {
				flush()
			}
			inQuote = !inQuote
		case unicode.IsSpace(r) && !inQuote:
			flush()
		default:
			b.WriteRune(r)
		}
	}
	flush()
	return toks
}

func isWord(t string) bool {
	for _, r := range t {
		if !unicode.IsLetter(r) && r != '-' && r != '\'' {
			return false
		}
	}
	return t != ""
}

// Signature builds a procedure signature from its English form, e.g.
// `format a number as text (the formatted number)`: the verb, the object and
// target noun phrases (last word the head, the others modifiers) and the
// parenthesised outputs.
func Signature(english string) *bookv1.ProcedureSignature {
	s := ParseSentence(english)
	sig := &bookv1.ProcedureSignature{English: english, Verbs: s.Verbs, Preposition: s.Preposition}
	if len(s.Object.Words) > 0 {
		sig.Object = phrases(s.Object.Words)
	}
	if len(s.Target.Words) > 0 {
		sig.Target = phrases(s.Target.Words)
	}
	if i := strings.IndexByte(english, '('); i >= 0 {
		inner := strings.TrimSuffix(strings.TrimSpace(english[i+1:]), ")")
		for _, out := range strings.Split(inner, ",") {
			var words []string
			for _, w := range strings.Fields(out) {
				if lw := strings.ToLower(w); !articles[lw] {
					words = append(words, lw)
				}
			}
			if len(words) > 0 {
				sig.Outputs = append(sig.Outputs, phrases(words))
			}
		}
	}
	return sig
}

// Phrase makes a noun phrase from words (the last is the head).
func Phrase(words ...string) *platformv1.NounPhrase {
	if len(words) == 0 {
		return nil
	}
	return &platformv1.NounPhrase{Modifiers: append([]string(nil), words[:len(words)-1]...), Head: words[len(words)-1]}
}

func phrases(words []string) *bookv1.NounPhrases {
	return &bookv1.NounPhrases{NounPhrases: []*platformv1.NounPhrase{Phrase(words...)}}
}

// PhraseText renders a noun phrase as words: modifiers then head.
func PhraseText(np *platformv1.NounPhrase) string {
	if np == nil {
		return ""
	}
	return strings.Join(append(append([]string(nil), np.GetModifiers()...), np.GetHead()), " ")
}

// ConceptName is the name of a concept: its first noun phrase as words. Inputs
// and outputs of calls are keyed by it.
func ConceptName(c *bookv1.Concept) string {
	nps := c.GetNounPhrases().GetNounPhrases()
	if len(nps) == 0 {
		return ""
	}
	return PhraseText(nps[0])
}

// Match scores.
const (
	scoreExact   = 3 // the words are the noun phrase (modifiers and head)
	scoreHead    = 2 // the words end with the head
	scoreValue   = 1 // a value (or a fact named otherwise) fills an input slot
	scoreNoMatch = -1
)

// matchSlot compares a sentence slot with a signature slot. inputs holds the
// names of the procedure's inputs: a signature slot that names an input can
// be filled by a value; one that does not (`an email`, `an id`) must be
// named.
func matchSlot(s Slot, sig *bookv1.NounPhrases, inputs map[string]bool) int {
	nps := sig.GetNounPhrases()
	if len(nps) == 0 {
		if s.Present() {
			return scoreNoMatch
		}
		return 0
	}
	if !s.Present() {
		return scoreNoMatch
	}
	isInput := false
	best := scoreNoMatch
	for _, np := range nps {
		if inputs[PhraseText(np)] {
			isInput = true
		}
		if len(s.Words) == 0 {
			continue
		}
		want := append(append([]string(nil), np.GetModifiers()...), np.GetHead())
		switch {
		case equalWords(s.Words, want):
			best = max(best, scoreExact)
		case sameNoun(s.Words[len(s.Words)-1], np.GetHead()):
			best = max(best, scoreHead)
		}
	}
	if best == scoreNoMatch && isInput {
		best = scoreValue
	}
	return best
}

func equalWords(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !sameNoun(a[i], b[i]) {
			return false
		}
	}
	return true
}

// sameNoun compares words case-insensitively, allowing a plural -s.
func sameNoun(a, b string) bool {
	a, b = strings.ToLower(a), strings.ToLower(b)
	return a == b || a+"s" == b || a == b+"s"
}

// matchScore returns how well s matches the procedure's signature, or
// scoreNoMatch: verbs and preposition must be equal; the object and the
// target must match as matchSlot says.
func matchScore(s Sentence, p *bookv1.Procedure) int {
	sig := p.GetSignature()
	if sig == nil || !equalFold(s.Verbs, sig.GetVerbs()) || !strings.EqualFold(s.Preposition, sig.GetPreposition()) {
		return scoreNoMatch
	}
	inputs := map[string]bool{}
	for _, c := range p.GetInputs() {
		for _, np := range c.GetNounPhrases().GetNounPhrases() {
			inputs[PhraseText(np)] = true
		}
	}
	o := matchSlot(s.Object, sig.GetObject(), inputs)
	t := matchSlot(s.Target, sig.GetTarget(), inputs)
	if o < 0 || t < 0 {
		return scoreNoMatch
	}
	return 1 + o + t
}

func equalFold(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !strings.EqualFold(a[i], b[i]) {
			return false
		}
	}
	return true
}
