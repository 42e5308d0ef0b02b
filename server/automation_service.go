package server

import (
	"github.com/proserun/prose/internal/codec"
	"github.com/proserun/prose/internal/names"
	"go.einride.tech/aip/fieldmask"

	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/emptypb"

	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/internal/codec/protovalue"
	"github.com/proserun/prose/internal/engine"
	"github.com/proserun/prose/internal/lang"
	"github.com/proserun/prose/server/transport"
	"github.com/proserun/prose/store"
	"github.com/proserun/prose/store/sqlfilter"
)

// AutomationService implements prose.platform.v1.AutomationService: an
// automation's english_code is its draft; PublishAutomation copies the draft
// to the published stage; InvokeAutomation starts a run through the engine.
//
// The fields the store has no column for (input_specs, connections,
// default_inputs, marked_outputs, activation_state) are kept per stage in
// store.Automation.Details as a prose.persist.v1.AutomationDetails (the
// stored shape, private to Prose: a change to the public Automation is
// never a data migration).
type AutomationService struct {
	platformv1.UnimplementedAutomationServiceServer
	st  store.Store
	eng *engine.Engine
	// Gate, when set, makes PublishAutomation check the draft first (its
	// tests and a replay: SafeChangeService.Publish).
	Gate interface {
		Publish(ctx context.Context, req *platformv1.PublishAutomationRequest) (store.Automation, error)
	}
}

// NewAutomationService returns the automation service.
func NewAutomationService(st store.Store, eng *engine.Engine) *AutomationService {
	return &AutomationService{st: st, eng: eng}
}

// detailsOf extracts the fields kept in Details (codec.AutomationDetails).
func detailsOf(a *platformv1.Automation) ([]byte, error) { return codec.AutomationDetails(a) }

// applyDetails copies the stored detail fields into out.
func applyDetails(out *platformv1.Automation, b []byte) error {
	return codec.ApplyAutomationDetails(out, b)
}

// AutomationInactive says why a stored automation must start no scheduled
// or triggered run: its activation_state (the current setting, kept with
// the draft's details, so deactivating needs no new publish) is
// AUTOMATION_ACTIVATION_STATE_DEACTIVATED. "" means it may run; unreadable
// details do not stop it (they are checked when written).
func AutomationInactive(a store.Automation) string {
	if codec.AutomationDeactivated(a.Details) {
		return ErrAutomationDeactivated
	}
	return ""
}

// ErrAutomationDeactivated is the reason a deactivated automation starts
// no scheduled or triggered run.
const ErrAutomationDeactivated = "the automation is deactivated (activation_state AUTOMATION_ACTIVATION_STATE_DEACTIVATED)"

func versionStr(v int64) string {
	if v == 0 {
		return ""
	}
	return strconv.FormatInt(v, 10)
}

// automationProto renders a stage of a stored automation.
func automationProto(a store.Automation, stage store.Stage) (*platformv1.Automation, error) {
	out := &platformv1.Automation{
		Name:                   names.Automation(a.OrganizationID, a.WorkspaceID, a.ID),
		DisplayName:            a.DisplayName,
		Description:            a.Description,
		CreateTime:             timestampOrNil(a.CreateTime),
		UpdateTime:             timestampOrNil(a.UpdateTime),
		UpdateUserId:           a.UpdateUserID,
		DeleteTime:             timestampOrNil(a.DeleteTime),
		LatestPublishedVersion: versionStr(a.PublishedVersion),
		AuthorId:               a.AuthorID,
		PublishTime:            timestampOrNil(a.PublishTime),
		PublishUserId:          a.PublishUserID,
		DraftShareId:           a.DraftShareID,
		PublishedShareId:       a.PublishedShareID,
		Stage:                  stageProto(stage),
	}
	code, details, version := a.Code, a.Details, a.Version
	if stage == store.StagePublished {
		code, details, version = a.PublishedCode, a.PublishedDetails, a.PublishedVersion
	}
	out.EnglishCode, out.Code = code, code
	out.Version, out.StageVersion = versionStr(version), versionStr(version)
	if err := applyDetails(out, details); err != nil {
		return nil, err
	}
	return out, nil
}

// automationErr maps a store error about an automation.
func automationErr(err error, org, ws, id string) error {
	return storeErrors{name: names.Automation(org, ws, id), notFound: ReasonAutomationNotFound, exists: ReasonAutomationExists,
		precondition: ReasonAutomationNotPublished}.status(err)
}

// checkCode parses english_code; a syntax error is INVALID_ARGUMENT with
// the byte span in the violation of field (and in the ErrorInfo metadata).
func checkCode(code, field string) error {
	_, err := lang.Parse(code)
	if err == nil {
		return nil
	}
	var se *lang.SyntaxError
	if !errors.As(err, &se) {
		return transport.InvalidArgument(ReasonCodeSyntaxError, "the code does not parse: "+err.Error(), transport.Violation(field, err.Error()))
	}
	desc := fmt.Sprintf("%s (start_byte %d, end_byte %d)", se.Error(), se.Span.Start, se.Span.End)
	return transport.NewError(codes.InvalidArgument, ReasonCodeSyntaxError, "the code does not parse: "+desc).
		Meta("start_byte", strconv.Itoa(se.Span.Start)).Meta("end_byte", strconv.Itoa(se.Span.End)).
		Meta("line", strconv.Itoa(se.Line)).Meta("column", strconv.Itoa(se.Col)).
		Violations(transport.Violation(field, desc)).Err()
}

// checkAutomation validates the writable fields named by has.
func checkAutomation(a *platformv1.Automation, has func(string) bool) error {
	// display_name: given (field_behavior REQUIRED) and not blank (its
	// protovalidate constraint).
	if has("english_code") {
		if err := checkCode(a.GetEnglishCode(), "automation.english_code"); err != nil {
			return err
		}
	}
	if has("input_specs") {
		for i, s := range a.GetInputSpecs() {
			if strings.TrimSpace(s.GetName()) == "" {
				return transport.InvalidArgument(ReasonInvalidField, "every input spec needs a name",
					transport.Violation(fmt.Sprintf("automation.input_specs[%d].name", i), "blank"))
			}
		}
	}
	if has("default_inputs") {
		if _, err := protovalue.MapFromProto(a.GetDefaultInputs()); err != nil {
			return transport.InvalidArgument(ReasonInvalidField, "automation.default_inputs: "+err.Error(),
				transport.Violation("automation.default_inputs", err.Error()))
		}
	}
	return nil
}

func callerID(ctx context.Context) string {
	if p, ok := transport.PrincipalFrom(ctx); ok {
		return p.UserID
	}
	return ""
}

// requireWorkspace answers NOT_FOUND for a workspace that does not exist.
func (s *AutomationService) requireWorkspace(ctx context.Context, org, ws string) error {
	if _, err := s.st.GetWorkspace(ctx, org, ws); err != nil {
		return storeStatus(err, ReasonWorkspaceNotFound, ReasonWorkspaceExists, names.Workspace(org, ws))
	}
	return nil
}

// CreateAutomation creates an automation whose english_code (parsed: a
// syntax error is INVALID_ARGUMENT with its byte span) becomes the draft.
// Idempotent with request_id.
func (s *AutomationService) CreateAutomation(ctx context.Context, req *platformv1.CreateAutomationRequest) (*platformv1.Automation, error) {
	org, ws, id := req.GetOrganizationId(), req.GetWorkspaceId(), req.GetAutomationId()
	// automation_id, when given, is a resource id: its protovalidate pattern.
	in := req.GetAutomation()
	if err := checkAutomation(in, func(string) bool { return true }); err != nil {
		return nil, err
	}
	details, err := detailsOf(in)
	if err != nil {
		return nil, err
	}
	user := callerID(ctx)
	create := func() (*platformv1.Automation, string, error) {
		a, err := s.st.CreateAutomation(ctx, store.Automation{
			OrganizationID: org, WorkspaceID: ws, ID: id, DisplayName: in.GetDisplayName(), Description: in.GetDescription(),
			Code: in.GetEnglishCode(), Details: details, AuthorID: user, UpdateUserID: user,
		})
		if err != nil {
			if errors.Is(err, store.ErrNotFound) {
				return nil, "", transport.NotFound(ReasonWorkspaceNotFound, names.Workspace(org, ws))
			}
			return nil, "", automationErr(err, org, ws, id)
		}
		p, err := automationProto(a, store.StageDraft)
		return p, a.ID, err
	}
	get := func(aid string) (*platformv1.Automation, error) {
		a, err := s.st.GetAutomation(ctx, org, ws, aid)
		if err != nil {
			return nil, automationErr(err, org, ws, aid)
		}
		return automationProto(a, store.StageDraft)
	}
	undo := func(a *platformv1.Automation) error {
		_, err := s.st.DeleteAutomation(ctx, org, ws, idOf(a.GetName()))
		return err
	}
	return withCodeWarnings(idempotent(ctx, s.st, org, "CreateAutomation/"+ws, req.GetRequestId(), create, get, undo))
}

// GetAutomation gets an automation's draft (deleted ones too, with
// delete_time set).
func (s *AutomationService) GetAutomation(ctx context.Context, req *platformv1.GetAutomationRequest) (*platformv1.Automation, error) {
	org, ws, id := req.GetOrganizationId(), req.GetWorkspaceId(), req.GetAutomationId()
	a, err := s.st.GetAutomation(ctx, org, ws, id)
	if err != nil {
		return nil, automationErr(err, org, ws, id)
	}
	return automationProto(a, store.StageDraft)
}

// QueryAutomation gets an automation at a stage (unspecified: the draft).
// The published stage of an automation never published is
// FAILED_PRECONDITION (AUTOMATION_NOT_PUBLISHED), as invoking it is.
func (s *AutomationService) QueryAutomation(ctx context.Context, req *platformv1.QueryAutomationRequest) (*platformv1.Automation, error) {
	org, ws, id := req.GetOrganizationId(), req.GetWorkspaceId(), req.GetAutomationId()
	// stage is a defined value (its protovalidate constraint).
	stage := store.StageDraft
	if req.GetStage() == platformv1.AutomationStage_AUTOMATION_STAGE_PUBLISHED {
		stage = store.StagePublished
	}
	a, err := s.st.GetAutomation(ctx, org, ws, id)
	if err != nil {
		return nil, automationErr(err, org, ws, id)
	}
	if stage == store.StagePublished && a.PublishedVersion == 0 {
		return nil, transport.FailedPrecondition(ReasonAutomationNotPublished,
			fmt.Sprintf("automation %q has never been published: query its draft stage or publish it first", id),
			map[string]string{"resource_name": names.Automation(org, ws, id)})
	}
	return automationProto(a, stage)
}

// ListAutomations lists a workspace's automations. Filter: display_name
// (=, !=, :). Order: display_name, create_time, update_time (default
// update_time desc).
func (s *AutomationService) ListAutomations(ctx context.Context, req *platformv1.ListAutomationsRequest) (*platformv1.ListAutomationsResponse, error) {
	org, ws := req.GetOrganizationId(), req.GetWorkspaceId()
	lp, err := parseList(req, sqlfilter.Automations, store.AutomationOrdering)
	if err != nil {
		return nil, err
	}
	if err := s.requireWorkspace(ctx, org, ws); err != nil {
		return nil, err
	}
	page, err := s.st.ListAutomations(ctx, store.ListAutomationsRequest{
		OrganizationID: org, WorkspaceID: ws, ShowDeleted: req.GetShowDeleted(), Filter: lp.Filter, OrderBy: lp.OrderBy,
		PageSize: lp.Size, PageToken: lp.Token,
	})
	if err != nil {
		return nil, storeStatus(err, ReasonWorkspaceNotFound, ReasonWorkspaceExists, names.Workspace(org, ws))
	}
	out := &platformv1.ListAutomationsResponse{NextPageToken: page.NextPageToken}
	draft := func(a store.Automation) (*platformv1.Automation, error) { return automationProto(a, store.StageDraft) }
	if out.Automations, err = mapItems(page.Items, draft); err != nil {
		return nil, err
	}
	return out, nil
}

// The paths UpdateAutomation accepts.
var automationMask = map[string]bool{
	"display_name": true, "description": true, "english_code": true, "input_specs": true,
	"connections": true, "default_inputs": true, "marked_outputs": true, "activation_state": true,
}

// UpdateAutomation edits the draft: the fields named in update_mask, or,
// without a mask, every writable field the request sets (non-empty). The
// version increases; the published stage is untouched.
func (s *AutomationService) UpdateAutomation(ctx context.Context, req *platformv1.UpdateAutomationRequest) (*platformv1.Automation, error) {
	org, ws, id := req.GetOrganizationId(), req.GetWorkspaceId(), req.GetAutomationId()
	in := req.GetAutomation()
	if in == nil {
		return nil, transport.InvalidArgument(transport.ReasonRequiredFieldMissing, "automation is required", transport.Violation("automation", "required"))
	}
	if err := checkUpdateMask(req.GetUpdateMask(), &platformv1.Automation{}); err != nil {
		return nil, err
	}
	paths := map[string]bool{}
	if fieldmask.IsFullReplacement(req.GetUpdateMask()) {
		for k := range automationMask {
			paths[k] = true
		}
	}
	for _, p := range req.GetUpdateMask().GetPaths() {
		if p == fieldmask.WildcardPath {
			continue
		}
		if !automationMask[p] {
			return nil, transport.InvalidArgument(ReasonInvalidField, fmt.Sprintf("update_mask: %q cannot be updated", p),
				transport.Violation("update_mask", "unknown path "+p))
		}
		paths[p] = true
	}
	if len(req.GetUpdateMask().GetPaths()) == 0 {
		set := map[string]bool{
			"display_name": in.GetDisplayName() != "", "description": in.GetDescription() != "",
			"english_code": in.GetEnglishCode() != "", "input_specs": len(in.GetInputSpecs()) > 0,
			"connections": len(in.GetConnections()) > 0, "default_inputs": len(in.GetDefaultInputs()) > 0,
			"marked_outputs": len(in.GetMarkedOutputs()) > 0, "activation_state": in.GetActivationState() != 0,
		}
		for k, v := range set {
			if v {
				paths[k] = true
			}
		}
		if len(paths) == 0 {
			return nil, transport.InvalidArgument(ReasonInvalidField, "nothing to update: set a field or name it in update_mask",
				transport.Violation("update_mask", "empty and no field set"))
		}
	}
	if err := checkAutomation(in, func(p string) bool { return paths[p] }); err != nil {
		return nil, err
	}
	cur, err := s.st.GetAutomation(ctx, org, ws, id)
	if err != nil {
		return nil, automationErr(err, org, ws, id)
	}
	if !cur.DeleteTime.IsZero() {
		return nil, transport.NotFound(ReasonAutomationNotFound, names.Automation(org, ws, id))
	}
	merged, err := automationProto(cur, store.StageDraft)
	if err != nil {
		return nil, err
	}
	var mask []string
	detailsChanged := false
	for p := range paths {
		switch p {
		case "display_name":
			mask = append(mask, "display_name")
		case "description":
			mask = append(mask, "description")
		case "english_code":
			mask = append(mask, "code")
		case "input_specs":
			merged.InputSpecs, detailsChanged = in.GetInputSpecs(), true
		case "connections":
			merged.Connections, detailsChanged = in.GetConnections(), true
		case "default_inputs":
			merged.DefaultInputs, detailsChanged = in.GetDefaultInputs(), true
		case "marked_outputs":
			merged.MarkedOutputs, detailsChanged = in.GetMarkedOutputs(), true
		case "activation_state":
			merged.ActivationState, detailsChanged = in.GetActivationState(), true
		}
	}
	upd := store.Automation{
		OrganizationID: org, WorkspaceID: ws, ID: id, DisplayName: in.GetDisplayName(), Description: in.GetDescription(),
		Code: in.GetEnglishCode(), UpdateUserID: callerID(ctx),
	}
	if detailsChanged {
		if upd.Details, err = detailsOf(merged); err != nil {
			return nil, err
		}
		mask = append(mask, "details")
	}
	a, err := s.st.UpdateAutomation(ctx, upd, mask)
	if err != nil {
		return nil, automationErr(err, org, ws, id)
	}
	return withCodeWarnings(automationProto(a, store.StageDraft))
}

// PublishAutomation makes the draft the published stage; version,
// stage_version and latest_published_version increase. The answer shows the
// published stage. With a Gate, the draft's tests and a replay of the
// published version's runs check it first (docs/safe-change.md).
func (s *AutomationService) PublishAutomation(ctx context.Context, req *platformv1.PublishAutomationRequest) (*platformv1.Automation, error) {
	org, ws, id := req.GetOrganizationId(), req.GetWorkspaceId(), req.GetAutomationId()
	var a store.Automation
	var err error
	if s.Gate != nil {
		if a, err = s.Gate.Publish(ctx, req); err != nil {
			return nil, err
		}
		return automationProto(a, store.StagePublished)
	}
	if a, err = s.st.PublishAutomation(ctx, org, ws, id, callerID(ctx)); err != nil {
		return nil, automationErr(err, org, ws, id)
	}
	return automationProto(a, store.StagePublished)
}

// DeleteAutomation soft-deletes an automation: it is listed only with
// show_deleted, Get still shows it (delete_time set), and it cannot be
// invoked or updated.
func (s *AutomationService) DeleteAutomation(ctx context.Context, req *platformv1.DeleteAutomationRequest) (*emptypb.Empty, error) {
	org, ws, id := req.GetOrganizationId(), req.GetWorkspaceId(), req.GetAutomationId()
	if _, err := s.st.DeleteAutomation(ctx, org, ws, id); err != nil {
		return nil, automationErr(err, org, ws, id)
	}
	return &emptypb.Empty{}, nil
}

// storeStage converts a stage of the contract.
func storeStage(s platformv1.AutomationStage) (store.Stage, bool) {
	switch s {
	case platformv1.AutomationStage_AUTOMATION_STAGE_DRAFT:
		return store.StageDraft, true
	case platformv1.AutomationStage_AUTOMATION_STAGE_PUBLISHED:
		return store.StagePublished, true
	}
	return "", false
}

// invokeErr maps an engine.Invoke error; inputsField names the request
// field the inputs came from.
func invokeErr(err error, org, ws, id, inputsField string) error {
	if errors.Is(err, store.ErrInvalidArgument) {
		// The engine names previous_run in a FieldError; any other
		// INVALID_ARGUMENT is about the inputs.
		msg := withoutSentinel(err, store.ErrInvalidArgument)
		return transport.InvalidArgument(ReasonInvalidField, msg, transport.Violation(fieldOf(err, inputsField), msg))
	}
	if errors.Is(err, store.ErrAlreadyExists) {
		// The request id started a run of another automation (AIP-155).
		return transport.NewError(codes.AlreadyExists, ReasonRequestIDReused, withoutSentinel(err, store.ErrAlreadyExists)).Err()
	}
	return automationErr(err, org, ws, id)
}

// InvokeAutomation starts a run of the automation at a stage (required).
// The draft of an automation never published can be run; its published
// stage is FAILED_PRECONDITION. Idempotent with request_id.
func (s *AutomationService) InvokeAutomation(ctx context.Context, req *platformv1.InvokeAutomationRequest) (*platformv1.InvokeAutomationResponse, error) {
	org, ws, id := req.GetOrganizationId(), req.GetWorkspaceId(), req.GetAutomationId()
	stage, ok := storeStage(req.GetStage())
	if !ok {
		return nil, transport.InvalidArgument(transport.ReasonRequiredFieldMissing, "stage must be AUTOMATION_STAGE_DRAFT or AUTOMATION_STAGE_PUBLISHED",
			transport.Violation("stage", "required: AUTOMATION_STAGE_DRAFT or AUTOMATION_STAGE_PUBLISHED"))
	}
	if s.eng == nil {
		return nil, errStoreUnavailable
	}
	r, _, err := s.eng.Invoke(ctx, engine.InvokeRequest{
		OrganizationID: org, WorkspaceID: ws, AutomationID: id, Stage: stage, Inputs: req.GetInputs(),
		PreviousRun: req.GetPreviousRun(), RequestID: req.GetRequestId(),
		Invocation: manualInvocation(callerID(ctx)),
	})
	if err != nil {
		return nil, invokeErr(err, org, ws, id, "inputs")
	}
	return &platformv1.InvokeAutomationResponse{RunId: r.ID}, nil
}
