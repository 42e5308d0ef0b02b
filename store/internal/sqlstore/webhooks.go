package sqlstore

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/proserun/prose/store"
)

const webhookCols = `organization_id, workspace_id, id, display_name, url, runs, exceptions, secret, create_time`

func (db *DB) scanWebhook(s interface{ Scan(...any) error }) (store.Webhook, error) {
	var w store.Webhook
	err := s.Scan(&w.OrganizationID, &w.WorkspaceID, &w.ID, &w.DisplayName, &w.URL, &w.Runs, &w.Exceptions, &w.Secret, ts{&w.CreateTime})
	if err == nil {
		w.Secret, err = db.openSecret("webhooks", w.OrganizationID, w.WorkspaceID, w.ID, w.Secret)
	}
	return w, err
}

func webhookWhat(org, ws, id string) string {
	return fmt.Sprintf("webhook %q in workspace %q of organization %q", id, ws, org)
}

// CreateWebhook implements store.Webhooks.
func (db *DB) CreateWebhook(ctx context.Context, w store.Webhook) (store.Webhook, error) {
	if w.ID == "" {
		w.ID = store.NewID()
	}
	w.CreateTime = db.now()
	sealed, err := db.sealSecret("webhooks", w.OrganizationID, w.WorkspaceID, w.ID, w.Secret)
	if err != nil {
		return store.Webhook{}, err
	}
	err = db.tx(ctx, func(c conn) error {
		if err := c.workspaceExists(ctx, w.OrganizationID, w.WorkspaceID); err != nil {
			return err
		}
		var n int
		if err := c.queryRow(ctx, `SELECT COUNT(*) FROM webhooks WHERE organization_id = ? AND workspace_id = ?`,
			w.OrganizationID, w.WorkspaceID).Scan(&n); err != nil {
			return db.mapErr(err, "count webhooks")
		}
		if n >= store.MaxWebhooksPerWorkspace {
			return fmt.Errorf("workspace %q has %d webhooks, the limit is %d: %w", w.WorkspaceID, n,
				store.MaxWebhooksPerWorkspace, store.ErrResourceExhausted)
		}
		_, err := c.exec(ctx, `INSERT INTO webhooks (`+webhookCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			w.OrganizationID, w.WorkspaceID, w.ID, w.DisplayName, w.URL, w.Runs, w.Exceptions, sealed, w.CreateTime)
		return db.mapErr(err, "create "+webhookWhat(w.OrganizationID, w.WorkspaceID, w.ID))
	})
	return w, err
}

// GetWebhook implements store.Webhooks.
func (db *DB) GetWebhook(ctx context.Context, org, ws, id string) (store.Webhook, error) {
	w, err := db.scanWebhook(db.reader().queryRow(ctx, `SELECT `+webhookCols+` FROM webhooks WHERE organization_id = ? AND workspace_id = ? AND id = ?`, org, ws, id))
	return w, db.mapErr(err, webhookWhat(org, ws, id))
}

// ListWebhooks implements store.Webhooks.
func (db *DB) ListWebhooks(ctx context.Context, org, ws string) ([]store.Webhook, error) {
	what := fmt.Sprintf("webhooks of workspace %q in organization %q", ws, org)
	rows, err := db.reader().query(ctx, `SELECT `+webhookCols+` FROM webhooks WHERE organization_id = ? AND workspace_id = ?
		ORDER BY create_time DESC, id DESC`, org, ws)
	if err != nil {
		return nil, db.mapErr(err, what)
	}
	defer rows.Close()
	out := []store.Webhook{}
	for rows.Next() {
		w, err := db.scanWebhook(rows)
		if err != nil {
			return nil, db.mapErr(err, what)
		}
		out = append(out, w)
	}
	return out, db.mapErr(rows.Err(), what)
}

// DeleteWebhook implements store.Webhooks.
func (db *DB) DeleteWebhook(ctx context.Context, org, ws, id string) error {
	res, err := db.writer().exec(ctx, `DELETE FROM webhooks WHERE organization_id = ? AND workspace_id = ? AND id = ?`, org, ws, id)
	if err != nil {
		return db.mapErr(err, "delete "+webhookWhat(org, ws, id))
	}
	if rowsAffected(res) == 0 {
		return fmt.Errorf("%s: %w", webhookWhat(org, ws, id), store.ErrNotFound)
	}
	return nil
}

const deliveryCols = `d.id, d.organization_id, d.workspace_id, d.webhook_id, d.event_type, d.automation_id, d.run_id, d.exception_id,
	d.resource_state, d.state, d.attempts, d.last_status_code, d.last_error, d.next_attempt_time, d.create_time, d.update_time`

func scanDelivery(s interface{ Scan(...any) error }) (store.WebhookDelivery, error) {
	var d store.WebhookDelivery
	err := s.Scan(&d.ID, &d.OrganizationID, &d.WorkspaceID, &d.WebhookID, &d.EventType, &d.AutomationID, &d.RunID, &d.ExceptionID,
		&d.ResourceState, &d.State, &d.Attempts, &d.LastStatusCode, &d.LastError, ts{&d.NextAttemptTime}, ts{&d.CreateTime}, ts{&d.UpdateTime})
	return d, err
}

// ClaimWebhookDeliveries implements store.Webhooks.
func (db *DB) ClaimWebhookDeliveries(ctx context.Context, now time.Time, lease time.Duration, limit int) ([]store.WebhookDelivery, error) {
	if limit <= 0 {
		limit = 100
	}
	lock := ""
	if db.d == store.Postgres {
		lock = " FOR UPDATE SKIP LOCKED" // replicas claim different deliveries
	}
	const due = `state = 'pending' AND next_attempt_time <= ? AND (lease_until IS NULL OR lease_until <= ?)`
	rows, err := db.writer().query(ctx, `UPDATE webhook_deliveries SET lease_until = ?
		WHERE id IN (SELECT id FROM webhook_deliveries WHERE `+due+` ORDER BY next_attempt_time LIMIT ?`+lock+`) AND `+due+`
		RETURNING `+strings.ReplaceAll(deliveryCols, "d.", ""),
		now.Add(lease), now, now, limit, now, now)
	if err != nil {
		return nil, db.mapErr(err, "claim webhook deliveries")
	}
	defer rows.Close()
	var out []store.WebhookDelivery
	for rows.Next() {
		d, err := scanDelivery(rows)
		if err != nil {
			return nil, db.mapErr(err, "claim webhook deliveries")
		}
		out = append(out, d)
	}
	if err := rows.Err(); err != nil {
		return nil, db.mapErr(err, "claim webhook deliveries")
	}
	_ = rows.Close() // the writer may be one connection: free it before numbering
	return out, db.deliverySequences(ctx, out)
}

// deliverySequences sets the Sequence of each delivery: its rank among the
// deliveries of its run to its webhook, by (create_time, id) — the order
// they were written in, since a run's changes of state are one transaction
// after another. Rows are never rewritten with another time and go only
// with their webhook, so a delivery's rank is the same at every attempt
// (index webhook_deliveries_by_run).
func (db *DB) deliverySequences(ctx context.Context, ds []store.WebhookDelivery) error {
	for i, d := range ds {
		err := db.reader().queryRow(ctx, `SELECT count(*) FROM webhook_deliveries d JOIN webhook_deliveries s
			ON s.webhook_id = d.webhook_id AND s.run_id = d.run_id AND s.organization_id = d.organization_id AND s.workspace_id = d.workspace_id
			AND (s.create_time < d.create_time OR (s.create_time = d.create_time AND s.id <= d.id))
			WHERE d.id = ?`, d.ID).Scan(&ds[i].Sequence)
		if err != nil {
			return db.mapErr(err, "number webhook deliveries")
		}
	}
	return nil
}

// FinishWebhookAttempt implements store.Webhooks.
func (db *DB) FinishWebhookAttempt(ctx context.Context, id string, a store.WebhookAttempt) error {
	next := a.NextAttemptTime
	if next.IsZero() {
		next = db.now()
	}
	res, err := db.writer().exec(ctx, `UPDATE webhook_deliveries SET attempts = attempts + 1, state = ?, last_status_code = ?, last_error = ?,
		next_attempt_time = ?, lease_until = NULL, update_time = ? WHERE id = ?`, a.State, a.StatusCode, a.Error, next, db.now(), id)
	if err != nil {
		return db.mapErr(err, fmt.Sprintf("webhook delivery %q", id))
	}
	if rowsAffected(res) == 0 {
		return fmt.Errorf("webhook delivery %q: %w", id, store.ErrNotFound)
	}
	return nil
}

var deliverySort = map[string]sortCol{
	"create_time": {Field: "create_time", Col: "d.create_time", Kind: keyTime},
}

// ListWebhookDeliveries implements store.Webhooks.
func (db *DB) ListWebhookDeliveries(ctx context.Context, org, ws, webhook string, pageSize int, pageToken string) (store.Page[store.WebhookDelivery], error) {
	ks, err := newKeyset(store.OrderBy{{Field: "create_time", Desc: true}}, nil, deliverySort, "d.id")
	if err != nil {
		return store.Page[store.WebhookDelivery]{}, err
	}
	lq, err := newList(db.d, ks, nil, nil, pageToken, pageSize, `SELECT `+deliveryCols+` FROM webhook_deliveries d`,
		"webhook_deliveries", org, ws, webhook)
	if err != nil {
		return store.Page[store.WebhookDelivery]{}, err
	}
	lq.cond("d.organization_id = " + lq.a.Add(org))
	lq.cond("d.workspace_id = " + lq.a.Add(ws))
	lq.cond("d.webhook_id = " + lq.a.Add(webhook))
	return scanPage(ctx, db, lq, "list webhook deliveries", scanDelivery, func(d store.WebhookDelivery) []string {
		return []string{timeKey(d.CreateTime), d.ID}
	})
}

// RedeliverWebhookDelivery implements store.Webhooks: one guarded update
// (a delivery a dispatcher holds is pending, so it is never reset under
// its lease).
func (db *DB) RedeliverWebhookDelivery(ctx context.Context, org, ws, webhook, id string) (store.WebhookDelivery, error) {
	what := fmt.Sprintf("delivery %q of %s", id, webhookWhat(org, ws, webhook))
	now := db.now()
	var d store.WebhookDelivery
	err := db.tx(ctx, func(c conn) error {
		res, err := c.exec(ctx, `UPDATE webhook_deliveries SET state = ?, attempts = 0, next_attempt_time = ?, lease_until = NULL, update_time = ?
			WHERE organization_id = ? AND workspace_id = ? AND webhook_id = ? AND id = ? AND state <> ?`,
			store.DeliveryPending, now, now, org, ws, webhook, id, store.DeliveryPending)
		if err != nil {
			return db.mapErr(err, "redeliver "+what)
		}
		d, err = scanDelivery(c.queryRow(ctx, `SELECT `+deliveryCols+` FROM webhook_deliveries d
			WHERE d.organization_id = ? AND d.workspace_id = ? AND d.webhook_id = ? AND d.id = ?`, org, ws, webhook, id))
		if err != nil {
			return db.mapErr(err, what)
		}
		if rowsAffected(res) == 0 {
			return fmt.Errorf("%s is still pending (attempt %d): it is sent again on its own: %w", what, d.Attempts+1, store.ErrFailedPrecondition)
		}
		return nil
	})
	return d, err
}
