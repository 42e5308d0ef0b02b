package console

import (
	"sort"
	"strings"

	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/internal/codec/protovalue"
	"github.com/proserun/prose/internal/lang"
	"github.com/proserun/prose/internal/names"
)

// The run page shows the run as its program: the code of the version it
// ran, each line with what the run's history says happened there (a fact
// set, a book call, a `say`, an exception and its guidance), the lines
// that left no trace before the last line reached dimmed.

// progLine is a line of a run's program.
type progLine struct {
	N     int
	Toks  []codeTok
	Ran   bool
	Blank bool
	Notes []lineNote
}

// codeTok is a piece of a line, with its class for highlighting (k a
// keyword, s a text, n a number, "" the rest).
type codeTok struct{ Class, Text string }

// lineNote is one thing the run did at a line.
type lineNote struct {
	// Kind is fact, call, say, run, exception or guidance (the CSS class).
	Kind, Label string
	Value       valueView
	Detail      []factView
	// Exception links the exception a note is about; By is who resolved
	// it (users/…, agents/…, guideEntries/…; named by the page); Href
	// the exception's page.
	Exception, By, Href string
}

// valueView is a value as people write it; a table as a table.
type valueView struct {
	Text  string
	Table *tableView
}

type tableView struct {
	Columns []string
	Rows    [][]string
}

// maxTableRows bounds the rows of a table a note shows.
const maxTableRows = 20

func viewValue(v *platformv1.Value) valueView {
	lv, err := protovalue.FromProto(v)
	if err != nil {
		return valueView{Text: "(unreadable value)"}
	}
	if lv.Kind() != lang.KindTable {
		return valueView{Text: lv.String()}
	}
	t := lv.AsTable()
	tv := &tableView{}
	for _, c := range t.Columns {
		tv.Columns = append(tv.Columns, c.Name)
	}
	for i := range min(t.NumRows(), maxTableRows) {
		var row []string
		for _, c := range t.Columns {
			row = append(row, c.Values[i].String())
		}
		tv.Rows = append(tv.Rows, row)
	}
	return valueView{Table: tv}
}

// program lays out code with the notes of the run's history at their
// lines. done: the run went to its end, so every line of the top level
// it reached ran.
func program(code string, evs []*platformv1.RunEvent, xs map[string]*platformv1.Exception, done bool) []progLine {
	raw := strings.Split(strings.TrimRight(code, "\n"), "\n")
	starts := make([]int, len(raw))
	lines := make([]progLine, len(raw))
	off := 0
	for i, l := range raw {
		starts[i] = off
		off += len(l) + 1
		lines[i] = progLine{N: i + 1, Toks: highlight(l), Blank: strings.TrimSpace(l) == ""}
	}
	lineOf := func(b int64) int {
		return max(0, sort.SearchInts(starts, int(b)+1)-1)
	}
	for _, ev := range evs {
		at, n, ok := eventNote(ev, xs)
		if ok && len(lines) > 0 {
			i := lineOf(at)
			lines[i].Notes = append(lines[i].Notes, n)
		}
	}
	markRan(lines, raw, done)
	return lines
}

// eventNote turns an entry of the run's history into a note and the byte
// where it happened.
func eventNote(ev *platformv1.RunEvent, xs map[string]*platformv1.Exception) (int64, lineNote, bool) {
	j := ev.GetExecutionJournal()
	if j == nil {
		return 0, lineNote{}, false
	}
	meta := func(k string) string { return j.GetExtraMetadata()[k].GetText() }
	if p := j.GetNodePatched(); p != nil {
		n := lineNote{Kind: "guidance", Exception: names.ID(meta("exception")), By: meta("resolver")}
		n.Label = guidanceLabel(meta("guidance"))
		if strings.HasPrefix(n.By, "guideEntries/") {
			n.Label = "learning applied: " + n.Label
		}
		for _, k := range sortedValueKeys(p.GetInputsPatch()) {
			n.Detail = append(n.Detail, factView{k, valueText(p.GetInputsPatch()[k])})
		}
		if p.GetCodePatch() != "" {
			n.Detail = append(n.Detail, factView{"code", p.GetCodePatch()})
		}
		return p.GetCodeLocation().GetStartByte(), n, true
	}
	x := j.GetNodeExecuted()
	at := x.GetCodeLocation().GetStartByte()
	switch x.GetNodeKind() {
	case "SetFact":
		n := lineNote{Kind: "fact", Label: meta("fact")}
		if v, ok := x.GetOutputs()[meta("fact")]; ok {
			n.Value = viewValue(v)
		} else {
			n.Value = valueView{Text: "(" + article(meta("kind")) + " too large to show)"}
		}
		return at, n, true
	case "Say":
		return at, lineNote{Kind: "say", Label: "said", Value: valueView{Text: x.GetOutputs()["text"].GetText()}}, true
	case "FunctionCall":
		return at, callNote(x), true
	case "StartRun":
		return at, lineNote{Kind: "run", Label: "started run " + names.ID(x.GetOutputs()["run"].GetText())}, true
	case "Exception":
		return exceptionNote(at, meta, x, xs)
	}
	return 0, lineNote{}, false
}

func callNote(x *platformv1.NodeExecuted) lineNote {
	c := x.GetBookFunctionCall()
	n := lineNote{Kind: "call", Label: "called " + c.GetBookFunction().GetFunctionName() + " of " + c.GetBookFunction().GetBookName()}
	for _, k := range sortedValueKeys(c.GetInputs()) {
		n.Detail = append(n.Detail, factView{k, valueText(c.GetInputs()[k])})
	}
	if c.GetOutput() != nil {
		n.Value = viewValue(c.GetOutput())
	}
	return n
}

func exceptionNote(at int64, meta func(string) string, x *platformv1.NodeExecuted, xs map[string]*platformv1.Exception) (int64, lineNote, bool) {
	id := names.ID(meta("exception"))
	if meta("exception_state") != "PENDING" || len(x.GetError()) == 0 {
		return 0, lineNote{}, false // archived or brought back: the history says so
	}
	n := lineNote{Kind: "exception", Exception: id, Label: "exception raised"}
	if e := xs[id]; e != nil {
		n.Label = e.GetMessage()
		if q := e.GetGuidanceRequest().GetQuestion(); q != "" {
			n.Detail = append(n.Detail, factView{"asked", q})
		}
		n.Value = valueView{Text: stateWords(e.GetState())}
	}
	return at, n, true
}

// stateWords says an exception's state as the run page does.
func stateWords(s platformv1.ExceptionState) string {
	switch s {
	case platformv1.ExceptionState_EXCEPTION_STATE_PENDING:
		return "waiting for guidance"
	case platformv1.ExceptionState_EXCEPTION_STATE_RESOLVED:
		return "resolved"
	case platformv1.ExceptionState_EXCEPTION_STATE_ARCHIVED:
		return "archived"
	}
	return ""
}

func guidanceLabel(kind string) string {
	switch kind {
	case "answer":
		return "answered"
	case "provide_values":
		return "values provided"
	case "skip":
		return "step skipped"
	case "retry":
		return "retried"
	case "replace_step":
		return "step replaced"
	case "":
		return "resolved"
	}
	return "resolved (" + strings.ReplaceAll(kind, "_", " ") + ")"
}

func article(kind string) string {
	if kind == "" {
		return "a value"
	}
	if strings.ContainsAny(kind[:1], "aeiou") {
		return "an " + kind
	}
	return "a " + kind
}

func sortedValueKeys(m map[string]*platformv1.Value) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// markRan marks the lines the run went through: a line with a note, and
// a line before one in the same block (the lines after it, up to that
// one, are indented at least as deep). A branch not taken, and what comes
// after the line a run waits at, stay dimmed. A run that went to its end
// went through its whole top level.
func markRan(lines []progLine, raw []string, done bool) {
	depth := func(i int) int { return len(raw[i]) - len(strings.TrimLeft(raw[i], " \t")) }
	// best: over the noted lines below, the shallowest depth on the way
	// there, at its deepest; -1: no noted line below
	best := -1
	if done {
		best = 0 // the end of the run stands below the top level
	}
	for i := len(lines) - 1; i >= 0; i-- {
		if lines[i].Blank {
			continue
		}
		d := depth(i)
		noted := len(lines[i].Notes) > 0
		lines[i].Ran = noted || best >= d
		below := -1
		if best >= 0 {
			below = min(d, best)
		}
		if noted {
			below = d
		}
		best = below
	}
}

// keywords open a statement of the language (highlighted).
var keywords = map[string]bool{
	"say": true, "get": true, "find": true, "ask": true, "if": true, "else": true, "otherwise": true, "then": true,
	"process": true, "each": true, "as": true, "follows": true, "add": true, "subtract": true, "multiply": true, "divide": true,
	"set": true, "stop": true, "return": true, "to": true, "use": true, "validate": true, "imagine": true, "remove": true,
	"start": true, "wait": true, "is": true, "are": true, "where": true, "with": true, "and": true, "or": true, "not": true,
}

// highlight splits a line into keywords, texts, numbers and the rest.
func highlight(l string) []codeTok {
	var out []codeTok
	plain := func(s string) {
		if s == "" {
			return
		}
		if n := len(out); n > 0 && out[n-1].Class == "" {
			out[n-1].Text += s
			return
		}
		out = append(out, codeTok{Text: s})
	}
	for i := 0; i < len(l); {
		switch c := l[i]; {
		case c == '"':
			j := strings.IndexByte(l[i+1:], '"')
			end := len(l)
			if j >= 0 {
				end = i + 2 + j
			}
			out = append(out, codeTok{"s", l[i:end]})
			i = end
		case isWordByte(c):
			j := i
			for j < len(l) && (isWordByte(l[j]) || l[j] == '.' && j+1 < len(l) && l[j+1] >= '0' && l[j+1] <= '9') {
				j++
			}
			w := l[i:j]
			switch {
			case w[0] >= '0' && w[0] <= '9':
				out = append(out, codeTok{"n", w})
			case keywords[strings.ToLower(w)]:
				out = append(out, codeTok{"k", w})
			default:
				plain(w)
			}
			i = j
		default:
			plain(l[i : i+1])
			i++
		}
	}
	return out
}

func isWordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c >= 0x80
}
