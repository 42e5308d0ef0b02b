package safechange

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"

	"github.com/proserun/prose/internal/lang"
)

// The limits of tests, one product decision each (docs/safe-change.md).
const (
	// MaxFileBytes bounds a tests file (and an automation's tests together).
	MaxFileBytes = 1 << 20
	// MaxTests bounds the tests of one program or automation.
	MaxTests = 200
	// MaxNameLen bounds a test's name, in characters.
	MaxNameLen = 200
	// MaxAnswers bounds the answers of one test.
	MaxAnswers = 100
	// MaxStubs bounds the book stubs of one test.
	MaxStubs = 100
	// MaxResults bounds the results one stub gives in turn.
	MaxResults = 1000
	// MaxCaseBytes bounds one test as it is written (what a server keeps
	// of it).
	MaxCaseBytes = 64 << 10
)

// DefaultNow is the clock of a test that sets none (`now:`): a test reads
// the same date every time it runs.
var DefaultNow = time.Date(2025, 1, 1, 9, 0, 0, 0, time.UTC)

// Suite is a tests file: the tests of one program.
type Suite struct {
	// Program is the program file the tests are for, relative to the
	// tests file ("": NAME.prose beside NAME.tests.yaml).
	Program string
	Tests   []Case
}

// Case is one test: a run of the program with its inputs, the answers a
// person would give, what its book calls return, and what must come of it.
type Case struct {
	Name   string
	Inputs map[string]lang.Value
	// Now is the clock the run reads (zero: DefaultNow).
	Now time.Time
	// Answers resolve the run's exceptions, in order.
	Answers []Answer
	// Books answer the run's book calls; a call no stub answers fails the
	// test.
	Books  []Stub
	Expect Expect
}

// AnswerKind is what an answer does.
type AnswerKind int

// The kinds of answers.
const (
	// AnswerValue answers a question (ask, a book's question) or gives the
	// missing value the exception asks for.
	AnswerValue AnswerKind = iota
	// AnswerValues sets facts by name (Values, or Expressions evaluated
	// over the run's facts), then runs the statement again.
	AnswerValues
	// AnswerSkip goes on after the statement (validate: accepts the facts).
	AnswerSkip
	// AnswerCode runs Code instead of the statement.
	AnswerCode
)

// Answer is what a person answers to one exception.
type Answer struct {
	// Asks, when set, is the question or fact the exception must ask for:
	// the test fails when the run asks something else.
	Asks   string
	Kind   AnswerKind
	Value  lang.Value
	Values map[string]lang.Value
	// Expressions are Prose expressions by fact name ("the subtotal + the
	// tax"), for AnswerValues instead of Values.
	Expressions map[string]string
	Code        string
}

// Stub answers the calls of one book procedure.
type Stub struct {
	// Call names the procedure: its sentence as its book writes it, with or
	// without its inputs ("send an email", "send an email to a
	// recipient"), its id ("send_email") or book/id ("email/send_email").
	// A stub of a procedure no book offers writes its signature ("get the
	// rate of a currency"): the run calls it as a book procedure.
	Call string
	// Inputs, when set, restrict the stub to calls with these inputs.
	Inputs map[string]lang.Value
	// Results are given in turn, one per call; with Repeat the one result
	// answers every call.
	Results []lang.Value
	Repeat  bool
	// Error, when set, makes every call fail with it (a user_system_error).
	Error string
}

// Expect is what must come of a test's run. Without an exception the run
// must complete.
type Expect struct {
	// Outputs are checked by name ("due" or "output due"); outputs not
	// named are not checked.
	Outputs map[string]lang.Value
	// Log lines must all be said, in this order (other lines may come
	// between them).
	Log []string
	// Exception, when set, is the exception the run must end waiting on.
	Exception *ExpectedException
}

// ExpectedException is an exception a test expects.
type ExpectedException struct {
	// Group is missing_values, user_system_error or internal_error ("":
	// any).
	Group string
	// Line is the program's line (from 1) it is raised at (0: any).
	Line int
	// Message, when set, must be part of the exception's message.
	Message string
}

// Groups are the exception groups an expectation may name.
var Groups = []string{string(lang.GroupMissingValues), string(lang.GroupUserSystemError), string(lang.GroupInternalError)}

// DecodeSuite reads a tests file. Errors name the line.
func DecodeSuite(data []byte) (Suite, error) {
	if len(data) > MaxFileBytes {
		return Suite{}, fmt.Errorf("the tests file has %d bytes, more than the %d a tests file may have", len(data), MaxFileBytes)
	}
	root, err := parseYAML(data)
	if err != nil {
		return Suite{}, err
	}
	if root == nil {
		return Suite{}, errors.New("the tests file is empty: it needs `tests:`, a list of tests")
	}
	var s Suite
	var tests *yaml.Node
	err = fields(root, "the tests file", []string{"program", "tests"}, func(key string, v *yaml.Node) error {
		switch key {
		case "program":
			return text(v, &s.Program)
		case "tests":
			tests = v
		}
		return nil
	})
	if err != nil {
		return Suite{}, err
	}
	if tests == nil || tests.Kind != yaml.SequenceNode {
		return Suite{}, fmt.Errorf("line %d: `tests:` is a list of tests", root.Line)
	}
	r := &valueReader{}
	for i, n := range tests.Content {
		c, err := r.testCase(n)
		if err != nil {
			return Suite{}, fmt.Errorf("test %d: %w", i+1, err)
		}
		s.Tests = append(s.Tests, c)
	}
	return s, s.Check()
}

// Check checks the suite's limits and that its tests' names are unique.
func (s Suite) Check() error {
	if len(s.Tests) > MaxTests {
		return fmt.Errorf("%d tests: a program has at most %d", len(s.Tests), MaxTests)
	}
	seen := map[string]bool{}
	for _, c := range s.Tests {
		if err := c.Check(); err != nil {
			return fmt.Errorf("test %q: %w", c.Name, err)
		}
		k := strings.ToLower(strings.TrimSpace(c.Name))
		if seen[k] {
			return fmt.Errorf("two tests are named %q: a test's name says what it shows, once", c.Name)
		}
		seen[k] = true
	}
	return nil
}

// Check checks one test's fields and limits.
func (c Case) Check() error {
	switch n := utf8.RuneCountInString(c.Name); {
	case strings.TrimSpace(c.Name) == "":
		return errors.New("a test needs a name (`name:`) that says what it shows")
	case n > MaxNameLen:
		return fmt.Errorf("the name has %d characters, more than %d", n, MaxNameLen)
	}
	if len(c.Answers) > MaxAnswers {
		return fmt.Errorf("%d answers: a test gives at most %d", len(c.Answers), MaxAnswers)
	}
	if len(c.Books) > MaxStubs {
		return fmt.Errorf("%d book stubs: a test has at most %d", len(c.Books), MaxStubs)
	}
	for i, a := range c.Answers {
		switch a.Kind {
		case AnswerValue:
			if !a.Value.IsValid() {
				return fmt.Errorf("answer %d has no value", i+1)
			}
		case AnswerValues:
			if len(a.Values) == 0 && len(a.Expressions) == 0 {
				return fmt.Errorf("answer %d: `values:` (or `expressions:`) names at least one fact", i+1)
			}
			for name, src := range a.Expressions {
				if err := lang.CheckExpression(src); err != nil {
					return fmt.Errorf("answer %d: the expression of %s does not parse: %w", i+1, name, err)
				}
			}
		case AnswerCode:
			if strings.TrimSpace(a.Code) == "" {
				return fmt.Errorf("answer %d: `code:` is the Prose that runs instead of the statement", i+1)
			}
		}
	}
	for i, st := range c.Books {
		if strings.TrimSpace(st.Call) == "" {
			return fmt.Errorf("book stub %d: `call:` names the procedure it answers", i+1)
		}
		if st.Error == "" && len(st.Results) == 0 {
			return fmt.Errorf("book stub %d (%s): give `result:`, `results:` or `error:`", i+1, st.Call)
		}
		if len(st.Results) > MaxResults {
			return fmt.Errorf("book stub %d (%s): %d results, at most %d", i+1, st.Call, len(st.Results), MaxResults)
		}
	}
	if x := c.Expect.Exception; x != nil {
		if x.Group != "" && !slices.Contains(Groups, x.Group) {
			return fmt.Errorf("the expected exception's group %q is not one of %s", x.Group, strings.Join(Groups, ", "))
		}
		if x.Line < 0 {
			return fmt.Errorf("the expected exception's line %d is not a line", x.Line)
		}
	}
	return nil
}

// DecodeCase reads one test written as a YAML mapping (a test of a tests
// file on its own: what the server stores).
func DecodeCase(data []byte) (Case, error) {
	root, err := parseYAML(data)
	if err != nil {
		return Case{}, err
	}
	if root == nil {
		return Case{}, errors.New("empty test")
	}
	c, err := (&valueReader{}).testCase(root)
	if err != nil {
		return Case{}, err
	}
	return c, c.Check()
}

func parseYAML(data []byte) (*yaml.Node, error) {
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil
		}
		return nil, fmt.Errorf("not YAML: %w", err)
	}
	if len(doc.Content) == 0 {
		return nil, nil
	}
	return doc.Content[0], nil
}

// fields walks a mapping's keys, refusing keys not in allowed.
func fields(n *yaml.Node, what string, allowed []string, fn func(key string, v *yaml.Node) error) error {
	if n.Kind != yaml.MappingNode {
		return fmt.Errorf("line %d: %s is a mapping (key: value lines)", n.Line, what)
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i]
		if !slices.Contains(allowed, k.Value) {
			return fmt.Errorf("line %d: %s has no %q: it has %s", k.Line, what, k.Value, strings.Join(allowed, ", "))
		}
		if seen[k.Value] {
			return fmt.Errorf("line %d: %q is given twice", k.Line, k.Value)
		}
		seen[k.Value] = true
		if err := fn(k.Value, n.Content[i+1]); err != nil {
			return err
		}
	}
	return nil
}

func text(n *yaml.Node, out *string) error {
	if n.Kind != yaml.ScalarNode || n.ShortTag() == "!!null" {
		return fmt.Errorf("line %d: expected a text", n.Line)
	}
	*out = n.Value
	return nil
}

var caseKeys = []string{"name", "inputs", "now", "answers", "books", "expect"}

func (r *valueReader) testCase(n *yaml.Node) (Case, error) {
	var c Case
	err := fields(n, "a test", caseKeys, func(key string, v *yaml.Node) error {
		switch key {
		case "name":
			return text(v, &c.Name)
		case "inputs":
			m, err := r.facts(v, "inputs")
			c.Inputs = m
			return err
		case "now":
			t, err := r.value(v, 0)
			if err != nil {
				return err
			}
			switch t.Kind() {
			case lang.KindDateTime:
				c.Now = t.AsDateTime()
			case lang.KindDate:
				d := t.AsDate()
				c.Now = time.Date(d.Year, time.Month(d.Month), d.Day, 0, 0, 0, 0, time.UTC)
			default:
				return fmt.Errorf("line %d: `now:` is a datetime (2025-01-01T09:00:00Z) or a date", v.Line)
			}
		case "answers":
			return r.answers(v, &c)
		case "books":
			return r.stubs(v, &c)
		case "expect":
			return r.expect(v, &c.Expect)
		}
		return nil
	})
	if err != nil && c.Name != "" {
		return c, fmt.Errorf("%q: %w", c.Name, err)
	}
	return c, err
}

// facts reads a mapping of fact names to values.
func (r *valueReader) facts(n *yaml.Node, what string) (map[string]lang.Value, error) {
	if n.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("line %d: `%s:` maps names to values", n.Line, what)
	}
	m := map[string]lang.Value{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i]
		if k.Kind != yaml.ScalarNode || strings.TrimSpace(k.Value) == "" {
			return nil, fmt.Errorf("line %d: a name in `%s:` is a word or words", k.Line, what)
		}
		v, err := r.value(n.Content[i+1], 0)
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %w", what, k.Value, err)
		}
		m[k.Value] = v
	}
	return m, nil
}

var answerKeys = []string{"asks", "answer", "values", "expressions", "skip", "code"}

func (r *valueReader) answers(n *yaml.Node, c *Case) error {
	if n.Kind != yaml.SequenceNode {
		return fmt.Errorf("line %d: `answers:` is a list, one answer per exception in order", n.Line)
	}
	for i, an := range n.Content {
		a, err := r.answer(an)
		if err != nil {
			return fmt.Errorf("answer %d: %w", i+1, err)
		}
		c.Answers = append(c.Answers, a)
	}
	return nil
}

// answer reads one answer: a value (the answer, or the missing value), or
// a mapping naming what it does.
func (r *valueReader) answer(n *yaml.Node) (Answer, error) {
	if n.Kind != yaml.MappingNode || !hasAnyKey(n, answerKeys) {
		if n.Kind == yaml.MappingNode {
			return Answer{}, fmt.Errorf("line %d: an answer written as a mapping says what it does: %s (a dictionary answer is written `answer: {…}`)",
				n.Line, strings.Join(answerKeys, ", "))
		}
		v, err := r.value(n, 0)
		return Answer{Kind: AnswerValue, Value: v}, err
	}
	var a Answer
	kinds := 0
	err := fields(n, "an answer", answerKeys, func(key string, v *yaml.Node) error {
		var err error
		switch key {
		case "asks":
			return text(v, &a.Asks)
		case "answer":
			kinds++
			a.Kind = AnswerValue
			a.Value, err = r.value(v, 0)
		case "values":
			kinds++
			a.Kind = AnswerValues
			a.Values, err = r.facts(v, "values")
		case "expressions":
			kinds++
			a.Kind = AnswerValues
			a.Expressions, err = expressions(v)
		case "skip":
			kinds++
			a.Kind = AnswerSkip
			if v.ShortTag() != "!!bool" || v.Value != "true" {
				err = fmt.Errorf("line %d: write `skip: true`", v.Line)
			}
		case "code":
			kinds++
			a.Kind = AnswerCode
			err = text(v, &a.Code)
		}
		return err
	})
	if err == nil && kinds != 1 {
		err = fmt.Errorf("line %d: an answer does one thing: answer, values, expressions, skip or code", n.Line)
	}
	return a, err
}

// expressions reads `expressions:`, Prose expressions by fact name.
func expressions(n *yaml.Node) (map[string]string, error) {
	if n.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("line %d: `expressions:` maps fact names to Prose expressions", n.Line)
	}
	m := map[string]string{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		var src string
		if err := text(n.Content[i+1], &src); err != nil {
			return nil, err
		}
		m[n.Content[i].Value] = src
	}
	return m, nil
}

func hasAnyKey(n *yaml.Node, keys []string) bool {
	for i := 0; i < len(n.Content); i += 2 {
		if slices.Contains(keys, n.Content[i].Value) {
			return true
		}
	}
	return false
}

var stubKeys = []string{"call", "inputs", "result", "results", "error"}

func (r *valueReader) stubs(n *yaml.Node, c *Case) error {
	if n.Kind != yaml.SequenceNode {
		return fmt.Errorf("line %d: `books:` is a list of stubs (call: …, result: …)", n.Line)
	}
	for i, sn := range n.Content {
		var st Stub
		outcomes := 0
		err := fields(sn, "a book stub", stubKeys, func(key string, v *yaml.Node) error {
			var err error
			switch key {
			case "call":
				return text(v, &st.Call)
			case "inputs":
				st.Inputs, err = r.facts(v, "inputs")
			case "result":
				outcomes++
				var res lang.Value
				res, err = r.value(v, 0)
				st.Results, st.Repeat = []lang.Value{res}, true
			case "results":
				outcomes++
				if v.Kind != yaml.SequenceNode {
					return fmt.Errorf("line %d: `results:` is a list, one result per call in turn", v.Line)
				}
				for _, rn := range v.Content {
					res, err := r.value(rn, 0)
					if err != nil {
						return err
					}
					st.Results = append(st.Results, res)
				}
			case "error":
				outcomes++
				err = text(v, &st.Error)
			}
			return err
		})
		if err == nil && outcomes > 1 {
			err = fmt.Errorf("line %d: a stub gives one of result, results or error", sn.Line)
		}
		if err != nil {
			return fmt.Errorf("book stub %d: %w", i+1, err)
		}
		c.Books = append(c.Books, st)
	}
	return nil
}

var expectKeys = []string{"outputs", "log", "exception"}

func (r *valueReader) expect(n *yaml.Node, e *Expect) error {
	return fields(n, "`expect:`", expectKeys, func(key string, v *yaml.Node) error {
		var err error
		switch key {
		case "outputs":
			e.Outputs, err = r.facts(v, "outputs")
		case "log":
			if v.Kind != yaml.SequenceNode {
				return fmt.Errorf("line %d: `log:` is a list of lines", v.Line)
			}
			e.Log = []string{}
			for _, ln := range v.Content {
				var s string
				if err := text(ln, &s); err != nil {
					return err
				}
				e.Log = append(e.Log, s)
			}
		case "exception":
			x := &ExpectedException{}
			err = fields(v, "`exception:`", []string{"group", "line", "message"}, func(key string, f *yaml.Node) error {
				switch key {
				case "group":
					return text(f, &x.Group)
				case "line":
					if err := f.Decode(&x.Line); err != nil || x.Line < 1 {
						return fmt.Errorf("line %d: `line:` is a line of the program, from 1", f.Line)
					}
				case "message":
					return text(f, &x.Message)
				}
				return nil
			})
			e.Exception = x
		}
		return err
	})
}

// EncodeSuite writes a tests file that DecodeSuite reads back.
func EncodeSuite(s Suite) ([]byte, error) {
	root := &yaml.Node{Kind: yaml.MappingNode}
	if s.Program != "" {
		root.Content = append(root.Content, key("program"), str(s.Program))
	}
	list := &yaml.Node{Kind: yaml.SequenceNode}
	for _, c := range s.Tests {
		n, err := caseNode(c)
		if err != nil {
			return nil, fmt.Errorf("test %q: %w", c.Name, err)
		}
		list.Content = append(list.Content, n)
	}
	root.Content = append(root.Content, key("tests"), list)
	return marshal(root)
}

// EncodeCase writes one test as a YAML mapping that DecodeCase reads back.
func EncodeCase(c Case) ([]byte, error) {
	n, err := caseNode(c)
	if err != nil {
		return nil, err
	}
	return marshal(n)
}

func marshal(n *yaml.Node) ([]byte, error) {
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(n); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

func key(s string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s} }
func str(s string) *yaml.Node { return key(s) }

func factsNode(m map[string]lang.Value) (*yaml.Node, error) {
	n := &yaml.Node{Kind: yaml.MappingNode}
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, k := range names {
		v, err := valueNode(m[k])
		if err != nil {
			return nil, fmt.Errorf("%s: %w", k, err)
		}
		n.Content = append(n.Content, key(k), v)
	}
	return n, nil
}

func caseNode(c Case) (*yaml.Node, error) {
	n := &yaml.Node{Kind: yaml.MappingNode}
	add := func(k string, v *yaml.Node) { n.Content = append(n.Content, key(k), v) }
	add("name", str(c.Name))
	if len(c.Inputs) > 0 {
		in, err := factsNode(c.Inputs)
		if err != nil {
			return nil, err
		}
		add("inputs", in)
	}
	if !c.Now.IsZero() {
		now, _ := valueNode(lang.DateTimeValue(c.Now))
		now.Tag = "!!timestamp"
		add("now", now)
	}
	if len(c.Answers) > 0 {
		list := &yaml.Node{Kind: yaml.SequenceNode}
		for _, a := range c.Answers {
			an, err := answerNode(a)
			if err != nil {
				return nil, err
			}
			list.Content = append(list.Content, an)
		}
		add("answers", list)
	}
	if len(c.Books) > 0 {
		list := &yaml.Node{Kind: yaml.SequenceNode}
		for _, st := range c.Books {
			sn, err := stubNode(st)
			if err != nil {
				return nil, err
			}
			list.Content = append(list.Content, sn)
		}
		add("books", list)
	}
	ex, err := expectNode(c.Expect)
	if err != nil {
		return nil, err
	}
	if len(ex.Content) > 0 {
		add("expect", ex)
	}
	return n, nil
}

func answerNode(a Answer) (*yaml.Node, error) {
	n := &yaml.Node{Kind: yaml.MappingNode, Style: yaml.FlowStyle}
	if a.Asks != "" {
		n.Content = append(n.Content, key("asks"), str(a.Asks))
	}
	switch a.Kind {
	case AnswerValue:
		v, err := valueNode(a.Value)
		if err != nil {
			return nil, err
		}
		if a.Asks == "" && v.Kind != yaml.MappingNode {
			return v, nil
		}
		n.Content = append(n.Content, key("answer"), v)
	case AnswerValues:
		if len(a.Expressions) > 0 {
			x := &yaml.Node{Kind: yaml.MappingNode, Style: yaml.FlowStyle}
			for _, k := range sortedKeys(a.Expressions) {
				x.Content = append(x.Content, key(k), str(a.Expressions[k]))
			}
			n.Content = append(n.Content, key("expressions"), x)
			break
		}
		v, err := factsNode(a.Values)
		if err != nil {
			return nil, err
		}
		v.Style = yaml.FlowStyle
		n.Content = append(n.Content, key("values"), v)
	case AnswerSkip:
		n.Content = append(n.Content, key("skip"), &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: "true"})
	case AnswerCode:
		n.Style = 0
		n.Content = append(n.Content, key("code"), str(a.Code))
	}
	return n, nil
}

func stubNode(st Stub) (*yaml.Node, error) {
	n := &yaml.Node{Kind: yaml.MappingNode}
	n.Content = append(n.Content, key("call"), str(st.Call))
	if len(st.Inputs) > 0 {
		in, err := factsNode(st.Inputs)
		if err != nil {
			return nil, err
		}
		in.Style = yaml.FlowStyle
		n.Content = append(n.Content, key("inputs"), in)
	}
	switch {
	case st.Error != "":
		n.Content = append(n.Content, key("error"), str(st.Error))
	case st.Repeat && len(st.Results) == 1:
		v, err := valueNode(st.Results[0])
		if err != nil {
			return nil, err
		}
		n.Content = append(n.Content, key("result"), v)
	default:
		list := &yaml.Node{Kind: yaml.SequenceNode}
		for _, res := range st.Results {
			v, err := valueNode(res)
			if err != nil {
				return nil, err
			}
			list.Content = append(list.Content, v)
		}
		n.Content = append(n.Content, key("results"), list)
	}
	return n, nil
}

func expectNode(e Expect) (*yaml.Node, error) {
	n := &yaml.Node{Kind: yaml.MappingNode}
	if e.Outputs != nil {
		out, err := factsNode(e.Outputs)
		if err != nil {
			return nil, err
		}
		n.Content = append(n.Content, key("outputs"), out)
	}
	if e.Log != nil {
		list := &yaml.Node{Kind: yaml.SequenceNode}
		for _, l := range e.Log {
			list.Content = append(list.Content, str(l))
		}
		n.Content = append(n.Content, key("log"), list)
	}
	if x := e.Exception; x != nil {
		xn := &yaml.Node{Kind: yaml.MappingNode, Style: yaml.FlowStyle}
		if x.Group != "" {
			xn.Content = append(xn.Content, key("group"), str(x.Group))
		}
		if x.Line > 0 {
			xn.Content = append(xn.Content, key("line"), &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: fmt.Sprint(x.Line)})
		}
		if x.Message != "" {
			xn.Content = append(xn.Content, key("message"), str(x.Message))
		}
		n.Content = append(n.Content, key("exception"), xn)
	}
	return n, nil
}
