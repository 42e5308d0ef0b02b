// Package sqlfilter checks AIP-160 filters, parsed and type-checked by
// go.einride.tech/aip/filtering, against the allow-list of each list
// method and turns them into typed store filters (store.Filter: conditions
// on named fields joined with AND, OR and NOT). It writes no SQL: the
// backends translate store filters (store/internal/sqlstore, into
// parameterised SQL). Each list resource declares its allow-list once here
// (Resource): the identifiers and their types for the aip-go checker, and
// for each field the operators it accepts and how values are read; the
// store suite (store/storetest) runs these allow-lists on every backend.
//
// The server layer calls, per request:
//
//	f, err := sqlfilter.Workspaces.Parse(req.GetFilter()) // store.Filter or nil
//	if err != nil { /* INVALID_ARGUMENT (errors.Is(err, store.ErrInvalidArgument)) */ }
//	page, err := st.ListWorkspaces(ctx, store.ListWorkspacesRequest{Filter: f, ...})
package sqlfilter

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"go.einride.tech/aip/filtering"
	expr "google.golang.org/genproto/googleapis/api/expr/v1alpha1"

	"github.com/proserun/prose/store"
	"github.com/proserun/prose/store/aipfilter"
)

// Operators (aip-go's function names are store.Op's spellings).
const (
	OpEq  = store.OpEq
	OpNe  = store.OpNe
	OpLt  = store.OpLt
	OpLe  = store.OpLe
	OpGt  = store.OpGt
	OpGe  = store.OpGe
	OpHas = store.OpHas
)

// MaxFilterLength bounds the filter text; parentheses may nest at most
// aipfilter.MaxDepth deep. Both are checked before parsing.
const MaxFilterLength = aipfilter.MaxLength

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
	// Integer values are whole numbers, written bare (42).
	Integer
)

// Field is one filterable field of a resource. A comparison on it becomes
// store.Cond{Field: Name, Op: op, Value: v}, v a string (the normalised
// string, or the stored value of an Enum), a time.Time (Timestamp) or an
// int64 (Integer).
type Field struct {
	Name string
	Kind Kind
	// Ops are the operators the field accepts.
	Ops []store.Op
	// Values maps accepted spellings to stored values (Enum).
	Values map[string]string
	// Normalize converts a string value. Optional.
	Normalize func(string) string
	// Names, when set, makes the field take ids or whole resource names
	// (see NameFields).
	Names *NamePattern
}

// Resource is the filter allow-list of one list method.
type Resource struct {
	name   string
	fields map[string]*Field
	consts map[string]bool // bare words declared as identifiers (enum values)
	decls  *filtering.Declarations
	// contains: the word contains between a field and a value is the has
	// operator (":"), as the reference spells partial matches.
	contains bool
}

// WithContains returns r accepting `field contains "value"` as
// `field : "value"` (the reference's spelling of a partial match).
func (r *Resource) WithContains() *Resource {
	c := *r
	c.contains = true
	return &c
}

// containsAsHas rewrites the bare word contains (outside quoted strings,
// between a field and a value) as ":".
func containsAsHas(text string) string {
	const word = "contains"
	var b strings.Builder
	var quote byte
	for i := 0; i < len(text); i++ {
		c := text[i]
		switch {
		case quote != 0:
			if c == '\\' && i+1 < len(text) {
				b.WriteByte(c)
				i++
				c = text[i]
			} else if c == quote {
				quote = 0
			}
		case c == '"' || c == '\'':
			quote = c
		case strings.HasPrefix(text[i:], word) && (i == 0 || isSpace(text[i-1])) &&
			(i+len(word) < len(text) && isSpace(text[i+len(word)])):
			b.WriteByte(':')
			i += len(word) - 1
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

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
		if len(f.Ops) == 0 {
			return nil, fmt.Errorf("sqlfilter: %s: field %q has no operators", name, f.Name)
		}
		if f.Names != nil {
			if err := f.Names.check(); err != nil {
				return nil, fmt.Errorf("sqlfilter: %s: field %q: %w", name, f.Name, err)
			}
		}
		r.fields[f.Name] = f
		t := filtering.TypeString
		switch f.Kind {
		case Timestamp:
			t = filtering.TypeTimestamp
		case Integer:
			t = filtering.TypeInt
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
	return store.InvalidField("filter", "filter: %s", fmt.Sprintf(format, args...))
}

// Parse parses, type-checks and translates filter text into a store.Text
// holding the conditions. An empty filter returns (nil, nil). Errors wrap
// store.ErrInvalidArgument and name the problem.
func (r *Resource) Parse(text string) (f store.Filter, err error) {
	if strings.TrimSpace(text) == "" {
		return nil, nil
	}
	if err := aipfilter.Check(text); err != nil {
		return nil, invalid("%v", err)
	}
	defer func() {
		if p := recover(); p != nil { // defensive: a parser bug must not crash the server
			f, err = nil, invalid("cannot parse %q", text)
		}
	}()
	if r.contains {
		text = containsAsHas(text)
	}
	parsed, err := aipfilter.Parse(text, r.decls)
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
	return store.Text{Source: text, Filter: n}, nil
}

const maxDepth = 100

func (r *Resource) node(e *expr.Expr, depth int) (store.Filter, error) {
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
		kids := make([]store.Filter, len(args))
		for i, a := range args {
			k, err := r.node(a, depth+1)
			if err != nil {
				return nil, err
			}
			kids[i] = k
		}
		if fn == filtering.FunctionAnd {
			return store.And(kids), nil
		}
		return store.Or(kids), nil
	case filtering.FunctionNot:
		if len(args) != 1 {
			return nil, invalid("NOT needs one operand")
		}
		k, err := r.node(args[0], depth+1)
		if err != nil {
			return nil, err
		}
		return store.Not{Filter: k}, nil
	case string(OpEq), string(OpNe), string(OpLt), string(OpLe), string(OpGt), string(OpGe), string(OpHas):
		return r.comparison(store.Op(fn), args)
	case filtering.FunctionFuzzyAnd:
		return nil, invalid("join terms with AND or OR")
	default:
		return nil, invalid("function %q is not supported", fn)
	}
}

func (r *Resource) comparison(op store.Op, args []*expr.Expr) (store.Filter, error) {
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
		ops := make([]string, len(f.Ops))
		for i, o := range f.Ops {
			ops[i] = string(o)
		}
		return nil, invalid("field %q does not support operator %s (supported: %s)", f.Name, op, strings.Join(ops, " "))
	}
	v, err := r.value(f, args[1])
	if err != nil {
		return nil, err
	}
	if nv, ok := v.(nameValue); ok {
		return nv.filter(op)
	}
	return store.Cond{Field: f.Name, Op: op, Value: v}, nil
}

func (r *Resource) value(f *Field, e *expr.Expr) (any, error) {
	var s string
	switch {
	case e.GetConstExpr() != nil:
		c := e.GetConstExpr()
		if iv, ok := c.GetConstantKind().(*expr.Constant_Int64Value); ok && f.Kind == Integer {
			return iv.Int64Value, nil
		}
		sv, ok := c.GetConstantKind().(*expr.Constant_StringValue)
		if !ok {
			if f.Kind == Integer {
				return nil, invalid("field %q takes a whole number", f.Name)
			}
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

// Field returns the declaration of a field (nil if r has none).
func (r *Resource) Field(name string) *Field { return r.fields[name] }
