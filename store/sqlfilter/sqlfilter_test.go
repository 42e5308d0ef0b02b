package sqlfilter

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/proserun/prose/store"
)

func TestTranslate(t *testing.T) {
	ts := time.Date(2024, 5, 1, 10, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name     string
		r        *Resource
		filter   string
		sqlite   string
		postgres string
		args     []any // SQLite values
	}{
		{"title exact", Workspaces, `title = "Sales"`, `(w.title = ?)`, `(w.title = $1)`, []any{"Sales"}},
		{"title not", Workspaces, `title != "Sales"`, `(w.title <> ?)`, `(w.title <> $1)`, []any{"Sales"}},
		{"title has escapes", Workspaces, `title:"50%_off\\"`,
			`(w.title LIKE ? ESCAPE '\')`, `(w.title ILIKE $1 ESCAPE '\')`, []any{`%50\%\_off\\%`}},
		{"or and not", Workspaces, `title = "a" OR NOT title:"b"`,
			`((w.title = ?) OR (NOT (w.title LIKE ? ESCAPE '\')))`, `((w.title = $1) OR (NOT (w.title ILIKE $2 ESCAPE '\')))`, []any{"a", "%b%"}},
		{"state short", Exceptions, `state = PENDING`, `(e.state = ?)`, `(e.state = $1)`, []any{"PENDING"}},
		{"state full quoted", Exceptions, `state != "EXCEPTION_STATE_ARCHIVED"`, `(e.state <> ?)`, `(e.state <> $1)`, []any{"ARCHIVED"}},
		{"create_time Z", Exceptions, `create_time >= "2024-05-01T10:00:00Z"`, `(e.create_time >= ?)`, `(e.create_time >= $1)`, []any{ts.UnixMicro()}},
		{"create_time offset", Exceptions, `create_time < "2024-05-01T12:00:00+02:00"`, `(e.create_time < ?)`, `(e.create_time < $1)`, []any{ts.UnixMicro()}},
		{"create_time timestamp()", Exceptions, `create_time > timestamp("2024-05-01T10:00:00Z")`, `(e.create_time > ?)`, `(e.create_time > $1)`, []any{ts.UnixMicro()}},
		{"ungrouped", Exceptions, `group = ""`, `(e.group_id = ?)`, `(e.group_id = $1)`, []any{""}},
		{"grouped", Exceptions, `group != ""`, `(e.group_id <> ?)`, `(e.group_id <> $1)`, []any{""}},
		// A resource name matches whole: organization, workspace and id.
		{"group by name", Exceptions, `group = "organizations/acme/workspaces/ops/exceptionGroups/missing_values"`,
			`((e.organization_id = ? AND e.workspace_id = ? AND e.group_id = ?))`, `((e.organization_id = $1 AND e.workspace_id = $2 AND e.group_id = $3))`,
			[]any{"acme", "ops", "missing_values"}},
		{"automation by name", Exceptions, `automation != "organizations/acme/workspaces/ops/automations/inv"`,
			`(NOT (e.organization_id = ? AND e.workspace_id = ? AND e.automation_id = ?))`, `(NOT (e.organization_id = $1 AND e.workspace_id = $2 AND e.automation_id = $3))`,
			[]any{"acme", "ops", "inv"}},
		{"run by name", Exceptions, `run = "organizations/acme/workspaces/ops/automations/inv/runs/r1"`,
			`((e.organization_id = ? AND e.workspace_id = ? AND e.automation_id = ? AND e.run_id = ?))`, "",
			[]any{"acme", "ops", "inv", "r1"}},
		{"run by name, any automation", Exceptions, `run = "organizations/acme/workspaces/ops/automations/-/runs/r1"`,
			`((e.organization_id = ? AND e.workspace_id = ? AND e.run_id = ?))`, "", []any{"acme", "ops", "r1"}},
		{"event exception by name", Events, `exception = "organizations/acme/workspaces/ops/exceptions/x1"`,
			`((ev.organization_id = ? AND ev.workspace_id = ? AND ev.exception_id = ?))`, "", []any{"acme", "ops", "x1"}},
		{"runs", Exceptions, `(run = "r1" OR run = "r2") AND state = RESOLVED`,
			`(((e.run_id = ?) OR (e.run_id = ?)) AND (e.state = ?))`, `(((e.run_id = $1) OR (e.run_id = $2)) AND (e.state = $3))`, []any{"r1", "r2", "RESOLVED"}},
		{"role", WorkspaceUsers, `role = "Admin"`, "", "", []any{"Admin", "Admin"}},
		{"role_scope word", WorkspaceUsers, `role_scope = organization`, "", "", nil},
		{"search", WorkspaceUsers, `search:"ann"`, "", "", []any{"%ann%", "%ann%"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := tc.r.Parse(tc.filter)
			if err != nil {
				t.Fatalf("Parse(%q): %v", tc.filter, err)
			}
			if f.String() != tc.filter {
				t.Errorf("String() = %q", f.String())
			}
			a := store.NewArgs(store.SQLite)
			got, err := f.SQL(a)
			if err != nil {
				t.Fatal(err)
			}
			if tc.sqlite != "" && got != tc.sqlite {
				t.Errorf("sqlite SQL = %s, want %s", got, tc.sqlite)
			}
			if !reflect.DeepEqual(a.Values, tc.args) {
				t.Errorf("args = %#v, want %#v", a.Values, tc.args)
			}
			p := store.NewArgs(store.Postgres)
			got, err = f.SQL(p)
			if err != nil {
				t.Fatal(err)
			}
			if tc.postgres != "" && got != tc.postgres {
				t.Errorf("postgres SQL = %s, want %s", got, tc.postgres)
			}
			for _, v := range a.Values {
				if s, ok := v.(string); ok && s != "" && strings.Contains(got, s) {
					t.Errorf("value %q appears in SQL text %s", s, got)
				}
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct {
		r      *Resource
		filter string
		want   string // substring of the error
	}{
		{Workspaces, `name = "x"`, "undeclared identifier 'name'"},
		{Workspaces, `title > "x"`, "does not support operator >"},
		{Workspaces, `title = x`, "undeclared identifier 'x'"},
		{Workspaces, `title = 3`, "no matching overload"},
		{Workspaces, `"x" = title`, "left side"},
		{Workspaces, `title = "a" "b"`, ""},
		{Workspaces, `title = `, ""},
		{Workspaces, `(title = "a"`, ""},
		{Exceptions, `state = "DONE"`, "takes one of"},
		{Exceptions, `state > PENDING`, "does not support operator >"},
		{Exceptions, `automation:"x"`, "does not support operator :"},
		{Exceptions, `create_time > "yesterday"`, "RFC3339"},
		{Exceptions, `create_time > "2024-05-01T10:00:00"`, "RFC3339"},
		{Exceptions, `automation = PENDING`, "must be quoted"},
		{Exceptions, `automation = "workspaces/ops/automations/inv"`, "takes an id or a resource name organizations/{organization}/workspaces/{workspace}/automations/{automation}"},
		{Exceptions, `automation = "organizations/acme/workspaces/ops/runs/inv"`, "takes an id or a resource name"},
		{Exceptions, `run = "organizations/acme/workspaces/ops/automations/inv/runs/-"`, "takes an id or a resource name"},
		{Exceptions, `group = "organizations//workspaces/ops/exceptionGroups/g"`, "takes an id or a resource name"},
		{Events, `exception = "exceptions/x1"`, "takes an id or a resource name"},
		{Exceptions, `state = state`, ""},
		{WorkspaceUsers, `search = "ann"`, "does not support operator ="},
		{WorkspaceUsers, `role_scope = "team"`, "takes one of"},
		{WorkspaceUsers, strings.Repeat("(", 3000) + `role = "a"` + strings.Repeat(")", 3000), ""},
	} {
		_, err := tc.r.Parse(tc.filter)
		if !errors.Is(err, store.ErrInvalidArgument) {
			t.Errorf("Parse(%q) = %v, want ErrInvalidArgument", tc.filter, err)
			continue
		}
		if tc.want != "" && !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse(%q) = %v, want it to mention %q", tc.filter, err, tc.want)
		}
	}
}

func TestEmpty(t *testing.T) {
	f, err := Workspaces.Parse("  ")
	if f != nil || err != nil {
		t.Fatalf("Parse(blank) = %v, %v", f, err)
	}
}

func FuzzFilter(f *testing.F) {
	for _, s := range []string{
		`title = "a"`, `title:"%_"`, `state = PENDING OR NOT (create_time > "2024-01-01T00:00:00Z")`,
		`group != "" AND run = "r"`, `role = "x" AND role_scope = workspace AND search:"y"`, `a.b = 1`, `-title:"x"`, `title = timestamp("x")`,
	} {
		f.Add(s)
	}
	resources := []*Resource{Workspaces, Exceptions, WorkspaceUsers}
	f.Fuzz(func(t *testing.T, s string) {
		for _, r := range resources {
			flt, err := r.Parse(s)
			if err != nil {
				if !errors.Is(err, store.ErrInvalidArgument) {
					t.Fatalf("Parse(%q) error %v is not ErrInvalidArgument", s, err)
				}
				continue
			}
			if flt == nil {
				continue
			}
			for _, d := range []store.Dialect{store.SQLite, store.Postgres} {
				a := store.NewArgs(d)
				q, err := flt.SQL(a)
				if err != nil {
					t.Fatalf("SQL(%q): %v", s, err)
				}
				if strings.Count(q, "?")+strings.Count(q, "$") < len(a.Values) {
					t.Fatalf("SQL(%q) = %s has fewer placeholders than %d values", s, q, len(a.Values))
				}
			}
		}
	})
}
