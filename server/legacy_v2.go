package server

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/structpb"

	legacyv2 "github.com/proserun/prose/gen/prose/legacy/v2"
	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/internal/codec/protovalue"
	"github.com/proserun/prose/internal/engine"
	"github.com/proserun/prose/server/transport"
	"github.com/proserun/prose/store"
)

// Version is the version of the service, set at build time with
// -ldflags "-X github.com/proserun/prose/server.Version=…".
var Version = "dev"

// Pinger reports whether a dependency (the database) answers.
type Pinger interface {
	Ping(ctx context.Context) error
}

// LegacyV2 implements the x-api-key interface, version 2.
type LegacyV2 struct {
	legacyv2.UnimplementedLegacyServiceServer
	db  Pinger
	st  store.Store
	eng *engine.Engine
	// PublicURL is the public origin of the HTTP side, for the signed URLs
	// of files given to runs (empty: taken from the request).
	PublicURL string
}

// NewLegacyV2 returns the v2 service; db may be nil when there is none to check.
func NewLegacyV2(db Pinger) *LegacyV2 { return &LegacyV2{db: db} }

// Health reports "ok" when the database answers, and UNAVAILABLE when it does not.
func (s *LegacyV2) Health(ctx context.Context, _ *legacyv2.HealthRequest) (*legacyv2.HealthResponse, error) {
	if s.db != nil {
		if err := s.db.Ping(ctx); err != nil {
			return nil, transport.NewError(codes.Unavailable, ReasonDatabaseUnavailable, "the database does not answer").Err()
		}
	}
	return &legacyv2.HealthResponse{Status: "ok", Version: Version}, nil
}

// v2 run statuses: Created (pending: queued, not started yet; also every
// run CreateRun answers), Running (executing), Waiting (awaiting guidance),
// Stopping, Stopped, Completed (outputs set) and Failed. agent_id is the
// workspace id, process_id the automation id. created_at is ISO 8601 in UTC
// without an offset, with microseconds (2026-11-22T05:13:01.123456).
//
// Inputs and outputs travel as google.protobuf.Value, whose numbers are
// doubles: a number keeps at most about 15 significant digits and loses
// trailing zeros (2.50 reads back as 2.5). The platform API's Number is
// exact.

// NewLegacyV2Runs returns the v2 service with processes and runs over the
// store and the engine; db may be nil when there is none to check.
func NewLegacyV2Runs(db Pinger, st store.Store, eng *engine.Engine) *LegacyV2 {
	return &LegacyV2{db: db, st: st, eng: eng}
}

// v2Time renders a time as ISO 8601 in UTC without an offset.
func v2Time(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("2006-01-02T15:04:05.000000")
}

// v2Status names a run state in the v2 vocabulary.
func v2Status(s store.RunState) string {
	switch s {
	case store.RunPending:
		return "Created"
	case store.RunExecuting, store.RunWaiting:
		return "Running"
	case store.RunAwaitingGuidance:
		return "Waiting"
	case store.RunStopping:
		return "Stopping"
	case store.RunStopped:
		return "Stopped"
	case store.RunCompleted:
		return "Completed"
	case store.RunFailed:
		return "Failed"
	}
	return string(s)
}

func v2Stage(s store.Stage) string {
	if s == store.StagePublished {
		return "Published"
	}
	return "Draft"
}

func (s *LegacyV2) ready() error {
	if s.st == nil {
		return errStoreUnavailable
	}
	return nil
}

// v2Org is the caller's organization, which v2 requests do not name.
func v2Org(ctx context.Context) (string, error) {
	p, ok := transport.PrincipalFrom(ctx)
	if !ok {
		return "", transport.Unauthenticated(transport.ReasonAPIKeyMissing, transport.MissingCredentialDescription)
	}
	return p.OrganizationID, nil
}

func processProto(a store.Automation) *legacyv2.Process {
	p := &legacyv2.Process{
		Id: a.ID, Name: a.DisplayName, Description: a.Description, AgentId: a.WorkspaceID,
		Stages: []string{"Draft"}, PublishedVersion: versionStr(a.PublishedVersion),
		CreatedAt: v2Time(a.CreateTime), UpdatedAt: v2Time(a.UpdateTime),
	}
	if a.PublishedVersion > 0 {
		p.Stages = append(p.Stages, "Published")
	}
	return p
}

func v2RunProto(r store.Run) (*legacyv2.Run, error) {
	out := &legacyv2.Run{
		Id: r.ID, Name: r.Name, AgentId: r.WorkspaceID, ProcessId: r.AutomationID, Stage: v2Stage(r.Stage),
		Status: v2Status(r.State), CreatedAt: v2Time(r.CreateTime), FileIds: r.FileIDs,
	}
	m, names, err := plainOutputs(r)
	if err != nil {
		return nil, err
	}
	for _, n := range names {
		out.Outputs = append(out.Outputs, &legacyv2.NamedValue{Name: n, Value: m[n]})
	}
	return out, nil
}

func requireV2(field, v string) error {
	if strings.TrimSpace(v) == "" {
		return transport.InvalidArgument(transport.ReasonRequiredFieldMissing, field+" is required", transport.Violation(field, "required"))
	}
	return nil
}

// startList is the v2 list skeleton: the store answers, the caller's
// organization, the required fields (field, value pairs, checked in order)
// are given, and limit is a page size (negative: INVALID_ARGUMENT).
func (s *LegacyV2) startList(ctx context.Context, limit int32, required ...string) (org string, size int, err error) {
	if err := s.ready(); err != nil {
		return "", 0, err
	}
	if org, err = v2Org(ctx); err != nil {
		return "", 0, err
	}
	for i := 0; i+1 < len(required); i += 2 {
		if err := requireV2(required[i], required[i+1]); err != nil {
			return "", 0, err
		}
	}
	if size, err = checkedPageSize(limit); err != nil {
		return "", 0, transport.InvalidArgument(ReasonInvalidField, "limit must not be negative", transport.Violation("limit", "negative"))
	}
	return org, size, nil
}

// ListProcesses lists the automations of an agent (workspace), most
// recently changed first; limit as page_size (default 50, at most 1000).
func (s *LegacyV2) ListProcesses(ctx context.Context, req *legacyv2.ListProcessesRequest) (*legacyv2.ListProcessesResponse, error) {
	org, size, err := s.startList(ctx, req.GetLimit(), "agent_id", req.GetAgentId())
	if err != nil {
		return nil, err
	}
	ws := req.GetAgentId()
	if _, err := s.st.GetWorkspace(ctx, org, ws); err != nil {
		return nil, storeStatus(err, ReasonWorkspaceNotFound, ReasonWorkspaceExists, "agents/"+ws)
	}
	page, err := s.st.ListAutomations(ctx, store.ListAutomationsRequest{OrganizationID: org, WorkspaceID: ws, PageSize: size})
	if err != nil {
		return nil, err
	}
	out := &legacyv2.ListProcessesResponse{}
	out.Processes = mapAll(page.Items, processProto)
	return out, nil
}

// GetProcess gets an automation of an agent.
func (s *LegacyV2) GetProcess(ctx context.Context, req *legacyv2.GetProcessRequest) (*legacyv2.Process, error) {
	if err := s.ready(); err != nil {
		return nil, err
	}
	org, err := v2Org(ctx)
	if err != nil {
		return nil, err
	}
	if err := requireV2("id", req.GetId()); err != nil {
		return nil, err
	}
	if err := requireV2("agent_id", req.GetAgentId()); err != nil {
		return nil, err
	}
	a, err := s.st.GetAutomation(ctx, org, req.GetAgentId(), req.GetId())
	if err == nil && !a.DeleteTime.IsZero() {
		err = store.ErrNotFound
	}
	if err != nil {
		return nil, storeStatus(err, ReasonAutomationNotFound, ReasonAutomationExists, "processes/"+req.GetId())
	}
	return processProto(a), nil
}

// v2Inputs reads inputs given as an array of {name, value} or as an object
// keyed by name.
func v2Inputs(v *structpb.Value) (map[string]*platformv1.Value, error) {
	out := map[string]*platformv1.Value{}
	switch k := v.GetKind().(type) {
	case nil, *structpb.Value_NullValue:
		return out, nil
	case *structpb.Value_StructValue:
		for name, x := range k.StructValue.GetFields() {
			pv, err := protovalue.FromPlain(x)
			if err != nil {
				return nil, transport.InvalidArgument(ReasonInvalidField, fmt.Sprintf("inputs.%s: %v", name, err), transport.Violation("inputs."+name, err.Error()))
			}
			out[name] = pv
		}
	case *structpb.Value_ListValue:
		for i, it := range k.ListValue.GetValues() {
			field := fmt.Sprintf("inputs[%d]", i)
			f := it.GetStructValue().GetFields()
			name := f["name"].GetStringValue()
			if it.GetStructValue() == nil || strings.TrimSpace(name) == "" {
				return nil, transport.InvalidArgument(ReasonInvalidField, field+" must be an object {name, value} with a name", transport.Violation(field+".name", "required"))
			}
			for key := range f {
				if key != "name" && key != "value" {
					return nil, transport.InvalidArgument(ReasonInvalidField, fmt.Sprintf("%s: unknown field %q (name, value)", field, key), transport.Violation(field+"."+key, "unknown field"))
				}
			}
			val := f["value"]
			if val == nil {
				val = structpb.NewNullValue()
			}
			pv, err := protovalue.FromPlain(val)
			if err != nil {
				return nil, transport.InvalidArgument(ReasonInvalidField, fmt.Sprintf("%s.value: %v", field, err), transport.Violation(field+".value", err.Error()))
			}
			out[name] = pv
		}
	default:
		return nil, transport.InvalidArgument(ReasonInvalidField, "inputs must be an array of {name, value} or an object keyed by input name",
			transport.Violation("inputs", "not an array or object"))
	}
	return out, nil
}

// CreateRun starts a run of a process of an agent at a stage (Published or
// Draft, any case) and answers the run with status Created.
func (s *LegacyV2) CreateRun(ctx context.Context, req *legacyv2.CreateRunRequest) (*legacyv2.Run, error) {
	if err := s.ready(); err != nil {
		return nil, err
	}
	org, err := v2Org(ctx)
	if err != nil {
		return nil, err
	}
	for _, f := range [][2]string{{"name", req.GetName()}, {"process_id", req.GetProcessId()}, {"agent_id", req.GetAgentId()}, {"stage", req.GetStage()}} {
		if err := requireV2(f[0], f[1]); err != nil {
			return nil, err
		}
	}
	var stage store.Stage
	switch strings.ToLower(strings.TrimSpace(req.GetStage())) {
	case "published":
		stage = store.StagePublished
	case "draft":
		stage = store.StageDraft
	default:
		return nil, transport.InvalidArgument(ReasonInvalidField, "stage must be Published or Draft", transport.Violation("stage", "not Published or Draft"))
	}
	inputs, err := v2Inputs(req.GetInputs())
	if err != nil {
		return nil, err
	}
	var fileIDs []string
	files := &platformv1.List{}
	for i, id := range req.GetFileIds() {
		if strings.TrimSpace(id) == "" {
			return nil, transport.InvalidArgument(ReasonInvalidField, "file ids must not be blank", transport.Violation(fmt.Sprintf("file_ids[%d]", i), "blank"))
		}
		fv, f, err := attachedFile(ctx, s.st, s.PublicURL, org, req.GetAgentId(), id, fmt.Sprintf("file_ids[%d]", i))
		if err != nil {
			return nil, err
		}
		files.Items = append(files.Items, fv)
		fileIDs = append(fileIDs, f.ID)
	}
	if len(fileIDs) > 0 {
		// The files reach the program as `the files`, unless an input has
		// that name already.
		if inputs == nil {
			inputs = map[string]*platformv1.Value{}
		}
		if _, taken := inputs["files"]; !taken {
			inputs["files"] = &platformv1.Value{Kind: &platformv1.Value_List{List: files}}
		}
	}
	if s.eng == nil {
		return nil, errStoreUnavailable
	}
	ws, id := req.GetAgentId(), req.GetProcessId()
	r, _, err := s.eng.Invoke(ctx, engine.InvokeRequest{
		OrganizationID: org, WorkspaceID: ws, AutomationID: id, Stage: stage, Inputs: inputs,
		Name: req.GetName(), FileIDs: fileIDs,
		Invocation: manualInvocation(callerID(ctx)),
	})
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return nil, transport.NotFound(ReasonAutomationNotFound, "processes/"+id)
		}
		return nil, invokeErr(err, org, ws, id, "inputs")
	}
	out, err := v2RunProto(r)
	if err != nil {
		return nil, err
	}
	out.Status = "Created"
	return out, nil
}

// GetRun gets a run with its status and, once completed, its outputs.
func (s *LegacyV2) GetRun(ctx context.Context, req *legacyv2.GetRunRequest) (*legacyv2.Run, error) {
	if err := s.ready(); err != nil {
		return nil, err
	}
	r, err := legacyRun(ctx, s.st, req.GetId(), store.PermRunsGet)
	if err != nil {
		return nil, err
	}
	return v2RunProto(r)
}

// ListRuns lists the runs of a process of an agent, newest first; limit as
// page_size (default 50, at most 1000).
func (s *LegacyV2) ListRuns(ctx context.Context, req *legacyv2.ListRunsRequest) (*legacyv2.ListRunsResponse, error) {
	org, size, err := s.startList(ctx, req.GetLimit(), "process_id", req.GetProcessId(), "agent_id", req.GetAgentId())
	if err != nil {
		return nil, err
	}
	ws, id := req.GetAgentId(), req.GetProcessId()
	if _, err := s.st.GetAutomation(ctx, org, ws, id); err != nil {
		return nil, storeStatus(err, ReasonAutomationNotFound, ReasonAutomationExists, "processes/"+id)
	}
	page, err := s.st.ListRuns(ctx, store.ListRunsRequest{OrganizationID: org, WorkspaceID: ws, AutomationID: id, PageSize: size})
	if err != nil {
		return nil, err
	}
	out := &legacyv2.ListRunsResponse{}
	if out.Runs, err = mapItems(page.Items, v2RunProto); err != nil {
		return nil, err
	}
	return out, nil
}
