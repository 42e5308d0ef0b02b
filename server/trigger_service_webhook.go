package server

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/proserun/prose/internal/logctx"

	rpccode "google.golang.org/genproto/googleapis/rpc/code"

	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/internal/codec/protovalue"
	"github.com/proserun/prose/internal/engine"
	"github.com/proserun/prose/internal/names"
	"github.com/proserun/prose/internal/webhooksig"
	"github.com/proserun/prose/server/transport"
	"github.com/proserun/prose/server/transport/limits"
	"github.com/proserun/prose/store"
)

// Inbound webhooks: POST /hooks/{organization}/{workspace}/{trigger
// instance}. No API key: the signature under the instance's secret, in
// X-Prose-Signature (internal/webhooksig: "t=<unix>,v1=<hex HMAC-SHA256 of
// t.delivery.body>"), is the credential.
const (
	// WebhookSignatureHeader carries the signature (webhooksig.Header).
	WebhookSignatureHeader = webhooksig.Header
	// WebhookDeliveryHeader names a delivery (at most 64 characters of
	// A-Z a-z 0-9 . _ : -); a redelivery with the same id starts no new
	// run. Without it the delivery is named by the SHA-256 of its body.
	WebhookDeliveryHeader = "X-Prose-Delivery"
	// MaxWebhookBody bounds a delivery's body (413 beyond).
	MaxWebhookBody = 1 << 20
)

var deliveryID = regexp.MustCompile(`^[A-Za-z0-9._:-]{1,64}$`)

// WebhookHandler serves inbound webhook deliveries: each starts one run of
// every automation of the instance (whose automation trigger is active),
// with inputs mapped from the JSON body.
type WebhookHandler struct {
	triggerStarter
	// now is the clock a signature's time is checked against.
	now func() time.Time
}

// triggerStarter starts the runs of a trigger instance's event.
type triggerStarter struct {
	// rates bounds each instance's events (nil: no bound).
	rates *triggerRates
	st    store.Store
	inv   interface {
		Invoke(ctx context.Context, req engine.InvokeRequest) (store.Run, bool, error)
	}
	logger *slog.Logger
}

// NewWebhookHandler returns the handler of /hooks/.
func NewWebhookHandler(st store.Store, eng *engine.Engine, logger *slog.Logger) *WebhookHandler {
	if logger == nil {
		logger = slog.Default()
	}
	return &WebhookHandler{triggerStarter: triggerStarter{st: st, inv: eng, logger: logger, rates: newTriggerRates(TriggerRate{})}, now: time.Now}
}

// SetRate sets the bound of each instance's deliveries (TriggerRate).
func (h *WebhookHandler) SetRate(r TriggerRate) { h.rates = newTriggerRates(r) }

type webhookRun struct {
	Automation string `json:"automation"`
	Run        string `json:"run,omitempty"`
	Created    bool   `json:"created"`
	Error      string `json:"error,omitempty"`
}

// webhookError writes the API's error shape (rpcStatus: code, message, and
// details holding an ErrorInfo whose reason is the code's name, as the
// gateway adds to an error without one).
func webhookError(w http.ResponseWriter, status int, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	info := map[string]any{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": rpccode.Code(code).String(), "domain": transport.ErrorDomain}
	_ = json.NewEncoder(w).Encode(map[string]any{"code": code, "message": msg, "details": []any{info}})
}

func (h *WebhookHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	parts := strings.Split(strings.TrimPrefix(r.URL.Path, "/hooks/"), "/")
	if len(parts) != 3 || parts[0] == "" || parts[1] == "" || parts[2] == "" {
		webhookError(w, http.StatusNotFound, 5, "not found: the webhook path is /hooks/{organization}/{workspace}/{trigger instance}")
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		webhookError(w, http.StatusMethodNotAllowed, 12, "a webhook accepts POST only")
		return
	}
	org, ws, id := parts[0], parts[1], parts[2]
	for _, p := range parts {
		// No organization, workspace or trigger instance is named with a NUL
		// or with bytes that are not UTF-8 (the API refuses such names), and
		// PostgreSQL refuses them in a query: such a path names nothing.
		if !limits.ValidText(p) {
			webhookError(w, http.StatusNotFound, 5, "not found: no webhook is named so")
			return
		}
	}
	r = r.WithContext(logctx.Set(r.Context(), logctx.Organization, org, logctx.Workspace, ws))
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxWebhookBody))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			webhookError(w, http.StatusRequestEntityTooLarge, 3, fmt.Sprintf("the body is larger than %d bytes", MaxWebhookBody))
			return
		}
		webhookError(w, http.StatusBadRequest, 3, "reading the body: "+err.Error())
		return
	}
	inst, err := h.st.GetTriggerInstance(r.Context(), org, ws, id)
	if err != nil || inst.BookName != WebhookBook {
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			h.logger.ErrorContext(r.Context(), "webhook", "err", err)
			webhookError(w, http.StatusServiceUnavailable, 14, "the store is unavailable; deliver again")
			return
		}
		webhookError(w, http.StatusNotFound, 5, "no such webhook")
		return
	}
	delivery := r.Header.Get(WebhookDeliveryHeader)
	if delivery != "" && !deliveryID.MatchString(delivery) {
		webhookError(w, http.StatusBadRequest, 3, WebhookDeliveryHeader+" must be 1-64 characters of A-Z a-z 0-9 . _ : -")
		return
	}
	if err := webhooksig.Verify(inst.Secret, r.Header.Get(WebhookSignatureHeader), delivery, body, h.now(), webhooksig.DefaultTolerance); err != nil {
		webhookError(w, http.StatusUnauthorized, 16, err.Error())
		return
	}
	if !h.rates.allow(inst) {
		w.Header().Set("Retry-After", "1")
		webhookError(w, http.StatusTooManyRequests, 8, fmt.Sprintf("this webhook receives at most %g deliveries a second (bursts of %d); deliver again in a moment",
			float64(h.rates.limit), h.rates.burst))
		return
	}
	if delivery == "" {
		sum := sha256.Sum256(body)
		delivery = hex.EncodeToString(sum[:])
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil || dec.More() {
		webhookError(w, http.StatusBadRequest, 3, "the body is not one JSON value")
		return
	}
	filter, err := instanceFilter(inst)
	if err != nil {
		h.logger.ErrorContext(r.Context(), "webhook", "err", err)
		webhookError(w, http.StatusServiceUnavailable, 14, "the trigger instance is unreadable; deliver again")
		return
	}
	if filter != nil && !filterMatches(filter, doc) {
		// Not an event the instance wants: accepted, nothing started.
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		_ = json.NewEncoder(w).Encode(map[string]any{"delivery": delivery, "runs": []webhookRun{}, "filtered": true})
		return
	}
	runs := make([]webhookRun, 0, len(inst.AutomationIDs))
	failed := false
	deactivated := 0
	for _, a := range inst.AutomationIDs {
		res := h.start(r.Context(), inst, a, "webhook:"+inst.ID+":"+a+":"+delivery, doc)
		if res.Error != "" && res.Run == "" {
			failed = failed || res.Error == errRetry
		}
		if res.Error == ErrAutomationDeactivated {
			deactivated++
		}
		runs = append(runs, res)
	}
	status := http.StatusAccepted
	switch {
	case failed:
		status = http.StatusServiceUnavailable // the sender retries; runs already started are found again
	case deactivated > 0 && deactivated == len(inst.AutomationIDs):
		status = http.StatusConflict // every automation is deactivated: nothing started, retrying does not help
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"delivery": delivery, "runs": runs})
}

const errRetry = "temporarily unavailable; deliver again"

// start starts the run of one automation for an event; requestID names
// the event (a second start of it returns the first run).
func (h *triggerStarter) start(ctx context.Context, inst store.TriggerInstance, automation, requestID string, doc any) webhookRun {
	out := webhookRun{Automation: names.Automation(inst.OrganizationID, inst.WorkspaceID, automation)}
	a, err := h.st.GetAutomation(ctx, inst.OrganizationID, inst.WorkspaceID, automation)
	if errors.Is(err, store.ErrNotFound) || err == nil && !a.DeleteTime.IsZero() {
		out.Error = "the automation does not exist"
		return out
	}
	if err != nil {
		h.logger.ErrorContext(ctx, "webhook", "err", err)
		out.Error = errRetry
		return out
	}
	if why := AutomationInactive(a); why != "" {
		out.Error = why
		return out
	}
	mapping := map[string]string(nil)
	at, err := h.st.GetAutomationTrigger(ctx, inst.OrganizationID, inst.WorkspaceID, automation, inst.ID)
	switch {
	case err == nil && !at.IsActive:
		out.Error = "the automation's trigger is not active"
		return out
	case err == nil:
		mapping = at.InputMapping
	case !errors.Is(err, store.ErrNotFound):
		h.logger.ErrorContext(ctx, "webhook", "err", err)
		out.Error = errRetry
		return out
	}
	inputs, err := mapInputs(doc, mapping)
	if err != nil {
		out.Error = err.Error()
		return out
	}
	stage := store.StageDraft
	if a.PublishedVersion > 0 {
		stage = store.StagePublished
	}
	r, created, err := h.inv.Invoke(ctx, engine.InvokeRequest{
		OrganizationID: inst.OrganizationID, WorkspaceID: inst.WorkspaceID, AutomationID: automation, Stage: stage, Inputs: inputs,
		RequestID: requestID,
		Invocation: &engine.Invocation{
			TriggerID: triggerInstanceName(inst.OrganizationID, inst.WorkspaceID, inst.ID), Source: engine.SourceTrigger,
		},
	})
	switch {
	case errors.Is(err, store.ErrNotFound), errors.Is(err, store.ErrInvalidArgument), errors.Is(err, store.ErrFailedPrecondition), errors.Is(err, store.ErrAlreadyExists):
		out.Error = withoutSentinel(err, store.ErrInvalidArgument)
		return out
	case err != nil:
		h.logger.ErrorContext(ctx, "webhook", "err", err)
		out.Error = errRetry
		return out
	}
	out.Run, out.Created = names.Run(inst.OrganizationID, inst.WorkspaceID, automation, r.ID), created
	return out
}

// mapInputs maps a JSON document to inputs: each input of mapping takes the
// value at its JSON Pointer (absent: the input is not given, and the run
// asks for it). No mapping: the members of a JSON object are the inputs.
func mapInputs(doc any, mapping map[string]string) (map[string]*platformv1.Value, error) {
	if len(mapping) == 0 {
		obj, ok := doc.(map[string]any)
		if !ok {
			return nil, nil
		}
		mapping = map[string]string{}
		for k := range obj {
			mapping[k] = "/" + strings.NewReplacer("~", "~0", "/", "~1").Replace(k)
		}
	}
	out := map[string]*platformv1.Value{}
	for name, ptr := range mapping {
		v, ok := jsonPointer(doc, ptr)
		if !ok {
			continue
		}
		raw, err := json.Marshal(v)
		if err != nil {
			return nil, err
		}
		pv, err := protovalue.FromPlainJSON(raw)
		if err != nil {
			return nil, fmt.Errorf("input %q: %w", name, err)
		}
		out[name] = pv
	}
	return out, nil
}

// jsonPointer resolves an RFC 6901 pointer ("" is the whole document).
func jsonPointer(doc any, ptr string) (any, bool) {
	if ptr == "" {
		return doc, true
	}
	if !strings.HasPrefix(ptr, "/") {
		return nil, false
	}
	cur := doc
	for _, tok := range strings.Split(ptr[1:], "/") {
		tok = strings.NewReplacer("~1", "/", "~0", "~").Replace(tok)
		switch c := cur.(type) {
		case map[string]any:
			v, ok := c[tok]
			if !ok {
				return nil, false
			}
			cur = v
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(c) {
				return nil, false
			}
			cur = c[i]
		default:
			return nil, false
		}
	}
	return cur, true
}

// SignWebhook returns the X-Prose-Signature value of a delivery of body
// with id delivery ("" when none is sent) signed at t under secret.
func SignWebhook(secret string, t time.Time, delivery string, body []byte) string {
	return webhooksig.Sign(secret, t, delivery, body)
}
