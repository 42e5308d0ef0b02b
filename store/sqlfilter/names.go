package sqlfilter

import (
	"fmt"
	"strings"

	"github.com/proserun/prose/store"
)

// NameFields declares a field whose values are ids or whole resource
// names: pattern is the resource name pattern
// ("organizations/{organization}/workspaces/{workspace}/automations/{automation}"),
// fields maps each of its variables to the filter field holding it (a
// store.Cond field of the list); the last variable is the field's own. A
// bare id compares the field only; a resource name must match the pattern
// and matches whole — every variable against its field (a "-" stands for
// any value of a variable other than the last, as in AIP-159) — so a name
// of another organization or workspace matches nothing, whatever its last
// segment. A value that contains "/" but is not such a name is
// INVALID_ARGUMENT.
func NameFields(pattern string, fields map[string]string) *NamePattern {
	segs := strings.Split(pattern, "/")
	np := &NamePattern{pattern: pattern, segs: segs, fields: fields}
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
	fields  map[string]string
}

func variable(seg string) (string, bool) {
	if len(seg) > 2 && seg[0] == '{' && seg[len(seg)-1] == '}' {
		return seg[1 : len(seg)-1], true
	}
	return "", false
}

// check reports a declaration error: a variable without a field.
func (p *NamePattern) check() error {
	if len(p.vars) == 0 {
		return fmt.Errorf("pattern %q has no variable", p.pattern)
	}
	for _, v := range p.vars {
		if p.fields[v] == "" {
			return fmt.Errorf("pattern %q: variable %s has no field", p.pattern, v)
		}
	}
	return nil
}

// nameValue is a parsed resource name: the conditions it stands for (every
// variable's field equal to its segment), in pattern order.
type nameValue store.And

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
		nv = append(nv, store.Cond{Field: p.fields[v], Op: OpEq, Value: parts[i]})
	}
	return nv, nil
}

// filter is a name comparison: all of its conditions (=), or not all (!=).
func (nv nameValue) filter(op store.Op) (store.Filter, error) {
	switch op {
	case OpEq:
		return store.And(nv), nil
	case OpNe:
		return store.Not{Filter: store.And(nv)}, nil
	}
	return nil, invalid("operator %s does not apply to a resource name", op)
}

// The resource names of filter fields. organization and workspace are
// fields of the exception and event lists that only names set.
var (
	// ExceptionAutomationName is the automation field of exception filters.
	ExceptionAutomationName = NameFields("organizations/{organization}/workspaces/{workspace}/automations/{automation}",
		map[string]string{"organization": "organization", "workspace": "workspace", "automation": "automation"})
	// ExceptionRunName is the run field of exception filters.
	ExceptionRunName = NameFields("organizations/{organization}/workspaces/{workspace}/automations/{automation}/runs/{run}",
		map[string]string{"organization": "organization", "workspace": "workspace", "automation": "automation", "run": "run"})
	// ExceptionGroupName is the group field of exception filters.
	ExceptionGroupName = NameFields("organizations/{organization}/workspaces/{workspace}/exceptionGroups/{group}",
		map[string]string{"organization": "organization", "workspace": "workspace", "group": "group"})
	// RunParentName is the parent_run field of run filters (a child run
	// belongs to its parent's automation, so the name's automation is the
	// child's too).
	RunParentName = NameFields("organizations/{organization}/workspaces/{workspace}/automations/{automation}/runs/{run}",
		map[string]string{"organization": "organization", "workspace": "workspace", "automation": "automation", "run": "parent_run"})
	// EventExceptionName is the exception field of event filters.
	EventExceptionName = NameFields("organizations/{organization}/workspaces/{workspace}/exceptions/{exception}",
		map[string]string{"organization": "organization", "workspace": "workspace", "exception": "exception"})
	// GuideSourceName is the source_exception field of guide entry filters.
	GuideSourceName = NameFields("organizations/{organization}/workspaces/{workspace}/exceptions/{exception}",
		map[string]string{"organization": "organization", "workspace": "workspace", "exception": "source_exception"})
)
