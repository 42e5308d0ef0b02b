package server_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/proserun/prose/bookserver"
	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/internal/codec/protovalue"
	"github.com/proserun/prose/internal/lang"
	"github.com/proserun/prose/server/testenv"
	"github.com/proserun/prose/store"
)

// discountBook asks the run for a number: the discount of an order.
func discountBook() *bookserver.Book {
	b := bookserver.New("test.discounts", "1.0.0").Describe("Discounts", "The discount of an order, asked of a person.")
	b.Procedure("get the discount of an order (the discount)",
		[]bookserver.Input{{Name: "order", Type: bookserver.Text, Description: "The order's number"}},
		func(_ context.Context, c *bookserver.Call) (bookserver.Outputs, error) {
			a, ok := c.Answer("rate")
			if !ok {
				return nil, c.Ask(bookserver.Question{ID: "rate", Prompt: "Which discount applies to order " + c.Text("order") + "?", Type: "number"})
			}
			return bookserver.Outputs{"discount": a}, nil
		})
	return b
}

// TestGuidanceRequestAnswerType: an exception's guidance_request says the
// type of answer it expects (answer_type), over HTTP and gRPC: a book's
// question of type number says ANSWER_TYPE_NUMBER, an ask whose choices
// are numbers too, a missing fact says nothing (any value). An answer of
// another type is still refused (400 INVALID_ARGUMENT GUIDANCE_DOES_NOT_FIT
// naming the type wanted, on answer.value), and a number resolves it.
func TestGuidanceRequestAnswerType(t *testing.T) {
	e := newTestEnv(t)
	srv := httptest.NewServer(discountBook())
	t.Cleanup(srv.Close)
	raw, err := protojson.Marshal(discountBook().Descriptor(srv.URL))
	if err != nil {
		t.Fatal(err)
	}
	e.API(t, "POST", e.booksPath(), string(raw), 200)
	book := e.MkAutomation(t, "Discount", "get the discount of the order\nthe output discount is the above\n", true)
	choice := e.MkAutomation(t, "Copies", "ask \"How many copies?\" the choices are 1, 2 or 3\nthe output copies is the answer\n", true)
	missing := e.MkAutomation(t, "Total", "the output due is the invoice total\n", true)

	waiting := func(t *testing.T, a testenv.Automation, inputs string) (run, exc string) {
		t.Helper()
		m := e.API(t, "POST", e.AutomationsPath()+"/"+a.ID+":invoke", `{"stage":"AUTOMATION_STAGE_PUBLISHED","inputs":`+inputs+`}`, 200)
		run = fmt.Sprint(m["run_id"])
		r := e.WaitRun(t, a.ID, run, "awaiting_guidance")
		return run, store.LastSegment(fmt.Sprint(testenv.Field(r, "state.awaiting_guidance.exception")))
	}
	get := func(t *testing.T, tr apiTransport, exc string) map[string]any {
		t.Helper()
		return e.mustCall(t, tr, excSvc+"GetException", &platformv1.GetExceptionRequest{
			OrganizationId: e.Init.OrganizationID, WorkspaceId: e.Init.WorkspaceID, ExceptionId: exc})
	}
	answer := func(exc string, v lang.Value) *platformv1.ResolveExceptionRequest {
		pv, err := protovalue.ToProto(v)
		if err != nil {
			t.Fatal(err)
		}
		return &platformv1.ResolveExceptionRequest{OrganizationId: e.Init.OrganizationID, WorkspaceId: e.Init.WorkspaceID, ExceptionId: exc,
			Guidance: &platformv1.ResolveExceptionRequest_Answer{Answer: &platformv1.Answer{Value: pv}}}
	}
	refused := func(t *testing.T, tr apiTransport, req *platformv1.ResolveExceptionRequest, want string) {
		t.Helper()
		_, err := e.call(t, tr, excSvc+"ResolveException", req)
		if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), want) {
			t.Errorf("an answer of the wrong type: %v, want INVALID_ARGUMENT saying %q", err, want)
			return
		}
		if !tr.grpc { // the gateway's body: reason and field violation
			if !strings.Contains(err.Error(), `"reason":"GUIDANCE_DOES_NOT_FIT"`) || !strings.Contains(err.Error(), `"field":"answer.value"`) {
				t.Errorf("an answer of the wrong type over HTTP: %v, want GUIDANCE_DOES_NOT_FIT on answer.value", err)
			}
		} else if r := grpcError(err); r.reason != "GUIDANCE_DOES_NOT_FIT" || r.violation != "answer.value" {
			t.Errorf("an answer of the wrong type over gRPC: reason %q, violation %q", r.reason, r.violation)
		}
	}

	forEachTransport(t, func(t *testing.T, tr apiTransport) {
		// A book's question of type number.
		run, exc := waiting(t, book, `{"order":{"text":"A-1"}}`)
		x := get(t, tr, exc)
		if got := testenv.Field(x, "guidance_request.answer_type"); got != "ANSWER_TYPE_NUMBER" {
			t.Errorf("a question for a number: answer_type %v, want ANSWER_TYPE_NUMBER: %v", got, x["guidance_request"])
		}
		if q := fmt.Sprint(testenv.Field(x, "guidance_request.question")); q != "Which discount applies to order A-1?" {
			t.Errorf("question %q", q)
		}
		refused(t, tr, answer(exc, lang.Text("fifteen")), "the answer must be a number, not a text")
		refused(t, tr, answer(exc, lang.Bool(true)), "the answer must be a number, not a")
		e.mustCall(t, tr, excSvc+"ResolveException", answer(exc, lang.Num(lang.MustNumber("15.5"))))
		r := e.WaitRun(t, book.ID, run, "completed")
		if lo, flags := testenv.Field(r, "state.completed.outputs.output discount.number.lo"), testenv.Field(r, "state.completed.outputs.output discount.number.flags"); fmt.Sprint(lo, " ", flags) != "155 65536" {
			t.Errorf("output discount = %v %v, want 15.5: %v", lo, flags, r)
		}

		// An ask whose choices are all numbers.
		run, exc = waiting(t, choice, `{}`)
		if got := testenv.Field(get(t, tr, exc), "guidance_request.answer_type"); got != "ANSWER_TYPE_NUMBER" {
			t.Errorf("an ask with number choices: answer_type %v", got)
		}
		refused(t, tr, answer(exc, lang.Text("2")), "the answer must be a number, not a text")
		e.mustCall(t, tr, excSvc+"ResolveException", answer(exc, lang.Num(lang.MustNumber("2"))))
		e.WaitRun(t, choice.ID, run, "completed")

		// A missing fact: the type is not known.
		_, exc = waiting(t, missing, `{}`)
		x = get(t, tr, exc)
		if got := testenv.Field(x, "guidance_request.answer_type"); got != nil {
			t.Errorf("a missing fact: answer_type %v, want none (any value)", got)
		}
		if facts := fmt.Sprint(testenv.Field(x, "guidance_request.facts")); !strings.Contains(facts, "invoice total") {
			t.Errorf("a missing fact: facts %s", facts)
		}
	})
}
