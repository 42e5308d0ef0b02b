package server

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc/codes"

	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/internal/codec"
	"github.com/proserun/prose/internal/engine"
	"github.com/proserun/prose/internal/names"
	"github.com/proserun/prose/server/transport"
	"github.com/proserun/prose/store"
	"github.com/proserun/prose/store/sqlfilter"
)

// GuideEntryService implements prose.platform.v1.GuideEntryService: the
// guide entries of automations, which the engine applies to the
// exceptions that match them once they are approved (engine/guide.go).
type GuideEntryService struct {
	platformv1.UnimplementedGuideEntryServiceServer
	st  store.Store
	eng *engine.Engine
}

// NewGuideEntryService returns the guide entry service.
func NewGuideEntryService(st store.Store, eng *engine.Engine) *GuideEntryService {
	return &GuideEntryService{st: st, eng: eng}
}

func guideStateProto(s store.GuideEntryState) platformv1.GuideEntry_State {
	switch s {
	case store.GuidePendingApproval:
		return platformv1.GuideEntry_STATE_PENDING_APPROVAL
	case store.GuideApproved:
		return platformv1.GuideEntry_STATE_APPROVED
	case store.GuideRejected:
		return platformv1.GuideEntry_STATE_REJECTED
	case store.GuideArchived:
		return platformv1.GuideEntry_STATE_ARCHIVED
	}
	return platformv1.GuideEntry_STATE_UNSPECIFIED
}

// guideEntryProto renders a stored entry with the reference's fields.
func guideEntryProto(g store.GuideEntry) *platformv1.GuideEntry {
	org, ws := g.OrganizationID, g.WorkspaceID
	out := &platformv1.GuideEntry{
		Name:            names.GuideEntry(org, ws, g.AutomationID, g.ID),
		Title:           g.Title,
		RootCause:       g.RootCause,
		ResolutionSteps: g.ResolutionSteps,
		ResolutionCode:  g.ResolutionCode,
		ResolutionNotes: g.ResolutionNotes,
		State:           guideStateProto(g.State),
		Automation:      names.Automation(org, ws, g.AutomationID),
		Version:         strconv.Itoa(g.VersionMajor) + "." + strconv.Itoa(g.VersionMinor),
		CreateTime:      timestampOrNil(g.CreateTime),
		UpdateTime:      timestampOrNil(g.UpdateTime),
		DeleteTime:      timestampOrNil(g.DeleteTime),
	}
	if g.SourceException != "" {
		out.SourceException = names.Exception(org, ws, g.SourceException)
	}
	if g.SourceRun != "" {
		out.SourceRun = names.Run(org, ws, g.AutomationID, g.SourceRun)
	}
	return out
}

// guideErr maps a store or engine error about one entry.
func guideErr(err error, org, ws, automation, id string) error {
	return storeErrors{name: names.GuideEntry(org, ws, automation, id), notFound: ReasonGuideEntryNotFound, exists: ReasonGuideEntryNotFound,
		precondition: ReasonGuideEntryStateConflict}.status(err)
}

// requireAutomation answers NOT_FOUND for an automation (or workspace)
// that does not exist; "-" (any automation) needs the workspace only.
func (s *GuideEntryService) requireAutomation(ctx context.Context, org, ws, automation string) error {
	if automation == "-" {
		if _, err := s.st.GetWorkspace(ctx, org, ws); err != nil {
			return storeStatus(err, ReasonWorkspaceNotFound, ReasonWorkspaceExists, names.Workspace(org, ws))
		}
		return nil
	}
	if _, err := s.st.GetAutomation(ctx, org, ws, automation); err != nil {
		return automationErr(err, org, ws, automation)
	}
	return nil
}

// GetGuideEntry gets an entry, soft-deleted or not (AIP-164).
func (s *GuideEntryService) GetGuideEntry(ctx context.Context, req *platformv1.GetGuideEntryRequest) (*platformv1.GuideEntry, error) {
	org, ws, a, id := req.GetOrganizationId(), req.GetWorkspaceId(), req.GetAutomationId(), req.GetGuideEntryId()
	g, err := s.st.GetGuideEntry(ctx, org, ws, a, id)
	if err != nil {
		return nil, guideErr(err, org, ws, a, id)
	}
	return guideEntryProto(g), nil
}

// ListGuideEntries lists the entries of an automation ("-": of the
// workspace), newest first, with the number matching across all pages.
func (s *GuideEntryService) ListGuideEntries(ctx context.Context, req *platformv1.ListGuideEntriesRequest) (*platformv1.ListGuideEntriesResponse, error) {
	org, ws, a := req.GetOrganizationId(), req.GetWorkspaceId(), req.GetAutomationId()
	lp, err := parseFiltered(req, sqlfilter.GuideEntries)
	if err != nil {
		return nil, err
	}
	if err := s.requireAutomation(ctx, org, ws, a); err != nil {
		return nil, err
	}
	page, total, err := s.st.ListGuideEntries(ctx, store.ListGuideEntriesRequest{
		OrganizationID: org, WorkspaceID: ws, AutomationID: a, Filter: lp.Filter, ShowDeleted: req.GetShowDeleted(),
		PageSize: lp.Size, PageToken: lp.Token,
	})
	if err != nil {
		return nil, storeStatus(err, ReasonWorkspaceNotFound, ReasonWorkspaceNotFound, names.Workspace(org, ws))
	}
	return &platformv1.ListGuideEntriesResponse{
		GuideEntries: mapAll(page.Items, guideEntryProto), NextPageToken: page.NextPageToken, TotalSize: clamp32(total),
	}, nil
}

// guidanceOfEntry reads the guidance of a CreateGuideEntry request.
func guidanceOfEntry(g *platformv1.GuideEntryGuidance) engine.Guidance {
	return engine.GuidanceOf(codec.GuideEntryGuidance(g))
}

// rememberErr maps an error of engine.NewGuideEntry.
func rememberErr(err error, excName, field string) error {
	var g *engine.GuidanceError
	switch {
	case errors.As(err, &g):
		f := g.Field
		if field != "" {
			f = field + "." + f
		}
		return transport.NewError(codes.InvalidArgument, ReasonGuidanceNotRememberable, g.Msg).Meta("resource_name", excName).
			Violations(transport.Violation(f, g.Msg)).Err()
	case errors.Is(err, store.ErrFailedPrecondition):
		msg := withoutSentinel(err, store.ErrFailedPrecondition)
		return transport.NewError(codes.InvalidArgument, ReasonGuidanceNotRememberable, msg).Meta("resource_name", excName).
			Violations(transport.Violation("guide_entry.source_exception", msg)).Err()
	}
	return storeStatus(err, ReasonExceptionNotFound, ReasonExceptionNotFound, excName)
}

// remember stores the entry made from exception x and guidance g, with the
// text fields of in (defaults where empty).
func remember(ctx context.Context, _ store.Store, eng *engine.Engine, x store.Exception, g engine.Guidance, in *platformv1.GuideEntry, field string) (store.GuideEntry, error) {
	notes := in.GetResolutionNotes()
	if notes == "" && in.GetContent() != "" {
		notes = in.GetContent()
	}
	out, err := eng.CreateGuideEntry(ctx, x, g, engine.GuideEntryText{
		Title: in.GetTitle(), RootCause: in.GetRootCause(), ResolutionSteps: in.GetResolutionSteps(), ResolutionNotes: notes,
	})
	var ge *engine.GuidanceError
	switch {
	case err == nil:
		return out, nil
	case errors.As(err, &ge) || errors.Is(err, store.ErrFailedPrecondition) || errors.Is(err, store.ErrNotFound):
		return store.GuideEntry{}, rememberErr(err, names.Exception(x.OrganizationID, x.WorkspaceID, x.ID), field)
	}
	return store.GuideEntry{}, storeStatus(err, ReasonWorkspaceNotFound, ReasonWorkspaceExists, names.Workspace(x.OrganizationID, x.WorkspaceID))
}

// sourceExceptionID reads guide_entry.source_exception: an id, or the
// name of an exception of the workspace.
func sourceExceptionID(org, ws, v string) (string, error) {
	bad := func(msg string) error {
		return transport.InvalidArgument(ReasonInvalidField, "guide_entry.source_exception "+msg, transport.Violation("guide_entry.source_exception", msg))
	}
	if v == "" {
		return "", bad("is required: the exception the entry is made from")
	}
	if !strings.Contains(v, "/") {
		return v, nil
	}
	prefix := names.Workspace(org, ws) + "/exceptions/"
	if !strings.HasPrefix(v, prefix) || strings.Contains(v[len(prefix):], "/") || len(v) == len(prefix) {
		return "", bad(fmt.Sprintf("must be an exception id or a name %s{exception}", prefix))
	}
	return v[len(prefix):], nil
}

// CreateGuideEntry makes an entry from an exception of the automation and
// the guidance that resolves it; the entry waits for approval. Idempotent
// with request_id.
func (s *GuideEntryService) CreateGuideEntry(ctx context.Context, req *platformv1.CreateGuideEntryRequest) (*platformv1.GuideEntry, error) {
	org, ws, a := req.GetOrganizationId(), req.GetWorkspaceId(), req.GetAutomationId()
	if s.eng == nil {
		return nil, errStoreUnavailable
	}
	if req.GetGuideEntry() == nil {
		return nil, transport.InvalidArgument(transport.ReasonRequiredFieldMissing, "guide_entry is required", transport.Violation("guide_entry", "required"))
	}
	xid, err := sourceExceptionID(org, ws, req.GetGuideEntry().GetSourceException())
	if err != nil {
		return nil, err
	}
	if req.GetGuidance().GetKind() == nil {
		msg := "give exactly one kind of guidance: provide_values, provide_expressions, skip, replace_step or answer"
		return nil, transport.InvalidArgument(ReasonGuidanceNotRememberable, msg, transport.Violation("guidance", msg))
	}
	if err := s.requireAutomation(ctx, org, ws, a); err != nil {
		return nil, err
	}
	x, err := s.st.GetException(ctx, org, ws, xid)
	if err != nil {
		return nil, exceptionErr(err, org, ws, xid)
	}
	if x.AutomationID != a {
		msg := fmt.Sprintf("exception %s belongs to automation %s, not %s", xid, x.AutomationID, a)
		return nil, transport.InvalidArgument(ReasonInvalidField, msg, transport.Violation("guide_entry.source_exception", msg))
	}
	create := func() (*platformv1.GuideEntry, string, error) {
		en, err := remember(ctx, s.st, s.eng, x, guidanceOfEntry(req.GetGuidance()), req.GetGuideEntry(), "guidance")
		if err != nil {
			return nil, "", err
		}
		return guideEntryProto(en), en.ID, nil
	}
	get := func(id string) (*platformv1.GuideEntry, error) {
		g, err := s.st.GetGuideEntry(ctx, org, ws, a, id)
		if err != nil {
			return nil, guideErr(err, org, ws, a, id)
		}
		return guideEntryProto(g), nil
	}
	undo := func(g *platformv1.GuideEntry) error {
		return s.st.PurgeGuideEntry(ctx, org, ws, a, names.ID(g.GetName()))
	}
	return idempotent(ctx, s.st, org, "CreateGuideEntry/"+ws+"/"+a, req.GetRequestId(), create, get, undo)
}

var guideMask = map[string]bool{"title": true, "root_cause": true, "resolution_steps": true, "resolution_notes": true}

// UpdateGuideEntry changes the text of an entry: the fields of update_mask
// (without one, those the request sets); its minor version increases. What the
// entry does (its guidance) is fixed when it is made.
func (s *GuideEntryService) UpdateGuideEntry(ctx context.Context, req *platformv1.UpdateGuideEntryRequest) (*platformv1.GuideEntry, error) {
	org, ws, a, id := req.GetOrganizationId(), req.GetWorkspaceId(), req.GetAutomationId(), req.GetGuideEntryId()
	in := req.GetGuideEntry()
	if in == nil {
		return nil, transport.InvalidArgument(transport.ReasonRequiredFieldMissing, "guide_entry is required", transport.Violation("guide_entry", "required"))
	}
	paths := req.GetUpdateMask().GetPaths()
	if len(paths) == 0 {
		// As UpdateAutomation: without a mask, the fields the request sets.
		for p, v := range map[string]string{"title": in.GetTitle(), "root_cause": in.GetRootCause(),
			"resolution_steps": in.GetResolutionSteps(), "resolution_notes": in.GetResolutionNotes()} {
			if v != "" {
				paths = append(paths, p)
			}
		}
		if len(paths) == 0 {
			return nil, transport.InvalidArgument(ReasonInvalidField, "nothing to update: set a field or name it in update_mask",
				transport.Violation("update_mask", "empty and no field set"))
		}
	}
	for _, p := range paths {
		if !guideMask[p] {
			msg := fmt.Sprintf("update_mask: %q cannot be updated (title, root_cause, resolution_steps, resolution_notes can)", p)
			return nil, transport.InvalidArgument(ReasonInvalidField, msg, transport.Violation("update_mask", "unknown or read-only path "+p))
		}
	}
	g, err := s.st.UpdateGuideEntry(ctx, org, ws, a, id, func(g *store.GuideEntry) error {
		if !g.DeleteTime.IsZero() {
			return fmt.Errorf("guide entry %q is deleted: undelete it first: %w", id, store.ErrFailedPrecondition)
		}
		for _, p := range paths {
			switch p {
			case "title":
				g.Title = in.GetTitle()
			case "root_cause":
				g.RootCause = in.GetRootCause()
			case "resolution_steps":
				g.ResolutionSteps = in.GetResolutionSteps()
			case "resolution_notes":
				g.ResolutionNotes = in.GetResolutionNotes()
			}
		}
		g.VersionMinor++
		return nil
	})
	if err != nil {
		return nil, guideErr(err, org, ws, a, id)
	}
	return guideEntryProto(g), nil
}

// change applies a state change to an entry and tells the engine.
func (s *GuideEntryService) change(ctx context.Context, org, ws, a, id string, fn store.GuideEntryChange) (*platformv1.GuideEntry, error) {
	g, err := s.st.UpdateGuideEntry(ctx, org, ws, a, id, fn)
	if err != nil {
		return nil, guideErr(err, org, ws, a, id)
	}
	return guideEntryProto(g), nil
}

// ApproveGuideEntry approves an entry waiting for approval or rejected:
// from now on it resolves the exceptions that match it. Its major version
// increases (1.0, 2.0, …). A deleted entry is FAILED_PRECONDITION;
// approving an approved one changes nothing.
func (s *GuideEntryService) ApproveGuideEntry(ctx context.Context, req *platformv1.ApproveGuideEntryRequest) (*platformv1.GuideEntry, error) {
	org, ws, a, id := req.GetOrganizationId(), req.GetWorkspaceId(), req.GetAutomationId(), req.GetGuideEntryId()
	return s.change(ctx, org, ws, a, id, func(g *store.GuideEntry) error {
		switch {
		case !g.DeleteTime.IsZero():
			return fmt.Errorf("guide entry %q is deleted: undelete it first: %w", id, store.ErrFailedPrecondition)
		case g.State == store.GuideApproved:
			return nil
		}
		g.State = store.GuideApproved
		g.VersionMajor, g.VersionMinor = g.VersionMajor+1, 0
		return nil
	})
}

// RejectGuideEntry rejects an entry: it never applies. A deleted entry is
// FAILED_PRECONDITION.
func (s *GuideEntryService) RejectGuideEntry(ctx context.Context, req *platformv1.RejectGuideEntryRequest) (*platformv1.GuideEntry, error) {
	org, ws, a, id := req.GetOrganizationId(), req.GetWorkspaceId(), req.GetAutomationId(), req.GetGuideEntryId()
	return s.change(ctx, org, ws, a, id, func(g *store.GuideEntry) error {
		if !g.DeleteTime.IsZero() {
			return fmt.Errorf("guide entry %q is deleted: undelete it first: %w", id, store.ErrFailedPrecondition)
		}
		g.State = store.GuideRejected
		return nil
	})
}

// DeleteGuideEntry soft-deletes an entry (AIP-164): delete_time is set,
// its state is STATE_ARCHIVED and it no longer applies. Deleting a deleted
// entry is NOT_FOUND.
func (s *GuideEntryService) DeleteGuideEntry(ctx context.Context, req *platformv1.DeleteGuideEntryRequest) (*platformv1.GuideEntry, error) {
	org, ws, a, id := req.GetOrganizationId(), req.GetWorkspaceId(), req.GetAutomationId(), req.GetGuideEntryId()
	return s.change(ctx, org, ws, a, id, func(g *store.GuideEntry) error {
		if !g.DeleteTime.IsZero() {
			return fmt.Errorf("guide entry %q is already deleted: %w", id, store.ErrNotFound)
		}
		g.DeletedState, g.State = g.State, store.GuideArchived
		g.DeleteTime = time.Now()
		return nil
	})
}

// UndeleteGuideEntry brings a soft-deleted entry back in the state it had
// (an approved one applies again). An entry that is not deleted is
// ALREADY_EXISTS (AIP-164).
func (s *GuideEntryService) UndeleteGuideEntry(ctx context.Context, req *platformv1.UndeleteGuideEntryRequest) (*platformv1.GuideEntry, error) {
	org, ws, a, id := req.GetOrganizationId(), req.GetWorkspaceId(), req.GetAutomationId(), req.GetGuideEntryId()
	g, err := s.st.UpdateGuideEntry(ctx, org, ws, a, id, func(g *store.GuideEntry) error {
		if g.DeleteTime.IsZero() {
			return fmt.Errorf("guide entry %q is not deleted: %w", id, store.ErrAlreadyExists)
		}
		g.State, g.DeletedState = g.DeletedState, ""
		if g.State == "" {
			g.State = store.GuidePendingApproval
		}
		g.DeleteTime = time.Time{}
		return nil
	})
	if errors.Is(err, store.ErrAlreadyExists) {
		return nil, transport.NewError(codes.AlreadyExists, ReasonGuideEntryStateConflict, withoutSentinel(err, store.ErrAlreadyExists)).
			Meta("resource_name", names.GuideEntry(org, ws, a, id)).Err()
	}
	if err != nil {
		return nil, guideErr(err, org, ws, a, id)
	}
	return guideEntryProto(g), nil
}
