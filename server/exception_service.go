package server

import (
	"github.com/proserun/prose/internal/codec"
	"github.com/proserun/prose/internal/names"

	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"google.golang.org/grpc/codes"

	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/internal/codec/protovalue"
	"github.com/proserun/prose/internal/engine"
	"github.com/proserun/prose/internal/lang"
	"github.com/proserun/prose/server/transport"
	"github.com/proserun/prose/store"
	"github.com/proserun/prose/store/pagination"
)

// MaxBatchExceptions bounds the exceptions one batch call changes. A batch
// call changes the first (oldest) MaxBatchExceptions exceptions that match
// its filter and can make the change; an exception it changed no longer
// qualifies, so a client repeats the call until it returns no exceptions.
const MaxBatchExceptions = 1000

// ExceptionService implements prose.platform.v1.ExceptionService over the
// store and the engine: it finds exceptions and guides them, so that their
// runs go on.
type ExceptionService struct {
	platformv1.UnimplementedExceptionServiceServer
	st  store.Store
	eng *engine.Engine
}

// NewExceptionService returns the exception service. eng resolves
// exceptions (checking guidance and waking the run).
func NewExceptionService(st store.Store, eng *engine.Engine) *ExceptionService {
	return &ExceptionService{st: st, eng: eng}
}

// exceptionGroup is one of the static groups the interpreter files its
// exceptions under.
type exceptionGroup struct {
	id, title, description, suggestedAction string
}

// exceptionGroups are the static groups, in the order they are listed.
var exceptionGroups = []exceptionGroup{
	{
		id:              "missing_values",
		title:           "Missing values",
		description:     "The run needs information it does not have: a fact with no value, a question (ask), or a value that failed a check (validate).",
		suggestedAction: "Provide the missing values (provide_values), answer the question (answer), or skip the statement (skip).",
	},
	{
		id:              "user_system_error",
		title:           "User or system error",
		description:     "A statement could not be carried out: wrong types, a division by zero, an unknown procedure, or an error reported by a book.",
		suggestedAction: "Fix the statement (replace_step), retry it once the cause is gone (retry), or skip it (skip).",
	},
	{
		id:              "internal_error",
		title:           "Internal error",
		description:     "A fault of the platform itself interrupted the run.",
		suggestedAction: "Retry the statement (retry); if it fails again, archive the exception and report it.",
	},
}

func exceptionGroupName(org, ws, g string) string {
	if g == "" {
		return ""
	}
	return names.Workspace(org, ws) + "/exceptionGroups/" + g
}

func exceptionGroupProto(org, ws, g string) *platformv1.ExceptionGroup {
	for _, x := range exceptionGroups {
		if x.id == g {
			return &platformv1.ExceptionGroup{
				Name: exceptionGroupName(org, ws, g), Title: x.title, Description: x.description, SuggestedAction: x.suggestedAction,
			}
		}
	}
	if g == "" {
		return &platformv1.ExceptionGroup{Title: "Ungrouped", Description: "Exceptions in no group."}
	}
	return &platformv1.ExceptionGroup{Name: exceptionGroupName(org, ws, g), Title: g}
}

func exceptionStateProto(s store.ExceptionState) platformv1.ExceptionState {
	switch s {
	case store.ExceptionPending:
		return platformv1.ExceptionState_EXCEPTION_STATE_PENDING
	case store.ExceptionResolved:
		return platformv1.ExceptionState_EXCEPTION_STATE_RESOLVED
	case store.ExceptionArchived:
		return platformv1.ExceptionState_EXCEPTION_STATE_ARCHIVED
	}
	return platformv1.ExceptionState_EXCEPTION_STATE_UNSPECIFIED
}

// exceptionProto renders a stored exception.
func exceptionProto(x store.Exception) *platformv1.Exception {
	org, ws := x.OrganizationID, x.WorkspaceID
	extra := x.Extra
	if len(extra) == 0 {
		extra = nil
	}
	return &platformv1.Exception{
		Name:        names.Exception(org, ws, x.ID),
		Run:         names.Run(org, ws, x.AutomationID, x.RunID),
		Location:    &platformv1.Location{StartByte: x.Location.Start, EndByte: x.Location.End},
		Message:     x.Message,
		CreateTime:  timestampOrNil(x.CreateTime),
		UpdateTime:  timestampOrNil(x.UpdateTime),
		State:       exceptionStateProto(x.State),
		Automation:  names.Automation(org, ws, x.AutomationID),
		Description: x.Description,
		Group:       exceptionGroupName(org, ws, x.Group),
		Stage:       stageProto(x.Stage),
		ExecutionId: strconv.Itoa(x.Step),
		Extra:       extra,
		Assignee:    x.Assignee,
		Resolver:    x.Resolver,
		RunNumber:   x.RunNumber,

		ResolutionGuideEntry: guideEntryName(x),

		GuidanceRequest: guidanceRequestProto(x),
	}
}

// guideEntryName is the name of the guide entry that resolved x ("" when
// none did).
func guideEntryName(x store.Exception) string {
	if x.ResolutionGuideEntry == "" {
		return ""
	}
	return names.GuideEntry(x.OrganizationID, x.WorkspaceID, x.AutomationID, x.ResolutionGuideEntry)
}

// guidanceRequestProto says what the interpreter's exception asks for (nil
// when the details cannot be read: the exception still renders).
func guidanceRequestProto(e store.Exception) *platformv1.GuidanceRequest {
	x, err := codec.ExceptionDetails(e)
	if err != nil || x.Fact == "" && x.Question == "" && len(x.Failed) == 0 {
		return nil
	}
	out := &platformv1.GuidanceRequest{Question: x.Question, FailedChecks: x.Failed, AnswerType: answerTypes[lang.ExpectedAnswerType(x)]}
	if x.Fact != "" {
		out.Facts = []string{x.Fact}
	}
	for _, c := range x.Choices {
		if v, err := protovalue.ToProto(c); err == nil {
			out.Choices = append(out.Choices, v)
		}
	}
	return out
}

// answerTypes are the API's answer types by the interpreter's names (an
// unknown name is ANSWER_TYPE_UNSPECIFIED: any value).
var answerTypes = map[string]platformv1.AnswerType{
	"text": platformv1.AnswerType_ANSWER_TYPE_TEXT, "number": platformv1.AnswerType_ANSWER_TYPE_NUMBER,
	"boolean": platformv1.AnswerType_ANSWER_TYPE_BOOLEAN, "date": platformv1.AnswerType_ANSWER_TYPE_DATE,
	"datetime": platformv1.AnswerType_ANSWER_TYPE_DATETIME, "time": platformv1.AnswerType_ANSWER_TYPE_TIME,
}

// exceptionErr maps a store or engine error about one exception.
func exceptionErr(err error, org, ws, id string) error {
	name := names.Exception(org, ws, id)
	var g *engine.GuidanceError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &g):
		b := transport.NewError(codes.InvalidArgument, ReasonGuidanceMismatch, g.Msg).
			Meta("resource_name", name).Violations(transport.Violation(g.Field, g.Msg))
		if g.Span != nil {
			b = b.Meta("start_byte", strconv.Itoa(g.Span.Start)).Meta("end_byte", strconv.Itoa(g.Span.End))
		}
		return b.Err()
	}
	return storeErrors{name: name, notFound: ReasonExceptionNotFound, exists: ReasonExceptionNotFound,
		precondition: ReasonExceptionStateConflict}.status(err)
}

// checkWorkspace reports NOT_FOUND for a workspace that does not exist (lists
// of an unknown workspace are not empty lists).
func (s *ExceptionService) checkWorkspace(ctx context.Context, org, ws string) error {
	if _, err := s.st.GetWorkspace(ctx, org, ws); err != nil {
		return storeStatus(err, ReasonWorkspaceNotFound, ReasonWorkspaceExists, names.Workspace(org, ws))
	}
	return nil
}

// GetException gets an exception.
func (s *ExceptionService) GetException(ctx context.Context, req *platformv1.GetExceptionRequest) (*platformv1.Exception, error) {
	org, ws, id := req.GetOrganizationId(), req.GetWorkspaceId(), req.GetExceptionId()
	x, err := s.st.GetException(ctx, org, ws, id)
	if err != nil {
		return nil, exceptionErr(err, org, ws, id)
	}
	return exceptionProto(x), nil
}

// ListExceptions lists exceptions, newest first, with the number matching
// the filter across all pages. skip skips that many matching exceptions
// before the first page; a page token carries on where its page ended (the
// skip is not applied again, but it must be the same as in the call that
// made the token).
func (s *ExceptionService) ListExceptions(ctx context.Context, req *platformv1.ListExceptionsRequest) (*platformv1.ListExceptionsResponse, error) {
	org, ws := req.GetOrganizationId(), req.GetWorkspaceId()
	lp, err := parsePage(req)
	if err != nil {
		return nil, err
	}
	f, err := excParseFilter(req.GetFilter())
	if err != nil {
		return nil, err
	}
	if err := s.checkWorkspace(ctx, org, ws); err != nil {
		return nil, err
	}
	page, total, err := s.st.ListExceptions(ctx, store.ListExceptionsRequest{
		OrganizationID: org, WorkspaceID: ws, Filter: f, Skip: int(req.GetSkip()), PageSize: lp.Size, PageToken: lp.Token,
	})
	if err != nil {
		return nil, storeStatus(err, ReasonWorkspaceNotFound, ReasonWorkspaceNotFound, names.Workspace(org, ws))
	}
	out := &platformv1.ListExceptionsResponse{NextPageToken: page.NextPageToken, TotalSize: int32(min(total, 1<<31-1))}
	out.Exceptions = mapAll(page.Items, exceptionProto)
	return out, nil
}

// ListExceptionGroups lists the static groups.
func (s *ExceptionService) ListExceptionGroups(ctx context.Context, req *platformv1.ListExceptionGroupsRequest) (*platformv1.ListExceptionGroupsResponse, error) {
	org, ws := req.GetOrganizationId(), req.GetWorkspaceId()
	lp, err := parsePage(req)
	if err != nil {
		return nil, err
	}
	if err := s.checkWorkspace(ctx, org, ws); err != nil {
		return nil, err
	}
	bind := pagination.Bind("exception-groups", org, ws)
	start := 0
	if tok := lp.Token; tok != "" {
		keys, err := pagination.Decode(tok, bind, 1)
		if err != nil {
			return nil, invalidFromStore(err)
		}
		n, err := strconv.Atoi(keys[0])
		if err != nil || n < 0 || n > len(exceptionGroups) {
			return nil, transport.InvalidArgument(ReasonInvalidPageToken, "page_token is not valid", transport.Violation("page_token", "not a token of this list"))
		}
		start = n
	}
	end := min(start+lp.Size, len(exceptionGroups))
	out := &platformv1.ListExceptionGroupsResponse{}
	for _, g := range exceptionGroups[start:end] {
		out.Groups = append(out.Groups, exceptionGroupProto(org, ws, g.id))
	}
	if end < len(exceptionGroups) {
		out.NextPageToken = pagination.Encode(bind, []string{strconv.Itoa(end)})
	}
	return out, nil
}

// countRequest checks the common parameters of the counts.
func (s *ExceptionService) countRequest(ctx context.Context, org, ws, filter string, pageSize int32, token string) (store.CountRequest, error) {
	size, err := checkedPageSize(pageSize)
	if err != nil {
		return store.CountRequest{}, err
	}
	f, err := excParseFilter(filter)
	if err != nil {
		return store.CountRequest{}, err
	}
	if err := s.checkWorkspace(ctx, org, ws); err != nil {
		return store.CountRequest{}, err
	}
	return store.CountRequest{OrganizationID: org, WorkspaceID: ws, Filter: f, PageSize: size, PageToken: token}, nil
}

func clamp32(n int) int32 { return int32(min(n, 1<<31-1)) }

// CountExceptionsByGroup counts matching exceptions per group, in group id
// order; groups without matching exceptions are left out.
func (s *ExceptionService) CountExceptionsByGroup(ctx context.Context, req *platformv1.CountExceptionsByGroupRequest) (*platformv1.CountExceptionsByGroupResponse, error) {
	org, ws := req.GetOrganizationId(), req.GetWorkspaceId()
	cr, err := s.countRequest(ctx, org, ws, req.GetFilter(), req.GetPageSize(), req.GetPageToken())
	if err != nil {
		return nil, err
	}
	p, err := s.st.CountExceptionsByGroup(ctx, cr)
	if err != nil {
		return nil, storeStatus(err, ReasonWorkspaceNotFound, ReasonWorkspaceNotFound, names.Workspace(org, ws))
	}
	out := &platformv1.CountExceptionsByGroupResponse{NextPageToken: p.NextPageToken, TotalSize: clamp32(p.TotalKeys), TotalExceptionCount: clamp32(p.TotalCount)}
	for _, c := range p.Counts {
		out.GroupCounts = append(out.GroupCounts, &platformv1.ExceptionGroupCount{Group: exceptionGroupProto(org, ws, c.Key), Count: clamp32(c.Count)})
	}
	return out, nil
}

// CountExceptionsByAutomation counts matching exceptions per automation, in
// automation id order. It answers GET …/exceptions:countByAutomation with
// {automation_counts: [{automation, count}], next_page_token, total_size,
// total_exception_count}.
func (s *ExceptionService) CountExceptionsByAutomation(ctx context.Context, req *platformv1.CountExceptionsByAutomationRequest) (*platformv1.CountExceptionsByAutomationResponse, error) {
	org, ws := req.GetOrganizationId(), req.GetWorkspaceId()
	cr, err := s.countRequest(ctx, org, ws, req.GetFilter(), req.GetPageSize(), req.GetPageToken())
	if err != nil {
		return nil, err
	}
	p, err := s.st.CountExceptionsByAutomation(ctx, cr)
	if err != nil {
		return nil, storeStatus(err, ReasonWorkspaceNotFound, ReasonWorkspaceNotFound, names.Workspace(org, ws))
	}
	out := &platformv1.CountExceptionsByAutomationResponse{NextPageToken: p.NextPageToken, TotalSize: clamp32(p.TotalKeys), TotalExceptionCount: clamp32(p.TotalCount)}
	for _, c := range p.Counts {
		out.AutomationCounts = append(out.AutomationCounts, &platformv1.ExceptionAutomationCount{Automation: names.Automation(org, ws, c.Key), Count: clamp32(c.Count)})
	}
	return out, nil
}

// resolver is who resolves with this call: users/{caller}.
func resolver(ctx context.Context) string {
	if p, ok := transport.PrincipalFrom(ctx); ok && p.UserID != "" {
		return names.User(p.UserID)
	}
	return ""
}

// ResolveException resolves a pending exception with exactly one kind of
// guidance; the run continues where it stopped. Guidance that does not fit
// the exception is INVALID_ARGUMENT (reason GUIDANCE_DOES_NOT_FIT, a
// BadRequest violation on the field at fault) and changes nothing; an
// exception that is not pending is FAILED_PRECONDITION
// (EXCEPTION_STATE_CONFLICT): of two concurrent resolutions exactly one wins.
func (s *ExceptionService) ResolveException(ctx context.Context, req *platformv1.ResolveExceptionRequest) (*platformv1.Exception, error) {
	org, ws, id := req.GetOrganizationId(), req.GetWorkspaceId(), req.GetExceptionId()
	if s.eng == nil {
		return nil, errStoreUnavailable
	}
	if req.GetGuidance() == nil {
		msg := "give exactly one kind of guidance: provide_values, skip, retry, replace_step or answer"
		return nil, transport.NewError(codes.InvalidArgument, ReasonGuidanceMismatch, msg).Meta("resource_name", names.Exception(org, ws, id)).
			Violations(transport.Violation("guidance", msg)).Err()
	}
	if a, ok := req.GetGuidance().(*platformv1.ResolveExceptionRequest_Answer); ok && a.Answer.GetValue() == nil {
		return nil, transport.NewError(codes.InvalidArgument, ReasonGuidanceMismatch, "answer.value is required").
			Meta("resource_name", names.Exception(org, ws, id)).Violations(transport.Violation("answer.value", "required")).Err()
	}
	g := guidanceFromProto(req)
	var entry store.GuideEntry
	if req.GetRemember() {
		// The entry is made (and checked: retry, or an exception no entry
		// could match, is refused) before the exception is resolved, and
		// stored after: a refused "remember" changes nothing.
		cur, err := s.st.GetException(ctx, org, ws, id)
		if err != nil {
			return nil, exceptionErr(err, org, ws, id)
		}
		if cur.State == store.ExceptionPending {
			if entry, err = s.eng.NewGuideEntry(ctx, cur, g); err != nil {
				var ge *engine.GuidanceError
				if errors.As(err, &ge) && ge.Field != "retry" {
					return nil, exceptionErr(err, org, ws, id) // guidance that does not fit
				}
				return nil, rememberErr(err, names.Exception(org, ws, id), "")
			}
		}
	}
	x, err := s.eng.Resolve(ctx, org, ws, id, resolver(ctx), g)
	if err != nil {
		return nil, exceptionErr(err, org, ws, id)
	}
	out := exceptionProto(x)
	if req.GetRemember() {
		en, err := remember(ctx, s.st, s.eng, x, g, &platformv1.GuideEntry{
			Title: entry.Title, ResolutionSteps: entry.ResolutionSteps,
		}, "")
		if err != nil {
			return nil, err
		}
		// The answer names the entry made (it waits for approval).
		if out.Extra == nil {
			out.Extra = map[string]string{}
		}
		out.Extra["remembered_guide_entry"] = names.GuideEntry(org, ws, en.AutomationID, en.ID)
	}
	return out, nil
}

// ArchiveException archives a pending exception: its run is abandoned
// (stopped). Other states are FAILED_PRECONDITION.
func (s *ExceptionService) ArchiveException(ctx context.Context, req *platformv1.ArchiveExceptionRequest) (*platformv1.Exception, error) {
	org, ws, id := req.GetOrganizationId(), req.GetWorkspaceId(), req.GetExceptionId()
	x, err := s.eng.Archive(ctx, org, ws, id)
	if err != nil {
		return nil, exceptionErr(err, org, ws, id)
	}
	return exceptionProto(x), nil
}

// UnarchiveException makes an archived exception pending again; its run
// waits for guidance again. Other states (and a run that has moved on since)
// are FAILED_PRECONDITION.
func (s *ExceptionService) UnarchiveException(ctx context.Context, req *platformv1.UnarchiveExceptionRequest) (*platformv1.Exception, error) {
	org, ws, id := req.GetOrganizationId(), req.GetWorkspaceId(), req.GetExceptionId()
	x, err := s.eng.Unarchive(ctx, org, ws, id)
	if err != nil {
		return nil, exceptionErr(err, org, ws, id)
	}
	return exceptionProto(x), nil
}

// checkAssignee checks an assignee: "" (unassign) or users/{u} where u is a
// member of the workspace. It returns the normalised value.
func (s *ExceptionService) checkAssignee(ctx context.Context, org, ws, assignee string) (string, error) {
	if assignee == "" {
		return "", nil
	}
	u, ok := names.ParseUser(assignee)
	if !ok {
		return "", transport.InvalidArgument(ReasonInvalidField, fmt.Sprintf("assignee %q is not users/{user}", assignee),
			transport.Violation("assignee", "must be users/{user}, or empty to unassign"))
	}
	if _, err := s.st.GetWorkspaceUser(ctx, org, ws, u); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			msg := fmt.Sprintf("assignee %s is not a member of workspace %s", assignee, names.Workspace(org, ws))
			return "", transport.NewError(codes.InvalidArgument, ReasonAssigneeNotMember, msg).Meta("assignee", assignee).
				Violations(transport.Violation("assignee", "not a member of the workspace")).Err()
		}
		return "", err
	}
	return names.User(u), nil
}

// AssignException assigns an exception to a member of its workspace
// (users/{user}), or unassigns it (empty assignee). A resolved exception is
// terminal: FAILED_PRECONDITION.
func (s *ExceptionService) AssignException(ctx context.Context, req *platformv1.AssignExceptionRequest) (*platformv1.Exception, error) {
	org, ws, id := req.GetOrganizationId(), req.GetWorkspaceId(), req.GetExceptionId()
	assignee, err := s.checkAssignee(ctx, org, ws, req.GetAssignee())
	if err != nil {
		// An absent exception is NOT_FOUND whatever the assignee: the row
		// is read here only when the assignee is refused (the engine reads
		// it once, in the transaction, otherwise).
		if _, gerr := s.st.GetException(ctx, org, ws, id); gerr != nil {
			return nil, exceptionErr(gerr, org, ws, id)
		}
		return nil, err
	}
	x, err := s.eng.Assign(ctx, org, ws, id, assignee)
	if err != nil {
		return nil, exceptionErr(err, org, ws, id)
	}
	return exceptionProto(x), nil
}

// batchIDs returns the ids (at most MaxBatchExceptions, oldest first) of
// the exceptions matching a required filter and a condition of the batch.
func (s *ExceptionService) batchIDs(ctx context.Context, org, ws, filter string, cond ...store.Filter) ([]string, error) {
	if strings.TrimSpace(filter) == "" {
		return nil, transport.InvalidArgument(transport.ReasonRequiredFieldMissing, "filter is required (state = PENDING selects every pending exception)",
			transport.Violation("filter", "required"))
	}
	f, err := excParseFilter(filter)
	if err != nil {
		return nil, err
	}
	if err := s.checkWorkspace(ctx, org, ws); err != nil {
		return nil, err
	}
	ids, err := s.st.ListExceptionIDs(ctx, org, ws, append(store.And{f}, cond...), MaxBatchExceptions)
	if err != nil {
		return nil, storeStatus(err, ReasonWorkspaceNotFound, ReasonWorkspaceNotFound, names.Workspace(org, ws))
	}
	return ids, nil
}

// batch applies one change to each id; exceptions that changed state
// meanwhile (FAILED_PRECONDITION) or vanished are left out of the response.
func batch(ids []string, change func(id string) (store.Exception, error)) (*platformv1.BatchExceptionsResponse, error) {
	out := &platformv1.BatchExceptionsResponse{}
	for _, id := range ids {
		x, err := change(id)
		if errors.Is(err, store.ErrFailedPrecondition) || errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out.Exceptions = append(out.Exceptions, exceptionProto(x))
	}
	return out, nil
}

// BatchArchiveExceptions archives the pending exceptions matching a filter
// (at most MaxBatchExceptions per call, oldest first; each in its own
// transaction). It returns the exceptions it archived.
func (s *ExceptionService) BatchArchiveExceptions(ctx context.Context, req *platformv1.BatchArchiveExceptionsRequest) (*platformv1.BatchExceptionsResponse, error) {
	org, ws := req.GetOrganizationId(), req.GetWorkspaceId()
	ids, err := s.batchIDs(ctx, org, ws, req.GetFilter(), store.Cond{Field: "state", Op: store.OpEq, Value: string(store.ExceptionPending)})
	if err != nil {
		return nil, err
	}
	return batch(ids, func(id string) (store.Exception, error) { return s.eng.Archive(ctx, org, ws, id) })
}

// BatchUnarchiveExceptions unarchives the archived exceptions matching a
// filter (at most MaxBatchExceptions per call). It returns the exceptions
// it unarchived.
func (s *ExceptionService) BatchUnarchiveExceptions(ctx context.Context, req *platformv1.BatchUnarchiveExceptionsRequest) (*platformv1.BatchExceptionsResponse, error) {
	org, ws := req.GetOrganizationId(), req.GetWorkspaceId()
	ids, err := s.batchIDs(ctx, org, ws, req.GetFilter(), store.Cond{Field: "state", Op: store.OpEq, Value: string(store.ExceptionArchived)})
	if err != nil {
		return nil, err
	}
	return batch(ids, func(id string) (store.Exception, error) { return s.eng.Unarchive(ctx, org, ws, id) })
}

// BatchAssignExceptions assigns (or, with an empty assignee, unassigns) the
// unresolved exceptions matching a filter that are not already so assigned
// (at most MaxBatchExceptions per call). It returns the exceptions it
// changed.
func (s *ExceptionService) BatchAssignExceptions(ctx context.Context, req *platformv1.BatchAssignExceptionsRequest) (*platformv1.BatchExceptionsResponse, error) {
	org, ws := req.GetOrganizationId(), req.GetWorkspaceId()
	assignee, err := s.checkAssignee(ctx, org, ws, req.GetAssignee())
	if err != nil {
		return nil, err
	}
	ids, err := s.batchIDs(ctx, org, ws, req.GetFilter(),
		store.Cond{Field: "state", Op: store.OpNe, Value: string(store.ExceptionResolved)},
		store.Cond{Field: "assignee", Op: store.OpNe, Value: assignee})
	if err != nil {
		return nil, err
	}
	return batch(ids, func(id string) (store.Exception, error) { return s.eng.Assign(ctx, org, ws, id, assignee) })
}
