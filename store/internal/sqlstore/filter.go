package sqlstore

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/proserun/prose/store"
)

// Args collects the values of a parameterised SQL statement. Add returns the
// placeholder to put in the SQL text, so no value ever enters the text.
type Args struct {
	Dialect store.Dialect
	Values  []any
}

// NewArgs returns an empty argument list for d.
func NewArgs(d store.Dialect) *Args { return &Args{Dialect: d} }

// Add appends v and returns its placeholder. time.Time values are converted
// to the dialect's stored form (unix microseconds for SQLite, UTC
// microsecond-truncated time for PostgreSQL).
func (a *Args) Add(v any) string {
	if t, ok := v.(time.Time); ok {
		v = a.TimeValue(t)
	}
	a.Values = append(a.Values, v)
	if a.Dialect == store.Postgres {
		return "$" + strconv.Itoa(len(a.Values))
	}
	return "?"
}

// TimeValue converts t to the value stored for a timestamp column.
func (a *Args) TimeValue(t time.Time) any {
	t = store.Time(t)
	if a.Dialect == store.Postgres {
		return t
	}
	return t.UnixMicro()
}

// ILike returns the case-insensitive LIKE operator of the dialect. Patterns
// are used with ESCAPE '\' (see likeEscape).
func (a *Args) ILike() string {
	if a.Dialect == store.Postgres {
		return "ILIKE"
	}
	return "LIKE" // SQLite's LIKE is case-insensitive for ASCII by default.
}

// likeEscape escapes '\', '%' and '_' in s so that it matches literally in a
// LIKE pattern declared with ESCAPE '\'.
func likeEscape(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)
	return r.Replace(s)
}

// ---------------------------------------------------------------------------
// Filters: store.Filter trees rendered as SQL conditions
//
// Each list has a fields table: for each field a condition may name (those
// of the list's allow-list in store/sqlfilter, and the typed conditions
// callers add), the SQL it becomes. The store suite runs every allow-list
// on both dialects.

// fieldSQL renders the conditions on one field.
type fieldSQL struct {
	// col is the alias-qualified column compared with the value: = != < <=
	// > >= render "col op ?", ":" a case-insensitive contains, In an IN
	// list.
	col string
	// time says the values are times, integer that they are int64s
	// (others are strings).
	time, integer bool
	// render, when set, renders a condition instead of col.
	render func(a *Args, op store.Op, v any) (string, error)
}

// fields is the fields table of one list.
type fields map[string]fieldSQL

func badFilter(format string, args ...any) error {
	return store.InvalidField("filter", "filter: %s", fmt.Sprintf(format, args...))
}

// where renders f as a parenthesised SQL condition, adding every value to
// a. An empty And renders "(1 = 1)", an empty Or or In "(1 = 0)".
func (fs fields) where(a *Args, f store.Filter) (string, error) {
	s, err := fs.render(a, f, 0)
	if err != nil {
		return "", err
	}
	return "(" + s + ")", nil
}

const maxFilterDepth = 200

func (fs fields) render(a *Args, f store.Filter, depth int) (string, error) {
	if depth > maxFilterDepth {
		return "", badFilter("nested too deeply")
	}
	join := func(members []store.Filter, op, none string) (string, error) {
		var parts []string
		for _, m := range members {
			if m == nil {
				continue
			}
			s, err := fs.render(a, m, depth+1)
			if err != nil {
				return "", err
			}
			parts = append(parts, "("+s+")")
		}
		if len(parts) == 0 {
			return none, nil
		}
		return strings.Join(parts, " "+op+" "), nil
	}
	switch f := f.(type) {
	case nil:
		return "1 = 1", nil
	case store.Text:
		return fs.render(a, f.Filter, depth+1)
	case store.And:
		return join(f, "AND", "1 = 1")
	case store.Or:
		return join(f, "OR", "1 = 0")
	case store.Not:
		s, err := fs.render(a, f.Filter, depth+1)
		if err != nil {
			return "", err
		}
		return "NOT (" + s + ")", nil
	case store.Cond:
		fd, ok := fs[f.Field]
		if !ok {
			return "", badFilter("no field %q", f.Field)
		}
		if err := fd.check(f.Field, f.Value); err != nil {
			return "", err
		}
		if fd.render != nil {
			return fd.render(a, f.Op, f.Value)
		}
		return compare(a, fd.col, f.Op, f.Value)
	case store.In:
		fd, ok := fs[f.Field]
		if !ok || fd.col == "" {
			return "", badFilter("no field %q for IN", f.Field)
		}
		if len(f.Values) == 0 {
			return "1 = 0", nil
		}
		ph := make([]string, len(f.Values))
		for i, v := range f.Values {
			ph[i] = a.Add(v)
		}
		return fd.col + " IN (" + strings.Join(ph, ", ") + ")", nil
	}
	return "", badFilter("unsupported filter %T", f)
}

// check checks the type of a condition's value.
func (fd fieldSQL) check(name string, v any) error {
	switch v.(type) {
	case time.Time:
		if !fd.time {
			return badFilter("field %q takes a string", name)
		}
	case string:
		if fd.time {
			return badFilter("field %q takes a time", name)
		}
		if fd.integer {
			return badFilter("field %q takes a whole number", name)
		}
	case int64:
		if !fd.integer {
			return badFilter("field %q takes a string", name)
		}
	default:
		return badFilter("field %q: value of type %T", name, v)
	}
	return nil
}

// compare renders "col op ?" for the comparison operators and a
// case-insensitive contains for ":".
func compare(a *Args, col string, op store.Op, v any) (string, error) {
	switch op {
	case store.OpHas:
		s, ok := v.(string)
		if !ok {
			return "", badFilter("operator : needs a string")
		}
		return fmt.Sprintf(`%s %s %s ESCAPE '\'`, col, a.ILike(), a.Add("%"+likeEscape(s)+"%")), nil
	case store.OpEq, store.OpNe, store.OpLt, store.OpLe, store.OpGt, store.OpGe:
		sqlOp := string(op)
		if op == store.OpNe {
			sqlOp = "<>"
		}
		return fmt.Sprintf("%s %s %s", col, sqlOp, a.Add(v)), nil
	}
	return "", badFilter("operator %q is not supported", op)
}

// runState renders a condition on a run's state: a run waiting for its
// child runs is executing for clients (the platform API shows it so).
func runState(a *Args, op store.Op, v any) (string, error) {
	s, _ := v.(string)
	if s != string(store.RunExecuting) {
		return compare(a, "r.state", op, v)
	}
	switch op {
	case store.OpEq:
		return "r.state IN (" + a.Add(s) + ", " + a.Add(string(store.RunWaiting)) + ")", nil
	case store.OpNe:
		return "r.state NOT IN (" + a.Add(s) + ", " + a.Add(string(store.RunWaiting)) + ")", nil
	}
	return "", badFilter("operator %q is not supported on state", op)
}

// orderedEnum renders conditions on a column holding the values of an enum
// compared in the enum's order: the ordered operators select the values on
// that side (an IN list).
func orderedEnum(col string, order []string) func(a *Args, op store.Op, v any) (string, error) {
	return func(a *Args, op store.Op, v any) (string, error) {
		s, _ := v.(string)
		i := slices.Index(order, s)
		if i < 0 {
			return "", badFilter("unknown value %q of %s", s, col)
		}
		var in []string
		switch op {
		case store.OpEq:
			return col + " = " + a.Add(s), nil
		case store.OpNe:
			return col + " <> " + a.Add(s), nil
		case store.OpLt:
			in = order[:i]
		case store.OpLe:
			in = order[:i+1]
		case store.OpGt:
			in = order[i+1:]
		case store.OpGe:
			in = order[i:]
		default:
			return "", badFilter("operator %q is not supported on %s", op, col)
		}
		if len(in) == 0 {
			return "1 = 0", nil
		}
		ph := make([]string, len(in))
		for j, x := range in {
			ph[j] = a.Add(x)
		}
		return col + " IN (" + strings.Join(ph, ", ") + ")", nil
	}
}

// filterFields lists the fields f's conditions name (nil for none).
func filterFields(f store.Filter, acc []string) []string {
	add := func(name string) {
		if !slices.Contains(acc, name) {
			acc = append(acc, name)
		}
	}
	switch f := f.(type) {
	case store.Text:
		return filterFields(f.Filter, acc)
	case store.And:
		for _, m := range f {
			acc = filterFields(m, acc)
		}
	case store.Or:
		for _, m := range f {
			acc = filterFields(m, acc)
		}
	case store.Not:
		return filterFields(f.Filter, acc)
	case store.Cond:
		add(f.Field)
	case store.In:
		add(f.Field)
	}
	return acc
}

// conjuncts lists the operands of f's top-level AND (nested ANDs and Text
// flattened; nil members left out).
func conjuncts(f store.Filter) []store.Filter {
	switch f := f.(type) {
	case nil:
		return nil
	case store.Text:
		return conjuncts(f.Filter)
	case store.And:
		var out []store.Filter
		for _, m := range f {
			out = append(out, conjuncts(m)...)
		}
		return out
	}
	return []store.Filter{f}
}

// ---------------------------------------------------------------------------
// The fields of each list

var workspaceFields = fields{
	"title": {col: "w.title"},
	"id":    {col: "w.id"}, // typed conditions: the workspaces of a scoped key
}

var automationFields = fields{
	"display_name": {col: "a.display_name"},
}

var revisionFields = fields{
	"stage": {col: "v.stage"},
	// typed conditions of the server (ListDefaultInputsHistory pages by
	// version): a version as decimal text.
	"version": {render: func(a *Args, op store.Op, v any) (string, error) {
		n, err := strconv.ParseInt(fmt.Sprint(v), 10, 64)
		if err != nil {
			return "", badFilter("version %q is not a number", v)
		}
		return compare(a, "v.version", op, n)
	}},
}

var runFields = fields{
	"state":       {col: "r.state", render: runState},
	"create_time": {col: "r.create_time", time: true},
	"parent_run":  {col: "r.parent_run"},
	"run_number":  {col: "r.number", integer: true},
	// typed conditions of the server (the runs a replay replays)
	"stage": {col: "r.stage"},
	"stage_version": {render: func(a *Args, op store.Op, v any) (string, error) {
		n, err := strconv.ParseInt(fmt.Sprint(v), 10, 64)
		if err != nil {
			return "", badFilter("stage_version %q is not a number", v)
		}
		return compare(a, "r.stage_version", op, n)
	}},
	// set by resource names (see sqlfilter.NameFields)
	"organization": {col: "r.organization_id"},
	"workspace":    {col: "r.workspace_id"},
	"automation":   {col: "r.automation_id"},
}

var eventFields = fields{
	"exception": {col: "ev.exception_id"},
	// set by resource names (see sqlfilter.NameFields)
	"organization": {col: "ev.organization_id"},
	"workspace":    {col: "ev.workspace_id"},
}

var guideFields = fields{
	"title":            {col: "g.title"},
	"resolution_steps": {col: "g.resolution_steps"},
	"resolution_code":  {col: "g.resolution_code"},
	"resolution_notes": {col: "g.resolution_notes"},
	"automation":       {col: "g.automation_id"},
	"state":            {col: "g.state"},
	"source_exception": {col: "g.source_exception"},
	"create_time":      {col: "g.create_time", time: true},
	"update_time":      {col: "g.update_time", time: true},
	// set by resource names (see sqlfilter.NameFields)
	"organization": {col: "g.organization_id"},
	"workspace":    {col: "g.workspace_id"},
}

var exceptionStateOrder = []string{string(store.ExceptionPending), string(store.ExceptionResolved), string(store.ExceptionArchived)}

var exceptionFields = fields{
	"state":       {col: "e.state", render: orderedEnum("e.state", exceptionStateOrder)},
	"automation":  {col: "e.automation_id"},
	"run":         {col: "e.run_id"},
	"group":       {col: "e.group_id"},
	"create_time": {col: "e.create_time", time: true},
	"assignee":    {col: "e.assignee"}, // typed conditions of the batch methods
	"resolver":    {col: "e.resolver"},
	// set by resource names (see sqlfilter.NameFields)
	"organization": {col: "e.organization_id"},
	"workspace":    {col: "e.workspace_id"},
}

// The members' role bindings (alias m: workspace_members or
// organization_members), with one %s for a condition on rb.
const (
	orgBinding = `EXISTS (SELECT 1 FROM organization_role_bindings rb WHERE rb.organization_id = m.organization_id
		AND rb.user_id = m.user_id%s)`
	wsBinding = `EXISTS (SELECT 1 FROM workspace_role_bindings rb WHERE rb.organization_id = m.organization_id
		AND rb.workspace_id = m.workspace_id AND rb.user_id = m.user_id%s)`
	// anyWsBinding is a workspace role of the member in any workspace of
	// the organization.
	anyWsBinding = `EXISTS (SELECT 1 FROM workspace_role_bindings rb WHERE rb.organization_id = m.organization_id
		AND rb.user_id = m.user_id%s)`
)

func negate(op store.Op, s string) string {
	if op == store.OpNe {
		return "NOT (" + s + ")"
	}
	return s
}

// memberFields are the fields of a list of members (aliases m, u) whose
// workspace roles are those binding selects: role (an organization role or
// such a workspace role, case-insensitive), role_scope (has a role of that
// scope), search (":" on display name or e-mail).
func memberFields(binding string) fields {
	return fields{
		"role": {render: func(a *Args, op store.Op, v any) (string, error) {
			if op != store.OpEq && op != store.OpNe {
				return "", badFilter("role takes = or !=")
			}
			o := fmt.Sprintf(orgBinding, " AND lower(rb.role_id) = lower("+a.Add(v)+")")
			w := fmt.Sprintf(binding, " AND lower(rb.role_id) = lower("+a.Add(v)+")")
			return negate(op, o+" OR "+w), nil
		}},
		"role_scope": {render: func(a *Args, op store.Op, v any) (string, error) {
			if op != store.OpEq && op != store.OpNe {
				return "", badFilter("role_scope takes = or !=")
			}
			s := fmt.Sprintf(binding, "")
			switch v {
			case string(store.ScopeOrganization):
				s = fmt.Sprintf(orgBinding, "")
			case string(store.ScopeWorkspace):
			default:
				return "", badFilter("role_scope takes organization or workspace, got %q", v)
			}
			return negate(op, s), nil
		}},
		"search": {render: func(a *Args, op store.Op, v any) (string, error) {
			if op != store.OpHas {
				return "", badFilter("search takes :")
			}
			d, err := compare(a, "u.display_name", op, v)
			if err != nil {
				return "", err
			}
			e, err := compare(a, "u.email", op, v)
			if err != nil {
				return "", err
			}
			return d + " OR " + e, nil
		}},
	}
}

var (
	workspaceUserFields    = memberFields(wsBinding)
	organizationUserFields = memberFields(anyWsBinding)
)
