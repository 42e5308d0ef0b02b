package codec

import (
	"fmt"
	"sort"
	"strings"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/internal/codec/protovalue"
	"github.com/proserun/prose/internal/lang"
	"github.com/proserun/prose/internal/safechange"
	"github.com/proserun/prose/store"
	persistv1 "github.com/proserun/prose/store/persist/v1"
)

// Safe change: an automation's tests (the API's AutomationTest and the
// language's safechange.Case, which the store keeps in the tests-file
// format), what a publish checked, a replay's results, and the record of
// a finished run that a replay re-executes.

// TestError is a test that cannot be read: Field is the request's field
// path ("test.answers[1].value").
type TestError struct {
	Field string
	Msg   string
}

func (e *TestError) Error() string { return e.Field + ": " + e.Msg }

func testErr(field, format string, a ...any) error {
	return &TestError{Field: field, Msg: fmt.Sprintf(format, a...)}
}

func langValues(field string, m map[string]*platformv1.Value) (map[string]lang.Value, error) {
	if len(m) == 0 {
		return nil, nil
	}
	out := make(map[string]lang.Value, len(m))
	for k, v := range m {
		if strings.TrimSpace(k) == "" {
			return nil, testErr(field, "a name is empty")
		}
		lv, err := protovalue.FromProto(v)
		if err != nil {
			return nil, testErr(field+"["+k+"]", "%v", err)
		}
		out[k] = lv
	}
	return out, nil
}

// TestCase reads an API test (under the request's field prefix, "test")
// as the language's test; it does not check the limits (Case.Check does).
func TestCase(p *platformv1.AutomationTest, prefix string) (safechange.Case, error) {
	c := safechange.Case{Name: p.GetDisplayName()}
	var err error
	if c.Inputs, err = langValues(prefix+".inputs", p.GetInputs()); err != nil {
		return c, err
	}
	if p.GetNow() != nil {
		if err := p.GetNow().CheckValid(); err != nil {
			return c, testErr(prefix+".now", "%v", err)
		}
		c.Now = p.GetNow().AsTime()
	}
	for i, a := range p.GetAnswers() {
		field := fmt.Sprintf("%s.answers[%d]", prefix, i)
		ans := safechange.Answer{Asks: a.GetAsks()}
		switch k := a.GetKind().(type) {
		case *platformv1.AutomationTestAnswer_Value:
			ans.Kind = safechange.AnswerValue
			if ans.Value, err = protovalue.FromProto(k.Value); err != nil {
				return c, testErr(field+".value", "%v", err)
			}
		case *platformv1.AutomationTestAnswer_ProvideValues:
			ans.Kind = safechange.AnswerValues
			if ans.Values, err = langValues(field+".provide_values.values", k.ProvideValues.GetValues()); err != nil {
				return c, err
			}
		case *platformv1.AutomationTestAnswer_ProvideExpressions:
			ans.Kind, ans.Expressions = safechange.AnswerValues, k.ProvideExpressions.GetExpressions()
			if len(ans.Expressions) == 0 {
				return c, testErr(field+".provide_expressions.expressions", "names no fact")
			}
		case *platformv1.AutomationTestAnswer_Skip:
			ans.Kind = safechange.AnswerSkip
		case *platformv1.AutomationTestAnswer_ReplaceStep:
			ans.Kind, ans.Code = safechange.AnswerCode, k.ReplaceStep.GetCode()
		default:
			return c, testErr(field, "an answer is one of value, provide_values, skip or replace_step")
		}
		c.Answers = append(c.Answers, ans)
	}
	for i, s := range p.GetBookStubs() {
		field := fmt.Sprintf("%s.book_stubs[%d]", prefix, i)
		st := safechange.Stub{Call: s.GetCall()}
		if st.Inputs, err = langValues(field+".inputs", s.GetInputs()); err != nil {
			return c, err
		}
		switch k := s.GetOutcome().(type) {
		case *platformv1.AutomationTestBookStub_Result:
			v, err := protovalue.FromProto(k.Result)
			if err != nil {
				return c, testErr(field+".result", "%v", err)
			}
			st.Results, st.Repeat = []lang.Value{v}, true
		case *platformv1.AutomationTestBookStub_Results:
			for j, pv := range k.Results.GetValues() {
				v, err := protovalue.FromProto(pv)
				if err != nil {
					return c, testErr(fmt.Sprintf("%s.results.values[%d]", field, j), "%v", err)
				}
				st.Results = append(st.Results, v)
			}
		case *platformv1.AutomationTestBookStub_Error:
			st.Error = k.Error
		}
		c.Books = append(c.Books, st)
	}
	e := p.GetExpect()
	if c.Expect.Outputs, err = langValues(prefix+".expect.outputs", e.GetOutputs()); err != nil {
		return c, err
	}
	if len(e.GetLog()) > 0 {
		c.Expect.Log = e.GetLog()
	}
	if x := e.GetException(); x != nil {
		c.Expect.Exception = &safechange.ExpectedException{Group: x.GetGroup(), Line: int(x.GetLine()), Message: x.GetMessage()}
	}
	return c, nil
}

func protoValues(m map[string]lang.Value) (map[string]*platformv1.Value, error) {
	if len(m) == 0 {
		return nil, nil
	}
	return protovalue.MapToProto(m)
}

// TestProto writes a test as the API shows it (without its name and
// times).
func TestProto(c safechange.Case) (*platformv1.AutomationTest, error) {
	p := &platformv1.AutomationTest{DisplayName: c.Name, Expect: &platformv1.AutomationTestExpectation{}}
	var err error
	if p.Inputs, err = protoValues(c.Inputs); err != nil {
		return nil, err
	}
	if !c.Now.IsZero() {
		p.Now = timestamppb.New(c.Now)
	}
	for _, a := range c.Answers {
		pa := &platformv1.AutomationTestAnswer{Asks: a.Asks}
		switch a.Kind {
		case safechange.AnswerValue:
			v, err := protovalue.ToProto(a.Value)
			if err != nil {
				return nil, err
			}
			pa.Kind = &platformv1.AutomationTestAnswer_Value{Value: v}
		case safechange.AnswerValues:
			if len(a.Expressions) > 0 {
				pa.Kind = &platformv1.AutomationTestAnswer_ProvideExpressions{ProvideExpressions: &platformv1.ProvideExpressions{Expressions: a.Expressions}}
				break
			}
			vs, err := protoValues(a.Values)
			if err != nil {
				return nil, err
			}
			pa.Kind = &platformv1.AutomationTestAnswer_ProvideValues{ProvideValues: &platformv1.ProvideValues{Values: vs}}
		case safechange.AnswerSkip:
			pa.Kind = &platformv1.AutomationTestAnswer_Skip{Skip: &platformv1.Skip{}}
		case safechange.AnswerCode:
			pa.Kind = &platformv1.AutomationTestAnswer_ReplaceStep{ReplaceStep: &platformv1.ReplaceStep{Code: a.Code}}
		}
		p.Answers = append(p.Answers, pa)
	}
	for _, st := range c.Books {
		ps := &platformv1.AutomationTestBookStub{Call: st.Call}
		if ps.Inputs, err = protoValues(st.Inputs); err != nil {
			return nil, err
		}
		switch {
		case st.Error != "":
			ps.Outcome = &platformv1.AutomationTestBookStub_Error{Error: st.Error}
		case st.Repeat && len(st.Results) == 1:
			v, err := protovalue.ToProto(st.Results[0])
			if err != nil {
				return nil, err
			}
			ps.Outcome = &platformv1.AutomationTestBookStub_Result{Result: v}
		default:
			rs := &platformv1.AutomationTestResults{}
			for _, r := range st.Results {
				v, err := protovalue.ToProto(r)
				if err != nil {
					return nil, err
				}
				rs.Values = append(rs.Values, v)
			}
			ps.Outcome = &platformv1.AutomationTestBookStub_Results{Results: rs}
		}
		p.BookStubs = append(p.BookStubs, ps)
	}
	if p.Expect.Outputs, err = protoValues(c.Expect.Outputs); err != nil {
		return nil, err
	}
	p.Expect.Log = c.Expect.Log
	if x := c.Expect.Exception; x != nil {
		p.Expect.Exception = &platformv1.ExpectedException{Group: x.Group, Line: int32(x.Line), Message: x.Message}
	}
	return p, nil
}

// DiffsProto writes output differences as the API shows them.
func DiffsProto(ds []safechange.Diff) ([]*platformv1.OutputDifference, error) {
	var out []*platformv1.OutputDifference
	for _, d := range ds {
		pd := &platformv1.OutputDifference{Output: d.Output, Path: d.Path}
		var err error
		if d.Want.IsValid() {
			if pd.Expected, err = protovalue.ToProto(d.Want); err != nil {
				return nil, err
			}
		}
		if d.Got.IsValid() {
			if pd.Actual, err = protovalue.ToProto(d.Got); err != nil {
				return nil, err
			}
		}
		out = append(out, pd)
	}
	return out, nil
}

// EncodePublishCheck keeps what a publish checked (a persist.v1
// PublishCheck, the platform's message field for field).
func EncodePublishCheck(c *platformv1.PublishCheck) ([]byte, error) {
	if c == nil {
		return nil, nil
	}
	p := &persistv1.PublishCheck{}
	if err := Mirror(p, c); err != nil {
		return nil, err
	}
	return proto.Marshal(p)
}

// DecodePublishCheck reads what a publish checked (nil for nothing).
func DecodePublishCheck(b []byte) (*platformv1.PublishCheck, error) {
	if len(b) == 0 {
		return nil, nil
	}
	p := &persistv1.PublishCheck{}
	if err := proto.Unmarshal(b, p); err != nil {
		return nil, fmt.Errorf("decode publish check: %w", err)
	}
	c := &platformv1.PublishCheck{}
	return c, Mirror(c, p)
}

// ReplayOutcomes are the stored names of the outcomes (the store's
// outcome column) and their API values.
var ReplayOutcomes = map[safechange.Outcome]struct {
	Stored string
	API    platformv1.AutomationReplayResult_Outcome
}{
	safechange.Unchanged:      {"unchanged", platformv1.AutomationReplayResult_OUTCOME_UNCHANGED},
	safechange.OutputsDiffer:  {"outputs_differ", platformv1.AutomationReplayResult_OUTCOME_OUTPUTS_DIFFER},
	safechange.NewException:   {"new_exception", platformv1.AutomationReplayResult_OUTCOME_NEW_EXCEPTION},
	safechange.UnansweredCall: {"unanswered_book_call", platformv1.AutomationReplayResult_OUTCOME_UNANSWERED_BOOK_CALL},
	safechange.Failed:         {"failed", platformv1.AutomationReplayResult_OUTCOME_FAILED},
}

// EncodeReplayResult keeps one replayed run's result (a
// persist.v1.ReplayResultDetails in Data).
func EncodeReplayResult(seq int, created store.Run, r safechange.ReplayResult) (store.ReplayResult, error) {
	d := &persistv1.ReplayResultDetails{Message: r.Message, StartByte: int64(r.Span.Start), EndByte: int64(r.Span.End),
		Line: int32(r.Line), Procedure: r.Procedure}
	for _, x := range r.Diffs {
		pd := &persistv1.OutputDifference{Output: x.Output, Path: x.Path}
		for _, side := range []struct {
			v   lang.Value
			out **persistv1.Value
		}{{x.Want, &pd.Expected}, {x.Got, &pd.Actual}} {
			if !side.v.IsValid() {
				continue
			}
			pv, err := protovalue.ToProto(side.v)
			if err != nil {
				return store.ReplayResult{}, err
			}
			if *side.out, err = ValueToStored(pv); err != nil {
				return store.ReplayResult{}, err
			}
		}
		d.Differences = append(d.Differences, pd)
	}
	data, err := proto.Marshal(d)
	if err != nil {
		return store.ReplayResult{}, err
	}
	return store.ReplayResult{Seq: seq, RunID: created.ID, Outcome: ReplayOutcomes[r.Outcome].Stored, RunCreateTime: created.CreateTime, Data: data}, nil
}

// ReplayResultProto renders a stored result; run is the run's name.
func ReplayResultProto(x store.ReplayResult, run string) (*platformv1.AutomationReplayResult, error) {
	d := &persistv1.ReplayResultDetails{}
	if err := proto.Unmarshal(x.Data, d); err != nil {
		return nil, fmt.Errorf("decode replay result: %w", err)
	}
	out := &platformv1.AutomationReplayResult{Run: run, Message: d.GetMessage(), Line: d.GetLine(), Procedure: d.GetProcedure(),
		RunCreateTime: timestamppb.New(x.RunCreateTime)}
	for _, o := range ReplayOutcomes {
		if o.Stored == x.Outcome {
			out.Outcome = o.API
		}
	}
	if d.GetEndByte() > 0 {
		out.Location = &platformv1.Location{StartByte: d.GetStartByte(), EndByte: d.GetEndByte()}
	}
	for _, pd := range d.GetDifferences() {
		od := &platformv1.OutputDifference{Output: pd.GetOutput(), Path: pd.GetPath()}
		var err error
		if pd.GetExpected() != nil {
			if od.Expected, err = ValueFromStored(pd.GetExpected()); err != nil {
				return nil, err
			}
		}
		if pd.GetActual() != nil {
			if od.Actual, err = ValueFromStored(pd.GetActual()); err != nil {
				return nil, err
			}
		}
		out.Differences = append(out.Differences, od)
	}
	return out, nil
}

// ReplayRecord is what a finished run recorded, as a replay re-executes it
// (see safechange.Replay): the inputs of its one step, the book results of
// its journal in order (the procedure from the journal's key, and the
// key's hash of the inputs), the guidance of its exceptions resolved, and
// how it ended. A run that cannot be replayed says why (Unreplayable).
func ReplayRecord(r store.Run, rec store.RunRecord) safechange.Record {
	out := safechange.Record{Run: r.ID, Created: r.CreateTime, Completed: r.State == store.RunCompleted, Failure: r.Description}
	fail := func(format string, a ...any) safechange.Record {
		out.Unreplayable = fmt.Sprintf(format, a...)
		return out
	}
	steps, err := DecodeSteps(r.Steps)
	if err != nil {
		return fail("its steps cannot be read: %v", err)
	}
	if n := len(steps.GetSteps()); n != 1 {
		return fail("the run has %d steps; a replay replays runs of one step", n)
	}
	code := steps.GetSteps()[0].GetCode()
	in, err := ValuesFromStored(steps.GetInputs())
	if err == nil {
		out.Inputs, err = protovalue.MapFromProto(in)
	}
	if err != nil {
		return fail("its inputs cannot be read: %v", err)
	}
	if out.Completed {
		outs, err := DecodeOutputs(r)
		if err == nil {
			out.Outputs, err = protovalue.MapFromProto(outs)
		}
		if err != nil {
			return fail("its outputs cannot be read: %v", err)
		}
	}
	for _, e := range rec.Journal {
		if e.Step != 0 || e.Kind != "book" {
			continue
		}
		proc, hash, _ := strings.Cut(e.Key, "#")
		i := strings.LastIndexByte(proc, '/')
		if i < 0 {
			return fail("its journal holds an entry of no procedure (%q)", e.Key)
		}
		book, _, _ := strings.Cut(proc[:i], "@")
		outputs, err := DecodeLangValues(e.Data)
		if err != nil {
			return fail("its journal cannot be read: %v", err)
		}
		out.Calls = append(out.Calls, safechange.RecordedCall{Book: book, Procedure: proc[i+1:], Key: hash, Outputs: outputs})
	}
	for _, x := range rec.Resolved {
		if x.Exception.Step != 0 {
			continue
		}
		details, err := DecodeException(x.Exception.Details)
		if err != nil {
			return fail("exception %s cannot be read: %v", x.Exception.ID, err)
		}
		res, err := DecodeGuidance(x.Guidance)
		if err != nil {
			return fail("the guidance of exception %s cannot be read: %v", x.Exception.ID, err)
		}
		loc := x.Exception.Location
		stmt := ""
		if loc.Start >= 0 && loc.End > loc.Start && loc.End <= int64(len(code)) {
			stmt = code[loc.Start:loc.End]
		}
		out.Answers = append(out.Answers, safechange.RecordedAnswer{Statement: stmt, Group: x.Exception.Group,
			Fact: details.Fact, Question: details.Question, Resolution: res})
	}
	return out
}

// SortedNames is the keys of m in order (for stable renderings).
func SortedNames[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
