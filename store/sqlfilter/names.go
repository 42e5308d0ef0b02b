package sqlfilter

import (
	"fmt"
	"strings"

	"github.com/proserun/prose/store"
)

// NameColumns declares a field whose values are ids or whole resource
// names: pattern is the resource name pattern
// ("organizations/{organization}/workspaces/{workspace}/automations/{automation}"),
// columns maps each of its variables to the SQL column holding it; the last
// variable is the field's own column. A bare id compares the field's
// column only; a resource name must match the pattern and matches whole —
// every variable against its column (a "-" stands for any value of a
// variable other than the last, as in AIP-159) — so a name of another
// organization or workspace matches nothing, whatever its last segment. A
// value that contains "/" but is not such a name is INVALID_ARGUMENT.
func NameColumns(pattern string, columns map[string]string) *NamePattern {
	segs := strings.Split(pattern, "/")
	np := &NamePattern{pattern: pattern, segs: segs, columns: columns}
	for _, s := range segs {
		if v, ok := variable(s); ok {
			np.vars = append(np.vars, v)
		}
	}
	return np
}

// NamePattern is the resource name form of a field (Field.Names).
type NamePattern struct {
	pattern string
	segs    []string
	vars    []string
	columns map[string]string
}

func variable(seg string) (string, bool) {
	if len(seg) > 2 && seg[0] == '{' && seg[len(seg)-1] == '}' {
		return seg[1 : len(seg)-1], true
	}
	return "", false
}

// check reports a declaration error: a variable without a column.
func (p *NamePattern) check() error {
	if len(p.vars) == 0 {
		return fmt.Errorf("pattern %q has no variable", p.pattern)
	}
	for _, v := range p.vars {
		if p.columns[v] == "" {
			return fmt.Errorf("pattern %q: variable %s has no column", p.pattern, v)
		}
	}
	return nil
}

// idColumn is the column of the last variable.
func (p *NamePattern) idColumn() string { return p.columns[p.vars[len(p.vars)-1]] }

// nameValue is a parsed resource name: the columns to compare and their
// values, in pattern order.
type nameValue struct {
	cols, vals []string
}

// parse reads a filter value: a bare id (string) or a whole name
// (nameValue).
func (p *NamePattern) parse(field, s string) (any, error) {
	if !strings.Contains(s, "/") {
		return s, nil
	}
	parts := strings.Split(s, "/")
	bad := invalid("field %q takes an id or a resource name %s, got %q", field, p.pattern, s)
	if len(parts) != len(p.segs) {
		return nil, bad
	}
	var nv nameValue
	for i, seg := range p.segs {
		v, isVar := variable(seg)
		if !isVar {
			if parts[i] != seg {
				return nil, bad
			}
			continue
		}
		last := v == p.vars[len(p.vars)-1]
		if parts[i] == "" || parts[i] == "-" && last {
			return nil, bad
		}
		if parts[i] == "-" {
			continue
		}
		nv.cols = append(nv.cols, p.columns[v])
		nv.vals = append(nv.vals, parts[i])
	}
	return nv, nil
}

// sql renders a name comparison: all of its columns equal (=), or not all
// (!=).
func (nv nameValue) sql(a *store.Args, op string) (string, error) {
	parts := make([]string, len(nv.cols))
	for i, c := range nv.cols {
		parts[i] = c + " = " + a.Add(nv.vals[i])
	}
	s := "(" + strings.Join(parts, " AND ") + ")"
	switch op {
	case OpEq:
		return s, nil
	case OpNe:
		return "NOT " + s, nil
	}
	return "", invalid("operator %s does not apply to a resource name", op)
}

// The resource names of filter fields, with the columns of the exceptions
// (alias e) and events (alias ev) tables.
var (
	// ExceptionAutomationName is the automation field of exception filters.
	ExceptionAutomationName = NameColumns("organizations/{organization}/workspaces/{workspace}/automations/{automation}",
		map[string]string{"organization": "e.organization_id", "workspace": "e.workspace_id", "automation": "e.automation_id"})
	// ExceptionRunName is the run field of exception filters.
	ExceptionRunName = NameColumns("organizations/{organization}/workspaces/{workspace}/automations/{automation}/runs/{run}",
		map[string]string{"organization": "e.organization_id", "workspace": "e.workspace_id", "automation": "e.automation_id", "run": "e.run_id"})
	// ExceptionGroupName is the group field of exception filters.
	ExceptionGroupName = NameColumns("organizations/{organization}/workspaces/{workspace}/exceptionGroups/{group}",
		map[string]string{"organization": "e.organization_id", "workspace": "e.workspace_id", "group": "e.group_id"})
	// EventExceptionName is the exception field of event filters.
	EventExceptionName = NameColumns("organizations/{organization}/workspaces/{workspace}/exceptions/{exception}",
		map[string]string{"organization": "ev.organization_id", "workspace": "ev.workspace_id", "exception": "ev.exception_id"})
)
