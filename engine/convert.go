package engine

import (
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/store"
)

// RunToProto renders a stored run as the platform's Run resource.
func RunToProto(r store.Run) (*platformv1.Run, error) {
	steps, err := DecodeSteps(r.Steps)
	if err != nil {
		return nil, err
	}
	userIn, err := DecodeValues(r.UserInputs)
	if err != nil {
		return nil, err
	}
	out := &platformv1.Run{
		Name:            RunName(r),
		ExecutableSteps: steps,
		CreateTime:      timestamppb.New(r.CreateTime),
		UpdateTime:      timestamppb.New(r.UpdateTime),
		Stage:           StageToProto(r.Stage),
		StageVersion:    versionString(r.StageVersion),
		UserInputs:      userIn,
		State:           &platformv1.RunState{UpdateTime: timestamppb.New(r.StateTime)},
	}
	if r.PreviousRun != "" {
		out.PreviousRun = "organizations/" + r.OrganizationID + "/workspaces/" + r.WorkspaceID + "/automations/" + r.AutomationID + "/runs/" + r.PreviousRun
	}
	if r.ParentRun != "" {
		out.ParentRun = "organizations/" + r.OrganizationID + "/workspaces/" + r.WorkspaceID + "/automations/" + r.AutomationID + "/runs/" + r.ParentRun
	}
	if len(r.InvocationDetails) > 0 {
		inv := &platformv1.InvocationDetails{}
		if err := proto.Unmarshal(r.InvocationDetails, inv); err != nil {
			return nil, err
		}
		out.InvocationDetails = inv
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
		outs, err := DecodeOutputs(r.Outputs)
		if err != nil {
			return nil, err
		}
		out.State.State = &platformv1.RunState_Completed{Completed: &platformv1.CompletedRunState{Outputs: outs}}
	case store.RunFailed:
		out.State.State = &platformv1.RunState_Failed{Failed: &platformv1.FailedRunState{
			Id: r.ErrorID, Description: r.Description, Location: loc,
		}}
	}
	return out, nil
}
