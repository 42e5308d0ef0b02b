package agent

import (
	"strings"
	"time"

	"github.com/proserun/prose/internal/lang"
)

// intent is what a user message asks for.
type intent int

const (
	intentUnknown intent = iota
	intentExplain
	intentSkip
	intentRetry
	intentValue // a value for a fact (fact, value)
	intentAnswer
	intentReplace // new code for the statement (code)
)

// reply is a user message understood.
type reply struct {
	kind  intent
	fact  string // intentValue: the fact named ("" when only a value was given)
	value lang.Value
	code  string // intentReplace
}

// replacePrefixes introduce code that runs instead of the statement
// ("replace it with: the total is 5"), compared without case; a colon
// after them is optional (but for "instead:").
var replacePrefixes = []string{
	"replace it with", "replace the step with", "replace this step with", "replace the statement with",
	"replace this statement with", "replace step with", "replace with", "run this instead", "use this instead", "instead:",
}

// replacement reads "replace it with: <code>" (the code may span lines and
// sit in a ``` fence or `backquotes`); ok is false for another reply.
func replacement(text string) (code string, ok bool) {
	s := strings.TrimSpace(text)
	for _, p := range replacePrefixes {
		if len(s) <= len(p) || !strings.EqualFold(s[:len(p)], p) {
			continue
		}
		rest := s[len(p):]
		if r := rest[0]; !strings.HasSuffix(p, ":") && r != ':' && r != ' ' && r != '\n' && r != '\t' {
			continue // "replace with" must end a word ("replace without…" is not it)
		}
		rest = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(rest), ":"))
		if f, ok := strings.CutPrefix(rest, "```"); ok {
			if i := strings.IndexByte(f, '\n'); i >= 0 && !strings.Contains(f[:i], " ") {
				f = f[i+1:] // a language tag after the fence
			}
			rest = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(f), "```"))
		} else if len(rest) >= 2 && rest[0] == '`' && rest[len(rest)-1] == '`' {
			rest = strings.TrimSpace(rest[1 : len(rest)-1])
		}
		return rest, rest != ""
	}
	return "", false
}

// clean trims spaces, a final full stop or exclamation mark, and lowers
// nothing (values keep their case).
func clean(s string) string {
	s = strings.TrimSpace(s)
	s = strings.TrimRight(s, " .!")
	return strings.TrimSpace(s)
}

func lower(s string) string { return strings.ToLower(strings.Join(strings.Fields(s), " ")) }

var (
	skipWords    = map[string]bool{"skip": true, "skip it": true, "skip this": true, "skip this step": true, "skip the step": true, "skip the statement": true, "skip this statement": true}
	retryWords   = map[string]bool{"retry": true, "retry it": true, "try again": true, "retry this": true, "retry the step": true, "retry this step": true, "run it again": true}
	explainWords = map[string]bool{"help": true, "explain": true, "why": true, "what": true, "what do you need": true, "what is missing": true, "what's missing": true, "what is wrong": true, "what's wrong": true, "details": true}
)

// parseValue reads a value written as plain JSON (a number exactly, a
// quoted text, true/false/null, a list, an object) or by the language's
// literal rules (yes/no, nothing, an ISO date or datetime).
func parseValue(s string) (lang.Value, bool) {
	s = strings.TrimSpace(s)
	if s == "" {
		return lang.Value{}, false
	}
	switch lower(s) {
	case "yes", "true":
		return lang.Bool(true), true
	case "no", "false":
		return lang.Bool(false), true
	case "nothing", "null":
		return lang.Null(), true
	}
	if d, err := time.Parse("2006-01-02", s); err == nil {
		return lang.DateValue(lang.Date{Year: d.Year(), Month: int(d.Month()), Day: d.Day()}), true
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return lang.DateTimeValue(t), true
	}
	if strings.HasPrefix(s, "-") || strings.HasPrefix(s, ".") || (s[0] >= '0' && s[0] <= '9') {
		if n, err := lang.ParseNumber(s); err == nil {
			return lang.Num(n), true
		}
	}
	if c := s[0]; c == '"' || c == '[' || c == '{' || c == '-' || (c >= '0' && c <= '9') {
		if v, err := lang.DecodePlain([]byte(s)); err == nil {
			return v, true
		}
	}
	return lang.Value{}, false
}

// parseValueOrText reads a value, or takes the words as text.
func parseValueOrText(s string) lang.Value {
	if v, ok := parseValue(s); ok {
		return v
	}
	return lang.Text(s)
}

// understand reads a user message against what the exception needs.
func understand(text string, x *lang.Exception) reply {
	s := clean(text)
	l := lower(s)
	switch {
	case l == "":
		return reply{kind: intentExplain}
	case skipWords[l]:
		return reply{kind: intentSkip}
	case retryWords[l]:
		return reply{kind: intentRetry}
	case explainWords[l] || strings.HasSuffix(strings.TrimSpace(text), "?"):
		return reply{kind: intentExplain}
	}
	if code, ok := replacement(text); ok {
		return reply{kind: intentReplace, code: code}
	}
	if x == nil {
		return reply{}
	}
	if x.Question != "" {
		if len(x.Choices) > 0 {
			for _, c := range x.Choices {
				if matchChoice(s, c) {
					return reply{kind: intentAnswer, value: c}
				}
			}
			return reply{}
		}
		if a, ok := strings.CutPrefix(l, "the answer is "); ok {
			return reply{kind: intentAnswer, value: parseValueOrText(s[len(s)-len(a):])}
		}
		return reply{kind: intentAnswer, value: parseValueOrText(s)}
	}
	// "<fact> is <value>" (or are, =, :).
	if fact, val, ok := splitAssignment(s); ok {
		if x.Fact != "" && !sameFact(fact, x.Fact) && !isPronoun(fact) {
			// A value for another fact: the engine would refuse it.
			return reply{kind: intentValue, fact: fact, value: parseValueOrText(val)}
		}
		if isPronoun(fact) {
			fact = ""
		}
		return reply{kind: intentValue, fact: fact, value: parseValueOrText(val)}
	}
	// A bare value, when the exception names the fact.
	if x.Fact != "" {
		if v, ok := parseValue(s); ok {
			return reply{kind: intentValue, value: v}
		}
	}
	return reply{}
}

func isPronoun(s string) bool {
	switch lower(s) {
	case "it", "that", "this", "the value", "the answer":
		return true
	}
	return false
}

// splitAssignment splits "the invoice total is 120.50".
func splitAssignment(s string) (fact, val string, ok bool) {
	for _, sep := range []string{" is ", " are ", " = ", ": ", " should be ", " equals "} {
		i := strings.Index(strings.ToLower(s), sep)
		if i > 0 {
			fact, val = strings.TrimSpace(s[:i]), strings.TrimSpace(s[i+len(sep):])
			if val != "" {
				return fact, val, true
			}
		}
	}
	return "", "", false
}

// sameFact compares fact names the way the language does, also reading a
// possessive ("the invoice's total") as words ("the invoice total").
func sameFact(a, b string) bool {
	norm := func(s string) string {
		s = strings.ReplaceAll(strings.ReplaceAll(s, "'s ", " "), "’s ", " ")
		return lang.FactName(s)
	}
	return norm(a) == norm(b)
}

// matchChoice reports whether s names choice c (its plain form, any case,
// with or without quotes).
func matchChoice(s string, c lang.Value) bool {
	if v, ok := parseValue(s); ok && lang.Equal(v, c) {
		return true
	}
	b, err := lang.AppendPlain(nil, c)
	if err != nil {
		return false
	}
	plain := strings.Trim(string(b), `"`)
	return strings.EqualFold(strings.Trim(s, `"'`), plain)
}

// plain renders a value for a message.
func plain(v lang.Value) string {
	b, err := lang.AppendPlain(nil, v)
	if err != nil {
		return "(a value)"
	}
	return string(b)
}
