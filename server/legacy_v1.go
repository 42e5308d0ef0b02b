package server

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"

	legacyv1 "github.com/proserun/prose/gen/prose/legacy/v1"
	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/internal/codec"
	"github.com/proserun/prose/internal/codec/protovalue"
	"github.com/proserun/prose/internal/engine"
	"github.com/proserun/prose/server/transport"
	"github.com/proserun/prose/store"
)

// LegacyV1 implements the deprecated x-api-key interface: POST
// /v1/invoke/{share_id} starts a run of the automation stage the share id
// names and answers 201 {worker_id} (the run id); GET /v1/run/{worker_id}
// answers {state, answer, error}.
//
// v1 states: queued (pending), running (executing), waiting
// (awaiting_guidance), stopping, stopped, done (completed; answer holds each
// output's plain JSON value) and failed (error says why).
//
// Parameters and answers travel as google.protobuf.Struct, whose numbers are
// doubles: a number keeps at most about 15 significant digits and loses
// trailing zeros (2.50 reads back as 2.5). The platform API's Number is
// exact.
type LegacyV1 struct {
	legacyv1.UnimplementedLegacyServiceServer
	st  store.Store
	eng *engine.Engine
	// PublicURL is the public origin of the HTTP side, for the signed URLs
	// of files given to runs (empty: taken from the request).
	PublicURL string
}

// NewLegacyV1 returns the v1 service.
func NewLegacyV1(st store.Store, eng *engine.Engine) *LegacyV1 { return &LegacyV1{st: st, eng: eng} }

// legacyCaller returns the caller's organization ("" without an
// authenticator: everything is visible).
func legacyCaller(ctx context.Context) string {
	if p, ok := transport.PrincipalFrom(ctx); ok {
		return p.OrganizationID
	}
	return ""
}

// visible reports whether the caller's organization may see org.
func visible(ctx context.Context, org string) bool {
	c := legacyCaller(ctx)
	return c == "" || c == org
}

// plainOutputs returns a completed run's outputs as plain JSON values, by
// output name, with the names sorted.
func plainOutputs(r store.Run) (map[string]*structpb.Value, []string, error) {
	if r.State != store.RunCompleted {
		return nil, nil, nil
	}
	outs, err := codec.DecodeOutputs(r)
	if err != nil {
		return nil, nil, err
	}
	m := make(map[string]*structpb.Value, len(outs))
	names := make([]string, 0, len(outs))
	for name, v := range outs {
		p, err := protovalue.ToPlain(v)
		if err != nil {
			return nil, nil, fmt.Errorf("output %q: %w", name, err)
		}
		m[name] = p
		names = append(names, name)
	}
	sort.Strings(names)
	return m, names, nil
}

// v1State names a run state in the v1 vocabulary.
func v1State(s store.RunState) string {
	switch s {
	case store.RunPending:
		return "queued"
	case store.RunExecuting, store.RunWaiting:
		return "running"
	case store.RunAwaitingGuidance:
		return "waiting"
	case store.RunStopping:
		return "stopping"
	case store.RunStopped:
		return "stopped"
	case store.RunCompleted:
		return "done"
	case store.RunFailed:
		return "failed"
	}
	return string(s)
}

// Invoke starts a run of the automation stage the share id names. The
// parameters (any JSON object, also accepted wrapped as {"body": {...}})
// become the run's inputs: plain JSON values, an input invoice_number being
// "the invoice number" in the program. With attachments_key, that parameter
// must be a list of blob URLs; it becomes a list of files (and the run's
// file ids). Answers 201 {worker_id}.
func (s *LegacyV1) Invoke(ctx context.Context, req *legacyv1.InvokeRequest) (*legacyv1.InvokeResponse, error) {
	shareID := req.GetShareId()
	if shareID == "" {
		return nil, transport.InvalidArgument(transport.ReasonRequiredFieldMissing, "share_id is required", transport.Violation("share_id", "required"))
	}
	a, stage, err := s.st.GetAutomationByShareID(ctx, shareID)
	if err != nil || !visible(ctx, a.OrganizationID) {
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return nil, err
		}
		return nil, transport.NotFound(ReasonShareIDNotFound, "share id "+shareID)
	}
	if err := transport.RequireWorkspace(ctx, a.WorkspaceID, store.PermRunsCreate); err != nil {
		return nil, err
	}
	params := req.GetParameters().GetFields()
	if len(params) == 1 {
		if b, ok := params["body"]; ok {
			inner := b.GetStructValue()
			if inner == nil {
				return nil, transport.InvalidArgument(ReasonInvalidField, "body must be a JSON object of run parameters", transport.Violation("body", "not an object"))
			}
			params = inner.GetFields()
		}
	}
	inputs := make(map[string]*platformv1.Value, len(params))
	var fileIDs []string
	for name, v := range params {
		if key := req.GetAttachmentsKey(); key != "" && name == key {
			list := v.GetListValue()
			if list == nil {
				return nil, transport.InvalidArgument(ReasonInvalidField, fmt.Sprintf("%s (attachments_key) must be a list of blob URLs", key), transport.Violation(key, "not a list"))
			}
			files := &platformv1.List{}
			for i, it := range list.GetValues() {
				u, ok := it.GetKind().(*structpb.Value_StringValue)
				if !ok || u.StringValue == "" {
					return nil, transport.InvalidArgument(ReasonInvalidField, fmt.Sprintf("%s[%d] must be a blob URL (a string)", key, i), transport.Violation(fmt.Sprintf("%s[%d]", key, i), "not a string"))
				}
				fv, f, err := attachedFile(ctx, s.st, s.PublicURL, a.OrganizationID, a.WorkspaceID, u.StringValue, fmt.Sprintf("%s[%d]", key, i))
				if err != nil {
					return nil, err
				}
				files.Items = append(files.Items, fv)
				fileIDs = append(fileIDs, f.ID)
			}
			inputs[name] = &platformv1.Value{Kind: &platformv1.Value_List{List: files}}
			continue
		}
		pv, err := protovalue.FromPlain(v)
		if err != nil {
			return nil, transport.InvalidArgument(ReasonInvalidField, fmt.Sprintf("parameter %q: %v", name, err), transport.Violation(name, err.Error()))
		}
		inputs[name] = pv
	}
	if s.eng == nil {
		return nil, errStoreUnavailable
	}
	r, _, err := s.eng.Invoke(ctx, engine.InvokeRequest{
		OrganizationID: a.OrganizationID, WorkspaceID: a.WorkspaceID, AutomationID: a.ID, Stage: stage,
		Inputs: inputs, FileIDs: fileIDs,
		Invocation: manualInvocation(callerID(ctx)),
	})
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return nil, transport.NotFound(ReasonShareIDNotFound, "share id "+shareID)
		}
		return nil, invokeErr(err, a.OrganizationID, a.WorkspaceID, a.ID, "parameters")
	}
	_ = transport.SetHTTPStatus(ctx, 201)
	return &legacyv1.InvokeResponse{WorkerId: r.ID}, nil
}

// legacyRun finds a run by id for a legacy caller, checking perm in its
// workspace; an unknown id, or one of another organization, is NOT_FOUND.
func legacyRun(ctx context.Context, st store.Store, id, perm string) (store.Run, error) {
	if id == "" {
		return store.Run{}, transport.InvalidArgument(transport.ReasonRequiredFieldMissing, "the run id is required", transport.Violation("id", "required"))
	}
	r, err := st.GetRunByID(ctx, id)
	if err != nil || !visible(ctx, r.OrganizationID) {
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return store.Run{}, err
		}
		return store.Run{}, transport.NotFound(ReasonRunNotFound, "runs/"+id)
	}
	if err := transport.RequireWorkspace(ctx, r.WorkspaceID, perm); err != nil {
		return store.Run{}, err
	}
	return r, nil
}

// GetRunStatus answers the v1 state of a run and, once done, its outputs.
func (s *LegacyV1) GetRunStatus(ctx context.Context, req *legacyv1.GetRunStatusRequest) (*legacyv1.GetRunStatusResponse, error) {
	r, err := legacyRun(ctx, s.st, req.GetWorkerId(), store.PermRunsGet)
	if err != nil {
		return nil, err
	}
	out := &legacyv1.GetRunStatusResponse{State: v1State(r.State)}
	switch r.State {
	case store.RunCompleted:
		m, _, err := plainOutputs(r)
		if err != nil {
			return nil, err
		}
		out.Answer = &structpb.Struct{Fields: m}
	case store.RunFailed:
		out.Error = r.Description
	}
	return out, nil
}

// attachedFile resolves a file reference given with a run (a v1 blob URL, a
// v2 file id) to the stored file and the file Value the run receives. A
// reference that names no uploaded file of the organization and workspace is
// INVALID_ARGUMENT on field.
func attachedFile(ctx context.Context, st store.Store, base, org, ws, ref, field string) (*platformv1.Value, store.File, error) {
	v, f, err := FileInputAt(ctx, st, base, org, ref)
	if err == nil && f.WorkspaceID != "" && f.WorkspaceID != ws {
		err = transport.NotFound(ReasonFileNotFound, ref)
	}
	if err == nil {
		// The run's input carries a signed URL of the file: only a caller
		// who may read the file may attach it.
		err = requireFile(ctx, f, store.PermRunsGet)
	}
	if err != nil {
		msg := fmt.Sprintf("%s: %q is not an uploaded file of this workspace", field, ref)
		if status.Code(err) == codes.FailedPrecondition {
			msg = fmt.Sprintf("%s: the content of %q has not been uploaded yet", field, ref)
		}
		return nil, store.File{}, transport.InvalidArgument(ReasonInvalidField, msg, transport.Violation(field, msg))
	}
	return v, f, nil
}
