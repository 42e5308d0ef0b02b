package sqlstore

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/proserun/prose/store"
	"github.com/proserun/prose/store/sqlfilter"
)

// The SQL each allow-list's filters become, on both dialects; values are
// bound, never in the text. (What the SQL selects is the store suite's.)
func TestFilterSQL(t *testing.T) {
	ts := time.Date(2024, 5, 1, 10, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name     string
		r        *sqlfilter.Resource
		fs       fields
		filter   string
		sqlite   string
		postgres string
		args     []any // SQLite values
	}{
		{"title exact", sqlfilter.Workspaces, workspaceFields, `title = "Sales"`, `(w.title = ?)`, `(w.title = $1)`, []any{"Sales"}},
		{"title not", sqlfilter.Workspaces, workspaceFields, `title != "Sales"`, `(w.title <> ?)`, `(w.title <> $1)`, []any{"Sales"}},
		{"title has escapes", sqlfilter.Workspaces, workspaceFields, `title:"50%_off\\"`,
			`(w.title LIKE ? ESCAPE '\')`, `(w.title ILIKE $1 ESCAPE '\')`, []any{`%50\%\_off\\%`}},
		{"or and not", sqlfilter.Workspaces, workspaceFields, `title = "a" OR NOT title:"b"`,
			`((w.title = ?) OR (NOT (w.title LIKE ? ESCAPE '\')))`, `((w.title = $1) OR (NOT (w.title ILIKE $2 ESCAPE '\')))`, []any{"a", "%b%"}},
		{"state short", sqlfilter.Exceptions, exceptionFields, `state = PENDING`, `(e.state = ?)`, `(e.state = $1)`, []any{"PENDING"}},
		{"state full quoted", sqlfilter.Exceptions, exceptionFields, `state != "EXCEPTION_STATE_ARCHIVED"`, `(e.state <> ?)`, `(e.state <> $1)`, []any{"ARCHIVED"}},
		{"state ordered", sqlfilter.Exceptions, exceptionFields, `state > PENDING`, `(e.state IN (?, ?))`, `(e.state IN ($1, $2))`, []any{"RESOLVED", "ARCHIVED"}},
		{"state below the first", sqlfilter.Exceptions, exceptionFields, `state < PENDING`, `(1 = 0)`, `(1 = 0)`, nil},
		{"create_time Z", sqlfilter.Exceptions, exceptionFields, `create_time >= "2024-05-01T10:00:00Z"`, `(e.create_time >= ?)`, `(e.create_time >= $1)`, []any{ts.UnixMicro()}},
		{"create_time offset", sqlfilter.Exceptions, exceptionFields, `create_time < "2024-05-01T12:00:00+02:00"`, `(e.create_time < ?)`, `(e.create_time < $1)`, []any{ts.UnixMicro()}},
		{"ungrouped", sqlfilter.Exceptions, exceptionFields, `group = ""`, `(e.group_id = ?)`, `(e.group_id = $1)`, []any{""}},
		{"group by name", sqlfilter.Exceptions, exceptionFields, `group = "organizations/acme/workspaces/ops/exceptionGroups/missing_values"`,
			`((e.organization_id = ?) AND (e.workspace_id = ?) AND (e.group_id = ?))`, `((e.organization_id = $1) AND (e.workspace_id = $2) AND (e.group_id = $3))`,
			[]any{"acme", "ops", "missing_values"}},
		{"automation by name", sqlfilter.Exceptions, exceptionFields, `automation != "organizations/acme/workspaces/ops/automations/inv"`,
			`(NOT ((e.organization_id = ?) AND (e.workspace_id = ?) AND (e.automation_id = ?)))`, "", []any{"acme", "ops", "inv"}},
		{"event exception by name", sqlfilter.Events, eventFields, `exception = "organizations/acme/workspaces/ops/exceptions/x1"`,
			`((ev.organization_id = ?) AND (ev.workspace_id = ?) AND (ev.exception_id = ?))`, "", []any{"acme", "ops", "x1"}},
		{"runs", sqlfilter.Exceptions, exceptionFields, `(run = "r1" OR run = "r2") AND state = RESOLVED`,
			`(((e.run_id = ?) OR (e.run_id = ?)) AND (e.state = ?))`, `(((e.run_id = $1) OR (e.run_id = $2)) AND (e.state = $3))`, []any{"r1", "r2", "RESOLVED"}},
		{"role", sqlfilter.WorkspaceUsers, workspaceUserFields, `role = "Admin"`, "", "", []any{"Admin", "Admin"}},
		{"role_scope word", sqlfilter.WorkspaceUsers, workspaceUserFields, `role_scope = organization`, "", "", nil},
		{"search", sqlfilter.OrganizationUsers, organizationUserFields, `search:"ann"`, "", "", []any{"%ann%", "%ann%"}},
		{"runs state", sqlfilter.Runs, runFields, `state = "COMPLETED"`, `(r.state = ?)`, `(r.state = $1)`, []any{"completed"}},
		{"automation", sqlfilter.Automations, automationFields, `display_name:"x"`, `(a.display_name LIKE ? ESCAPE '\')`, `(a.display_name ILIKE $1 ESCAPE '\')`, []any{"%x%"}},
		{"events", sqlfilter.Events, eventFields, `exception = ""`, `(ev.exception_id = ?)`, `(ev.exception_id = $1)`, []any{""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := tc.r.Parse(tc.filter)
			if err != nil {
				t.Fatalf("Parse(%q): %v", tc.filter, err)
			}
			a := NewArgs(store.SQLite)
			got, err := tc.fs.where(a, f)
			if err != nil {
				t.Fatal(err)
			}
			if tc.sqlite != "" && got != tc.sqlite {
				t.Errorf("sqlite SQL = %s, want %s", got, tc.sqlite)
			}
			if !reflect.DeepEqual(a.Values, tc.args) {
				t.Errorf("args = %#v, want %#v", a.Values, tc.args)
			}
			p := NewArgs(store.Postgres)
			got, err = tc.fs.where(p, f)
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

// Every field of every allow-list has SQL in its list's fields, for every
// operator the allow-list accepts.
func TestAllowListsHaveSQL(t *testing.T) {
	for _, tc := range []struct {
		r  *sqlfilter.Resource
		fs fields
	}{
		{sqlfilter.Workspaces, workspaceFields},
		{sqlfilter.WorkspaceUsers, workspaceUserFields},
		{sqlfilter.OrganizationUsers, organizationUserFields},
		{sqlfilter.Exceptions, exceptionFields},
		{sqlfilter.Events, eventFields},
		{sqlfilter.Runs, runFields},
		{sqlfilter.Automations, automationFields},
		{sqlfilter.AutomationTriggers, automationTriggerFields},
		{sqlfilter.TriggerInstances, triggerInstanceFields},
	} {
		for _, name := range tc.r.Fields() {
			fd := tc.r.Field(name)
			var v any = "x"
			switch fd.Kind {
			case sqlfilter.Timestamp:
				v = time.Now()
			case sqlfilter.Integer:
				v = int64(42)
			case sqlfilter.Enum:
				for _, stored := range fd.Values {
					v = stored
					break
				}
			}
			for _, op := range fd.Ops {
				c := store.Cond{Field: name, Op: op, Value: v}
				if _, err := tc.fs.where(NewArgs(store.SQLite), c); err != nil {
					t.Errorf("%v: %v", c, err)
				}
			}
		}
	}
}

// Conditions the lists do not have, or of the wrong type, are
// ErrInvalidArgument.
func TestFilterErrors(t *testing.T) {
	for _, f := range []store.Filter{
		store.Cond{Field: "nope", Op: store.OpEq, Value: "x"},
		store.Cond{Field: "create_time", Op: store.OpEq, Value: "yesterday"},
		store.Cond{Field: "state", Op: store.OpEq, Value: time.Now()},
		store.Cond{Field: "state", Op: store.OpEq, Value: "DONE"},
		store.Cond{Field: "run", Op: "~", Value: "x"},
		store.And{store.Not{Filter: store.In{Field: "nope"}}},
	} {
		if _, err := exceptionFields.where(NewArgs(store.SQLite), f); !errors.Is(err, store.ErrInvalidArgument) {
			t.Errorf("%v: %v, want ErrInvalidArgument", f, err)
		}
	}
}

func TestLikeEscape(t *testing.T) {
	if got := likeEscape(`a%b_c\d`); got != `a\%b\_c\\d` {
		t.Errorf("likeEscape = %q", got)
	}
}

func FuzzFilter(f *testing.F) {
	for _, s := range []string{
		`title = "a"`, `title:"%_"`, `state = PENDING OR NOT (create_time > "2024-01-01T00:00:00Z")`, `state <= RESOLVED`,
		`group != "" AND run = "r"`, `role = "x" AND role_scope = workspace AND search:"y"`, `a.b = 1`, `-title:"x"`, `title = timestamp("x")`,
	} {
		f.Add(s)
	}
	lists := []struct {
		r  *sqlfilter.Resource
		fs fields
	}{{sqlfilter.Workspaces, workspaceFields}, {sqlfilter.Exceptions, exceptionFields}, {sqlfilter.WorkspaceUsers, workspaceUserFields}}
	f.Fuzz(func(t *testing.T, s string) {
		for _, l := range lists {
			flt, err := l.r.Parse(s)
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
				a := NewArgs(d)
				q, err := l.fs.where(a, flt)
				if err != nil {
					t.Fatalf("where(%q): %v", s, err)
				}
				if strings.Count(q, "?")+strings.Count(q, "$") < len(a.Values) {
					t.Fatalf("where(%q) = %s has fewer placeholders than %d values", s, q, len(a.Values))
				}
			}
		}
	})
}
