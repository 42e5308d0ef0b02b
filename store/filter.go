package store

import (
	"fmt"
	"strings"
	"time"
)

// Op is the operator of a filter condition, spelled as in AIP-160.
type Op string

// The operators. The ordered ones compare as the field's type: strings
// bytewise, times in time order, exception states in the enum's order
// (PENDING < RESOLVED < ARCHIVED). OpHas is a case-insensitive "contains".
const (
	OpEq  Op = "="
	OpNe  Op = "!="
	OpLt  Op = "<"
	OpLe  Op = "<="
	OpGt  Op = ">"
	OpGe  Op = ">="
	OpHas Op = ":"
)

// Filter selects the items of a list: a tree of conditions (Cond, In)
// joined with And, Or and Not, on the fields each list request documents.
// store/sqlfilter builds them from AIP-160 text against each list's
// allow-list (as Text); callers may add typed conditions of their own.
// Backends translate them (the SQL stores: to parameterised SQL, never a
// value in the SQL text). A nil Filter selects everything. A condition on
// a field the list does not have, or with a value of the wrong type, is
// ErrInvalidArgument.
type Filter interface {
	// String is the text page tokens are bound to: two filters with the
	// same String select the same items.
	String() string
	isFilter()
}

// Cond compares a field with a value: a string, or a time.Time for time
// fields.
type Cond struct {
	Field string
	Op    Op
	Value any
}

// In selects the items whose field is one of Values (none when empty).
type In struct {
	Field  string
	Values []string
}

// And selects the items every member selects (nil members are left out;
// with none, everything).
type And []Filter

// Or selects the items some member selects (nil members are left out; with
// none, nothing).
type Or []Filter

// Not selects the items Filter does not select.
type Not struct{ Filter Filter }

// Text is a filter parsed from the text of a request: page tokens are
// bound to that text.
type Text struct {
	Source string
	Filter Filter
}

func (Cond) isFilter() {}
func (In) isFilter()   {}
func (And) isFilter()  {}
func (Or) isFilter()   {}
func (Not) isFilter()  {}
func (Text) isFilter() {}

func (c Cond) String() string {
	v := fmt.Sprint(c.Value)
	if t, ok := c.Value.(time.Time); ok {
		v = t.UTC().Format(time.RFC3339Nano)
	}
	return fmt.Sprintf("%s %s %q", c.Field, c.Op, v)
}

func (c In) String() string {
	q := make([]string, len(c.Values))
	for i, v := range c.Values {
		q[i] = fmt.Sprintf("%q", v)
	}
	return c.Field + " in (" + strings.Join(q, ", ") + ")"
}

func joinFilters(fs []Filter, op string) string {
	var parts []string
	for _, f := range fs {
		if f != nil {
			parts = append(parts, "("+f.String()+")")
		}
	}
	return strings.Join(parts, " "+op+" ")
}

func (f And) String() string  { return joinFilters(f, "AND") }
func (f Or) String() string   { return joinFilters(f, "OR") }
func (f Not) String() string  { return "NOT (" + filterString(f.Filter) + ")" }
func (f Text) String() string { return f.Source }

func filterString(f Filter) string {
	if f == nil {
		return ""
	}
	return f.String()
}

// FilterKey returns the text that binds a page token to f ("" for no filter).
func FilterKey(f Filter) string { return filterString(f) }
