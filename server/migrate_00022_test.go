package server

import (
	"context"
	"testing"
	"time"

	"github.com/pressly/goose/v3"
	"google.golang.org/genproto/googleapis/type/date"
	"google.golang.org/genproto/googleapis/type/timeofday"
	"google.golang.org/protobuf/proto"

	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/internal/agent"
	"github.com/proserun/prose/internal/codec"
	"github.com/proserun/prose/internal/engine/schedule"
	"github.com/proserun/prose/store"
	"github.com/proserun/prose/store/migratetest"
)

// TestRowsOfVersion21ReadBack: events, automation details and trigger
// configurations written before migration 00022, when they were kept as
// the public API's Event, Automation and TriggerInstance messages, read back the same after it (through the codecs
// the services use: agent.FromStore, applyDetails, AutomationInactive, decodeTriggerConfig), on
// both backends; taken down again, the rows are the old bytes.
func TestRowsOfVersion21ReadBack(t *testing.T) {
	det := proto.MarshalOptions{Deterministic: true}
	mustMarshal := func(t *testing.T, m proto.Message) []byte {
		b, err := det.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	num := &platformv1.Value{Kind: &platformv1.Value_Number{Number: &platformv1.Number{Lo: 1250, Flags: 2 << 16}}}
	details := &platformv1.Automation{
		Connections: map[string]*platformv1.BookConnection{"invoices": {ConnectionId: "c1", Endpoint: "https://books.example/invoices"}},
		InputSpecs: []*platformv1.AutomationInputSpec{
			{Name: "customer", Type: &platformv1.ValueType{Kind: &platformv1.ValueType_ScalarType{ScalarType: platformv1.ValueScalarType_VALUE_SCALAR_TYPE_TEXT}}},
			{Name: "lines", Type: &platformv1.ValueType{Kind: &platformv1.ValueType_ListType{ListType: &platformv1.ValueListType{
				Inner: &platformv1.ValueType{Kind: &platformv1.ValueType_DictionaryType{DictionaryType: &platformv1.ValueDictionaryType{
					IsA: "line", Fields: []*platformv1.ValueDictionaryTypeField{{Key: "amount", Value: &platformv1.ValueType{
						Kind: &platformv1.ValueType_ScalarType{ScalarType: platformv1.ValueScalarType_VALUE_SCALAR_TYPE_NUMBER}}}}}}}}}}},
		},
		ActivationState: platformv1.AutomationActivationState_AUTOMATION_ACTIVATION_STATE_DEACTIVATED,
		DefaultInputs:   map[string]*platformv1.Value{"limit": num},
		MarkedOutputs:   []string{"total"},
	}
	bdk := func(s string) *platformv1.BdkValue {
		return &platformv1.BdkValue{Kind: &platformv1.BdkValue_TextValue{TextValue: s}}
	}
	trigger := &platformv1.TriggerInstance{
		Configuration: map[string]*platformv1.BdkValue{"subject": bdk("orders.*"), "limits": {Kind: &platformv1.BdkValue_ListValue{
			ListValue: &platformv1.BdkListValue{Values: []*platformv1.BdkValue{bdk("a"), {Kind: &platformv1.BdkValue_NumberValue{NumberValue: 2.5}}}}}}},
		FilterExpression: &platformv1.Expression{Kind: &platformv1.Expression_BinaryExpression{BinaryExpression: &platformv1.BinaryExpression{
			Operator: platformv1.BinaryOperator_BinaryOperatorOr,
			Left: &platformv1.Expression{Kind: &platformv1.Expression_UnaryExpression{UnaryExpression: &platformv1.UnaryExpression{
				Operator: platformv1.UnaryOperator_UnaryOperatorExists,
				Inner: &platformv1.Expression{Kind: &platformv1.Expression_NounPhrasesExpression{NounPhrasesExpression: &platformv1.NounPhrases{
					NounPhrases: []*platformv1.NounPhrase{{Head: "order"}, {Modifiers: []string{"total"}, Head: "amount"}}}}}}}},
			Right: &platformv1.Expression{Kind: &platformv1.Expression_ValueExpression{ValueExpression: bdk("x")}},
		}}},
	}
	events := []*platformv1.Event{
		{Payload: &platformv1.Event_UserMessage{UserMessage: &platformv1.UserMessage{User: "users/u1", Content: "use 12.50",
			ContentList: &platformv1.InputContentList{Items: []*platformv1.InputContent{
				{Content: &platformv1.InputContent_Text{Text: "see"}},
				{Content: &platformv1.InputContent_File{File: &platformv1.FileInputContent{Source: &platformv1.FileInputContent_Inline{
					Inline: &platformv1.FileContent{MimeType: "text/plain", Content: []byte("hi"), Filename: "a.txt"}}}}},
			}}}}},
		{Payload: &platformv1.Event_AgentMessage{AgentMessage: &platformv1.AgentMessage{Content: "on it"}}},
		{Payload: &platformv1.Event_ToolCallRequest{ToolCallRequest: &platformv1.ToolCallRequest{ToolCallId: "t1", DisplayName: "Resolve", Input: `{"x":1}`}}},
		{Payload: &platformv1.Event_ToolCallResult{ToolCallResult: &platformv1.ToolCallResult{ToolCallId: "t1", Result: "ok"}}},
		{Payload: &platformv1.Event_Thinking{Thinking: &platformv1.Thinking{Content: "hmm"}}},
		{Payload: &platformv1.Event_SystemMessage{SystemMessage: &platformv1.SystemMessage{Content: "resolved"}}},
		{Payload: &platformv1.Event_CompletionResponse{CompletionResponse: &platformv1.CompletionResponse{Content: "done", Error: "e"}}},
		{}, // no payload
	}

	migratetest.ForEachBackend(t, func(t *testing.T, b migratetest.Backend) {
		ctx := context.Background()
		// The rows are written by today's store code: the schema is the
		// latest with 00022 taken down, as if they were written before it.
		if err := b.MigrateTo(ctx, goose.MaxVersion); err != nil {
			t.Fatal(err)
		}
		if err := b.Apply(ctx, 22, false); err != nil {
			t.Fatal(err)
		}
		old, err := b.Open(ctx, store.WithoutMigrations())
		if err != nil {
			t.Fatal(err)
		}
		org, err := old.CreateOrganization(ctx, store.Organization{DisplayName: "Acme"})
		if err != nil {
			t.Fatal(err)
		}
		ws, err := old.CreateWorkspace(ctx, store.Workspace{OrganizationID: org.ID, Title: "ops"})
		if err != nil {
			t.Fatal(err)
		}
		v21Details := mustMarshal(t, details)
		a, err := old.CreateAutomation(ctx, store.Automation{OrganizationID: org.ID, WorkspaceID: ws.ID, ID: "a1",
			DisplayName: "A", Code: "the output y is 1\n", Details: v21Details, DraftShareID: "d1", PublishedShareID: "p1"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := old.PublishAutomation(ctx, org.ID, ws.ID, a.ID, "u1"); err != nil {
			t.Fatal(err)
		}
		r, _, err := old.CreateRun(ctx, store.Run{OrganizationID: org.ID, WorkspaceID: ws.ID, AutomationID: a.ID,
			Stage: store.StageDraft, StageVersion: a.Version})
		if err != nil {
			t.Fatal(err)
		}
		th := store.Thread{OrganizationID: org.ID, WorkspaceID: ws.ID, AutomationID: a.ID, RunID: r.ID, AgentID: "prose"}
		exc := "organizations/" + org.ID + "/workspaces/" + ws.ID + "/exceptions/x1"
		var v21Payloads [][]byte
		var ids []string
		for i, ev := range events {
			ev := proto.CloneOf(ev)
			if i%2 == 0 {
				ev.Exception = exc
			}
			b := mustMarshal(t, ev) // as agent.ToStore wrote it: no name, state or times
			v21Payloads = append(v21Payloads, b)
			e, err := old.CreateEvent(ctx, store.Event{Thread: th, ExceptionID: "", Payload: b})
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, e.ID)
		}
		sched := &platformv1.ScheduleConfig{
			Start:          &platformv1.ScheduleStart{StartDate: &date.Date{Year: 2026, Month: 3, Day: 2}, Time: &timeofday.TimeOfDay{Hours: 9}, TimeZone: "Europe/Berlin"},
			RepeatInterval: &platformv1.RepeatInterval{Unit: platformv1.FrequencyUnit_FREQUENCY_UNIT_WEEK, Interval: 1},
			WeeklyPattern:  &platformv1.DayOfWeekPattern{Days: []platformv1.DayOfWeek{platformv1.DayOfWeek_DAY_OF_WEEK_MONDAY, platformv1.DayOfWeek_DAY_OF_WEEK_FRIDAY}},
			End:            &platformv1.ScheduleEnd{EndType: platformv1.ScheduleEndType_SCHEDULE_END_TYPE_AFTER_OCCURRENCES, MaxOccurrences: 10},
		}
		if _, err := old.CreateSchedule(ctx, store.Schedule{OrganizationID: org.ID, WorkspaceID: ws.ID, AutomationID: a.ID,
			Config: mustMarshal(t, sched), Enabled: true, NextTime: time.Now()}); err != nil {
			t.Fatal(err)
		}
		v21Trigger := mustMarshal(t, trigger)
		ti, err := old.CreateTriggerInstance(ctx, store.TriggerInstance{OrganizationID: org.ID, WorkspaceID: ws.ID, Name: "t",
			BookName: "nats", ConnectionID: "c1", TriggerID: "message", Configuration: v21Trigger})
		if err != nil {
			t.Fatal(err)
		}
		empty, err := old.CreateTriggerInstance(ctx, store.TriggerInstance{OrganizationID: org.ID, WorkspaceID: ws.ID, Name: "e",
			BookName: "webhook", TriggerID: "webhook"})
		if err != nil {
			t.Fatal(err)
		}
		if err := old.Close(); err != nil {
			t.Fatal(err)
		}

		// Migrate (00022 up) and read back.
		if err := b.Apply(ctx, 22, true); err != nil {
			t.Fatal(err)
		}
		st, err := b.Open(ctx)
		if err != nil {
			t.Fatal(err)
		}
		got, err := st.GetAutomation(ctx, org.ID, ws.ID, a.ID)
		if err != nil {
			t.Fatal(err)
		}
		for stage, blob := range map[string][]byte{"draft": got.Details, "published": got.PublishedDetails} {
			out := &platformv1.Automation{}
			if err := applyDetails(out, blob); err != nil {
				t.Fatalf("%s details: %v", stage, err)
			}
			if !proto.Equal(out, details) {
				t.Fatalf("%s details read back as\n%v\nwant\n%v", stage, out, details)
			}
		}
		if why := AutomationInactive(got); why != ErrAutomationDeactivated {
			t.Fatalf("AutomationInactive = %q, want the deactivated reason", why)
		}
		for i, id := range ids {
			e, err := st.GetEvent(ctx, th, id)
			if err != nil {
				t.Fatal(err)
			}
			ev, err := agent.FromStore(e)
			if err != nil {
				t.Fatalf("event %d: %v", i, err)
			}
			want := proto.CloneOf(events[i])
			if i%2 == 0 {
				want.Exception = exc
			}
			if ev.GetException() != want.GetException() || !proto.Equal(
				&platformv1.Event{Payload: ev.Payload}, &platformv1.Event{Payload: want.Payload}) {
				t.Fatalf("event %d reads back as %v, want %v", i, ev, want)
			}
			// What the service writes today is what the migration wrote.
			now, err := agent.ToStore(th, want)
			if err != nil {
				t.Fatal(err)
			}
			if !proto.Equal(decodeStored(t, now.Payload), decodeStored(t, e.Payload)) {
				t.Fatalf("event %d: migrated payload differs from a new one", i)
			}
		}
		for _, tc := range []struct {
			id   string
			want *platformv1.TriggerInstance
		}{{ti.ID, trigger}, {empty.ID, &platformv1.TriggerInstance{}}} {
			got, err := st.GetTriggerInstance(ctx, org.ID, ws.ID, tc.id)
			if err != nil {
				t.Fatal(err)
			}
			cfg, err := decodeTriggerConfig(got.Configuration)
			if err != nil || !proto.Equal(cfg, tc.want) {
				t.Fatalf("trigger configuration reads back as %v (%v), want %v", cfg, err, tc.want)
			}
			if f, err := instanceFilter(got); err != nil || !proto.Equal(f, tc.want.GetFilterExpression()) {
				t.Fatalf("trigger filter reads back as %v (%v)", f, err)
			}
		}
		// Schedules kept the same encoding: they read back as they are.
		sc, err := st.GetSchedule(ctx, org.ID, ws.ID, a.ID)
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := schedule.DecodeConfig(sc.Config)
		if err != nil {
			t.Fatal(err)
		}
		if api, err := codec.ScheduleConfigFromStored(cfg); err != nil || !proto.Equal(api, sched) {
			t.Fatalf("schedule reads back as %v (%v), want %v", api, err, sched)
		}
		if now, err := codec.ScheduleConfigToStored(sched); err != nil {
			t.Fatal(err)
		} else if b, err := schedule.EncodeConfig(now); err != nil || string(b) != string(sc.Config) {
			t.Fatalf("a schedule written today differs from the kept one (%v)", err)
		}
		if err := st.Close(); err != nil {
			t.Fatal(err)
		}

		// Down again: the old bytes.
		if err := b.Apply(ctx, 22, false); err != nil {
			t.Fatal(err)
		}
		back, err := b.Open(ctx, store.WithoutMigrations())
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = back.Close() }()
		a2, err := back.GetAutomation(ctx, org.ID, ws.ID, a.ID)
		if err != nil {
			t.Fatal(err)
		}
		if !proto.Equal(decodeV21Details(t, a2.Details), details) || !proto.Equal(decodeV21Details(t, a2.PublishedDetails), details) {
			t.Fatal("down: automation details differ from the old ones")
		}
		if ti2, err := back.GetTriggerInstance(ctx, org.ID, ws.ID, ti.ID); err != nil || !proto.Equal(decodeV21Trigger(t, ti2.Configuration), trigger) {
			t.Fatalf("down: trigger configuration differs from the old one (%v)", err)
		}
		for i, id := range ids {
			e, err := back.GetEvent(ctx, th, id)
			if err != nil {
				t.Fatal(err)
			}
			was, now := &platformv1.Event{}, &platformv1.Event{}
			if err := proto.Unmarshal(v21Payloads[i], was); err != nil {
				t.Fatal(err)
			}
			if err := proto.Unmarshal(e.Payload, now); err != nil || !proto.Equal(was, now) {
				t.Fatalf("down: event %d is %v (%v), want %v", i, now, err, was)
			}
		}
	})
}

func decodeStored(t *testing.T, b []byte) proto.Message {
	t.Helper()
	ev, err := agent.FromStore(store.Event{Payload: b})
	if err != nil {
		t.Fatal(err)
	}
	ev.CreateTime, ev.UpdateTime = nil, nil
	return ev
}

func decodeV21Details(t *testing.T, b []byte) *platformv1.Automation {
	t.Helper()
	a := &platformv1.Automation{}
	if err := proto.Unmarshal(b, a); err != nil {
		t.Fatal(err)
	}
	return a
}

func decodeV21Trigger(t *testing.T, b []byte) *platformv1.TriggerInstance {
	t.Helper()
	ti := &platformv1.TriggerInstance{}
	if err := proto.Unmarshal(b, ti); err != nil {
		t.Fatal(err)
	}
	return ti
}
