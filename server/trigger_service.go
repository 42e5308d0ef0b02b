package server

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	"github.com/proserun/prose/engine"
	errorsv1 "github.com/proserun/prose/gen/prose/errors/v1"
	persistv1 "github.com/proserun/prose/gen/prose/persist/v1"
	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/names"
	"github.com/proserun/prose/server/transport"
	"github.com/proserun/prose/store"
	"github.com/proserun/prose/store/sqlfilter"
)

// Error reasons of the trigger service.
const (
	ReasonTriggerInstanceNotFound = errorsv1.ErrorReason_ERROR_REASON_TRIGGER_INSTANCE_NOT_FOUND
	ReasonTriggerInstanceExists   = errorsv1.ErrorReason_ERROR_REASON_TRIGGER_INSTANCE_ALREADY_EXISTS
	ReasonTriggerBookUnknown      = errorsv1.ErrorReason_ERROR_REASON_TRIGGER_BOOK_UNKNOWN
	ReasonInvalidTrigger          = errorsv1.ErrorReason_ERROR_REASON_INVALID_TRIGGER
)

// Limits of triggers (README, "Triggers").
const (
	// MaxInputMappings bounds the entries of an input_mapping.
	MaxInputMappings = 100
	// MaxTriggerAutomations bounds the automations one instance starts.
	MaxTriggerAutomations = 100
	// MinWebhookSecret is the shortest secret a webhook accepts.
	MinWebhookSecret = 16
)

// WebhookBook is the built-in trigger book of inbound webhooks.
const WebhookBook = "webhook"

// TriggerService implements prose.platform.v1.TriggerService.
type TriggerService struct {
	platformv1.UnimplementedTriggerServiceServer
	st store.Store
	// PublicURL is the public origin of the HTTP side, for the endpoints of
	// webhooks ("": the endpoint is a path).
	PublicURL string
}

// NewTriggerService returns the trigger service.
func NewTriggerService(st store.Store) *TriggerService { return &TriggerService{st: st} }

func triggerInstanceName(org, ws, id string) string { return names.TriggerInstance(org, ws, id) }

// encodeTriggerConfig encodes what a trigger instance keeps beyond its
// columns as a prose.persist.v1.TriggerConfig (the stored shape, private to
// Prose: a change to the public TriggerInstance is never a data migration).
func encodeTriggerConfig(cfg map[string]*platformv1.BdkValue, filter *platformv1.Expression) ([]byte, error) {
	out := &persistv1.TriggerConfig{}
	if len(cfg) > 0 {
		out.Configuration = make(map[string]*persistv1.BdkValue, len(cfg))
		for k, v := range cfg {
			p := &persistv1.BdkValue{}
			if err := engine.Mirror(p, v); err != nil {
				return nil, err
			}
			out.Configuration[k] = p
		}
	}
	if filter != nil {
		out.FilterExpression = &persistv1.Expression{}
		if err := engine.Mirror(out.FilterExpression, filter); err != nil {
			return nil, err
		}
	}
	return proto.MarshalOptions{Deterministic: true}.Marshal(out)
}

// decodeTriggerConfig reads what encodeTriggerConfig wrote back as the
// platform's configuration and filter (in a TriggerInstance holding only
// those two).
func decodeTriggerConfig(b []byte) (*platformv1.TriggerInstance, error) {
	in := &persistv1.TriggerConfig{}
	if err := proto.Unmarshal(b, in); err != nil {
		return nil, err
	}
	out := &platformv1.TriggerInstance{}
	if len(in.GetConfiguration()) > 0 {
		out.Configuration = make(map[string]*platformv1.BdkValue, len(in.GetConfiguration()))
		for k, p := range in.GetConfiguration() {
			v := &platformv1.BdkValue{}
			if err := engine.Mirror(v, p); err != nil {
				return nil, err
			}
			out.Configuration[k] = v
		}
	}
	if in.GetFilterExpression() != nil {
		out.FilterExpression = &platformv1.Expression{}
		if err := engine.Mirror(out.FilterExpression, in.GetFilterExpression()); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// WebhookPath is the path that delivers events to a webhook instance.
func WebhookPath(org, ws, id string) string { return "/hooks/" + org + "/" + ws + "/" + id }

// triggerInstanceProto renders an instance; the secret only when withSecret.
func (s *TriggerService) triggerInstanceProto(t store.TriggerInstance, withSecret bool) (*platformv1.TriggerInstance, error) {
	cfg, err := decodeTriggerConfig(t.Configuration)
	if err != nil {
		return nil, err
	}
	out := &platformv1.TriggerInstance{
		Id: t.ID, Name: t.Name, Reference: triggerInstanceName(t.OrganizationID, t.WorkspaceID, t.ID), BookName: t.BookName,
		ConnectionId: t.ConnectionID, TriggerId: t.TriggerID, Configuration: cfg.GetConfiguration(), FilterExpression: cfg.GetFilterExpression(),
		AutomationIds: t.AutomationIDs, WorkspaceId: t.WorkspaceID, OrganizationId: t.OrganizationID,
		Status: &platformv1.TriggerInstanceStatus{
			State: platformv1.TriggerInstanceState_TRIGGER_INSTANCE_STATE_READY, StateCategory: platformv1.TriggerInstanceStateCategory_TRIGGER_INSTANCE_STATE_CATEGORY_READY,
			Reason: "accepting deliveries", LastUpdated: t.UpdateTime.UTC().Format(time.RFC3339Nano),
		},
	}
	if t.BookName == WebhookBook {
		out.Endpoint = strings.TrimSuffix(s.PublicURL, "/") + WebhookPath(t.OrganizationID, t.WorkspaceID, t.ID)
	}
	if withSecret && t.Secret != "" {
		if out.Configuration == nil {
			out.Configuration = map[string]*platformv1.BdkValue{}
		}
		out.Configuration["secret"] = &platformv1.BdkValue{Kind: &platformv1.BdkValue_TextValue{TextValue: t.Secret}}
	}
	return out, nil
}

// AddWorkspaceBookConnectionTriggerInstance creates an instance of a
// built-in trigger book: "webhook" (trigger "webhook"), whose endpoint
// starts the instance's automations. configuration.secret (text, at least
// 16 characters) signs deliveries; without it one is generated. The
// answer shows the secret; later reads do not.
func (s *TriggerService) AddWorkspaceBookConnectionTriggerInstance(ctx context.Context, req *platformv1.AddWorkspaceBookConnectionTriggerInstanceRequest) (*platformv1.AddWorkspaceBookConnectionTriggerInstanceResponse, error) {
	org, ws := req.GetOrganizationId(), req.GetWorkspaceId()
	mb, isMessage := messageBooks[req.GetBookName()]
	if req.GetBookName() != WebhookBook && !isMessage {
		return nil, transport.InvalidArgument(ReasonTriggerBookUnknown, fmt.Sprintf("book_name %q is not a trigger book; built in: %s, %s, %s, %s",
			req.GetBookName(), WebhookBook, NATSBook, RabbitMQBook, MQTTBook), transport.Violation("book_name", "unknown trigger book"))
	}
	want := WebhookBook
	if isMessage {
		want = mb.trigger
	}
	trig := req.GetTriggerId()
	if trig == "" {
		trig = want
	}
	if trig != want {
		return nil, transport.InvalidArgument(ReasonInvalidTrigger, fmt.Sprintf("trigger_id %q: the %s book has one trigger, %q", trig, req.GetBookName(), want),
			transport.Violation("trigger_id", "unknown trigger"))
	}
	cfg := map[string]*platformv1.BdkValue{}
	secret := ""
	if isMessage {
		if err := checkMessageConfig(req.GetBookName(), req.GetConfiguration()); err != nil {
			return nil, err
		}
		cfg = req.GetConfiguration()
	}
	for k, v := range req.GetConfiguration() {
		if isMessage {
			break // checked above
		}
		if k != "secret" {
			return nil, transport.InvalidArgument(ReasonInvalidTrigger, fmt.Sprintf("configuration.%s: the webhook trigger has only a secret", k),
				transport.Violation("configuration."+k, "unknown parameter"))
		}
		if secret = v.GetTextValue(); len(secret) < MinWebhookSecret {
			return nil, transport.InvalidArgument(ReasonInvalidTrigger, fmt.Sprintf("configuration.secret must be a text_value of at least %d characters", MinWebhookSecret),
				transport.Violation("configuration.secret", "too short"))
		}
	}
	if secret == "" && !isMessage {
		b := make([]byte, 32)
		_, _ = rand.Read(b)
		secret = base64.RawURLEncoding.EncodeToString(b)
	}
	if f := req.GetFilterExpression(); f != nil {
		if err := checkFilter(f); err != nil {
			return nil, err
		}
	}
	enc, err := encodeTriggerConfig(cfg, req.GetFilterExpression())
	if err != nil {
		return nil, err
	}
	t, err := s.st.CreateTriggerInstance(ctx, store.TriggerInstance{
		OrganizationID: org, WorkspaceID: ws, Name: req.GetName(), BookName: req.GetBookName(), BookVersion: req.GetBookVersion(),
		ConnectionID: req.GetConnectionId(), TriggerID: trig, Configuration: enc, Secret: secret,
	})
	if errors.Is(err, store.ErrResourceExhausted) {
		return nil, transport.NewError(codes.ResourceExhausted, ReasonWorkspaceLimit,
			fmt.Sprintf("a workspace has at most %d trigger instances", store.MaxTriggerInstancesPerWorkspace)).Meta("limit", strconv.Itoa(store.MaxTriggerInstancesPerWorkspace)).Err()
	}
	if err != nil {
		return nil, storeStatus(err, ReasonWorkspaceNotFound, ReasonTriggerInstanceExists, names.Workspace(org, ws))
	}
	p, err := s.triggerInstanceProto(t, true)
	if err != nil {
		return nil, err
	}
	return &platformv1.AddWorkspaceBookConnectionTriggerInstanceResponse{TriggerInstance: p}, nil
}

// SetAutomationsForTriggerInstance replaces the automations an instance
// starts; each must be an automation of the workspace.
func (s *TriggerService) SetAutomationsForTriggerInstance(ctx context.Context, req *platformv1.SetAutomationsForTriggerInstanceRequest) (*platformv1.SetAutomationsForTriggerInstanceResponse, error) {
	org, ws, id := req.GetOrganizationId(), req.GetWorkspaceId(), req.GetTriggerInstanceId()
	cur, err := s.st.GetTriggerInstance(ctx, org, ws, id)
	if err != nil || (req.GetConnectionId() != "" && req.GetConnectionId() != cur.ConnectionID) {
		if err == nil {
			err = store.ErrNotFound
		}
		return nil, storeStatus(err, ReasonTriggerInstanceNotFound, ReasonTriggerInstanceExists, triggerInstanceName(org, ws, id))
	}
	if len(req.GetAutomationIds()) > MaxTriggerAutomations {
		return nil, transport.InvalidArgument(ReasonInvalidTrigger, fmt.Sprintf("at most %d automations", MaxTriggerAutomations), transport.Violation("automation_ids", "too many"))
	}
	var ids []string
	for _, a := range req.GetAutomationIds() {
		a = store.LastSegment(a)
		if slices.Contains(ids, a) {
			continue
		}
		got, err := s.st.GetAutomation(ctx, org, ws, a)
		if err == nil && !got.DeleteTime.IsZero() {
			err = store.ErrNotFound
		}
		if errors.Is(err, store.ErrNotFound) {
			return nil, transport.NotFound(ReasonAutomationNotFound, names.Automation(org, ws, a))
		}
		if err != nil {
			return nil, err
		}
		ids = append(ids, a)
	}
	t, err := s.st.SetTriggerInstanceAutomations(ctx, org, ws, id, ids)
	if err != nil {
		return nil, storeStatus(err, ReasonTriggerInstanceNotFound, ReasonTriggerInstanceExists, triggerInstanceName(org, ws, id))
	}
	p, err := s.triggerInstanceProto(t, false)
	if err != nil {
		return nil, err
	}
	return &platformv1.SetAutomationsForTriggerInstanceResponse{TriggerInstance: p}, nil
}

// RemoveWorkspaceBookConnectionTriggerInstance deletes an instance of a
// connection; its endpoint stops accepting deliveries.
func (s *TriggerService) RemoveWorkspaceBookConnectionTriggerInstance(ctx context.Context, req *platformv1.RemoveWorkspaceBookConnectionTriggerInstanceRequest) (*platformv1.RemoveWorkspaceBookConnectionTriggerInstanceResponse, error) {
	org, ws, id := req.GetOrganizationId(), req.GetWorkspaceId(), req.GetTriggerInstanceId()
	if err := s.st.DeleteTriggerInstance(ctx, org, ws, req.GetConnectionId(), id); err != nil {
		return nil, storeStatus(err, ReasonTriggerInstanceNotFound, ReasonTriggerInstanceExists, triggerInstanceName(org, ws, id))
	}
	return &platformv1.RemoveWorkspaceBookConnectionTriggerInstanceResponse{}, nil
}

// ListWorkspaceTriggerInstances lists the instances of a workspace by id.
// Filter: book_name, connection_id, trigger_id (= !=).
func (s *TriggerService) ListWorkspaceTriggerInstances(ctx context.Context, req *platformv1.ListWorkspaceTriggerInstancesRequest) (*platformv1.ListWorkspaceTriggerInstancesResponse, error) {
	f, err := sqlfilter.TriggerInstances.Parse(req.GetFilter())
	if err != nil {
		return nil, invalidFromStore(err)
	}
	list, err := s.st.ListTriggerInstances(ctx, req.GetOrganizationId(), req.GetWorkspaceId(), f)
	if err != nil {
		return nil, storeStatus(err, ReasonWorkspaceNotFound, ReasonWorkspaceExists, names.Workspace(req.GetOrganizationId(), req.GetWorkspaceId()))
	}
	out := &platformv1.ListWorkspaceTriggerInstancesResponse{TriggerInstances: []*platformv1.TriggerInstance{}}
	for _, t := range list {
		p, err := s.triggerInstanceProto(t, false)
		if err != nil {
			return nil, err
		}
		out.TriggerInstances = append(out.TriggerInstances, p)
	}
	return out, nil
}

func automationTriggerProto(t store.AutomationTrigger) *platformv1.AutomationTrigger {
	return &platformv1.AutomationTrigger{
		TriggerId: t.TriggerID, Automation: names.Automation(t.OrganizationID, t.WorkspaceID, t.AutomationID), InputMapping: t.InputMapping,
		PhaseType: platformv1.PhaseType(t.PhaseType), PhaseSubType: platformv1.PhaseSubType(t.PhaseSubType), IsActive: proto.Bool(t.IsActive),
	}
}

// CreateAutomationTrigger stores (or replaces) how a trigger instance of
// the workspace (trigger_id) starts the automation: input_mapping maps
// input names to JSON Pointers (RFC 6901) into the event's JSON body (""
// is the whole body). is_active defaults to true.
func (s *TriggerService) CreateAutomationTrigger(ctx context.Context, req *platformv1.CreateAutomationTriggerRequest) (*platformv1.AutomationTrigger, error) {
	org, ws, id := req.GetOrganizationId(), req.GetWorkspaceId(), req.GetAutomationId()
	in := req.GetAutomationTrigger()
	if in == nil {
		return nil, transport.InvalidArgument(transport.ReasonRequiredFieldMissing, "automation_trigger is required", transport.Violation("automation_trigger", "required"))
	}
	if in.GetTriggerId() == "" {
		return nil, transport.InvalidArgument(transport.ReasonRequiredFieldMissing, "automation_trigger.trigger_id is required", transport.Violation("automation_trigger.trigger_id", "required"))
	}
	if _, ok := platformv1.PhaseType_name[int32(in.GetPhaseType())]; !ok || in.GetPhaseType() == platformv1.PhaseType_PHASE_TYPE_UNSPECIFIED {
		return nil, transport.InvalidArgument(transport.ReasonRequiredFieldMissing, "automation_trigger.phase_type is required", transport.Violation("automation_trigger.phase_type", "required"))
	}
	if len(in.GetInputMapping()) > MaxInputMappings {
		return nil, transport.InvalidArgument(ReasonInvalidTrigger, fmt.Sprintf("input_mapping has more than %d entries", MaxInputMappings),
			transport.Violation("automation_trigger.input_mapping", "too many entries"))
	}
	for k, v := range in.GetInputMapping() {
		if strings.TrimSpace(k) == "" {
			return nil, transport.InvalidArgument(ReasonInvalidTrigger, "input_mapping: an input has an empty name", transport.Violation("automation_trigger.input_mapping", "empty input name"))
		}
		if v != "" && !strings.HasPrefix(v, "/") {
			return nil, transport.InvalidArgument(ReasonInvalidTrigger, fmt.Sprintf("input_mapping[%q]: %q is not a JSON Pointer (\"/order/total\", or \"\" for the whole body)", k, v),
				transport.Violation("automation_trigger.input_mapping["+k+"]", "not a JSON Pointer"))
		}
	}
	a, err := s.st.GetAutomation(ctx, org, ws, id)
	if err == nil && !a.DeleteTime.IsZero() {
		err = store.ErrNotFound
	}
	if err != nil {
		return nil, automationErr(err, org, ws, id)
	}
	if _, err := s.st.GetTriggerInstance(ctx, org, ws, in.GetTriggerId()); err != nil {
		return nil, storeStatus(err, ReasonTriggerInstanceNotFound, ReasonTriggerInstanceExists, triggerInstanceName(org, ws, in.GetTriggerId()))
	}
	active := true
	if in.IsActive != nil {
		active = in.GetIsActive()
	}
	t, err := s.st.PutAutomationTrigger(ctx, store.AutomationTrigger{
		OrganizationID: org, WorkspaceID: ws, AutomationID: id, TriggerID: in.GetTriggerId(), InputMapping: in.GetInputMapping(),
		PhaseType: int32(in.GetPhaseType()), PhaseSubType: int32(in.GetPhaseSubType()), IsActive: active,
	})
	if err != nil {
		return nil, automationErr(err, org, ws, id)
	}
	return automationTriggerProto(t), nil
}

// ListAutomationTriggers lists the triggers of an automation by trigger id.
// Filter: trigger_id, is_active (= !=).
func (s *TriggerService) ListAutomationTriggers(ctx context.Context, req *platformv1.ListAutomationTriggersRequest) (*platformv1.ListAutomationTriggersResponse, error) {
	org, ws, id := req.GetOrganizationId(), req.GetWorkspaceId(), req.GetAutomationId()
	size, err := checkedPageSize(req.GetPageSize())
	if err != nil {
		return nil, err
	}
	f, err := sqlfilter.AutomationTriggers.Parse(req.GetFilter())
	if err != nil {
		return nil, invalidFromStore(err)
	}
	if _, err := s.st.GetAutomation(ctx, org, ws, id); err != nil {
		return nil, automationErr(err, org, ws, id)
	}
	page, err := s.st.ListAutomationTriggers(ctx, store.ListAutomationTriggersRequest{
		OrganizationID: org, WorkspaceID: ws, AutomationID: id, Filter: f, PageSize: size, PageToken: req.GetPageToken(),
	})
	if err != nil {
		return nil, automationErr(err, org, ws, id)
	}
	out := &platformv1.ListAutomationTriggersResponse{AutomationTriggers: []*platformv1.AutomationTrigger{}, NextPageToken: page.NextPageToken}
	for _, t := range page.Items {
		out.AutomationTriggers = append(out.AutomationTriggers, automationTriggerProto(t))
	}
	return out, nil
}
