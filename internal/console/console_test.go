package console

import (
	"net/url"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/internal/codec/protovalue"
)

func TestSafeNext(t *testing.T) {
	for in, want := range map[string]string{
		"": "/", "/w/a/": "/w/a/", "//evil.example": "/", "/\\evil": "/", "https://evil.example": "/", "w/a": "/",
	} {
		if got := safeNext(in); got != want {
			t.Errorf("safeNext(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestTypedValue(t *testing.T) {
	for _, tc := range []struct {
		typ, in, want string
		err           bool
	}{
		{"number", "12.50", "12.50", false},
		{"number", "1,250", "1250", false},
		{"number", "twelve", "", true},
		{"text", " hi ", "hi", false},
		{"date", "2026-11-25", "2026-11-25", false},
		{"date", "25/11", "", true},
		{"yes/no", "Yes", "true", false},
		{"yes/no", "maybe", "", true},
		{"list", "1, a,, 2.5", "", false},
		{"json", "{}", "", true},
	} {
		v, err := typedValue(tc.typ, tc.in)
		if (err != nil) != tc.err {
			t.Errorf("%s %q: error %v", tc.typ, tc.in, err)
			continue
		}
		if err != nil || tc.want == "" {
			continue
		}
		lv, err := protovalue.FromProto(v)
		if err != nil {
			t.Fatal(err)
		}
		if got := lv.String(); got != tc.want {
			t.Errorf("%s %q = %q, want %q", tc.typ, tc.in, got, tc.want)
		}
	}
	vals, err := formValues(url.Values{"fact.0": {"the a"}, "type.0": {"number"}, "value.0": {"1"}, "fact.1": {""}, "fact.2": {"the c"}, "value.2": {"x"}})
	if err != nil || len(vals) != 2 || vals["the a"] == nil || vals["the c"].GetText() != "x" {
		t.Errorf("formValues = %v, %v", vals, err)
	}
}

func TestNumbered(t *testing.T) {
	code := "the x is 1\nthe y is is 2\n"
	lines := numbered(code, 20, 22)
	if len(lines) != 2 || lines[1].N != 2 || !lines[1].Marked || lines[1].Span != "is" || lines[1].Before != "the y is " || lines[1].After != " 2" || lines[0].Marked {
		t.Errorf("numbered = %+v", lines)
	}
	if l := numbered("abc", 3, 3); !l[0].Marked || l[0].Span != " " {
		t.Errorf("span at the end = %+v", l)
	}
	if l := numbered("", -1, -1); len(l) != 1 || l[0].Marked {
		t.Errorf("empty = %+v", l)
	}
}

func TestLineDiff(t *testing.T) {
	d := lineDiff("a\nb\nc\n", "a\nc\nd\n")
	if len(d) != 2 || d[0] != (diffLine{"-", "b"}) || d[1] != (diffLine{"+", "d"}) {
		t.Errorf("lineDiff = %v", d)
	}
	if d := lineDiff("a\n", "a\n"); len(d) != 0 {
		t.Errorf("same = %v", d)
	}
}

func TestInboxFilter(t *testing.T) {
	f := inboxFilter(url.Values{}, "users/me1").Filter
	if f != `state = "PENDING"` {
		t.Errorf("default filter %q", f)
	}
	f = inboxFilter(url.Values{"state": {""}, "group": {"missing_values"}, "automation": {"a1"}, "since": {"2026-11-01"}, "q": {`run = "r"`}}, "users/me1").Filter
	want := `group = "missing_values" AND automation = "a1" AND create_time >= "2026-11-01T00:00:00Z" AND (run = "r")`
	if f != want {
		t.Errorf("filter %q, want %q", f, want)
	}
	for assignee, want := range map[string]string{
		"me":        `state = "PENDING" AND assignee = "users/me1"`,
		"none":      `state = "PENDING" AND assignee = ""`,
		"users/ana": `state = "PENDING" AND assignee = "users/ana"`,
		"":          `state = "PENDING"`,
	} {
		form := inboxFilter(url.Values{"assignee": {assignee}}, "users/me1")
		if form.Filter != want {
			t.Errorf("assignee %q: %q, want %q", assignee, form.Filter, want)
		}
		if got := string(form.With("group", "g")); assignee != "" && !strings.Contains(got, "assignee=") {
			t.Errorf("assignee %q: link %s drops it", assignee, got)
		}
	}
}

// TestHistoryItems: the run page renders each kind of ListRunEvents entry.
func TestHistoryItems(t *testing.T) {
	at := timestamppb.New(time.Unix(1700000000, 0))
	text := func(s string) *platformv1.Value { return &platformv1.Value{Kind: &platformv1.Value_Text{Text: s}} }
	journal := func(j *platformv1.ExecutionJournal) *platformv1.RunEvent {
		j.EventTime = at
		return &platformv1.RunEvent{Event: &platformv1.RunEvent_ExecutionJournal{ExecutionJournal: j}}
	}
	x := "organizations/o/workspaces/w/exceptions/x1"
	evs := []*platformv1.RunEvent{
		{Event: &platformv1.RunEvent_RunUpdate{RunUpdate: &platformv1.RunUpdate{Run: &platformv1.Run{State: &platformv1.RunState{UpdateTime: at,
			State: &platformv1.RunState_Stopped{Stopped: &platformv1.StoppedRunState{Reason: "lunch"}}}}}}},
		journal(&platformv1.ExecutionJournal{Event: &platformv1.ExecutionJournal_NodeExecuted{NodeExecuted: &platformv1.NodeExecuted{
			NodeKind: "Say", Outputs: map[string]*platformv1.Value{"text": text("hello")}}}}),
		journal(&platformv1.ExecutionJournal{Event: &platformv1.ExecutionJournal_NodeExecuted{NodeExecuted: &platformv1.NodeExecuted{
			NodeKind: "FunctionCall", BookFunctionCall: &platformv1.BookFunctionCall{
				BookFunction: &platformv1.BookFunction{BookName: "crm", FunctionName: "lookup"},
				Inputs:       map[string]*platformv1.Value{"id": text("7")}, Output: text("Ana")}}}}),
		journal(&platformv1.ExecutionJournal{ExtraMetadata: map[string]*platformv1.Value{"exception": text(x), "exception_state": text("PENDING")},
			Event: &platformv1.ExecutionJournal_NodeExecuted{NodeExecuted: &platformv1.NodeExecuted{NodeKind: "Exception",
				Error: []*platformv1.ExecutionError{{Id: "x1"}}}}}),
		journal(&platformv1.ExecutionJournal{ExtraMetadata: map[string]*platformv1.Value{"exception": text(x), "exception_state": text("RESOLVED"),
			"resolver": text("guideEntries/g1"), "guidance": text("provide_values")},
			Event: &platformv1.ExecutionJournal_NodePatched{NodePatched: &platformv1.NodePatched{NodeKind: "Exception",
				InputsPatch: map[string]*platformv1.Value{"the total": text("5")}}}}),
		journal(&platformv1.ExecutionJournal{Event: &platformv1.ExecutionJournal_NodeExecuted{NodeExecuted: &platformv1.NodeExecuted{
			NodeKind: "StartRun", Outputs: map[string]*platformv1.Value{"run": text("organizations/o/workspaces/w/automations/a/runs/r9")}}}}),
	}
	var got []string
	for _, h := range historyItems(evs) {
		s := h.Kind + ":" + h.What
		for _, d := range h.Detail {
			s += " [" + d.Name + "=" + d.Value + "]"
		}
		if h.Exception != "" {
			s += " @" + h.Exception
		}
		got = append(got, s)
	}
	want := []string{"state:Stopped: lunch", "say:hello", "call:called lookup of crm [id=7] [→=Ana]", "exception:exception raised @x1",
		"guidance:resolved (provide values) by guideEntries/g1 [the total=5] @x1", "run:started run r9"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("history\n %q\nwant\n %q", got, want)
	}
}
