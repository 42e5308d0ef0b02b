package books

import (
	"fmt"
	"strings"

	bookv1 "github.com/proserun/prose/gen/prose/book/v1"
	"go.einride.tech/aip/filtering"
	expr "google.golang.org/genproto/googleapis/api/expr/v1alpha1"
)

// ConnectionFilterFields are the fields a connection list filter (AIP-160)
// may use, all strings: `=` and `!=` compare exactly, `:` tests for a
// substring (case-insensitive); AND, OR, NOT and parentheses combine.
var ConnectionFilterFields = map[string]func(*bookv1.BookConnectionDescriptor) string{
	"book_name":       (*bookv1.BookConnectionDescriptor).GetBookName,
	"book_version":    (*bookv1.BookConnectionDescriptor).GetBookVersion,
	"connection_name": (*bookv1.BookConnectionDescriptor).GetConnectionName,
	"connection_id":   (*bookv1.BookConnectionDescriptor).GetConnectionId,
}

var connFilterDecls = func() *filtering.Declarations {
	opts := []filtering.DeclarationOption{filtering.DeclareStandardFunctions()}
	for name := range ConnectionFilterFields {
		opts = append(opts, filtering.DeclareIdent(name, filtering.TypeString))
	}
	d, err := filtering.NewDeclarations(opts...)
	if err != nil {
		panic(err)
	}
	return d
}()

// ConnectionFilter is a parsed, type-checked connection filter; the zero
// one matches every connection.
type ConnectionFilter struct{ e *expr.Expr }

// ParseConnectionFilter parses and checks an AIP-160 filter over
// ConnectionFilterFields. Errors wrap ErrInvalidArgument.
func ParseConnectionFilter(s string) (ConnectionFilter, error) {
	f, err := filtering.ParseFilterString(s, connFilterDecls)
	if err != nil {
		return ConnectionFilter{}, fmt.Errorf("%w: filter: %w", ErrInvalidArgument, err)
	}
	cf := ConnectionFilter{e: f.CheckedExpr.GetExpr()}
	if cf.e != nil {
		if _, err := cf.eval(cf.e, &bookv1.BookConnectionDescriptor{}); err != nil {
			return ConnectionFilter{}, fmt.Errorf("%w: filter: %w", ErrInvalidArgument, err)
		}
	}
	return cf, nil
}

// Match reports whether d passes the filter.
func (f ConnectionFilter) Match(d *bookv1.BookConnectionDescriptor) bool {
	if f.e == nil {
		return true
	}
	ok, err := f.eval(f.e, d)
	return err == nil && ok
}

func (f ConnectionFilter) eval(e *expr.Expr, d *bookv1.BookConnectionDescriptor) (bool, error) {
	call := e.GetCallExpr()
	if call == nil {
		return false, fmt.Errorf("unsupported expression")
	}
	args := call.GetArgs()
	switch call.GetFunction() {
	case filtering.FunctionAnd, filtering.FunctionFuzzyAnd:
		for _, a := range args {
			ok, err := f.eval(a, d)
			if err != nil || !ok {
				return false, err
			}
		}
		return true, nil
	case filtering.FunctionOr:
		var firstErr error
		for _, a := range args {
			ok, err := f.eval(a, d)
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
		ok, err := f.eval(args[0], d)
		return !ok, err
	case filtering.FunctionEquals, filtering.FunctionNotEquals, filtering.FunctionHas:
		if len(args) != 2 || args[0].GetIdentExpr() == nil {
			return false, fmt.Errorf("%s must compare a field with a value", call.GetFunction())
		}
		get := ConnectionFilterFields[args[0].GetIdentExpr().GetName()]
		s, ok := args[1].GetConstExpr().GetConstantKind().(*expr.Constant_StringValue)
		if get == nil || !ok {
			return false, fmt.Errorf("%s must compare a field with a quoted text", call.GetFunction())
		}
		got := get(d)
		switch call.GetFunction() {
		case filtering.FunctionEquals:
			return got == s.StringValue, nil
		case filtering.FunctionNotEquals:
			return got != s.StringValue, nil
		default:
			return strings.Contains(strings.ToLower(got), strings.ToLower(s.StringValue)), nil
		}
	}
	return false, fmt.Errorf("operator %s is not supported", call.GetFunction())
}
