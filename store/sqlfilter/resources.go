package sqlfilter

import (
	"fmt"

	"github.com/proserun/prose/store"
)

// Workspaces is the filter of ListWorkspaces (alias w): title with = and !=
// (exact) and : (case-insensitive contains).
var Workspaces = mustResource("workspaces",
	Field{Name: "title", Kind: String, Ops: []string{OpEq, OpNe, OpHas}, Column: "w.title"},
)

var roleScopes = map[string]string{
	"organization": "organization", "workspace": "workspace",
	"ROLE_SCOPE_ORGANIZATION": "organization", "ROLE_SCOPE_WORKSPACE": "workspace",
}

const (
	orgBinding = `EXISTS (SELECT 1 FROM organization_role_bindings rb WHERE rb.organization_id = m.organization_id
		AND rb.user_id = m.user_id%s)`
	wsBinding = `EXISTS (SELECT 1 FROM workspace_role_bindings rb WHERE rb.organization_id = m.organization_id
		AND rb.workspace_id = m.workspace_id AND rb.user_id = m.user_id%s)`
)

func negate(op, s string) string {
	if op == OpNe {
		return "NOT (" + s + ")"
	}
	return s
}

// WorkspaceUsers is the filter of ListWorkspaceUsers (aliases m, u): role
// (role name, case-insensitive exact, organization or workspace role),
// role_scope (organization | workspace: has a role of that scope), search
// (":" partial match on display name or e-mail).
var WorkspaceUsers = usersResource("workspace users", wsBinding)

// usersResource is the filter of a list of members (aliases m, u) whose
// workspace roles are those that binding (a format with one %s for an extra
// condition on rb) selects.
func usersResource(name, binding string) *Resource {
	return mustResource(name,
		Field{Name: "role", Kind: String, Ops: []string{OpEq, OpNe}, Column: "rb.role_id",
			Render: func(a *store.Args, op string, v any) (string, error) {
				o := fmt.Sprintf(orgBinding, " AND lower(rb.role_id) = lower("+a.Add(v)+")")
				w := fmt.Sprintf(binding, " AND lower(rb.role_id) = lower("+a.Add(v)+")")
				return negate(op, o+" OR "+w), nil
			}},
		Field{Name: "role_scope", Kind: Enum, Ops: []string{OpEq, OpNe}, Values: roleScopes, Column: "scope",
			Render: func(a *store.Args, op string, v any) (string, error) {
				s := fmt.Sprintf(binding, "")
				if v == "organization" {
					s = fmt.Sprintf(orgBinding, "")
				}
				return negate(op, s), nil
			}},
		Field{Name: "search", Kind: String, Ops: []string{OpHas}, Column: "u.display_name",
			Render: func(a *store.Args, op string, v any) (string, error) {
				d, err := Compare(a, "u.display_name", OpHas, v, false)
				if err != nil {
					return "", err
				}
				e, err := Compare(a, "u.email", OpHas, v, false)
				if err != nil {
					return "", err
				}
				return d + " OR " + e, nil
			}},
	)
}

var exceptionStates = map[string]string{
	"PENDING": "PENDING", "RESOLVED": "RESOLVED", "ARCHIVED": "ARCHIVED",
	"EXCEPTION_STATE_PENDING": "PENDING", "EXCEPTION_STATE_RESOLVED": "RESOLVED", "EXCEPTION_STATE_ARCHIVED": "ARCHIVED",
}

var exactOps = []string{OpEq, OpNe}

// Exceptions is the filter of ListExceptions and CountExceptionsByGroup
// (alias e): state (short or full enum names), automation, run and group
// (ids or resource names; exact; group = "" selects ungrouped), create_time
// (RFC 3339 with Z or offset; = != < <= > >=).
var Exceptions = mustResource("exceptions",
	Field{Name: "state", Kind: Enum, Ops: exactOps, Values: exceptionStates, Column: "e.state"},
	Field{Name: "automation", Kind: String, Ops: exactOps, Names: ExceptionAutomationName},
	Field{Name: "run", Kind: String, Ops: exactOps, Names: ExceptionRunName},
	Field{Name: "group", Kind: String, Ops: exactOps, Names: ExceptionGroupName},
	Field{Name: "create_time", Kind: Timestamp, Ops: []string{OpEq, OpNe, OpLt, OpLe, OpGt, OpGe}, Column: "e.create_time"},
)
