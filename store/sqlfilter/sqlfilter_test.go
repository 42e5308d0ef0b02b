package sqlfilter

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/proserun/prose/store"
)

func TestParse(t *testing.T) {
	ts := time.Date(2024, 5, 1, 10, 0, 0, 0, time.UTC)
	eq := func(f string, v any) store.Cond { return store.Cond{Field: f, Op: OpEq, Value: v} }
	for _, tc := range []struct {
		name   string
		r      *Resource
		filter string
		want   store.Filter
	}{
		{"title exact", Workspaces, `title = "Sales"`, eq("title", "Sales")},
		{"title has", Workspaces, `title:"50%"`, store.Cond{Field: "title", Op: OpHas, Value: "50%"}},
		{"or and not", Workspaces, `title = "a" OR NOT title:"b"`,
			store.Or{eq("title", "a"), store.Not{Filter: store.Cond{Field: "title", Op: OpHas, Value: "b"}}}},
		{"state short", Exceptions, `state = PENDING`, eq("state", "PENDING")},
		{"state full quoted, ordered", Exceptions, `state < "EXCEPTION_STATE_ARCHIVED"`, store.Cond{Field: "state", Op: OpLt, Value: "ARCHIVED"}},
		{"create_time offset", Exceptions, `create_time < "2024-05-01T12:00:00+02:00"`, store.Cond{Field: "create_time", Op: OpLt, Value: ts}},
		{"create_time timestamp()", Exceptions, `create_time > timestamp("2024-05-01T10:00:00Z")`, store.Cond{Field: "create_time", Op: OpGt, Value: ts}},
		// A resource name matches whole: organization, workspace and id.
		{"group by name", Exceptions, `group = "organizations/acme/workspaces/ops/exceptionGroups/missing_values"`,
			store.And{eq("organization", "acme"), eq("workspace", "ops"), eq("group", "missing_values")}},
		{"automation by name", Exceptions, `automation != "organizations/acme/workspaces/ops/automations/inv"`,
			store.Not{Filter: store.And{eq("organization", "acme"), eq("workspace", "ops"), eq("automation", "inv")}}},
		{"run by name, any automation", Exceptions, `run = "organizations/acme/workspaces/ops/automations/-/runs/r1"`,
			store.And{eq("organization", "acme"), eq("workspace", "ops"), eq("run", "r1")}},
		{"event exception by name", Events, `exception = "organizations/acme/workspaces/ops/exceptions/x1"`,
			store.And{eq("organization", "acme"), eq("workspace", "ops"), eq("exception", "x1")}},
		{"runs", Exceptions, `(run = "r1" OR run = "r2") AND state = RESOLVED`,
			store.And{store.Or{eq("run", "r1"), eq("run", "r2")}, eq("state", "RESOLVED")}},
		{"role_scope word", WorkspaceUsers, `role_scope = ROLE_SCOPE_ORGANIZATION`, eq("role_scope", "organization")},
		{"run state", Runs, `state = COMPLETED`, eq("state", "completed")},
		{"child runs by parent id", Runs, `parent_run = "r1"`, eq("parent_run", "r1")},
		{"runs no run started", Runs, `parent_run = ""`, eq("parent_run", "")},
		{"run by number", Runs, `run_number = 42`, eq("run_number", int64(42))},
		{"runs after a number", Runs, `run_number > 40 AND state = FAILED`,
			store.And{store.Cond{Field: "run_number", Op: OpGt, Value: int64(40)}, eq("state", "failed")}},
		{"child runs by parent name", Runs, `parent_run = "organizations/acme/workspaces/ops/automations/a1/runs/r1"`,
			store.And{eq("organization", "acme"), eq("workspace", "ops"), eq("automation", "a1"), eq("parent_run", "r1")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := tc.r.Parse(tc.filter)
			if err != nil {
				t.Fatalf("Parse(%q): %v", tc.filter, err)
			}
			if f.String() != tc.filter {
				t.Errorf("String() = %q", f.String())
			}
			txt, ok := f.(store.Text)
			if !ok || !reflect.DeepEqual(txt.Filter, tc.want) {
				t.Errorf("Parse(%q) = %#v, want %#v", tc.filter, f, tc.want)
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
		{Runs, `state > pending`, "does not support operator >"},
		{Runs, `run_number = "42"`, "no matching overload"},
		{Runs, `run_number = 4.2`, "no matching overload"},
		{Runs, `run_number : 4`, "no matching overload"},
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
			if flt != nil && flt.String() != s {
				t.Fatalf("Parse(%q).String() = %q", s, flt.String())
			}
		}
	})
}

// TestGuideEntriesContains: the reference's `field contains 'value'` is
// the has operator; the word inside a quoted value is left alone.
func TestGuideEntriesContains(t *testing.T) {
	for in, want := range map[string]string{
		`title contains 'My Guide Entry'`: `title : 'My Guide Entry'`,
		`(title contains 'My Guide Entry' OR resolution_steps contains 'error') AND create_time > "2025-01-01T00:00:00Z"`: `(title : 'My Guide Entry' OR resolution_steps : 'error') AND create_time > "2025-01-01T00:00:00Z"`,
		`title = "it contains x"`:          `title = "it contains x"`,
		`title = 'a \' contains b'`:        `title = 'a \' contains b'`,
		`resolution_code contains "retry"`: `resolution_code : "retry"`,
	} {
		if got := containsAsHas(in); got != want {
			t.Errorf("%s → %s, want %s", in, got, want)
		}
		if _, err := GuideEntries.Parse(in); err != nil {
			t.Errorf("%s: %v", in, err)
		}
	}
	if _, err := Workspaces.Parse(`title contains 'x'`); err == nil {
		t.Error("contains is the guide entries' spelling only")
	}
}
