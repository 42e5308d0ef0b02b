package server_test

import (
	"fmt"
	"strings"
	"testing"

	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/server/testenv"
)

// factsPagedCode sets seven facts one after the other (one stored entry),
// says a line, and sets three more (another entry).
const factsPagedCode = "the a is 1\nthe b is 2\nthe c is 3\nthe d is 4\nthe e is 5\nthe f is 6\nthe g is 7\n" +
	"say \"half\"\nthe h is 8\nthe i is 9\nthe output is the h + the i\n"

// TestRunHistoryFactsPaged: the facts a run sets one after the other are
// one stored entry, yet ListRunEvents shows one SetFact event per fact, in
// order, each at its statement; paged with small page sizes, no event is
// lost or repeated (a page ends with its last entry's facts in full, see
// listAllRunEvents), and a page token read twice gives the same page.
func TestRunHistoryFactsPaged(t *testing.T) {
	e := newTestEnv(t)
	a := e.MkAutomation(t, "Facts", factsPagedCode, true)
	forEachTransport(t, func(t *testing.T, tr apiTransport) {
		m := e.API(t, "POST", e.AutomationsPath()+"/"+a.ID+":invoke", `{"stage":"AUTOMATION_STAGE_PUBLISHED"}`, 200)
		id := fmt.Sprint(m["run_id"])
		e.WaitRun(t, a.ID, id, "completed")
		want := "SetFact:a,SetFact:b,SetFact:c,SetFact:d,SetFact:e,SetFact:f,SetFact:g,Say:half,SetFact:h,SetFact:i,SetFact:output"
		for _, size := range []int32{0, 1, 2, 3, 5, 8} {
			got := engineEvents(e.listAllRunEvents(t, tr, a.ID, id, "", size))
			if strings.Join(got, ",") != want {
				t.Errorf("page size %d:\n %v\nwant\n %v", size, got, want)
			}
		}
		// each fact at its statement, with its value
		for i, ev := range e.listAllRunEvents(t, tr, a.ID, id, `node_kind = "SetFact"`, 0) {
			node := testenv.Field(ev["execution_journal"], "node_executed")
			s, end := toInt(testenv.Field(node, "code_location.start_byte")), toInt(testenv.Field(node, "code_location.end_byte"))
			name := fmt.Sprint(testenv.Field(ev["execution_journal"], "extra_metadata.fact.text"))
			if i < 9 && (factsPagedCode[s:end] != "the "+name+" is "+fmt.Sprint(i+1) || toInt(testenv.Field(node, "outputs."+name+".number.lo")) != i+1) {
				t.Errorf("fact %d %s at %q: %v", i, name, factsPagedCode[s:end], node)
			}
		}
		// a page token is stable: the second page twice
		req := &platformv1.ListRunEventsRequest{OrganizationId: e.Init.OrganizationID, WorkspaceId: e.Init.WorkspaceID, AutomationId: a.ID, RunId: id, PageSize: 2}
		req.PageToken = fmt.Sprint(e.mustCall(t, tr, historySvc+"ListRunEvents", req)["next_page_token"])
		first, second := e.mustCall(t, tr, historySvc+"ListRunEvents", req), e.mustCall(t, tr, historySvc+"ListRunEvents", req)
		if fmt.Sprint(first) != fmt.Sprint(second) || first["next_page_token"] == nil {
			t.Errorf("the same token, two pages:\n %v\n %v", first, second)
		}
	})
}

// engineEvents describes the events of what the run did (not its states).
func engineEvents(evs []map[string]any) []string {
	var out []string
	for _, ev := range evs {
		if d := describeEvent(ev); !strings.HasPrefix(d, "state:") {
			out = append(out, d)
		}
	}
	return out
}
