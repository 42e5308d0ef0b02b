package server_test

import (
	"fmt"
	"net/http/httptest"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"

	"github.com/proserun/prose/examples/vatbook"
	"github.com/proserun/prose/server/testenv"
)

// TestBookserverBookEndToEnd serves the example VAT book with the
// bookserver package on loopback, registers it in a workspace over HTTP
// (its Descriptor as the body) and runs an automation that calls it: the
// answer becomes the run's output, and the book's refusal (an unknown
// country) stops the run awaiting guidance with the book's message.
func TestBookserverBookEndToEnd(t *testing.T) {
	e := newTestEnv(t)
	book := vatbook.New()
	srv := httptest.NewServer(book)
	t.Cleanup(srv.Close)
	raw, err := protojson.Marshal(book.Descriptor(srv.URL))
	if err != nil {
		t.Fatal(err)
	}
	e.API(t, "POST", e.booksPath(), string(raw), 200)

	code := "the country is the key\nget the vat rate of the country\nthe output a is the above\n"
	a := e.MkAutomation(t, "VAT", code, true)
	invoke := func(country string) string {
		m := e.API(t, "POST", e.AutomationsPath()+"/"+a.ID+":invoke",
			`{"stage":"AUTOMATION_STAGE_PUBLISHED","inputs":{"key":{"text":`+testenv.JSONStr(country)+`}}}`, 200)
		return fmt.Sprint(m["run_id"])
	}
	r := e.WaitRun(t, a.ID, invoke("DE"), "completed")
	// 0.19 as a decimal: 19 with scale 2 (flags bits 16-23).
	if lo, flags := testenv.Field(r, "state.completed.outputs.output a.number.lo"), testenv.Field(r, "state.completed.outputs.output a.number.flags"); fmt.Sprint(lo, " ", flags) != "19 131072" {
		t.Errorf("output a = %v %v, want 0.19 (lo 19, scale 2)", lo, flags)
	}
	r = e.WaitRun(t, a.ID, invoke("US"), "awaiting_guidance")
	want := `Could not get the vat rate of the country: book procedure get_the_vat_rate_of_a_country: no VAT rate is known for the country "US"`
	if got := testenv.Field(r, "state.awaiting_guidance.description"); got != want {
		t.Errorf("the run asks for guidance with %q, want %q", got, want)
	}
}
