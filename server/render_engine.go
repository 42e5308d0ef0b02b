package server

import (
	"strconv"

	"google.golang.org/protobuf/types/known/timestamppb"

	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/internal/codec"
	"github.com/proserun/prose/internal/engine"
	"github.com/proserun/prose/internal/names"
	"github.com/proserun/prose/store"
)

// Rendering between the engine's own types and the platform API: runs and
// stages out, guidance and invocations in. The engine never sees an API
// message but the values it keeps (platform Values, see codec.RunData).

// RunToProto renders a stored run as the platform's Run resource.
func RunToProto(r store.Run) (*platformv1.Run, error) {
	d, err := codec.DecodeRun(r)
	if err != nil {
		return nil, err
	}
	steps := &platformv1.ExecutableSteps{Inputs: d.StepsInputs}
	for _, s := range d.Steps {
		es := &platformv1.ExecutableStep{Code: s.Code, PhaseType: platformv1.AutomationPhaseType(s.Phase)}
		for k, c := range s.BookConnections {
			if es.BookConnections == nil {
				es.BookConnections = map[string]*platformv1.BookConnection{}
			}
			es.BookConnections[k] = &platformv1.BookConnection{ConnectionId: c.ConnectionID, Endpoint: c.Endpoint}
		}
		steps.Executables = append(steps.Executables, es)
	}
	out := &platformv1.Run{
		Name:            names.Run(r.OrganizationID, r.WorkspaceID, r.AutomationID, r.ID),
		ExecutableSteps: steps,
		CreateTime:      timestamppb.New(r.CreateTime),
		UpdateTime:      timestamppb.New(r.UpdateTime),
		Stage:           stageProto(r.Stage),
		StageVersion:    strconv.FormatInt(r.StageVersion, 10),
		UserInputs:      d.Inputs,
		State:           &platformv1.RunState{UpdateTime: timestamppb.New(r.StateTime)},
		RunNumber:       r.Number,
	}
	if r.PreviousRun != "" {
		out.PreviousRun = names.Run(r.OrganizationID, r.WorkspaceID, r.AutomationID, r.PreviousRun)
	}
	if r.ParentRun != "" {
		out.ParentRun = names.Run(r.OrganizationID, r.WorkspaceID, r.AutomationID, r.ParentRun)
	}
	if inv := d.Invocation; inv != nil {
		out.InvocationDetails = &platformv1.InvocationDetails{
			TriggerId: inv.TriggerID, UserId: inv.UserID, InvocationSource: platformv1.InvocationSource(inv.Source),
		}
	}
	loc := &platformv1.Location{StartByte: r.Location.Start, EndByte: r.Location.End}
	switch r.State {
	case store.RunPending:
		out.State.State = &platformv1.RunState_Pending{Pending: &platformv1.PendingRunState{}}
	case store.RunExecuting, store.RunWaiting:
		// waiting: in progress, waiting for its child runs without a worker
		out.State.State = &platformv1.RunState_Executing{Executing: &platformv1.ExecutingRunState{}}
	case store.RunStopping:
		out.State.State = &platformv1.RunState_Stopping{Stopping: &platformv1.StoppingRunState{Reason: r.Reason}}
	case store.RunStopped:
		out.State.State = &platformv1.RunState_Stopped{Stopped: &platformv1.StoppedRunState{Reason: r.Reason}}
	case store.RunAwaitingGuidance:
		out.State.State = &platformv1.RunState_AwaitingGuidance{AwaitingGuidance: &platformv1.AwaitingGuidanceRunState{
			Exception: r.ExceptionID, Description: r.Description, Location: loc,
		}}
	case store.RunCompleted:
		out.State.State = &platformv1.RunState_Completed{Completed: &platformv1.CompletedRunState{Outputs: d.Outputs}}
	case store.RunFailed:
		out.State.State = &platformv1.RunState_Failed{Failed: &platformv1.FailedRunState{
			Id: r.ErrorID, Description: r.Description, Location: loc,
		}}
	}
	return out, nil
}

// stageProto renders a stage.
func stageProto(s store.Stage) platformv1.AutomationStage {
	switch s {
	case store.StageDraft:
		return platformv1.AutomationStage_AUTOMATION_STAGE_DRAFT
	case store.StagePublished:
		return platformv1.AutomationStage_AUTOMATION_STAGE_PUBLISHED
	}
	return platformv1.AutomationStage_AUTOMATION_STAGE_UNSPECIFIED
}

// manualInvocation is how the caller of an invoke starts a run.
func manualInvocation(userID string) *engine.Invocation {
	return &engine.Invocation{UserID: userID, Source: engine.SourceManual}
}

// guidanceFromProto reads the guidance of a resolve request. Values the
// language cannot hold make unreadable guidance, which the engine reports
// (as INVALID_ARGUMENT) once it has found the exception pending.
func guidanceFromProto(req *platformv1.ResolveExceptionRequest) engine.Guidance {
	return engine.GuidanceOf(codec.ResolveGuidance(req))
}
