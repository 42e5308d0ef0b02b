package books

import (
	"fmt"
	"slices"
	"strings"

	"go.einride.tech/aip/filtering"
	expr "google.golang.org/genproto/googleapis/api/expr/v1alpha1"

	"github.com/proserun/prose/store/aipfilter"
)

// The one evaluator of the AIP-160 filters books applies in memory (book
// lists: Filter; connection lists: ConnectionFilter). A filter is over the
// fields of one kind of item T: strings (`=` and `!=` compare exactly, `:`
// tests for a substring, case-insensitive), booleans (alone, or `=`/`!=`
// true or false) and lists of strings (`:` tests for a member); AND, OR,
// NOT and parentheses combine.

// filterFields are the fields of a filter over T, by name.
type filterFields[T any] struct {
	strings map[string]func(T) string
	bools   map[string]func(T) bool
	lists   map[string]func(T) []string
}

// declarations declares the fields for the parser and the type checker.
func (fs filterFields[T]) declarations() *filtering.Declarations {
	opts := []filtering.DeclarationOption{filtering.DeclareStandardFunctions()}
	for name := range fs.strings {
		opts = append(opts, filtering.DeclareIdent(name, filtering.TypeString))
	}
	for name := range fs.bools {
		opts = append(opts, filtering.DeclareIdent(name, filtering.TypeBool))
	}
	for name := range fs.lists {
		opts = append(opts, filtering.DeclareIdent(name, filtering.TypeList(filtering.TypeString)))
	}
	if len(fs.bools) > 0 {
		// The parser reads true and false as identifiers.
		opts = append(opts, filtering.DeclareIdent("true", filtering.TypeBool), filtering.DeclareIdent("false", filtering.TypeBool))
	}
	d, err := filtering.NewDeclarations(opts...)
	if err != nil {
		panic(err)
	}
	return d
}

// parseFilter parses and checks s, and evaluates it once on zero to reject
// the shapes the evaluator does not support (a comparison with the field
// on the right, say). Errors wrap ErrInvalidArgument. A nil expression
// matches everything.
func parseFilter[T any](fs filterFields[T], decls *filtering.Declarations, s string, zero T) (*expr.Expr, error) {
	f, err := aipfilter.Parse(s, decls)
	if err != nil {
		return nil, fmt.Errorf("%w: filter: %w", ErrInvalidArgument, err)
	}
	e := f.CheckedExpr.GetExpr()
	if e != nil {
		if _, err := fs.eval(e, zero); err != nil {
			return nil, fmt.Errorf("%w: filter: %w", ErrInvalidArgument, err)
		}
	}
	return e, nil
}

// match reports whether v passes e (nil: everything passes).
func (fs filterFields[T]) match(e *expr.Expr, v T) bool {
	if e == nil {
		return true
	}
	ok, err := fs.eval(e, v)
	return err == nil && ok
}

func (fs filterFields[T]) eval(e *expr.Expr, v T) (bool, error) {
	call := e.GetCallExpr()
	if call == nil {
		if get := fs.bools[e.GetIdentExpr().GetName()]; get != nil {
			return get(v), nil
		}
		if b, ok := boolConst(e); ok {
			return b, nil
		}
		return false, fmt.Errorf("unsupported expression")
	}
	args := call.GetArgs()
	fn := call.GetFunction()
	switch fn {
	case filtering.FunctionAnd, filtering.FunctionFuzzyAnd:
		for _, a := range args {
			ok, err := fs.eval(a, v)
			if err != nil || !ok {
				return false, err
			}
		}
		return true, nil
	case filtering.FunctionOr:
		var firstErr error
		for _, a := range args {
			ok, err := fs.eval(a, v)
			if err != nil && firstErr == nil {
				firstErr = err
			}
			if ok {
				return true, nil
			}
		}
		return false, firstErr
	case filtering.FunctionNot:
		if len(args) != 1 {
			return false, fmt.Errorf("NOT takes one argument")
		}
		ok, err := fs.eval(args[0], v)
		return !ok, err
	case filtering.FunctionEquals, filtering.FunctionNotEquals, filtering.FunctionHas:
		if len(args) != 2 || args[0].GetIdentExpr() == nil {
			return false, fmt.Errorf("%s must compare a field with a value", fn)
		}
		field := args[0].GetIdentExpr().GetName()
		if get := fs.bools[field]; get != nil {
			want, ok := boolConst(args[1])
			if !ok || fn == filtering.FunctionHas {
				return false, fmt.Errorf("%s compares with true or false", field)
			}
			return (get(v) == want) == (fn == filtering.FunctionEquals), nil
		}
		c := args[1].GetConstExpr()
		if c == nil {
			return false, fmt.Errorf("%s must compare a field with a value", fn)
		}
		s, ok := c.GetConstantKind().(*expr.Constant_StringValue)
		if !ok {
			return false, fmt.Errorf("%s compares with text", field)
		}
		if get := fs.lists[field]; get != nil {
			if fn != filtering.FunctionHas {
				return false, fmt.Errorf("%s is a list: use %s:\"value\"", field, field)
			}
			return slices.Contains(get(v), s.StringValue), nil
		}
		get := fs.strings[field]
		if get == nil {
			return false, fmt.Errorf("%s is not a field of the filter", field)
		}
		got := get(v)
		switch fn {
		case filtering.FunctionEquals:
			return got == s.StringValue, nil
		case filtering.FunctionNotEquals:
			return got != s.StringValue, nil
		default:
			return strings.Contains(strings.ToLower(got), strings.ToLower(s.StringValue)), nil
		}
	}
	return false, fmt.Errorf("operator %s is not supported", fn)
}

// boolConst reads true or false, as a literal or as the identifiers.
func boolConst(e *expr.Expr) (bool, bool) {
	if id := e.GetIdentExpr(); id != nil {
		switch id.GetName() {
		case "true":
			return true, true
		case "false":
			return false, true
		}
	}
	if bv, ok := e.GetConstExpr().GetConstantKind().(*expr.Constant_BoolValue); ok {
		return bv.BoolValue, true
	}
	return false, false
}
