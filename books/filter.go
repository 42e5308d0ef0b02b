package books

import (
	"fmt"
	"strings"

	bookv1 "github.com/proserun/prose/gen/prose/book/v1"
	"go.einride.tech/aip/filtering"
	expr "google.golang.org/genproto/googleapis/api/expr/v1alpha1"
)

// FilterFields are the fields a book list filter (AIP-160) may use: the
// strings name, version, display_name, author and endpoint, the boolean
// hidden, and the list tags. `=` and `!=` compare exactly; `:` on a string
// tests for a substring (case-insensitive), on tags for a member; AND, OR, NOT
// and parentheses combine.
var FilterFields = []string{"name", "version", "display_name", "author", "endpoint", "hidden", "tags"}

var filterDecls = func() *filtering.Declarations {
	d, err := filtering.NewDeclarations(
		filtering.DeclareStandardFunctions(),
		filtering.DeclareIdent("name", filtering.TypeString),
		filtering.DeclareIdent("version", filtering.TypeString),
		filtering.DeclareIdent("display_name", filtering.TypeString),
		filtering.DeclareIdent("author", filtering.TypeString),
		filtering.DeclareIdent("endpoint", filtering.TypeString),
		filtering.DeclareIdent("hidden", filtering.TypeBool),
		filtering.DeclareIdent("tags", filtering.TypeList(filtering.TypeString)),
		// The parser reads true and false as identifiers.
		filtering.DeclareIdent("true", filtering.TypeBool),
		filtering.DeclareIdent("false", filtering.TypeBool),
	)
	if err != nil {
		panic(err)
	}
	return d
}()

// Filter is a parsed, type-checked book filter. The zero Filter matches
// every book.
type Filter struct{ e *expr.Expr }

// ParseFilter parses and checks an AIP-160 filter over FilterFields. Errors
// wrap ErrInvalidArgument.
func ParseFilter(s string) (Filter, error) {
	f, err := filtering.ParseFilterString(s, filterDecls)
	if err != nil {
		return Filter{}, fmt.Errorf("%w: filter: %w", ErrInvalidArgument, err)
	}
	ff := Filter{e: f.CheckedExpr.GetExpr()}
	if ff.e != nil {
		// Evaluate once to reject shapes the evaluator does not support
		// (e.g. comparisons with the field on the right).
		if _, err := ff.eval(ff.e, &bookv1.Book{}); err != nil {
			return Filter{}, fmt.Errorf("%w: filter: %w", ErrInvalidArgument, err)
		}
	}
	return ff, nil
}

// Match reports whether b passes the filter.
func (f Filter) Match(b *bookv1.Book) bool {
	if f.e == nil {
		return true
	}
	v, err := f.eval(f.e, b)
	return err == nil && v
}

func (f Filter) eval(e *expr.Expr, b *bookv1.Book) (bool, error) {
	call := e.GetCallExpr()
	if call == nil {
		if id := e.GetIdentExpr(); id != nil && id.GetName() == "hidden" {
			return b.GetHidden(), nil
		}
		if v, ok := boolConst(e); ok {
			return v, nil
		}
		return false, fmt.Errorf("unsupported expression")
	}
	args := call.GetArgs()
	switch call.GetFunction() {
	case filtering.FunctionAnd, filtering.FunctionFuzzyAnd:
		for _, a := range args {
			ok, err := f.eval(a, b)
			if err != nil || !ok {
				return false, err
			}
		}
		return true, nil
	case filtering.FunctionOr:
		var firstErr error
		for _, a := range args {
			ok, err := f.eval(a, b)
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
		ok, err := f.eval(args[0], b)
		return !ok, err
	case filtering.FunctionEquals, filtering.FunctionNotEquals, filtering.FunctionHas:
		if len(args) != 2 || args[0].GetIdentExpr() == nil {
			return false, fmt.Errorf("%s must compare a field with a value", call.GetFunction())
		}
		field := args[0].GetIdentExpr().GetName()
		if field == "hidden" {
			want, ok := boolConst(args[1])
			if !ok || call.GetFunction() == filtering.FunctionHas {
				return false, fmt.Errorf("hidden compares with true or false")
			}
			return (b.GetHidden() == want) == (call.GetFunction() == filtering.FunctionEquals), nil
		}
		c := args[1].GetConstExpr()
		if c == nil {
			return false, fmt.Errorf("%s must compare a field with a value", call.GetFunction())
		}
		s, ok := c.GetConstantKind().(*expr.Constant_StringValue)
		if !ok {
			return false, fmt.Errorf("%s compares with text", field)
		}
		if field == "tags" {
			if call.GetFunction() != filtering.FunctionHas {
				return false, fmt.Errorf("tags is a list: use tags:\"value\"")
			}
			for _, t := range b.GetTags() {
				if t == s.StringValue {
					return true, nil
				}
			}
			return false, nil
		}
		got := stringField(b, field)
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

func stringField(b *bookv1.Book, field string) string {
	switch field {
	case "name":
		return b.GetName()
	case "version":
		return b.GetVersion()
	case "display_name":
		return b.GetDisplayName()
	case "author":
		return b.GetAuthor()
	case "endpoint":
		return b.GetEndpoint()
	}
	return ""
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
