package server

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"net/url"
	"strconv"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/internal/engine/outbound"
	"github.com/proserun/prose/internal/names"
	"github.com/proserun/prose/server/transport"
	"github.com/proserun/prose/store"
)

// MaxWebhookURL bounds the length of a webhook's URL.
const MaxWebhookURL = 2048

// WebhookService implements prose.platform.v1.WebhookService.
type WebhookService struct {
	platformv1.UnimplementedWebhookServiceServer
	st store.Store
}

// NewWebhookService returns the webhook service.
func NewWebhookService(st store.Store) *WebhookService { return &WebhookService{st: st} }

func webhookName(org, ws, id string) string { return names.Webhook(org, ws, id) }

func webhookProto(w store.Webhook, withSecret bool) *platformv1.Webhook {
	out := &platformv1.Webhook{Name: webhookName(w.OrganizationID, w.WorkspaceID, w.ID), Url: w.URL, DisplayName: w.DisplayName,
		CreateTime: timestamppb.New(w.CreateTime)}
	if w.Runs {
		out.EventTypes = append(out.EventTypes, platformv1.WebhookEventType_WEBHOOK_EVENT_TYPE_RUN_STATE_CHANGED)
	}
	if w.Exceptions {
		out.EventTypes = append(out.EventTypes, platformv1.WebhookEventType_WEBHOOK_EVENT_TYPE_EXCEPTION_STATE_CHANGED)
	}
	if withSecret {
		out.Secret = w.Secret
	}
	return out
}

// CreateWebhook subscribes an http(s) URL to run and/or exception events of
// the workspace. The answer shows the secret (given, at least 16
// characters, or generated); later reads do not.
func (s *WebhookService) CreateWebhook(ctx context.Context, req *platformv1.CreateWebhookRequest) (*platformv1.Webhook, error) {
	org, ws := req.GetOrganizationId(), req.GetWorkspaceId()
	in := req.GetWebhook()
	if in == nil {
		return nil, transport.InvalidArgument(transport.ReasonRequiredFieldMissing, "webhook is required", transport.Violation("webhook", "required"))
	}
	u, err := url.Parse(in.GetUrl())
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || len(in.GetUrl()) > MaxWebhookURL {
		return nil, transport.InvalidArgument(ReasonInvalidWebhook, fmt.Sprintf("webhook.url must be an http:// or https:// URL of at most %d characters", MaxWebhookURL),
			transport.Violation("webhook.url", "not an http(s) URL"))
	}
	w := store.Webhook{OrganizationID: org, WorkspaceID: ws, URL: in.GetUrl(), DisplayName: in.GetDisplayName(), Secret: in.GetSecret()}
	for i, t := range in.GetEventTypes() {
		switch t {
		case platformv1.WebhookEventType_WEBHOOK_EVENT_TYPE_RUN_STATE_CHANGED:
			w.Runs = true
		case platformv1.WebhookEventType_WEBHOOK_EVENT_TYPE_EXCEPTION_STATE_CHANGED:
			w.Exceptions = true
		default:
			return nil, transport.InvalidArgument(ReasonInvalidWebhook, fmt.Sprintf("webhook.event_types[%d] is not an event type", i),
				transport.Violation(fmt.Sprintf("webhook.event_types[%d]", i), "unknown event type"))
		}
	}
	if !w.Runs && !w.Exceptions {
		return nil, transport.InvalidArgument(transport.ReasonRequiredFieldMissing, "webhook.event_types needs at least one event type", transport.Violation("webhook.event_types", "required"))
	}
	if w.Secret == "" {
		b := make([]byte, 32)
		_, _ = rand.Read(b)
		w.Secret = base64.RawURLEncoding.EncodeToString(b)
	} else if len(w.Secret) < MinWebhookSecret {
		return nil, transport.InvalidArgument(ReasonInvalidWebhook, fmt.Sprintf("webhook.secret must have at least %d characters", MinWebhookSecret), transport.Violation("webhook.secret", "too short"))
	}
	out, err := s.st.CreateWebhook(ctx, w)
	if errors.Is(err, store.ErrResourceExhausted) {
		return nil, transport.NewError(codes.ResourceExhausted, ReasonWorkspaceLimit,
			fmt.Sprintf("a workspace has at most %d webhooks", store.MaxWebhooksPerWorkspace)).Meta("limit", strconv.Itoa(store.MaxWebhooksPerWorkspace)).Err()
	}
	if err != nil {
		return nil, storeStatus(err, ReasonWorkspaceNotFound, ReasonWorkspaceExists, names.Workspace(org, ws))
	}
	return webhookProto(out, true), nil
}

// GetWebhook gets a webhook.
func (s *WebhookService) GetWebhook(ctx context.Context, req *platformv1.GetWebhookRequest) (*platformv1.Webhook, error) {
	w, err := s.st.GetWebhook(ctx, req.GetOrganizationId(), req.GetWorkspaceId(), req.GetWebhookId())
	if err != nil {
		return nil, storeStatus(err, ReasonWebhookNotFound, ReasonWebhookNotFound, webhookName(req.GetOrganizationId(), req.GetWorkspaceId(), req.GetWebhookId()))
	}
	return webhookProto(w, false), nil
}

// ListWebhooks lists the webhooks of a workspace, newest first.
func (s *WebhookService) ListWebhooks(ctx context.Context, req *platformv1.ListWebhooksRequest) (*platformv1.ListWebhooksResponse, error) {
	list, err := s.st.ListWebhooks(ctx, req.GetOrganizationId(), req.GetWorkspaceId())
	if err != nil {
		return nil, err
	}
	out := &platformv1.ListWebhooksResponse{}
	for _, w := range list {
		out.Webhooks = append(out.Webhooks, webhookProto(w, false))
	}
	return out, nil
}

// DeleteWebhook deletes a webhook and its delivery log.
func (s *WebhookService) DeleteWebhook(ctx context.Context, req *platformv1.DeleteWebhookRequest) (*emptypb.Empty, error) {
	if err := s.st.DeleteWebhook(ctx, req.GetOrganizationId(), req.GetWorkspaceId(), req.GetWebhookId()); err != nil {
		return nil, storeStatus(err, ReasonWebhookNotFound, ReasonWebhookNotFound, webhookName(req.GetOrganizationId(), req.GetWorkspaceId(), req.GetWebhookId()))
	}
	return &emptypb.Empty{}, nil
}

var deliveryStates = map[string]platformv1.WebhookDeliveryState{
	store.DeliveryPending:   platformv1.WebhookDeliveryState_WEBHOOK_DELIVERY_STATE_PENDING,
	store.DeliverySucceeded: platformv1.WebhookDeliveryState_WEBHOOK_DELIVERY_STATE_SUCCEEDED,
	store.DeliveryFailed:    platformv1.WebhookDeliveryState_WEBHOOK_DELIVERY_STATE_FAILED,
}

// ListWebhookDeliveries lists the delivery log of a webhook, newest first.
func (s *WebhookService) ListWebhookDeliveries(ctx context.Context, req *platformv1.ListWebhookDeliveriesRequest) (*platformv1.ListWebhookDeliveriesResponse, error) {
	org, ws, id := req.GetOrganizationId(), req.GetWorkspaceId(), req.GetWebhookId()
	size, err := checkedPageSize(req.GetPageSize())
	if err != nil {
		return nil, err
	}
	if _, err := s.st.GetWebhook(ctx, org, ws, id); err != nil {
		return nil, storeStatus(err, ReasonWebhookNotFound, ReasonWebhookNotFound, webhookName(org, ws, id))
	}
	page, err := s.st.ListWebhookDeliveries(ctx, org, ws, id, size, req.GetPageToken())
	if err != nil {
		return nil, storeStatus(err, ReasonWebhookNotFound, ReasonWebhookNotFound, webhookName(org, ws, id))
	}
	out := &platformv1.ListWebhookDeliveriesResponse{NextPageToken: page.NextPageToken}
	for _, d := range page.Items {
		pd, err := deliveryProto(org, ws, id, d)
		if err != nil {
			return nil, err
		}
		out.Deliveries = append(out.Deliveries, pd)
	}
	return out, nil
}

func deliveryProto(org, ws, id string, d store.WebhookDelivery) (*platformv1.WebhookDelivery, error) {
	p, err := structpb.NewStruct(outbound.Payload(d))
	if err != nil {
		return nil, err
	}
	pd := &platformv1.WebhookDelivery{
		Name: names.Delivery(org, ws, id, d.ID), EventType: d.EventType, Payload: p, State: deliveryStates[d.State],
		Attempts: int32(d.Attempts), LastStatusCode: int32(d.LastStatusCode), LastError: d.LastError, //nolint:gosec // G115: small counts
		CreateTime: timestamppb.New(d.CreateTime), UpdateTime: timestamppb.New(d.UpdateTime),
	}
	if d.State == store.DeliveryPending {
		pd.NextAttemptTime = timestamppb.New(d.NextAttemptTime)
	}
	return pd, nil
}

// RedeliverWebhookDelivery sends a delivery that succeeded or failed
// again (pending, due now, attempts from 0, the same id); a pending one is
// FAILED_PRECONDITION.
func (s *WebhookService) RedeliverWebhookDelivery(ctx context.Context, req *platformv1.RedeliverWebhookDeliveryRequest) (*platformv1.WebhookDelivery, error) {
	org, ws, id, did := req.GetOrganizationId(), req.GetWorkspaceId(), req.GetWebhookId(), req.GetDeliveryId()
	if _, err := s.st.GetWebhook(ctx, org, ws, id); err != nil {
		return nil, storeStatus(err, ReasonWebhookNotFound, ReasonWebhookNotFound, webhookName(org, ws, id))
	}
	d, err := s.st.RedeliverWebhookDelivery(ctx, org, ws, id, did)
	if err != nil {
		return nil, storeStatus(err, ReasonWebhookDeliveryNotFound, ReasonWebhookDeliveryNotFound, names.Delivery(org, ws, id, did))
	}
	return deliveryProto(org, ws, id, d)
}
