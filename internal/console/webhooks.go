package console

import (
	"net/http"
	"strings"

	"google.golang.org/grpc/codes"

	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/internal/names"
)

// Outbound webhooks: the URLs told of the workspace's run and exception
// changes, and their delivery logs.

var webhookEvents = []struct {
	Value platformv1.WebhookEventType
	Key   string
	Label string
}{
	{platformv1.WebhookEventType_WEBHOOK_EVENT_TYPE_RUN_STATE_CHANGED, "run", "a run changes state"},
	{platformv1.WebhookEventType_WEBHOOK_EVENT_TYPE_EXCEPTION_STATE_CHANGED, "exception", "an exception is raised, resolved or archived"},
}

func eventLabel(t platformv1.WebhookEventType) string {
	for _, e := range webhookEvents {
		if e.Value == t {
			return e.Label
		}
	}
	return "unknown"
}

type webhookRow struct {
	W      *platformv1.Webhook
	ID     string
	Events []string
}

type webhooksData struct {
	pageData
	Hooks  []webhookRow
	Events any
	// Secret is a new webhook's secret, shown once.
	Secret, SecretOf string
	Form             webhookForm
}

type webhookForm struct {
	URL, Name string
	Events    map[string]bool
}

func (c *Console) webhookList(w http.ResponseWriter, r *http.Request, s *sess) {
	c.showWebhooks(w, r, s, http.StatusOK, "", nil, nil)
}

func (c *Console) showWebhooks(w http.ResponseWriter, r *http.Request, s *sess, code int, errMsg string, created *platformv1.Webhook, form *webhookForm) {
	base, err := c.basics(r, s, "Webhooks")
	if err != nil {
		c.grpcFail(w, r, s, err)
		return
	}
	base.Error = errMsg
	base.Notice = done(r, map[string]string{"delete": "The webhook is deleted, with its delivery log."})
	res, err := c.webhooks.ListWebhooks(s.ctx, &platformv1.ListWebhooksRequest{OrganizationId: s.OrganizationID, WorkspaceId: base.WS})
	if err != nil {
		c.grpcFail(w, r, s, err)
		return
	}
	d := &webhooksData{pageData: base, Events: webhookEvents, Form: webhookForm{Events: map[string]bool{"run": true, "exception": true}}}
	if form != nil {
		d.Form = *form
	}
	if created != nil {
		d.Secret, d.SecretOf = created.GetSecret(), created.GetDisplayName()
		if d.SecretOf == "" {
			d.SecretOf = created.GetUrl()
		}
		d.Notice = "The webhook is added. Its signing secret is shown once, below."
	}
	for _, h := range res.GetWebhooks() {
		row := webhookRow{W: h, ID: names.ID(h.GetName())}
		for _, t := range h.GetEventTypes() {
			row.Events = append(row.Events, eventLabel(t))
		}
		d.Hooks = append(d.Hooks, row)
	}
	c.render(w, r, code, "webhooks", d)
}

func (c *Console) addWebhook(w http.ResponseWriter, r *http.Request, s *sess) {
	f := webhookForm{URL: strings.TrimSpace(r.PostFormValue("url")), Name: strings.TrimSpace(r.PostFormValue("display_name")), Events: map[string]bool{}}
	h := &platformv1.Webhook{Url: f.URL, DisplayName: f.Name, Secret: r.PostFormValue("secret")}
	for _, e := range webhookEvents {
		if r.PostFormValue("event."+e.Key) != "" {
			f.Events[e.Key] = true
			h.EventTypes = append(h.EventTypes, e.Value)
		}
	}
	res, err := c.webhooks.CreateWebhook(s.ctx, &platformv1.CreateWebhookRequest{OrganizationId: s.OrganizationID, WorkspaceId: r.PathValue("ws"), Webhook: h})
	if err != nil {
		if msg, ok := mendable(err, codes.InvalidArgument, codes.ResourceExhausted); ok {
			c.showWebhooks(w, r, s, http.StatusBadRequest, msg, nil, &f)
			return
		}
		c.grpcFail(w, r, s, err)
		return
	}
	// The secret is in this answer only: the page is rendered, not redirected.
	c.showWebhooks(w, r, s, http.StatusOK, "", res, nil)
}

type webhookData struct {
	pageData
	W          *platformv1.Webhook
	ID         string
	Events     []string
	Deliveries []deliveryRow
	Next       string
}

type deliveryRow struct {
	D     *platformv1.WebhookDelivery
	ID    string
	State string
	Event string
	// Done: it succeeded or failed (it may be sent again).
	Done bool
}

func deliveryState(s platformv1.WebhookDeliveryState) string {
	switch s {
	case platformv1.WebhookDeliveryState_WEBHOOK_DELIVERY_STATE_PENDING:
		return "Pending"
	case platformv1.WebhookDeliveryState_WEBHOOK_DELIVERY_STATE_SUCCEEDED:
		return "Delivered"
	case platformv1.WebhookDeliveryState_WEBHOOK_DELIVERY_STATE_FAILED:
		return "Failed"
	}
	return "Unknown"
}

// deliveryEvent says a delivery's event type (run.state_changed) in words.
func deliveryEvent(t string) string {
	switch t {
	case "run.state_changed":
		return "run changed state"
	case "exception.state_changed":
		return "exception changed state"
	}
	return t
}

func (c *Console) webhook(w http.ResponseWriter, r *http.Request, s *sess) {
	c.showWebhook(w, r, s, http.StatusOK, "")
}

func (c *Console) showWebhook(w http.ResponseWriter, r *http.Request, s *sess, code int, errMsg string) {
	base, err := c.basics(r, s, "Webhook")
	if err != nil {
		c.grpcFail(w, r, s, err)
		return
	}
	base.Error = errMsg
	base.Notice = done(r, map[string]string{"redeliver": "The delivery is queued again: it is sent within a second."})
	id := r.PathValue("id")
	h, err := c.webhooks.GetWebhook(s.ctx, &platformv1.GetWebhookRequest{OrganizationId: s.OrganizationID, WorkspaceId: base.WS, WebhookId: id})
	if err != nil {
		c.grpcFail(w, r, s, err)
		return
	}
	dl, err := c.webhooks.ListWebhookDeliveries(s.ctx, &platformv1.ListWebhookDeliveriesRequest{OrganizationId: s.OrganizationID, WorkspaceId: base.WS, WebhookId: id, PageSize: 50, PageToken: r.URL.Query().Get("page_token")})
	if err != nil {
		c.grpcFail(w, r, s, err)
		return
	}
	d := &webhookData{pageData: base, W: h, ID: id}
	d.Title = "Webhook " + h.GetUrl()
	for _, t := range h.GetEventTypes() {
		d.Events = append(d.Events, eventLabel(t))
	}
	for _, x := range dl.GetDeliveries() {
		d.Deliveries = append(d.Deliveries, deliveryRow{D: x, ID: names.ID(x.GetName()), State: deliveryState(x.GetState()), Event: deliveryEvent(x.GetEventType()),
			Done: x.GetState() != platformv1.WebhookDeliveryState_WEBHOOK_DELIVERY_STATE_PENDING})
	}
	if t := dl.GetNextPageToken(); t != "" {
		d.Next = "?page_token=" + t
	}
	c.render(w, r, code, "webhook", d)
}

func (c *Console) webhookAction(w http.ResponseWriter, r *http.Request, s *sess) {
	ws, id := r.PathValue("ws"), r.PathValue("id")
	switch r.PathValue("action") {
	case "delete":
		if _, err := c.webhooks.DeleteWebhook(s.ctx, &platformv1.DeleteWebhookRequest{OrganizationId: s.OrganizationID, WorkspaceId: ws, WebhookId: id}); err != nil {
			c.grpcFail(w, r, s, err)
			return
		}
		http.Redirect(w, r, wsURL(ws, "webhooks")+"?done=delete", http.StatusSeeOther)
	case "redeliver":
		_, err := c.webhooks.RedeliverWebhookDelivery(s.ctx, &platformv1.RedeliverWebhookDeliveryRequest{OrganizationId: s.OrganizationID, WorkspaceId: ws,
			WebhookId: id, DeliveryId: r.PostFormValue("delivery")})
		if err != nil {
			if msg, ok := mendable(err, codes.FailedPrecondition, codes.NotFound); ok {
				c.showWebhook(w, r, s, http.StatusConflict, msg)
				return
			}
			c.grpcFail(w, r, s, err)
			return
		}
		http.Redirect(w, r, wsURL(ws, "webhooks", id)+"?done=redeliver", http.StatusSeeOther)
	default:
		c.fail(w, r, s, http.StatusNotFound, "No such action.")
	}
}
