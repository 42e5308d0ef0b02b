// Package aipfilter is the one entry to go.einride.tech/aip/filtering's
// parser: it bounds what the parser is given, so that no filter a client
// sends costs more than a small, fixed amount of time and memory.
//
// The parser's cost grows with the nesting of parentheses much faster than
// with the length of the text: an unbalanced "((((…" of 4,000 bytes takes
// seconds and makes an error message of 144 MB (each level of the descent
// quotes the error of the level below). A filter is therefore refused,
// before it is parsed, when it is longer than MaxLength bytes or when its
// parentheses (outside quoted strings) nest deeper than MaxDepth.
package aipfilter

import (
	"errors"
	"fmt"

	"go.einride.tech/aip/filtering"
)

const (
	// MaxLength bounds a filter's text, in bytes.
	MaxLength = 4096
	// MaxDepth bounds the nesting of parentheses in a filter.
	MaxDepth = 32
	// maxMessage bounds the parser's error message a client is sent.
	maxMessage = 512
)

// ErrTooComplex is the error of a filter over MaxLength or MaxDepth.
var ErrTooComplex = errors.New("filter too complex")

// Check returns an error wrapping ErrTooComplex when text is longer than
// MaxLength bytes or nests parentheses deeper than MaxDepth.
func Check(text string) error {
	if len(text) > MaxLength {
		return fmt.Errorf("%w: longer than %d bytes", ErrTooComplex, MaxLength)
	}
	depth := 0
	var quote byte
	for i := 0; i < len(text); i++ {
		c := text[i]
		switch {
		case quote != 0:
			switch c {
			case '\\':
				i++ // the escaped character
			case quote:
				quote = 0
			}
		case c == '"' || c == '\'':
			quote = c
		case c == '(':
			if depth++; depth > MaxDepth {
				return fmt.Errorf("%w: parentheses nested more than %d deep", ErrTooComplex, MaxDepth)
			}
		case c == ')':
			depth--
		}
	}
	return nil
}

// Parse checks text (Check), then parses and type-checks it against decls.
// A parser error's message is cut to a few hundred bytes.
func Parse(text string, decls *filtering.Declarations) (f filtering.Filter, err error) {
	if err := Check(text); err != nil {
		return filtering.Filter{}, err
	}
	defer func() {
		if p := recover(); p != nil { // a parser bug must not crash the server
			f, err = filtering.Filter{}, fmt.Errorf("cannot parse the filter")
		}
	}()
	f, err = filtering.ParseFilterString(text, decls)
	if err != nil {
		if msg := err.Error(); len(msg) > maxMessage {
			return filtering.Filter{}, errors.New(msg[:maxMessage] + "…")
		}
		return filtering.Filter{}, err
	}
	return f, nil
}
