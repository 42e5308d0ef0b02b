package server

import (
	"fmt"
	"strings"

	"github.com/proserun/prose/store"
	"github.com/proserun/prose/store/sqlfilter"
)

// Exception filter (AIP-160), as the seed gives it: state (short or full
// enum names; = != < <= > >=, ordered as the enum: PENDING < RESOLVED <
// ARCHIVED), automation, run and group (= and != only; ids or resource
// names; group = "" selects ungrouped exceptions, group != "" the grouped
// ones), create_time (RFC 3339 with Z or an offset; = != < <= > >=); AND,
// OR, NOT and parentheses. sqlfilter.Exceptions accepts only = and != on
// state; excFilter adds the ordered comparisons.

// excStateOrder is the enum order of the stored states.
var excStateOrder = []string{string(store.ExceptionPending), string(store.ExceptionResolved), string(store.ExceptionArchived)}

var excStateValues = map[string]string{
	"PENDING": "PENDING", "RESOLVED": "RESOLVED", "ARCHIVED": "ARCHIVED",
	"EXCEPTION_STATE_PENDING": "PENDING", "EXCEPTION_STATE_RESOLVED": "RESOLVED", "EXCEPTION_STATE_ARCHIVED": "ARCHIVED",
}

// renderExcState renders a state comparison; ordered operators become an
// IN list of the states on that side.
func renderExcState(a *store.Args, op string, v any) (string, error) {
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("%w: filter: state takes a state name", store.ErrInvalidArgument)
	}
	idx := -1
	for i, x := range excStateOrder {
		if x == s {
			idx = i
		}
	}
	if idx < 0 {
		return "", fmt.Errorf("%w: filter: unknown state %q", store.ErrInvalidArgument, s)
	}
	var in []string
	switch op {
	case sqlfilter.OpEq:
		return "(e.state = " + a.Add(s) + ")", nil
	case sqlfilter.OpNe:
		return "(e.state <> " + a.Add(s) + ")", nil
	case sqlfilter.OpLt:
		in = excStateOrder[:idx]
	case sqlfilter.OpLe:
		in = excStateOrder[:idx+1]
	case sqlfilter.OpGt:
		in = excStateOrder[idx+1:]
	case sqlfilter.OpGe:
		in = excStateOrder[idx:]
	default:
		return "", fmt.Errorf("%w: filter: state does not support %s", store.ErrInvalidArgument, op)
	}
	if len(in) == 0 {
		return "(1 = 0)", nil
	}
	ph := make([]string, len(in))
	for i, x := range in {
		ph[i] = a.Add(x)
	}
	return "(e.state IN (" + strings.Join(ph, ", ") + "))", nil
}

var excAllOps = []string{sqlfilter.OpEq, sqlfilter.OpNe, sqlfilter.OpLt, sqlfilter.OpLe, sqlfilter.OpGt, sqlfilter.OpGe}

var excExactOps = []string{sqlfilter.OpEq, sqlfilter.OpNe}

// excFilter is the allow-list of ListExceptions, the counts and the batch
// methods.
var excFilter = func() *sqlfilter.Resource {
	r, err := sqlfilter.NewResource("exceptions",
		sqlfilter.Field{Name: "state", Kind: sqlfilter.Enum, Ops: excAllOps, Values: excStateValues, Render: renderExcState},
		sqlfilter.Field{Name: "automation", Kind: sqlfilter.String, Ops: excExactOps, Names: sqlfilter.ExceptionAutomationName},
		sqlfilter.Field{Name: "run", Kind: sqlfilter.String, Ops: excExactOps, Names: sqlfilter.ExceptionRunName},
		sqlfilter.Field{Name: "group", Kind: sqlfilter.String, Ops: excExactOps, Names: sqlfilter.ExceptionGroupName},
		sqlfilter.Field{Name: "create_time", Kind: sqlfilter.Timestamp, Ops: excAllOps, Column: "e.create_time"},
	)
	if err != nil {
		// A static declaration; the tests cover it. Fall back to the
		// store's own allow-list rather than panic.
		return sqlfilter.Exceptions
	}
	// renderExcState references e.state only: conjunctions report it, and
	// the store can count such filters from its precomputed counts.
	return r.RenderColumns("state", "e.state")
}()

// excParseFilter parses a filter; errors are INVALID_ARGUMENT naming the
// problem with a violation on "filter".
func excParseFilter(text string) (store.Filter, error) {
	f, err := excFilter.Parse(text)
	if err != nil {
		return nil, idInvalidFromStore(err)
	}
	return f, nil
}

// excAnd is the conjunction of filters (nil members are left out).
type excAnd []store.Filter

func (f excAnd) String() string {
	var parts []string
	for _, x := range f {
		if x != nil {
			parts = append(parts, "("+x.String()+")")
		}
	}
	return strings.Join(parts, " AND ")
}

// Conjuncts implements store.ConjunctFilter: the members' conjuncts.
func (f excAnd) Conjuncts() []store.Conjunct {
	var out []store.Conjunct
	for _, x := range f {
		if x != nil {
			out = append(out, store.Conjuncts(x)...)
		}
	}
	return out
}

func (f excAnd) SQL(a *store.Args) (string, error) {
	var parts []string
	for _, x := range f {
		if x == nil {
			continue
		}
		s, err := x.SQL(a)
		if err != nil {
			return "", err
		}
		parts = append(parts, s)
	}
	if len(parts) == 0 {
		return "(1 = 1)", nil
	}
	return "(" + strings.Join(parts, " AND ") + ")", nil
}

// excCond is a fixed condition on one column: col op value.
type excCond struct {
	col, op, value string
}

func (f excCond) String() string { return fmt.Sprintf("%s %s %q", f.col, f.op, f.value) }

// Conjuncts implements store.ConjunctFilter: one comparison on col.
func (f excCond) Conjuncts() []store.Conjunct {
	return []store.Conjunct{{Filter: f, Columns: []string{f.col}}}
}

func (f excCond) SQL(a *store.Args) (string, error) {
	return "(" + f.col + " " + f.op + " " + a.Add(f.value) + ")", nil
}

// excBound binds a page token to more than the filter (the skip of the
// first page): its text takes part in the token's binding, its SQL is the
// inner filter's.
type excBound struct {
	inner store.Filter
	tag   string
}

func (f excBound) String() string {
	if f.inner == nil {
		return f.tag
	}
	return f.inner.String() + " " + f.tag
}

// Conjuncts implements store.ConjunctFilter: the inner filter's.
func (f excBound) Conjuncts() []store.Conjunct { return store.Conjuncts(f.inner) }

func (f excBound) SQL(a *store.Args) (string, error) {
	if f.inner == nil {
		return "(1 = 1)", nil
	}
	return f.inner.SQL(a)
}
