package server

import (
	"context"
	"fmt"
	"slices"
	"strconv"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/internal/codec"
	"github.com/proserun/prose/internal/engine"
	"github.com/proserun/prose/internal/names"
	"github.com/proserun/prose/server/transport"
	"github.com/proserun/prose/store"
	"github.com/proserun/prose/store/sqlfilter"
)

// RunHistoryService implements prose.platform.v1.RunHistoryService: a run's
// history (ListRunEvents) and an execution's outputs (GetExecutionOutputs).
// Prose runs a run as one execution: an execution id is a run id.
type RunHistoryService struct {
	platformv1.UnimplementedRunHistoryServiceServer
	runs *RunService
}

// NewRunHistoryService returns the run history service.
func NewRunHistoryService(st store.Store, eng *engine.Engine) *RunHistoryService {
	return &RunHistoryService{runs: NewRunService(st, eng)}
}

// defaultRunEventsPage is the reference's default page size of
// ListRunEvents (other lists default to 50).
const defaultRunEventsPage = 100

// ListRunEvents lists a run's history, oldest first (automation_id "-":
// the run in any automation of the workspace). Filter: node_kind (= !=).
func (s *RunHistoryService) ListRunEvents(ctx context.Context, req *platformv1.ListRunEventsRequest) (*platformv1.ListRunEventsResponse, error) {
	org, ws, automation, id := req.GetOrganizationId(), req.GetWorkspaceId(), req.GetAutomationId(), req.GetRunId()
	lp, err := parseFiltered(req, sqlfilter.RunEvents)
	if err != nil {
		return nil, err
	}
	if req.GetPageSize() == 0 {
		lp.Size = defaultRunEventsPage
	}
	r, err := s.runs.getRun(ctx, org, ws, automation, id)
	if err != nil {
		return nil, err
	}
	req2 := store.ListRunEventsRequest{RunID: r.ID, Filter: lp.Filter, PageSize: lp.Size, PageToken: lp.Token}
	page, err := s.runs.st.ListRunEvents(ctx, req2)
	if err != nil {
		return nil, storeStatus(err, ReasonRunNotFound, ReasonRunNotFound, names.Run(org, ws, automation, id))
	}
	out := &platformv1.ListRunEventsResponse{NextPageToken: page.NextPageToken}
	rr := runEventRenderer{run: r}
	for i, e := range page.Items {
		evs, err := rr.render(e)
		if err != nil {
			return nil, err
		}
		out.RunEvents = append(out.RunEvents, evs...)
		if len(out.RunEvents) >= lp.Size && i+1 < len(page.Items) {
			// the entries' facts filled the page: it ends after this
			// entry (in full), the next one starts past it
			if err := s.cutPage(ctx, req2, i+1, out); err != nil {
				return nil, storeStatus(err, ReasonRunNotFound, ReasonRunNotFound, names.Run(org, ws, automation, id))
			}
			return out, nil
		}
	}
	return out, nil
}

// cutPage ends the page out after its first n stored entries: the store's
// page of n entries from the same token gives the token past them (a run's
// entries are only ever appended, in the order of their ids).
func (s *RunHistoryService) cutPage(ctx context.Context, req store.ListRunEventsRequest, n int, out *platformv1.ListRunEventsResponse) error {
	req.PageSize = n
	page, err := s.runs.st.ListRunEvents(ctx, req)
	if err != nil {
		return err
	}
	out.NextPageToken = page.NextPageToken
	return nil
}

// GetExecutionOutputs gets the outputs of a completed run with their
// types. A run that has not completed has no outputs yet:
// FAILED_PRECONDITION RUN_STATE_CONFLICT naming its state.
func (s *RunHistoryService) GetExecutionOutputs(ctx context.Context, req *platformv1.GetExecutionOutputsRequest) (*platformv1.GetExecutionOutputsResponse, error) {
	org, ws, id := req.GetOrganizationId(), req.GetWorkspaceId(), req.GetExecutionId()
	r, err := s.runs.getRun(ctx, org, ws, "-", id)
	if err != nil {
		return nil, err
	}
	if r.State != store.RunCompleted {
		return nil, transport.FailedPrecondition(ReasonRunStateConflict,
			fmt.Sprintf("execution %q is %s: its outputs are known once it has completed", id, apiRunState(r.State)),
			map[string]string{"resource_name": names.Run(org, ws, r.AutomationID, r.ID)})
	}
	outs, err := codec.DecodeOutputs(r)
	if err != nil {
		return nil, err
	}
	resp := &platformv1.GetExecutionOutputsResponse{Outputs: make(map[string]*platformv1.ExecutionOutput, len(outs))}
	for k, v := range outs {
		resp.Outputs[k] = &platformv1.ExecutionOutput{Value: v, Type: valueTypeOf(v)}
	}
	return resp, nil
}

// apiRunState names a stored state as the platform API shows it.
func apiRunState(s store.RunState) string {
	if s == store.RunWaiting {
		return string(store.RunExecuting)
	}
	return string(s)
}

// runEventRenderer renders a run's history entries as the reference's
// RunEvents.
type runEventRenderer struct {
	run store.Run
}

// render renders one stored entry: one event, or one per fact of an entry
// of facts.
func (rr runEventRenderer) render(e store.RunEvent) ([]*platformv1.RunEvent, error) {
	one := func(ev *platformv1.RunEvent, err error) ([]*platformv1.RunEvent, error) {
		if err != nil {
			return nil, err
		}
		return []*platformv1.RunEvent{ev}, nil
	}
	switch e.Kind {
	case store.RunEventState:
		return one(rr.stateEvent(e))
	case store.RunEventException:
		return one(rr.exceptionEvent(e))
	case store.RunEventEngine:
		return rr.engineEvents(e)
	case store.RunEventControl:
		return one(rr.controlEvent(e), nil)
	}
	return nil, fmt.Errorf("run %s: a history entry of kind %q", rr.run.ID, e.Kind)
}

// stateEvent is a run_update: the run as it stood when it entered the
// state (no steps or inputs; the reference's state members only).
func (rr runEventRenderer) stateEvent(e store.RunEvent) (*platformv1.RunEvent, error) {
	r := rr.run
	run := &platformv1.Run{
		Name:         names.Run(r.OrganizationID, r.WorkspaceID, r.AutomationID, r.ID),
		CreateTime:   timestamppb.New(r.CreateTime),
		UpdateTime:   timestamppb.New(e.Time),
		Stage:        stageProto(r.Stage),
		StageVersion: strconv.FormatInt(r.StageVersion, 10),
		State:        &platformv1.RunState{UpdateTime: timestamppb.New(e.Time)},
	}
	if r.PreviousRun != "" {
		run.PreviousRun = names.Run(r.OrganizationID, r.WorkspaceID, r.AutomationID, r.PreviousRun)
	}
	loc := &platformv1.Location{StartByte: e.Location.Start, EndByte: e.Location.End}
	switch store.RunState(e.State) {
	case store.RunPending:
		run.State.State = &platformv1.RunState_Pending{Pending: &platformv1.PendingRunState{}}
	case store.RunExecuting, store.RunWaiting:
		run.State.State = &platformv1.RunState_Executing{Executing: &platformv1.ExecutingRunState{}}
	case store.RunStopping:
		run.State.State = &platformv1.RunState_Stopping{Stopping: &platformv1.StoppingRunState{Reason: e.Reason}}
	case store.RunStopped:
		run.State.State = &platformv1.RunState_Stopped{Stopped: &platformv1.StoppedRunState{Reason: e.Reason}}
	case store.RunAwaitingGuidance:
		run.State.State = &platformv1.RunState_AwaitingGuidance{AwaitingGuidance: &platformv1.AwaitingGuidanceRunState{
			Exception: e.Ref, Location: loc,
		}}
	case store.RunCompleted:
		outs := map[string]*platformv1.Value{}
		if r.State == store.RunCompleted {
			var err error
			if outs, err = codec.DecodeOutputs(r); err != nil {
				return nil, err
			}
		}
		run.State.State = &platformv1.RunState_Completed{Completed: &platformv1.CompletedRunState{Outputs: outs}}
	case store.RunFailed:
		run.State.State = &platformv1.RunState_Failed{Failed: &platformv1.FailedRunState{Id: e.Ref, Location: loc}}
	}
	return &platformv1.RunEvent{Event: &platformv1.RunEvent_RunUpdate{RunUpdate: &platformv1.RunUpdate{Run: run}}}, nil
}

// journal is an execution_journal entry of the run at e's time.
func (rr runEventRenderer) journal(e store.RunEvent) *platformv1.ExecutionJournal {
	r := rr.run
	return &platformv1.ExecutionJournal{
		ExecutionId: r.ID, RunId: r.ID, EventTime: timestamppb.New(e.Time),
		AutomationId: r.AutomationID, WorkspaceId: r.WorkspaceID, OrganizationId: r.OrganizationID, Stage: stageProto(r.Stage),
	}
}

func textValue(s string) *platformv1.Value {
	return &platformv1.Value{Kind: &platformv1.Value_Text{Text: s}}
}

// exceptionEvent: an exception raised (node_executed with the exception as
// its error), resolved (node_patched with the guidance; the resolver —
// users/{u}, agents/{a} or guideEntries/{g} — in extra_metadata), archived
// or unarchived (node_executed). extra_metadata names the exception and its
// new state.
func (rr runEventRenderer) exceptionEvent(e store.RunEvent) (*platformv1.RunEvent, error) {
	r := rr.run
	j := rr.journal(e)
	xname := names.Exception(r.OrganizationID, r.WorkspaceID, e.Ref)
	j.ExtraMetadata = map[string]*platformv1.Value{"exception": textValue(xname), "exception_state": textValue(e.State)}
	loc := &platformv1.Location{StartByte: e.Location.Start, EndByte: e.Location.End}
	if e.State == string(store.ExceptionResolved) {
		p := &platformv1.NodePatched{CodeLocation: loc, NodeId: xname, NodeKind: store.ExceptionNodeKind}
		if e.Reason != "" {
			j.ExtraMetadata["resolver"] = textValue(e.Reason)
		}
		if len(e.Data) > 0 {
			g, err := codec.DecodeGuidanceView(e.Data)
			if err != nil {
				return nil, err
			}
			j.ExtraMetadata["guidance"] = textValue(g.Kind)
			switch {
			case g.Values != nil:
				p.InputsPatch = g.Values
			case g.Answer != nil:
				p.InputsPatch = map[string]*platformv1.Value{"answer": g.Answer}
			case g.Code != "":
				p.CodePatch = g.Code
			}
		}
		j.Event = &platformv1.ExecutionJournal_NodePatched{NodePatched: p}
	} else {
		n := &platformv1.NodeExecuted{CodeLocation: loc, NodeId: xname, NodeKind: store.ExceptionNodeKind}
		if e.State == string(store.ExceptionPending) {
			n.Error = []*platformv1.ExecutionError{{
				Id:      e.Ref,
				Context: &platformv1.ExecutionErrorContext{CodeLocation: loc, NodeId: xname},
			}}
		}
		j.Event = &platformv1.ExecutionJournal_NodeExecuted{NodeExecuted: n}
	}
	return &platformv1.RunEvent{Event: &platformv1.RunEvent_ExecutionJournal{ExecutionJournal: j}}, nil
}

// controlEvent: a client paused (node_kind Pause) or continued (Continue)
// the run: a node_executed whose node is the run, with who did it
// (users/{u} or organizations/{o}/apiKeys/{k}) in extra_metadata "actor".
// The entry of the state the run entered follows it.
func (rr runEventRenderer) controlEvent(e store.RunEvent) *platformv1.RunEvent {
	r := rr.run
	j := rr.journal(e)
	if e.Reason != "" {
		j.ExtraMetadata = map[string]*platformv1.Value{"actor": textValue(e.Reason)}
	}
	j.Event = &platformv1.ExecutionJournal_NodeExecuted{NodeExecuted: &platformv1.NodeExecuted{
		NodeId: names.Run(r.OrganizationID, r.WorkspaceID, r.AutomationID, r.ID), NodeKind: e.NodeKind,
	}}
	return &platformv1.RunEvent{Event: &platformv1.RunEvent_ExecutionJournal{ExecutionJournal: j}}
}

// engineEvents: a say (node_executed, node_kind Say, the line as output
// "text"), a book call (FunctionCall, with book_function_call), a run
// started (StartRun, the run's name as output "run"), a fact set (SetFact),
// the end of what the history records (HistoryTruncated).
func (rr runEventRenderer) engineEvents(e store.RunEvent) ([]*platformv1.RunEvent, error) {
	h, err := codec.DecodeHistoryEvent(e.Data)
	if err != nil {
		return nil, fmt.Errorf("run %s: history entry %d: %w", rr.run.ID, e.ID, err)
	}
	if len(h.Facts) > 0 {
		return rr.factEvents(e, h.Facts), nil
	}
	return []*platformv1.RunEvent{rr.engineEvent(e, h)}, nil
}

// factEvents: each fact of an entry of facts (SetFact, at its statement):
// its name in extra_metadata "fact", its kind in "kind", its value as the
// output of that name unless it was too large to keep ("truncated").
func (rr runEventRenderer) factEvents(e store.RunEvent, facts []codec.FactEvent) []*platformv1.RunEvent {
	out := make([]*platformv1.RunEvent, len(facts))
	for i, f := range facts {
		j := rr.journal(e)
		j.ExtraMetadata = map[string]*platformv1.Value{"fact": textValue(f.Name), "kind": textValue(f.Kind)}
		if len(f.Values) == 0 {
			j.ExtraMetadata["truncated"] = &platformv1.Value{Kind: &platformv1.Value_BoolValue{BoolValue: true}}
		}
		n := &platformv1.NodeExecuted{CodeLocation: &platformv1.Location{StartByte: f.Start, EndByte: f.End}, NodeKind: e.NodeKind, Outputs: f.Values}
		j.Event = &platformv1.ExecutionJournal_NodeExecuted{NodeExecuted: n}
		out[i] = &platformv1.RunEvent{Event: &platformv1.RunEvent_ExecutionJournal{ExecutionJournal: j}}
	}
	return out
}

// engineEvent renders an engine entry other than facts.
func (rr runEventRenderer) engineEvent(e store.RunEvent, h codec.HistoryEvent) *platformv1.RunEvent {
	r := rr.run
	j := rr.journal(e)
	loc := &platformv1.Location{StartByte: e.Location.Start, EndByte: e.Location.End}
	n := &platformv1.NodeExecuted{CodeLocation: loc, NodeKind: e.NodeKind}
	switch {
	case h.Said != nil:
		n.Outputs = map[string]*platformv1.Value{"text": textValue(*h.Said)}
		if h.SaidBytes > 0 {
			j.ExtraMetadata = map[string]*platformv1.Value{"truncated": {Kind: &platformv1.Value_BoolValue{BoolValue: true}}}
		}
	case h.BookCall != nil:
		c := h.BookCall
		n.NodeId = c.CallID
		n.Inputs, n.Outputs = c.Inputs, c.Outputs
		call := &platformv1.BookFunctionCall{
			BookFunction: &platformv1.BookFunction{BookName: c.Book, FunctionName: c.Procedure, CodeLocation: loc},
			Inputs:       c.Inputs,
		}
		switch len(c.Outputs) {
		case 0:
		case 1:
			for _, v := range c.Outputs {
				call.Output = v
			}
		default:
			d := &platformv1.Dictionary{}
			for _, k := range sortedKeys(c.Outputs) {
				d.Entries = append(d.Entries, &platformv1.DictionaryEntry{
					Key: &platformv1.HashableValue{Kind: &platformv1.HashableValue_Text{Text: k}}, Value: c.Outputs[k],
				})
			}
			call.Output = &platformv1.Value{Kind: &platformv1.Value_Dictionary{Dictionary: d}}
		}
		n.BookFunctionCall = call
		if c.ValuesOmitted {
			j.ExtraMetadata = map[string]*platformv1.Value{"truncated": {Kind: &platformv1.Value_BoolValue{BoolValue: true}}}
		}
	case h.ChildRunID != "":
		n.Outputs = map[string]*platformv1.Value{"run": textValue(names.Run(r.OrganizationID, r.WorkspaceID, r.AutomationID, h.ChildRunID))}
	case h.TruncatedAt > 0:
		j.ExtraMetadata = map[string]*platformv1.Value{"history_limit": textValue(strconv.FormatInt(h.TruncatedAt, 10))}
	}
	j.Event = &platformv1.ExecutionJournal_NodeExecuted{NodeExecuted: n}
	return &platformv1.RunEvent{Event: &platformv1.RunEvent_ExecutionJournal{ExecutionJournal: j}}
}

// valueTypeOf is the type of an output value: a scalar, a list of its
// items' type (any when they differ or there are none), a dictionary of
// its text keys' types, a table of its columns, optional(any) for null.
func valueTypeOf(v *platformv1.Value) *platformv1.ValueType {
	scalar := func(s platformv1.ValueScalarType) *platformv1.ValueType {
		return &platformv1.ValueType{Kind: &platformv1.ValueType_ScalarType{ScalarType: s}}
	}
	anyType := &platformv1.ValueType{Kind: &platformv1.ValueType_AnyType{AnyType: &platformv1.ValueAnyType{}}}
	switch k := v.GetKind().(type) {
	case *platformv1.Value_Text:
		return scalar(platformv1.ValueScalarType_VALUE_SCALAR_TYPE_TEXT)
	case *platformv1.Value_Number:
		return scalar(platformv1.ValueScalarType_VALUE_SCALAR_TYPE_NUMBER)
	case *platformv1.Value_BoolValue:
		return scalar(platformv1.ValueScalarType_VALUE_SCALAR_TYPE_BOOLEAN)
	case *platformv1.Value_Date:
		return scalar(platformv1.ValueScalarType_VALUE_SCALAR_TYPE_DATE)
	case *platformv1.Value_Datetime:
		return scalar(platformv1.ValueScalarType_VALUE_SCALAR_TYPE_DATETIME)
	case *platformv1.Value_Timeofday:
		return scalar(platformv1.ValueScalarType_VALUE_SCALAR_TYPE_TIME)
	case *platformv1.Value_File:
		return scalar(platformv1.ValueScalarType_VALUE_SCALAR_TYPE_FILE)
	case *platformv1.Value_NullValue:
		return &platformv1.ValueType{Kind: &platformv1.ValueType_OptionalType{OptionalType: &platformv1.ValueOptionalType{Inner: anyType}}}
	case *platformv1.Value_List:
		var inner *platformv1.ValueType
		for _, it := range k.List.GetItems() {
			t := valueTypeOf(it)
			if inner == nil {
				inner = t
			} else if !proto.Equal(inner, t) {
				inner = anyType
				break
			}
		}
		if inner == nil {
			inner = anyType
		}
		return &platformv1.ValueType{Kind: &platformv1.ValueType_ListType{ListType: &platformv1.ValueListType{Inner: inner}}}
	case *platformv1.Value_Dictionary:
		d := &platformv1.ValueDictionaryType{}
		for _, e := range k.Dictionary.GetEntries() {
			key := e.GetKey().GetText()
			if key == "" {
				continue
			}
			d.Fields = append(d.Fields, &platformv1.ValueDictionaryTypeField{Key: key, Value: valueTypeOf(e.GetValue())})
		}
		return &platformv1.ValueType{Kind: &platformv1.ValueType_DictionaryType{DictionaryType: d}}
	case *platformv1.Value_Table:
		t := &platformv1.ValueTableType{}
		for _, c := range k.Table.GetInline().GetColumns() {
			t.Columns = append(t.Columns, &platformv1.ValueTableTypeColumn{Key: c.GetName(), Value: anyType})
		}
		return &platformv1.ValueType{Kind: &platformv1.ValueType_TableType{TableType: t}}
	case *platformv1.Value_Set:
		return &platformv1.ValueType{Kind: &platformv1.ValueType_ListType{ListType: &platformv1.ValueListType{Inner: anyType}}}
	}
	return anyType
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
