package server_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/fieldmaskpb"

	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/internal/codec/protovalue"
	"github.com/proserun/prose/internal/lang"
	"github.com/proserun/prose/internal/names"
	"github.com/proserun/prose/server/testenv"
	"github.com/proserun/prose/store"
)

const testSvc = "/prose.platform.v1.AutomationTestService/"

// switchBook is the stamp book (`stamp a ticket (the stamp)`) at an
// endpoint of the test: it answers until failing is set, then fails every
// call and counts it. A replay or a test that called it would show.
type switchBook struct {
	srv     *httptest.Server
	failing atomic.Bool
	calls   atomic.Int64 // while failing
}

func newSwitchBook(t *testing.T) *switchBook {
	b := &switchBook{}
	b.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if b.failing.Load() {
			b.calls.Add(1)
			http.Error(w, "this book must not be called", http.StatusInternalServerError)
			return
		}
		var req struct {
			Inputs struct {
				Ticket string `json:"ticket"`
			} `json:"inputs"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"outputs": map[string]string{"stamp": "S:" + req.Inputs.Ticket}})
	}))
	t.Cleanup(b.srv.Close)
	return b
}

const feeCode = `get the amount
the ticket is "T-" + the amount
stamp the ticket
the output stamp is the above
the output fee is the amount * 0.02
if the amount is greater than 1000 then
  the output fee is the output fee + 5
say "Fee: " + the output fee
`

func decimal(s string) *platformv1.Value {
	v, _ := protovalue.ToProto(lang.Num(lang.MustNumber(s)))
	return v
}

func txt(s string) *platformv1.Value {
	v, _ := protovalue.ToProto(lang.Text(s))
	return v
}

// errReason is the reason of a call's error over either transport.
func errReason(t *testing.T, tr apiTransport, err error) string {
	t.Helper()
	if tr.grpc {
		return testenv.GRPCReason(err)
	}
	var m map[string]any
	if jerr := json.Unmarshal([]byte(status.Convert(err).Message()), &m); jerr != nil {
		t.Fatalf("an HTTP error body that is not JSON: %v", err)
	}
	return testenv.HTTPReason(m)
}

// preconditions are the PreconditionFailure subjects of a call's error.
func preconditions(t *testing.T, tr apiTransport, err error) []string {
	t.Helper()
	var out []string
	if tr.grpc {
		for _, d := range status.Convert(err).Details() {
			if pf, ok := d.(*errdetails.PreconditionFailure); ok {
				for _, v := range pf.GetViolations() {
					out = append(out, v.GetType()+" "+v.GetSubject())
				}
			}
		}
		return out
	}
	var m map[string]any
	_ = json.Unmarshal([]byte(status.Convert(err).Message()), &m)
	details, _ := m["details"].([]any)
	for _, d := range details {
		vs, _ := testenv.Field(d, "violations").([]any)
		for _, v := range vs {
			if s := testenv.Field(v, "subject"); s != nil {
				out = append(out, fmt.Sprint(testenv.Field(v, "type"), " ", s))
			}
		}
	}
	return out
}

// TestReplayShowsTheRunsAChangeChanges is the acceptance test of replay:
// a published automation has finished runs (one answered by a person);
// the draft changes its arithmetic for large amounts; the replay reports
// exactly the runs whose outputs change, with their values, and calls no
// book (the book fails every call once the runs are recorded). Then the
// gate: a test expecting the old fee fails, publish is refused listing
// the test and the runs, and a publish forced with a reason goes through
// and its revision records what was checked. Over HTTP and gRPC, on SQLite
// and (PROSE_TEST_POSTGRES_URL) PostgreSQL.
func TestReplayShowsTheRunsAChangeChanges(t *testing.T) {
	e := newTestEnv(t)
	book := newSwitchBook(t)
	e.registerStampBook(t, book.srv.URL, "1.0.0")
	org, ws := e.Init.OrganizationID, e.Init.WorkspaceID
	forEachTransport(t, func(t *testing.T, tr apiTransport) {
		book.failing.Store(false)
		a := e.MkAutomation(t, "Fees "+tr.name, feeCode, true)
		runs := map[string]string{} // amount → run id
		for _, amount := range []string{"50", "150", "1200", "999"} {
			m := e.mustCall(t, tr, autoSvc+"InvokeAutomation", &platformv1.InvokeAutomationRequest{OrganizationId: org, WorkspaceId: ws,
				AutomationId: a.ID, Stage: platformv1.AutomationStage_AUTOMATION_STAGE_PUBLISHED, Inputs: map[string]*platformv1.Value{"amount": decimal(amount)}})
			runs[amount] = fmt.Sprint(m["run_id"])
			e.WaitRun(t, a.ID, runs[amount], "completed")
		}
		// A run without its amount waits for a person, who gives 2000.
		m := e.mustCall(t, tr, autoSvc+"InvokeAutomation", &platformv1.InvokeAutomationRequest{OrganizationId: org, WorkspaceId: ws,
			AutomationId: a.ID, Stage: platformv1.AutomationStage_AUTOMATION_STAGE_PUBLISHED})
		asked := fmt.Sprint(m["run_id"])
		r := e.WaitRunState(t, a.ID, asked, store.RunAwaitingGuidance)
		e.mustCall(t, tr, "/prose.platform.v1.ExceptionService/ResolveException", &platformv1.ResolveExceptionRequest{OrganizationId: org,
			WorkspaceId: ws, ExceptionId: r.ExceptionID, Guidance: &platformv1.ResolveExceptionRequest_ProvideValues{
				ProvideValues: &platformv1.ProvideValues{Values: map[string]*platformv1.Value{"the amount": decimal("2000")}}}})
		e.WaitRun(t, a.ID, asked, "completed")
		// A draft run is no run of the published version.
		m = e.mustCall(t, tr, autoSvc+"InvokeAutomation", &platformv1.InvokeAutomationRequest{OrganizationId: org, WorkspaceId: ws,
			AutomationId: a.ID, Stage: platformv1.AutomationStage_AUTOMATION_STAGE_DRAFT, Inputs: map[string]*platformv1.Value{"amount": decimal("5000")}})
		e.WaitRun(t, a.ID, fmt.Sprint(m["run_id"]), "completed")

		book.failing.Store(true)
		e.mustCall(t, tr, autoSvc+"UpdateAutomation", &platformv1.UpdateAutomationRequest{OrganizationId: org, WorkspaceId: ws, AutomationId: a.ID,
			Automation: &platformv1.Automation{EnglishCode: strings.Replace(feeCode, "+ 5", "+ 7", 1)}, UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"english_code"}}})

		var rep platformv1.AutomationReplay
		decodeInto(t, e.mustCall(t, tr, testSvc+"ReplayAutomation", &platformv1.ReplayAutomationRequest{OrganizationId: org, WorkspaceId: ws, AutomationId: a.ID}), &rep)
		if rep.GetState() != platformv1.AutomationReplay_STATE_SUCCEEDED || rep.GetReplayedCount() != 5 || rep.GetOutputsDifferCount() != 2 ||
			rep.GetUnchangedCount() != 3 || rep.GetNewExceptionCount()+rep.GetUnansweredCallCount()+rep.GetFailedCount() != 0 {
			t.Fatalf("replay: %v", &rep)
		}
		var res platformv1.ListAutomationReplayResultsResponse
		decodeInto(t, e.mustCall(t, tr, testSvc+"ListAutomationReplayResults", &platformv1.ListAutomationReplayResultsRequest{OrganizationId: org,
			WorkspaceId: ws, AutomationId: a.ID, Filter: "outcome != OUTCOME_UNCHANGED"}), &res)
		want := map[string][2]string{runs["1200"]: {"29.00", "31.00"}, asked: {"45.00", "47.00"}}
		if len(res.GetResults()) != 2 {
			t.Fatalf("changed runs: %v", &res)
		}
		for _, x := range res.GetResults() {
			id := x.GetRun()[strings.LastIndexByte(x.GetRun(), '/')+1:]
			w, ok := want[id]
			if !ok || x.GetOutcome() != platformv1.AutomationReplayResult_OUTCOME_OUTPUTS_DIFFER || len(x.GetDifferences()) != 1 {
				t.Fatalf("result %v, want one of %v", x, want)
			}
			d := x.GetDifferences()[0]
			got := [2]string{numText(t, d.GetExpected()), numText(t, d.GetActual())}
			if d.GetOutput() != "output fee" || got != w {
				t.Errorf("run %s: %s %v, want output fee %v", id, d.GetOutput(), got, w)
			}
		}
		if n := book.calls.Load(); n != 0 {
			t.Fatalf("the replay called the book %d times", n)
		}
		gatedPublish(t, e, tr, a.ID, runs["1200"], asked)
		if n := book.calls.Load(); n != 0 {
			t.Fatalf("the tests and the publish called the book %d times", n)
		}
	})
}

func numText(t *testing.T, v *platformv1.Value) string {
	t.Helper()
	lv, err := protovalue.FromProto(v)
	if err != nil {
		t.Fatal(err)
	}
	return lv.String()
}

// gatedPublish: the draft's test fails and two runs change, so publish
// is refused listing both; forced with a reason it publishes, and the
// revision keeps what was checked.
func gatedPublish(t *testing.T, e *testEnv, tr apiTransport, automation string, changed ...string) {
	org, ws := e.Init.OrganizationID, e.Init.WorkspaceID
	test := &platformv1.AutomationTest{DisplayName: "a large amount pays 29",
		Inputs:    map[string]*platformv1.Value{"amount": decimal("1200")},
		BookStubs: []*platformv1.AutomationTestBookStub{{Call: "stamp a ticket", Outcome: &platformv1.AutomationTestBookStub_Result{Result: txt("S:x")}}},
		Expect:    &platformv1.AutomationTestExpectation{Outputs: map[string]*platformv1.Value{"fee": decimal("29")}}}
	var created platformv1.AutomationTest
	decodeInto(t, e.mustCall(t, tr, testSvc+"CreateAutomationTest", &platformv1.CreateAutomationTestRequest{OrganizationId: org, WorkspaceId: ws,
		AutomationId: automation, TestId: "large", Test: test}), &created)
	var run platformv1.RunAutomationTestsResponse
	decodeInto(t, e.mustCall(t, tr, testSvc+"RunAutomationTests", &platformv1.RunAutomationTestsRequest{OrganizationId: org, WorkspaceId: ws, AutomationId: automation}), &run)
	if run.GetFailedCount() != 1 || len(run.GetResults()) != 1 || !slices.Contains(run.GetResults()[0].GetFailures(), "output fee: expected 29, got 31.00") {
		t.Fatalf("tests: %v", &run)
	}
	_, err := e.call(t, tr, autoSvc+"PublishAutomation", &platformv1.PublishAutomationRequest{OrganizationId: org, WorkspaceId: ws, AutomationId: automation})
	if status.Code(err) != codes.FailedPrecondition || errReason(t, tr, err) != "PUBLISH_CHECKS_FAILED" ||
		!strings.Contains(err.Error(), "1 of 1 tests fail and 2 of 5 replayed runs change") {
		t.Fatalf("publish of a draft whose test fails: %v", err)
	}
	subjects := preconditions(t, tr, err)
	wantSubjects := []string{"TEST " + created.GetName()}
	for _, id := range changed {
		wantSubjects = append(wantSubjects, "REPLAY "+names.Run(org, ws, automation, id))
	}
	slices.Sort(subjects)
	slices.Sort(wantSubjects)
	if !slices.Equal(subjects, wantSubjects) {
		t.Errorf("the refusal lists %q, want %q", subjects, wantSubjects)
	}
	_, err = e.call(t, tr, autoSvc+"PublishAutomation", &platformv1.PublishAutomationRequest{OrganizationId: org, WorkspaceId: ws, AutomationId: automation, Force: true})
	if status.Code(err) != codes.InvalidArgument {
		t.Fatalf("force without a reason: %v", err)
	}
	var pub platformv1.Automation
	decodeInto(t, e.mustCall(t, tr, autoSvc+"PublishAutomation", &platformv1.PublishAutomationRequest{OrganizationId: org, WorkspaceId: ws,
		AutomationId: automation, Force: true, ForceReason: "large fees rise to 7 from July"}), &pub)
	var rev platformv1.AutomationRevision
	decodeInto(t, e.mustCall(t, tr, "/prose.platform.v1.AutomationRevisionService/GetAutomationRevision", &platformv1.GetAutomationRevisionRequest{
		OrganizationId: org, WorkspaceId: ws, AutomationId: automation, RevisionId: pub.GetLatestPublishedVersion()}), &rev)
	c := rev.GetPublishCheck()
	if !c.GetForced() || c.GetForceReason() != "large fees rise to 7 from July" || c.GetTestsRun() != 1 || c.GetTestsFailed() != 1 ||
		c.GetRunsReplayed() != 5 || c.GetRunsChanged() != 2 || len(c.GetFailures()) != 3 || c.GetCoveragePercent() != 100 {
		t.Errorf("the published revision's check: %v", c)
	}
}

// TestAutomationTestsCRUD: tests are resources of the draft (each change a
// new draft version), read and listed as written, refused with the field
// that is wrong, and kept by every revision (:test of a revision runs
// that revision's tests against its code).
func TestAutomationTestsCRUD(t *testing.T) {
	e := newTestEnv(t)
	org, ws := e.Init.OrganizationID, e.Init.WorkspaceID
	forEachTransport(t, func(t *testing.T, tr apiTransport) {
		a := e.MkAutomation(t, "Doubles "+tr.name, "get the n\nthe output double is the n * 2\n", false)
		mk := func(id, name, n, want string) *platformv1.AutomationTest {
			t.Helper()
			var out platformv1.AutomationTest
			decodeInto(t, e.mustCall(t, tr, testSvc+"CreateAutomationTest", &platformv1.CreateAutomationTestRequest{OrganizationId: org, WorkspaceId: ws,
				AutomationId: a.ID, TestId: id, Test: &platformv1.AutomationTest{DisplayName: name,
					Answers: []*platformv1.AutomationTestAnswer{{Asks: "the n", Kind: &platformv1.AutomationTestAnswer_Value{Value: decimal(n)}}},
					Expect:  &platformv1.AutomationTestExpectation{Outputs: map[string]*platformv1.Value{"double": decimal(want)}}}}), &out)
			return &out
		}
		one := mk("one", "one doubles to two", "1", "2")
		if one.GetName() != names.Automation(org, ws, a.ID)+"/tests/one" || one.GetCreateTime() == nil ||
			!strings.Contains(one.GetFileText(), "name: one doubles to two") || !strings.Contains(one.GetFileText(), "asks: the n") {
			t.Fatalf("created: %v", one)
		}
		mk("", "two doubles to four", "2", "4")
		mk("three", "three doubles to five", "3", "5")
		var got platformv1.AutomationTest
		decodeInto(t, e.mustCall(t, tr, testSvc+"GetAutomationTest", &platformv1.GetAutomationTestRequest{OrganizationId: org, WorkspaceId: ws, AutomationId: a.ID, TestId: "one"}), &got)
		if !proto.Equal(&got, one) {
			t.Errorf("get:\n%v\nwant\n%v", &got, one)
		}
		var page platformv1.ListAutomationTestsResponse
		decodeInto(t, e.mustCall(t, tr, testSvc+"ListAutomationTests", &platformv1.ListAutomationTestsRequest{OrganizationId: org, WorkspaceId: ws, AutomationId: a.ID, PageSize: 2}), &page)
		if len(page.GetTests()) != 2 || page.GetNextPageToken() == "" || page.GetTests()[0].GetDisplayName() != "one doubles to two" {
			t.Fatalf("page: %v", &page)
		}
		var run platformv1.RunAutomationTestsResponse
		decodeInto(t, e.mustCall(t, tr, testSvc+"RunAutomationTests", &platformv1.RunAutomationTestsRequest{OrganizationId: org, WorkspaceId: ws, AutomationId: a.ID}), &run)
		if run.GetPassedCount() != 2 || run.GetFailedCount() != 1 || run.GetResults()[2].GetFailures()[0] != "output double: expected 5, got 6" ||
			run.GetCoverage().GetPercent() != 100 {
			t.Fatalf("run: %v", &run)
		}
		tested := run.GetAutomationVersion()
		// Fix the third test (a mask), then delete the second.
		var up platformv1.AutomationTest
		decodeInto(t, e.mustCall(t, tr, testSvc+"UpdateAutomationTest", &platformv1.UpdateAutomationTestRequest{OrganizationId: org, WorkspaceId: ws,
			AutomationId: a.ID, TestId: "three", UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"expect"}},
			Test: &platformv1.AutomationTest{Expect: &platformv1.AutomationTestExpectation{Outputs: map[string]*platformv1.Value{"double": decimal("6")}}}}), &up)
		if up.GetDisplayName() != "three doubles to five" || len(up.GetAnswers()) != 1 {
			t.Errorf("a masked update changed more: %v", &up)
		}
		decodeInto(t, e.mustCall(t, tr, testSvc+"RunAutomationTests", &platformv1.RunAutomationTestsRequest{OrganizationId: org, WorkspaceId: ws, AutomationId: a.ID}), &run)
		if run.GetFailedCount() != 0 || run.GetAutomationVersion() == tested {
			t.Fatalf("after the fix: %v", &run)
		}
		// The revision the first run tested still has the failing test.
		decodeInto(t, e.mustCall(t, tr, testSvc+"RunAutomationTests", &platformv1.RunAutomationTestsRequest{OrganizationId: org, WorkspaceId: ws,
			AutomationId: a.ID, RevisionId: tested, TestIds: []string{"three"}}), &run)
		if run.GetFailedCount() != 1 || len(run.GetResults()) != 1 || run.GetAutomationVersion() != tested {
			t.Fatalf("revision %s: %v", tested, &run)
		}

		for _, tc := range []struct {
			what   string
			rpc    string
			req    proto.Message
			code   codes.Code
			reason string
		}{
			{"a taken id", "CreateAutomationTest", &platformv1.CreateAutomationTestRequest{OrganizationId: org, WorkspaceId: ws, AutomationId: a.ID,
				TestId: "one", Test: &platformv1.AutomationTest{DisplayName: "new"}}, codes.AlreadyExists, "AUTOMATION_TEST_ALREADY_EXISTS"},
			{"a taken name", "CreateAutomationTest", &platformv1.CreateAutomationTestRequest{OrganizationId: org, WorkspaceId: ws, AutomationId: a.ID,
				Test: &platformv1.AutomationTest{DisplayName: "ONE doubles to two"}}, codes.AlreadyExists, "AUTOMATION_TEST_ALREADY_EXISTS"},
			{"no name", "CreateAutomationTest", &platformv1.CreateAutomationTestRequest{OrganizationId: org, WorkspaceId: ws, AutomationId: a.ID,
				Test: &platformv1.AutomationTest{}}, codes.InvalidArgument, ""},
			{"an answer of no kind", "CreateAutomationTest", &platformv1.CreateAutomationTestRequest{OrganizationId: org, WorkspaceId: ws, AutomationId: a.ID,
				Test: &platformv1.AutomationTest{DisplayName: "x", Answers: []*platformv1.AutomationTestAnswer{{}}}}, codes.InvalidArgument, "INVALID_AUTOMATION_TEST"},
			{"a stub without a result", "CreateAutomationTest", &platformv1.CreateAutomationTestRequest{OrganizationId: org, WorkspaceId: ws, AutomationId: a.ID,
				Test: &platformv1.AutomationTest{DisplayName: "x", BookStubs: []*platformv1.AutomationTestBookStub{{Call: "send an email"}}}}, codes.InvalidArgument, "INVALID_AUTOMATION_TEST"},
			{"an unknown automation", "CreateAutomationTest", &platformv1.CreateAutomationTestRequest{OrganizationId: org, WorkspaceId: ws, AutomationId: "nope",
				Test: &platformv1.AutomationTest{DisplayName: "x"}}, codes.NotFound, "AUTOMATION_NOT_FOUND"},
			{"an unknown test", "GetAutomationTest", &platformv1.GetAutomationTestRequest{OrganizationId: org, WorkspaceId: ws, AutomationId: a.ID, TestId: "nope"},
				codes.NotFound, "AUTOMATION_TEST_NOT_FOUND"},
			{"a bad mask", "UpdateAutomationTest", &platformv1.UpdateAutomationTestRequest{OrganizationId: org, WorkspaceId: ws, AutomationId: a.ID, TestId: "one",
				Test: &platformv1.AutomationTest{}, UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"name"}}}, codes.InvalidArgument, "INVALID_FIELD"},
			{"an unknown revision", "RunAutomationTests", &platformv1.RunAutomationTestsRequest{OrganizationId: org, WorkspaceId: ws, AutomationId: a.ID, RevisionId: "999"},
				codes.NotFound, "REVISION_NOT_FOUND"},
			{"an unknown test to run", "RunAutomationTests", &platformv1.RunAutomationTestsRequest{OrganizationId: org, WorkspaceId: ws, AutomationId: a.ID, TestIds: []string{"nope"}},
				codes.NotFound, "AUTOMATION_TEST_NOT_FOUND"},
			{"a replay of a draft never published", "ReplayAutomation", &platformv1.ReplayAutomationRequest{OrganizationId: org, WorkspaceId: ws, AutomationId: a.ID},
				codes.FailedPrecondition, "AUTOMATION_NOT_PUBLISHED"},
			{"no replay yet", "GetAutomationReplay", &platformv1.GetAutomationReplayRequest{OrganizationId: org, WorkspaceId: ws, AutomationId: a.ID},
				codes.NotFound, "REPLAY_NOT_FOUND"},
		} {
			_, err := e.call(t, tr, testSvc+tc.rpc, tc.req)
			if status.Code(err) != tc.code || tc.reason != "" && errReason(t, tr, err) != tc.reason {
				t.Errorf("%s: %v, want %v %s", tc.what, err, tc.code, tc.reason)
			}
		}
		e.mustCall(t, tr, testSvc+"DeleteAutomationTest", &platformv1.DeleteAutomationTestRequest{OrganizationId: org, WorkspaceId: ws, AutomationId: a.ID, TestId: "one"})
		if _, err := e.call(t, tr, testSvc+"DeleteAutomationTest", &platformv1.DeleteAutomationTestRequest{OrganizationId: org, WorkspaceId: ws,
			AutomationId: a.ID, TestId: "one"}); status.Code(err) != codes.NotFound {
			t.Errorf("delete twice: %v", err)
		}
	})
}
