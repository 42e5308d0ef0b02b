package sqlfilter

import (
	"fmt"

	"github.com/proserun/prose/store"
)

// anyWsBinding is a workspace role of the member in any workspace of the
// organization (alias m: organization_members).
const anyWsBinding = `EXISTS (SELECT 1 FROM workspace_role_bindings rb WHERE rb.organization_id = m.organization_id
		AND rb.user_id = m.user_id%s)`

// OrganizationUsers is the filter of ListOrganizationUsers (aliases m:
// organization_members, u: users): role (role name, case-insensitive exact;
// an organization role, or a workspace role in any workspace), role_scope
// (organization | workspace), search (":" partial match on display name or
// e-mail).
var OrganizationUsers = mustResource("organization users",
	Field{Name: "role", Kind: String, Ops: []string{OpEq, OpNe}, Column: "rb.role_id",
		Render: func(a *store.Args, op string, v any) (string, error) {
			o := fmt.Sprintf(orgBinding, " AND lower(rb.role_id) = lower("+a.Add(v)+")")
			w := fmt.Sprintf(anyWsBinding, " AND lower(rb.role_id) = lower("+a.Add(v)+")")
			return negate(op, o+" OR "+w), nil
		}},
	Field{Name: "role_scope", Kind: Enum, Ops: []string{OpEq, OpNe}, Values: roleScopes, Column: "scope",
		Render: func(a *store.Args, op string, v any) (string, error) {
			s := fmt.Sprintf(anyWsBinding, "")
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
