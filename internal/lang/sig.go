package lang

import (
	"errors"
	"strings"
)

// prepositions end an input noun in a signature.
var prepositions = map[string]bool{
	"to": true, "of": true, "for": true, "from": true, "with": true, "in": true, "on": true, "by": true,
	"into": true, "about": true, "at": true, "as": true, "and": true, "onto": true, "over": true,
	"under": true, "through": true, "per": true, "using": true, "via": true, "between": true, "within": true,
}

// parseSignature reads the words of a `to …` sentence (without `to`): an
// input is `a`/`an` and its noun, up to the next preposition. Book signatures
// may end with their outputs in parentheses: `(the message id)`.
func parseSignature(toks []token) ([]sigElem, []string, error) {
	var sig []sigElem
	var outputs []string
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		if t.kind == tOp && t.text == "(" {
			var cur []string
			for i++; i < len(toks); i++ {
				t := toks[i]
				switch {
				case t.kind == tOp && t.text == ")":
					if len(cur) > 0 {
						outputs = append(outputs, strings.Join(cur, " "))
					}
					if i != len(toks)-1 {
						return nil, nil, errors.New("nothing may follow the outputs in parentheses")
					}
					return sig, outputs, checkSig(sig)
				case t.kind == tOp && t.text == "," || t.is("and"):
					if len(cur) > 0 {
						outputs = append(outputs, strings.Join(cur, " "))
					}
					cur = nil
				case t.is("the") && len(cur) == 0:
				case t.kind == tWord:
					cur = append(cur, t.text)
				default:
					return nil, nil, errors.New("the outputs in parentheses must be names, as in (the message id)")
				}
			}
			return nil, nil, errors.New("a ')' is missing after the outputs")
		}
		if t.kind != tWord {
			return nil, nil, errors.New("a procedure's sentence may hold only words, as in 'to compute the tax of an amount'")
		}
		if (t.text == "a" || t.text == "an") && i+1 < len(toks) && toks[i+1].kind == tWord && !prepositions[toks[i+1].text] {
			var noun []string
			for i+1 < len(toks) && toks[i+1].kind == tWord && !prepositions[toks[i+1].text] {
				i++
				noun = append(noun, toks[i].text)
			}
			sig = append(sig, sigElem{param: noun})
			continue
		}
		sig = append(sig, sigElem{word: t.text})
	}
	return sig, outputs, checkSig(sig)
}

func checkSig(sig []sigElem) error {
	if len(sig) == 0 || sig[0].word == "" {
		return errors.New("a procedure's sentence must start with a verb, as in 'to compute the tax of an amount'")
	}
	return nil
}

type binding struct {
	elem int
	x    expr
	soft bool // the input named by its own words: passed only if the caller has it
}

// matchSignature matches a call's words against a signature. An input is
// matched either by its own words (`an email`, then it is not given) or by
// an expression.
//
// With inBlock (the call has an argument block), an input the sentence
// does not name may be left out: the block gives it (`greet where` /
// `the person is "Ana"` for `to greet a person`), also with the
// preposition before it (`bill where the customer is "Ana" and the amount
// is 5` for `to bill a customer for an amount`). Naming it in the
// sentence is tried first.
func matchSignature(p *parser, sig []sigElem, toks []token, inBlock bool) ([]binding, bool) {
	budget := 2000
	var binds []binding
	var rec func(si, ti int) bool
	rec = func(si, ti int) bool {
		budget--
		if budget < 0 {
			return false
		}
		if si == len(sig) {
			return ti == len(toks)
		}
		e := sig[si]
		// `for an amount` left out, the block giving the amount
		skipsPrep := inBlock && prepositions[e.word] && si+1 < len(sig) && sig[si+1].word == ""
		if ti >= len(toks) {
			if e.word == "" {
				return inBlock && rec(si+1, ti)
			}
			return skipsPrep && rec(si+2, ti)
		}
		if e.word != "" {
			return toks[ti].is(e.word) && rec(si+1, ti+1) || skipsPrep && rec(si+2, ti)
		}
		// the input's own words: `an email`, `the email`
		if t := toks[ti]; t.is("a") || t.is("an") || t.is("the") {
			n := len(e.param)
			if ti+1+n <= len(toks) {
				same := true
				for k, w := range e.param {
					if !toks[ti+1+k].is(w) {
						same = false
						break
					}
				}
				if same {
					// `the machine` for `a machine` passes the caller's fact
					// of that name, when it has one
					var x expr
					if t.is("the") {
						name := strings.Join(e.param, " ")
						x = &refExpr{slot: p.syms.slot(name), name: name, display: "the " + name, span: Span{t.span.Start, toks[ti+n].span.End}}
						binds = append(binds, binding{elem: si, x: x, soft: true})
					}
					if rec(si+1, ti+1+n) {
						return true
					}
					if x != nil {
						binds = binds[:len(binds)-1]
					}
				}
			}
		}
		for end := ti + 1; end <= len(toks); end++ {
			if si+1 < len(sig) && sig[si+1].word != "" && (end >= len(toks) && !inBlock || end < len(toks) && !toks[end].is(sig[si+1].word)) {
				continue
			}
			if si+1 == len(sig) && end != len(toks) {
				continue
			}
			q := p.ep(toks[ti:end])
			x, err := q.expr()
			if err != nil || !q.done() {
				continue
			}
			binds = append(binds, binding{elem: si, x: x})
			if rec(si+1, end) {
				return true
			}
			binds = binds[:len(binds)-1]
		}
		return inBlock && ti > 0 && rec(si+1, ti)
	}
	if !rec(0, 0) {
		return nil, false
	}
	return binds, true
}
