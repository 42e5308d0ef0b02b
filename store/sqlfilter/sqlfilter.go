// Package sqlfilter translates AIP-160 filters, parsed and type-checked by
// go.einride.tech/aip/filtering, into parameterised SQL for either store
// dialect. Each list resource declares an allow-list of fields (Resource):
// the identifiers and their types for the aip-go checker, and for each field
// the operators it accepts, how values are read and which SQL they become.
// Values never enter SQL text: they are bound through store.Args.
//
// The server layer calls, per request:
//
//	f, err := sqlfilter.Workspaces.Parse(req.GetFilter()) // store.Filter or nil
//	if err != nil { /* INVALID_ARGUMENT (errors.Is(err, store.ErrInvalidArgument)) */ }
//	page, err := st.ListWorkspaces(ctx, store.ListWorkspacesRequest{Filter: f, ...})
//
// or, having parsed with filtering.ParseFilter(req, sqlfilter.Workspaces.Declarations()),
// sqlfilter.Workspaces.Translate(req.GetFilter(), parsed).
package sqlfilter

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"go.einride.tech/aip/filtering"
	expr "google.golang.org/genproto/googleapis/api/expr/v1alpha1"

	"github.com/proserun/prose/store"
)

// Operators (aip-go function names).
const (
	OpEq  = filtering.FunctionEquals
	OpNe  = filtering.FunctionNotEquals
	OpLt  = filtering.FunctionLessThan
	OpLe  = filtering.FunctionLessEquals
	OpGt  = filtering.FunctionGreaterThan
	OpGe  = filtering.FunctionGreaterEquals
	OpHas = filtering.FunctionHas
)

// MaxFilterLength bounds the filter text (deeply nested input is rejected
// before parsing).
const MaxFilterLength = 4096

// Kind is the type of a field's values.
type Kind int

const (
	// String values are quoted strings.
	String Kind = iota
	// Timestamp values are RFC 3339 strings (Z or an offset), quoted or in
	// timestamp("...").
	Timestamp
	// Enum values are one of Values' keys, as bare words or quoted strings.
	Enum
)

// Field is one filterable field of a resource.
type Field struct {
	Name string
	Kind Kind
	// Ops are the operators the field accepts.
	Ops []string
	// Values maps accepted spellings to stored values (Enum).
	Values map[string]string
	// Normalize converts a string value before binding. Optional.
	Normalize func(string) string
	// Names, when set, makes the field take ids or whole resource names
	// (see NameColumns); Column defaults to the name's last column.
	Names *NamePattern
	// Column is the SQL column (alias-qualified) compared with the value:
	// "=" / "!=" / "<" ... render "col op ?"; ":" renders a case-insensitive
	// contains (LIKE with '%' and '_' escaped).
	Column string
	// CaseInsensitive makes = and != compare lower(col) with lower(?).
	CaseInsensitive bool
	// Render, when set, renders the comparison instead of Column. op is the
	// operator; v the normalised value (string or time.Time).
	Render func(a *store.Args, op string, v any) (string, error)
}

// Resource is the filter allow-list of one list method.
type Resource struct {
	name   string
	fields map[string]*Field
	consts map[string]bool // bare words declared as identifiers (enum values)
	decls  *filtering.Declarations
}

// NewResource declares a resource's fields. It fails on a malformed
// declaration (a programming error).
func NewResource(name string, fields ...Field) (*Resource, error) {
	r := &Resource{name: name, fields: map[string]*Field{}, consts: map[string]bool{}}
	opts := []filtering.DeclarationOption{filtering.DeclareStandardFunctions()}
	for i := range fields {
		f := &fields[i]
		if _, dup := r.fields[f.Name]; dup {
			return nil, fmt.Errorf("sqlfilter: %s: field %q declared twice", name, f.Name)
		}
		if f.Names != nil {
			if err := f.Names.check(); err != nil {
				return nil, fmt.Errorf("sqlfilter: %s: field %q: %w", name, f.Name, err)
			}
			if f.Column == "" {
				f.Column = f.Names.idColumn()
			}
		}
		if f.Column == "" && f.Render == nil {
			return nil, fmt.Errorf("sqlfilter: %s: field %q has neither Column nor Render", name, f.Name)
		}
		r.fields[f.Name] = f
		t := filtering.TypeString
		if f.Kind == Timestamp {
			t = filtering.TypeTimestamp
		}
		opts = append(opts, filtering.DeclareIdent(f.Name, t))
		if f.Kind == Enum {
			for v := range f.Values {
				if isIdent(v) && !r.consts[v] {
					r.consts[v] = true
					opts = append(opts, filtering.DeclareIdent(v, filtering.TypeString))
				}
			}
		}
	}
	d, err := filtering.NewDeclarations(opts...)
	if err != nil {
		return nil, fmt.Errorf("sqlfilter: %s: %w", name, err)
	}
	r.decls = d
	return r, nil
}

func mustResource(name string, fields ...Field) *Resource {
	r, err := NewResource(name, fields...)
	if err != nil {
		panic(err) // declarations below are static; covered by tests
	}
	return r
}

func isIdent(s string) bool {
	if s == "" {
		return false
	}
	for i, c := range s {
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return !slices.Contains([]string{"AND", "OR", "NOT"}, s)
}

// Declarations are the aip-go declarations of the resource's fields.
func (r *Resource) Declarations() *filtering.Declarations { return r.decls }

// Fields lists the field names, sorted.
func (r *Resource) Fields() []string { return slices.Sorted(maps.Keys(r.fields)) }

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: filter: %s", store.ErrInvalidArgument, fmt.Sprintf(format, args...))
}

// Parse parses, type-checks and translates filter text. An empty filter
// returns (nil, nil). Errors wrap store.ErrInvalidArgument and name the
// problem.
func (r *Resource) Parse(text string) (f store.Filter, err error) {
	if strings.TrimSpace(text) == "" {
		return nil, nil
	}
	if len(text) > MaxFilterLength {
		return nil, invalid("longer than %d bytes", MaxFilterLength)
	}
	defer func() {
		if p := recover(); p != nil { // defensive: a parser bug must not crash the server
			f, err = nil, invalid("cannot parse %q", text)
		}
	}()
	parsed, err := filtering.ParseFilterString(text, r.decls)
	if err != nil {
		return nil, invalid("%v (fields: %s)", err, strings.Join(r.Fields(), ", "))
	}
	return r.Translate(text, parsed)
}

// Translate converts a filter checked against r.Declarations(). text is the
// original filter string (page tokens are bound to it).
func (r *Resource) Translate(text string, f filtering.Filter) (store.Filter, error) {
	e := f.CheckedExpr.GetExpr()
	if e == nil {
		return nil, nil
	}
	n, err := r.node(e, 0)
	if err != nil {
		return nil, err
	}
	return &compiled{text: text, root: n}, nil
}

const maxDepth = 100

func (r *Resource) node(e *expr.Expr, depth int) (node, error) {
	if depth > maxDepth {
		return nil, invalid("nested too deeply")
	}
	call := e.GetCallExpr()
	if call == nil {
		return nil, invalid("expected a comparison such as field = \"value\" (fields: %s)", strings.Join(r.Fields(), ", "))
	}
	args := call.GetArgs()
	switch fn := call.GetFunction(); fn {
	case filtering.FunctionAnd, filtering.FunctionOr:
		if len(args) < 2 {
			return nil, invalid("%s needs two operands", fn)
		}
		kids := make([]node, len(args))
		for i, a := range args {
			k, err := r.node(a, depth+1)
			if err != nil {
				return nil, err
			}
			kids[i] = k
		}
		return &logic{op: fn, kids: kids}, nil
	case filtering.FunctionNot:
		if len(args) != 1 {
			return nil, invalid("NOT needs one operand")
		}
		k, err := r.node(args[0], depth+1)
		if err != nil {
			return nil, err
		}
		return &not{kid: k}, nil
	case OpEq, OpNe, OpLt, OpLe, OpGt, OpGe, OpHas:
		return r.comparison(fn, args)
	case filtering.FunctionFuzzyAnd:
		return nil, invalid("join terms with AND or OR")
	default:
		return nil, invalid("function %q is not supported", fn)
	}
}

func (r *Resource) comparison(op string, args []*expr.Expr) (node, error) {
	if len(args) != 2 {
		return nil, invalid("%s needs two operands", op)
	}
	id := args[0].GetIdentExpr()
	if id == nil {
		return nil, invalid("the left side of %s must be a field (fields: %s)", op, strings.Join(r.Fields(), ", "))
	}
	f, ok := r.fields[id.GetName()]
	if !ok {
		return nil, invalid("%q is not a field (fields: %s)", id.GetName(), strings.Join(r.Fields(), ", "))
	}
	if !slices.Contains(f.Ops, op) {
		return nil, invalid("field %q does not support operator %s (supported: %s)", f.Name, op, strings.Join(f.Ops, " "))
	}
	v, err := r.value(f, args[1])
	if err != nil {
		return nil, err
	}
	return &cmp{f: f, op: op, v: v}, nil
}

func (r *Resource) value(f *Field, e *expr.Expr) (any, error) {
	var s string
	switch {
	case e.GetConstExpr() != nil:
		c := e.GetConstExpr()
		sv, ok := c.GetConstantKind().(*expr.Constant_StringValue)
		if !ok {
			return nil, invalid("field %q takes a quoted string", f.Name)
		}
		s = sv.StringValue
	case e.GetIdentExpr() != nil:
		name := e.GetIdentExpr().GetName()
		if f.Kind != Enum || !r.consts[name] {
			return nil, invalid("value %s of field %q must be quoted", name, f.Name)
		}
		s = name
	case e.GetCallExpr() != nil && e.GetCallExpr().GetFunction() == filtering.FunctionTimestamp && f.Kind == Timestamp:
		a := e.GetCallExpr().GetArgs()
		if len(a) != 1 || a[0].GetConstExpr() == nil {
			return nil, invalid("timestamp() takes one quoted RFC 3339 time")
		}
		s = a[0].GetConstExpr().GetStringValue()
	default:
		return nil, invalid("field %q must be compared with a literal value", f.Name)
	}
	switch f.Kind {
	case Timestamp:
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return nil, invalid("field %q takes an RFC 3339 time with Z or an offset, got %q", f.Name, s)
		}
		return store.Time(t), nil
	case Enum:
		v, ok := f.Values[s]
		if !ok {
			return nil, invalid("field %q takes one of %s, got %q", f.Name, strings.Join(slices.Sorted(maps.Keys(f.Values)), ", "), s)
		}
		return v, nil
	}
	if f.Normalize != nil {
		s = f.Normalize(s)
	}
	if f.Names != nil {
		return f.Names.parse(f.Name, s)
	}
	return s, nil
}

// ---------------------------------------------------------------------------
// compiled filters

type node interface {
	sql(a *store.Args) (string, error)
}

type compiled struct {
	text string
	root node
}

func (c *compiled) String() string { return c.text }

func (c *compiled) SQL(a *store.Args) (string, error) {
	if c == nil || c.root == nil {
		return "", errors.New("sqlfilter: empty filter")
	}
	s, err := c.root.sql(a)
	if err != nil {
		return "", err
	}
	return "(" + s + ")", nil
}

type logic struct {
	op   string
	kids []node
}

func (l *logic) sql(a *store.Args) (string, error) {
	parts := make([]string, len(l.kids))
	for i, k := range l.kids {
		s, err := k.sql(a)
		if err != nil {
			return "", err
		}
		parts[i] = "(" + s + ")"
	}
	return strings.Join(parts, " "+l.op+" "), nil
}

type not struct{ kid node }

func (n *not) sql(a *store.Args) (string, error) {
	s, err := n.kid.sql(a)
	if err != nil {
		return "", err
	}
	return "NOT (" + s + ")", nil
}

type cmp struct {
	f  *Field
	op string
	v  any
}

func (c *cmp) sql(a *store.Args) (string, error) {
	if nv, ok := c.v.(nameValue); ok {
		return nv.sql(a, c.op)
	}
	if c.f.Render != nil {
		return c.f.Render(a, c.op, c.v)
	}
	return Compare(a, c.f.Column, c.op, c.v, c.f.CaseInsensitive)
}

// Compare renders "col op ?" for the comparison operators, a
// case-insensitive exact match when ci is set (= and != only), and a
// case-insensitive contains for ":".
func Compare(a *store.Args, col, op string, v any, ci bool) (string, error) {
	switch op {
	case OpHas:
		s, ok := v.(string)
		if !ok {
			return "", invalid("operator : needs a string")
		}
		return fmt.Sprintf(`%s %s %s ESCAPE '\'`, col, a.ILike(), a.Add("%"+store.LikeEscape(s)+"%")), nil
	case OpEq, OpNe, OpLt, OpLe, OpGt, OpGe:
		sqlOp := op
		if op == OpNe {
			sqlOp = "<>"
		}
		if ci && (op == OpEq || op == OpNe) {
			return fmt.Sprintf("lower(%s) %s lower(%s)", col, sqlOp, a.Add(v)), nil
		}
		return fmt.Sprintf("%s %s %s", col, sqlOp, a.Add(v)), nil
	}
	return "", invalid("operator %s is not supported", op)
}
