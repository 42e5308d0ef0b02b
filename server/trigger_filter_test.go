package server_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/internal/testtime"
	"github.com/proserun/prose/server/testenv"
)

// TestWebhookFilterExpression: a trigger instance's filter_expression (the
// reference's JSON) is validated, stored, shown, and applied: a delivery
// whose body does not match starts no run.
func TestWebhookFilterExpression(t *testing.T) {
	e := newTestEnv(t)
	a := e.MkAutomation(t, "Greeter", greetCode, false)
	path, orders := e.TriggersPath(t, e.WsPath(), "webhook", "orders")
	path2 := func(names ...string) string {
		var ps []string
		for _, n := range names {
			ps = append(ps, `{"head":"`+n+`"}`)
		}
		return `{"noun_phrases_expression":{"noun_phrases":[` + strings.Join(ps, ",") + `]}}`
	}
	bin := func(op, l, r string) string {
		return `{"binary_expression":{"operator":"` + op + `","left":` + l + `,"right":` + r + `}}`
	}
	// order total > 100 and customer country in [DE, FR] and not (flags has "test")
	filter := bin("BinaryOperatorAnd",
		bin("BinaryOperatorAnd",
			bin("BinaryOperatorGreaterThan", path2("order", "total"), `{"value_expression":{"number_value":100}}`),
			bin("BinaryOperatorIn", path2("customer", "country"), `{"value_expression":{"list_value":{"values":[{"text_value":"DE"},{"text_value":"FR"}]}}}`)),
		`{"unary_expression":{"operator":"UnaryOperatorNot","inner":`+bin("BinaryOperatorHas", path2("flags"), `{"value_expression":{"text_value":"test"}}`)+`}}`)
	m := e.API(t, "POST", path, `{"name":"Big orders","configuration":{"secret":{"text_value":"a-secret-of-24-characters"}},"filter_expression":`+filter+`}`, 200)
	checkSchema(t, "v2AddWorkspaceBookConnectionTriggerInstanceResponse", m)
	inst := m["trigger_instance"].(map[string]any)
	if testenv.Field(inst, "filter_expression.binary_expression.left.binary_expression.right.binary_expression.operator") != "BinaryOperatorIn" {
		t.Fatalf("filter not shown: %v", inst)
	}
	id, endpoint := fmt.Sprint(inst["id"]), fmt.Sprint(inst["endpoint"])
	l := e.API(t, "GET", e.WsPath()+"/triggers", "", 200)
	if testenv.Field(l, "trigger_instances.0.filter_expression.unary_expression") != nil || testenv.Field(l, "trigger_instances.0.filter_expression.binary_expression.right.unary_expression.inner.binary_expression.operator") != "BinaryOperatorHas" {
		// (UnaryOperatorNot and BinaryOperatorAnd are the enums' zero
		// values, the reference's defaults: their JSON omits them.)
		t.Errorf("list: %v", l)
	}
	e.API(t, "POST", e.WsPath()+"/triggers/"+id+"/automations", `{"automation_ids":["`+a.ID+`"],"connection_id":"`+orders+`"}`, 200)
	const secret = "a-secret-of-24-characters"

	for i, c := range []struct {
		body  string
		match bool
	}{
		{`{"order":{"total":250},"customer":{"country":"DE","name":"Bo"}}`, true},
		{`{"order":{"total":100},"customer":{"country":"DE"}}`, false},                  // not greater
		{`{"order":{"total":250},"customer":{"country":"US"}}`, false},                  // not in the list
		{`{"order":{"total":250}}`, false},                                              // no country
		{`{"order":{"total":"250"},"customer":{"country":"FR"}}`, false},                // text is not a number
		{`{"order":{"total":250},"customer":{"country":"FR"},"flags":["test"]}`, false}, // has "test"
		{`{"order":{"total":1e3},"customer":{"country":"FR"},"flags":["rush"]}`, true},
		{`[1,2]`, false},
	} {
		code, m, raw := e.deliver(t, endpoint, secret, c.body, fmt.Sprint("f-", i), "")
		switch {
		case c.match && (code != http.StatusAccepted || testenv.Field(m, "runs.0.run") == nil):
			t.Errorf("%s: want a run, got %d %s", c.body, code, raw)
		case !c.match && (code != http.StatusOK || m["filtered"] != true || len(m["runs"].([]any)) != 0):
			t.Errorf("%s: want filtered, got %d %s", c.body, code, raw)
		}
	}
	if n := len(e.scheduledRuns(t, a.ID)); n != 2 {
		t.Errorf("%d runs, want 2 (the matching deliveries)", n)
	}

	// Bad filters name their field.
	for _, c := range []struct{ filter, field string }{
		{`{}`, "filter_expression"},
		{`{"binary_expression":{"operator":"BinaryOperatorEquals","left":` + path2("a") + `}}`, "filter_expression.binary_expression"},
		{`{"unary_expression":{"operator":"UnaryOperatorExists"}}`, "filter_expression.unary_expression"},
		{`{"noun_phrases_expression":{"noun_phrases":[]}}`, "filter_expression.noun_phrases_expression"},
		{`{"noun_phrases_expression":{"noun_phrases":[{"head":" "}]}}`, "filter_expression.noun_phrases_expression.noun_phrases.0"},
		{bin("BinaryOperatorEquals", path2("a"), `{"value_expression":{"date_value":{"year":2026,"month":1,"day":1}}}`), "filter_expression.binary_expression.right.value_expression"},
		{`{"binary_expression":{"operator":"BinaryOperatorEquals","left":` + path2("a") + `,"right":{"value_expression":{"number_value":1}}},"unary_expression":{}}`, ""}, // two members: the JSON decoder refuses
		{`{"binary_expression":{"operator":"BinaryOperatorXor","left":` + path2("a") + `,"right":` + path2("b") + `}}`, ""},
		{strings.Repeat(`{"unary_expression":{"operator":"UnaryOperatorNot","inner":`, 40) + path2("a") + strings.Repeat(`}}`, 40), "filter_expression" + strings.Repeat(".unary_expression.inner", 32)},
	} {
		code, body, raw := e.DoHTTP(t, "POST", path, `{"configuration":{"secret":{"text_value":"a-secret-of-24-characters"}},"filter_expression":`+c.filter+`}`, e.Bearer())
		if code != http.StatusBadRequest || c.field != "" && testenv.Field(body, "details.0.field_violations.0.field") != c.field && !strings.Contains(string(raw), `"`+c.field+`"`) {
			t.Errorf("%.80s: %d %s, want 400 naming %s", c.filter, code, raw, c.field)
		}
	}
}

// TestTriggerFilterGRPC: the filter over gRPC: stored and shown; a bad one
// is INVALID_ARGUMENT.
func TestTriggerFilterGRPC(t *testing.T) {
	e := newTestEnv(t)
	ctx := metadata.NewOutgoingContext(context.Background(), metadata.Pairs("authorization", "Bearer "+e.Init.APIKey))
	cl := platformv1.NewTriggerServiceClient(e.Conn)
	f := &platformv1.Expression{Kind: &platformv1.Expression_UnaryExpression{UnaryExpression: &platformv1.UnaryExpression{
		Operator: platformv1.UnaryOperator_UnaryOperatorExists,
		Inner: &platformv1.Expression{Kind: &platformv1.Expression_NounPhrasesExpression{NounPhrasesExpression: &platformv1.NounPhrases{
			NounPhrases: []*platformv1.NounPhrase{{Modifiers: []string{"order"}, Head: "id"}}}}},
	}}}
	_, orders := e.TriggersPath(t, e.WsPath(), "webhook", "orders")
	req := &platformv1.AddWorkspaceBookConnectionTriggerInstanceRequest{OrganizationId: e.Init.OrganizationID, WorkspaceId: e.Init.WorkspaceID,
		BookName: "webhook", BookVersion: "1.0.0", ConnectionId: orders, FilterExpression: f}
	r, err := cl.AddWorkspaceBookConnectionTriggerInstance(ctx, req)
	if err != nil || !proto.Equal(r.GetTriggerInstance().GetFilterExpression(), f) {
		t.Fatalf("add: %v %v", r, err)
	}
	l, err := cl.ListWorkspaceTriggerInstances(ctx, &platformv1.ListWorkspaceTriggerInstancesRequest{OrganizationId: e.Init.OrganizationID, WorkspaceId: e.Init.WorkspaceID})
	if err != nil || len(l.GetTriggerInstances()) != 1 || !proto.Equal(l.GetTriggerInstances()[0].GetFilterExpression(), f) {
		t.Errorf("list: %v %v", l, err)
	}
	req.FilterExpression = &platformv1.Expression{Kind: &platformv1.Expression_BinaryExpression{BinaryExpression: &platformv1.BinaryExpression{
		Operator: platformv1.BinaryOperator(99), Left: f, Right: f}}}
	if _, err := cl.AddWorkspaceBookConnectionTriggerInstance(ctx, req); status.Code(err) != codes.InvalidArgument {
		t.Errorf("unknown operator: %v", err)
	}
}

// TestMessageTriggerFilterAndActivation: on each broker present, a message
// that does not match the instance's filter_expression starts no run, nor
// does a matching one while the automation is deactivated; messages are
// consumed in order, so the last matching message's run shows that nothing
// more came.
func TestMessageTriggerFilterAndActivation(t *testing.T) {
	for _, b := range brokers() {
		t.Run(b.name, func(t *testing.T) {
			b.skipIfAbsent(t)
			d := b.freshDest(t, b.url)
			e := newTestEnv(t)
			a := e.MkAutomation(t, "Orders", greetCode, false)
			// marker is always active and comes after a: once its run of a
			// message exists, a's turn with that message has passed.
			marker := e.MkAutomation(t, "Marker", greetCode, false)
			dest := d.name
			cfg := `"` + b.param + `":{"text_value":"` + dest + `"}`
			if b.config != "" {
				cfg += "," + b.config
			}
			bus, _ := e.TriggersPath(t, e.WsPath(), b.book, "bus")
			m := e.API(t, "POST", bus,
				`{"configuration":{`+cfg+`},
				"filter_expression":{"binary_expression":{"operator":"BinaryOperatorGreaterThanOrEqual",
					"left":{"noun_phrases_expression":{"noun_phrases":[{"head":"order"},{"head":"total"}]}},
					"right":{"value_expression":{"number_value":100}}}}}`, 200)
			id := fmt.Sprint(testenv.Field(m, "trigger_instance.id"))
			d.clients = append(d.clients, e.App.Messages.MQTTClientID(id))
			t.Cleanup(func() {
				_ = e.Store.DeleteTriggerInstance(context.Background(), e.Init.OrganizationID, e.Init.WorkspaceID, "bus", id)
			})
			e.API(t, "POST", e.WsPath()+"/triggers/"+id+"/automations", `{"automation_ids":["`+a.ID+`","`+marker.ID+`"]}`, 200)
			for _, x := range []string{a.ID, marker.ID} {
				e.API(t, "POST", e.AutomationsPath()+"/"+x+"/triggers", `{"trigger_id":"`+id+`","phase_type":"PHASE_TYPE_MAIN","input_mapping":{"amount":"/order/total"}}`, 200)
			}
			syncMessages(t, e)
			b.publish(t, b.url, dest, "m-1", orderBody(1))
			b.publish(t, b.url, dest, "m-2", orderBody(500))
			b.publish(t, b.url, dest, "m-3", orderBody(2))
			b.publish(t, b.url, dest, "m-4", orderBody(700))
			if got := e.runAmounts(t, a.ID, 700); !slices.Equal(got, []float64{500, 700}) {
				t.Errorf("runs of amounts %v, want [500 700] (the messages matching the filter)", got)
			}
			e.setActivation(t, a.ID, "AUTOMATION_ACTIVATION_STATE_DEACTIVATED")
			b.publish(t, b.url, dest, "m-5", orderBody(800))
			_ = e.runAmounts(t, marker.ID, 800) // a's turn with m-5 has passed
			e.setActivation(t, a.ID, "AUTOMATION_ACTIVATION_STATE_ACTIVE")
			b.publish(t, b.url, dest, "m-6", orderBody(900))
			if got := e.runAmounts(t, a.ID, 900); !slices.Equal(got, []float64{500, 700, 900}) {
				t.Errorf("runs of amounts %v, want [500 700 900] (nothing while deactivated)", got)
			}
		})
	}
}

// runAmounts waits until automation a has a run whose input amount is last
// and returns the amounts of its runs in creation order.
func (e *testEnv) runAmounts(t *testing.T, a string, last float64) []float64 {
	t.Helper()
	deadline := testtime.Deadline(testtime.Wait)
	for {
		var got []float64
		for _, r := range e.scheduledRuns(t, a) {
			got = append(got, testenv.NumberOf(testenv.Field(r, "user_inputs.amount.number")))
		}
		if slices.Contains(got, last) {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("no run of amount %v: %v", last, got)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
