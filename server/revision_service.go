package server

import (
	"context"
	"errors"
	"strconv"

	"google.golang.org/protobuf/proto"

	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/internal/codec"
	"github.com/proserun/prose/internal/names"
	"github.com/proserun/prose/server/transport"
	"github.com/proserun/prose/store"
	"github.com/proserun/prose/store/pagination"
	"github.com/proserun/prose/store/sqlfilter"
)

// LatestRevision is the alternate id of an automation's newest revision.
const LatestRevision = "latest"

// revisionScanPage is how many revisions ListDefaultInputsHistory reads
// from the store at a time.
const revisionScanPage = 200

// RevisionService implements prose.platform.v1.AutomationRevisionService:
// the revisions the store writes at every save and publish of an
// automation (AIP-162), and the history of its default inputs made from
// them.
type RevisionService struct {
	platformv1.UnimplementedAutomationRevisionServiceServer
	st store.Store
}

// NewRevisionService returns the revision service.
func NewRevisionService(st store.Store) *RevisionService { return &RevisionService{st: st} }

// revisionProto renders a revision: its snapshot is the automation as the
// change left it (a save: its draft; a publish: its published stage),
// with the automation's lasting fields (creation, author, share ids).
func revisionProto(a store.Automation, v store.AutomationRevision) (*platformv1.AutomationRevision, error) {
	snap := store.Automation{
		OrganizationID: a.OrganizationID, WorkspaceID: a.WorkspaceID, ID: a.ID,
		DisplayName: v.DisplayName, Description: v.Description,
		AuthorID: a.AuthorID, CreateTime: a.CreateTime, UpdateTime: v.CreateTime, UpdateUserID: v.UserID,
	}
	stage := store.StageDraft
	if v.Stage == store.StagePublished {
		stage = store.StagePublished
		snap.PublishedCode, snap.PublishedDetails, snap.PublishedVersion = v.Code, v.Details, v.Version
		snap.PublishTime, snap.PublishUserID = v.CreateTime, v.UserID
	} else {
		snap.Code, snap.Details, snap.Version = v.Code, v.Details, v.Version
	}
	p, err := automationProto(snap, stage)
	if err != nil {
		return nil, err
	}
	// The reference's Automation (v1Automation) has no share ids (they
	// belong to the automation, not to a revision) and no stage: a
	// revision's stage is what the list's filter selects on.
	p.DraftShareId, p.PublishedShareId, p.Stage, p.StageVersion = "", "", platformv1.AutomationStage_AUTOMATION_STAGE_UNSPECIFIED, ""
	out := &platformv1.AutomationRevision{
		Name:       names.Automation(a.OrganizationID, a.WorkspaceID, a.ID) + "/revisions/" + strconv.FormatInt(v.Version, 10),
		Snapshot:   p,
		CreateTime: timestampOrNil(v.CreateTime),
	}
	// Every change of version writes a revision: the newest is the
	// automation's version.
	if v.Version == a.Version {
		out.AlternateIds = []string{LatestRevision}
	}
	if out.PublishCheck, err = codec.DecodePublishCheck(v.PublishCheck); err != nil {
		return nil, err
	}
	return out, nil
}

// ListAutomationRevisions lists an automation's revisions, newest first.
// Filter: stage (DRAFT, PUBLISHED; = and !=).
func (s *RevisionService) ListAutomationRevisions(ctx context.Context, req *platformv1.ListAutomationRevisionsRequest) (*platformv1.ListAutomationRevisionsResponse, error) {
	org, ws, id := req.GetOrganizationId(), req.GetWorkspaceId(), req.GetAutomationId()
	lp, err := parseFiltered(req, sqlfilter.AutomationRevisions)
	if err != nil {
		return nil, err
	}
	a, err := s.st.GetAutomation(ctx, org, ws, id)
	if err != nil {
		return nil, automationErr(err, org, ws, id)
	}
	page, err := s.st.ListAutomationRevisions(ctx, store.ListAutomationRevisionsRequest{OrganizationID: org, WorkspaceID: ws, AutomationID: id,
		Filter: lp.Filter, PageSize: lp.Size, PageToken: lp.Token})
	if err != nil {
		return nil, automationErr(err, org, ws, id)
	}
	out := &platformv1.ListAutomationRevisionsResponse{NextPageToken: page.NextPageToken}
	for _, v := range page.Items {
		p, err := revisionProto(a, v)
		if err != nil {
			return nil, err
		}
		out.Revisions = append(out.Revisions, p)
	}
	return out, nil
}

// GetAutomationRevision gets a revision by id (its version) or `latest`.
func (s *RevisionService) GetAutomationRevision(ctx context.Context, req *platformv1.GetAutomationRevisionRequest) (*platformv1.AutomationRevision, error) {
	org, ws, id, rid := req.GetOrganizationId(), req.GetWorkspaceId(), req.GetAutomationId(), req.GetRevisionId()
	a, err := s.st.GetAutomation(ctx, org, ws, id)
	if err != nil {
		return nil, automationErr(err, org, ws, id)
	}
	name := names.Automation(org, ws, id) + "/revisions/" + rid
	var version int64
	if rid != LatestRevision {
		if version, err = strconv.ParseInt(rid, 10, 64); err != nil || version <= 0 {
			return nil, transport.NotFound(ReasonRevisionNotFound, name)
		}
	}
	v, err := s.st.GetAutomationRevision(ctx, org, ws, id, version)
	if errors.Is(err, store.ErrNotFound) {
		return nil, transport.NotFound(ReasonRevisionNotFound, name)
	}
	if err != nil {
		return nil, err
	}
	return revisionProto(a, v)
}

// defaultInputsOf decodes the default inputs of a revision's details.
func defaultInputsOf(v store.AutomationRevision) (*platformv1.Automation, error) {
	d := &platformv1.Automation{}
	if err := applyDetails(d, v.Details); err != nil {
		return nil, err
	}
	return &platformv1.Automation{DefaultInputs: d.GetDefaultInputs()}, nil
}

// ListDefaultInputsHistory lists the changes of an automation's default
// inputs, newest first: one entry per save of the draft whose default
// inputs differ from the save before it (the first save, when it set
// some). Made from the draft revisions; the page token is the version of
// the last entry given.
func (s *RevisionService) ListDefaultInputsHistory(ctx context.Context, req *platformv1.ListDefaultInputsHistoryRequest) (*platformv1.ListDefaultInputsHistoryResponse, error) {
	org, ws, id := req.GetOrganizationId(), req.GetWorkspaceId(), req.GetAutomationId()
	size, err := pagination.PageSize(req.GetPageSize())
	if err != nil {
		return nil, transport.InvalidArgument(ReasonInvalidField, err.Error(), transport.Violation("page_size", err.Error()))
	}
	size = pagination.Normalize(size)
	if _, err := s.st.GetAutomation(ctx, org, ws, id); err != nil {
		return nil, automationErr(err, org, ws, id)
	}
	bind := pagination.Bind("default inputs history", org, ws, id)
	filter := store.And{store.Cond{Field: "stage", Op: store.OpEq, Value: string(store.StageDraft)}}
	if req.GetPageToken() != "" {
		keys, err := pagination.Decode(req.GetPageToken(), bind, 1)
		if err != nil {
			return nil, invalidFromStore(err)
		}
		filter = append(filter, store.Cond{Field: "version", Op: store.OpLt, Value: keys[0]})
	}
	out := &platformv1.ListDefaultInputsHistoryResponse{}
	// prev is the newer revision waiting for its older neighbour, which
	// decides whether prev changed the default inputs; lastVersion is the
	// revision of the last entry given.
	var prev *store.AutomationRevision
	var prevInputs *platformv1.Automation
	var lastVersion int64
	// emit adds prev as an entry; false when the page is full (a next page
	// then starts below the last entry).
	emit := func() bool {
		if len(out.DefaultInputsHistoryEntries) == size {
			out.NextPageToken = pagination.Encode(bind, []string{strconv.FormatInt(lastVersion, 10)})
			return false
		}
		out.DefaultInputsHistoryEntries = append(out.DefaultInputsHistoryEntries, &platformv1.DefaultInputsHistoryEntry{
			DefaultInputs: prevInputs.GetDefaultInputs(), ChangeTime: timestampOrNil(prev.CreateTime), ChangeActor: prev.UserID,
		})
		lastVersion = prev.Version
		return true
	}
	token := ""
	for {
		page, err := s.st.ListAutomationRevisions(ctx, store.ListAutomationRevisionsRequest{OrganizationID: org, WorkspaceID: ws, AutomationID: id,
			Filter: filter, PageSize: revisionScanPage, PageToken: token})
		if err != nil {
			return nil, automationErr(err, org, ws, id)
		}
		for i := range page.Items {
			v := page.Items[i]
			in, err := defaultInputsOf(v)
			if err != nil {
				return nil, err
			}
			if prev != nil && !proto.Equal(in, prevInputs) && !emit() {
				return out, nil
			}
			prev, prevInputs = &v, in
		}
		if page.NextPageToken == "" {
			break
		}
		token = page.NextPageToken
	}
	// The oldest save set the first default inputs.
	if prev != nil && len(prevInputs.GetDefaultInputs()) > 0 {
		emit()
	}
	return out, nil
}
