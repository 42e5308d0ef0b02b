package server

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	bookv1 "github.com/proserun/prose/gen/prose/book/v1"
	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/internal/books"
	"github.com/proserun/prose/internal/codec"
	"github.com/proserun/prose/internal/names"
	"github.com/proserun/prose/server/transport"
	"github.com/proserun/prose/store"
	"github.com/proserun/prose/store/sqlfilter"
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
const WebhookBook = books.WebhookBookName

// TriggerService implements prose.platform.v1.TriggerService.
type TriggerService struct {
	platformv1.UnimplementedTriggerServiceServer
	st store.Store
	// books finds the book an instance is made on.
	books TriggerBooks
	// PublicURL is the public origin of the HTTP side, for the endpoints of
	// webhooks ("": the endpoint is a path).
	PublicURL string
	// Messages tells why a message trigger instance has no subscription on
	// this replica (MessageTriggers.Failure); nil: message instances show
	// ready.
	Messages interface {
		Failure(org, ws, id string) (string, bool)
	}
}

// TriggerBooks finds books (books.Registry has it).
type TriggerBooks interface {
	Book(ctx context.Context, ws books.Workspace, name, version string) (*bookv1.Book, error)
	IsBuiltin(name, version string) bool
}

// NewTriggerService returns the trigger service; instances are made on the
// trigger books of reg.
func NewTriggerService(st store.Store, reg TriggerBooks) *TriggerService {
	return &TriggerService{st: st, books: reg}
}

func triggerInstanceName(org, ws, id string) string { return names.TriggerInstance(org, ws, id) }

// encodeTriggerConfig encodes what a trigger instance keeps beyond its
// columns (codec.EncodeTriggerConfig: the stored shape, private to Prose,
// so a change to the public TriggerInstance is never a data migration).
func encodeTriggerConfig(cfg map[string]*platformv1.BdkValue, filter *platformv1.Expression) ([]byte, error) {
	return codec.EncodeTriggerConfig(cfg, filter)
}

// decodeTriggerConfig reads what encodeTriggerConfig wrote.
func decodeTriggerConfig(b []byte) (*platformv1.TriggerInstance, error) {
	return codec.DecodeTriggerConfig(b)
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
	if _, ok := messageBooks[t.BookName]; ok && s.Messages != nil {
		if why, failed := s.Messages.Failure(t.OrganizationID, t.WorkspaceID, t.ID); failed {
			out.Status.State, out.Status.StateCategory = platformv1.TriggerInstanceState_TRIGGER_INSTANCE_STATE_FAILED, platformv1.TriggerInstanceStateCategory_TRIGGER_INSTANCE_STATE_CATEGORY_FAILED
			out.Status.Reason = "not subscribed: " + why
		}
	}
	if t.BookName == WebhookBook {
		out.Endpoint = strings.TrimSuffix(s.PublicURL, "/") + WebhookPath(t.OrganizationID, t.WorkspaceID, t.ID)
	}
	if withSecret && t.Secret != "" && t.BookName == WebhookBook {
		if out.Configuration == nil {
			out.Configuration = map[string]*platformv1.BdkValue{}
		}
		out.Configuration["secret"] = &platformv1.BdkValue{Kind: &platformv1.BdkValue_TextValue{TextValue: t.Secret}}
	}
	return out, nil
}

// triggerBook checks the book, version and connection an instance is made
// on: the book must be visible in the workspace (NOT_FOUND BOOK_NOT_FOUND),
// one of the built-in trigger books (INVALID_ARGUMENT TRIGGER_BOOK_UNKNOWN),
// and the connection one of the workspace's connections of that book and
// version (NOT_FOUND CONNECTION_NOT_FOUND). It answers the trigger id the
// book's one trigger has.
func (s *TriggerService) triggerBook(ctx context.Context, req *platformv1.AddWorkspaceBookConnectionTriggerInstanceRequest) (string, error) {
	org, ws, name, version := req.GetOrganizationId(), req.GetWorkspaceId(), req.GetBookName(), req.GetBookVersion()
	b, err := s.books.Book(ctx, books.Workspace{OrganizationID: org, WorkspaceID: ws}, name, version)
	if err != nil {
		return "", bookError(err, name, version)
	}
	_, isMessage := messageBooks[name]
	if (name != WebhookBook && !isMessage) || !s.books.IsBuiltin(name, version) || len(b.GetTriggers()) != 1 {
		return "", transport.InvalidArgument(ReasonTriggerBookUnknown, fmt.Sprintf("book %s version %s is not a trigger book; built in: %s, %s, %s, %s (version %s)",
			name, version, WebhookBook, NATSBook, RabbitMQBook, MQTTBook, books.TriggerBookVersion), transport.Violation("book_name", "not a trigger book"))
	}
	c, err := s.st.GetBookConnection(ctx, org, ws, req.GetConnectionId())
	if err == nil && (c.BookName != name || c.BookVersion != version) {
		err = store.ErrNotFound // a connection of another book does not exist here
	}
	if err != nil {
		return "", storeStatus(err, ReasonConnectionNotFound, ReasonConnectionAlreadyExists, names.Workspace(org, ws)+"/connections/"+req.GetConnectionId())
	}
	return b.GetTriggers()[0].GetId(), nil
}

// AddWorkspaceBookConnectionTriggerInstance creates an instance of a
// built-in trigger book on one of its connections: "webhook" (trigger
// "webhook"), whose endpoint starts the instance's automations, or a
// message book (nats, rabbitmq, mqtt; trigger "message").
// configuration.secret (text, at least 16 characters) signs a webhook's
// deliveries; without it one is generated. The answer shows the secret;
// later reads do not.
func (s *TriggerService) AddWorkspaceBookConnectionTriggerInstance(ctx context.Context, req *platformv1.AddWorkspaceBookConnectionTriggerInstanceRequest) (*platformv1.AddWorkspaceBookConnectionTriggerInstanceResponse, error) {
	org, ws := req.GetOrganizationId(), req.GetWorkspaceId()
	// An unknown workspace is NOT_FOUND before the book is looked at.
	if _, err := s.st.GetWorkspace(ctx, org, ws); err != nil {
		return nil, storeStatus(err, ReasonWorkspaceNotFound, ReasonWorkspaceExists, names.Workspace(org, ws))
	}
	want, err := s.triggerBook(ctx, req)
	if err != nil {
		return nil, err
	}
	_, isMessage := messageBooks[req.GetBookName()]
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
		// A broker URL's credentials are a secret: the URL is kept sealed
		// (the instance's secret) and the configuration shows it redacted.
		if u, shown := redactedBrokerURL(cfg["url"].GetTextValue()); shown != "" {
			cfg = maps.Clone(cfg)
			cfg["url"] = &platformv1.BdkValue{Kind: &platformv1.BdkValue_TextValue{TextValue: shown}}
			secret = u
		}
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
	for i, a := range req.GetAutomationIds() {
		if strings.Contains(a, "/") {
			// A full name must name an automation of this workspace: one of
			// another workspace or organization is not re-read as a local id.
			o, w, aid, ok := names.ParseAutomation(a)
			if !ok || o != org || w != ws {
				return nil, transport.InvalidArgument(ReasonInvalidField,
					fmt.Sprintf("automation_ids[%d] %q is not an automation of %s", i, a, names.Workspace(org, ws)),
					transport.Violation(fmt.Sprintf("automation_ids[%d]", i), "not an automation of this workspace"))
			}
			a = aid
		}
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
	// The store lists an unknown workspace as empty: it must be NOT_FOUND.
	if _, err := s.st.GetWorkspace(ctx, req.GetOrganizationId(), req.GetWorkspaceId()); err != nil {
		return nil, storeStatus(err, ReasonWorkspaceNotFound, ReasonWorkspaceExists, names.Workspace(req.GetOrganizationId(), req.GetWorkspaceId()))
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
