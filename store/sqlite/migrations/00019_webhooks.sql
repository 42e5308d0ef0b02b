-- +goose Up
-- Outbound webhooks: a URL subscribed to the run (runs = 1) and exception
-- (exceptions = 1) events of a workspace, and its delivery log. Triggers
-- write one delivery per subscribed webhook in the transaction of the
-- change itself (an outbox): no event is lost, none is made up, and a run
-- never waits for a receiver. Timestamps are integer unix microseconds (UTC).
CREATE TABLE webhooks (
    organization_id TEXT NOT NULL,
    workspace_id    TEXT NOT NULL,
    id              TEXT NOT NULL,
    display_name    TEXT NOT NULL DEFAULT '',
    url             TEXT NOT NULL,
    runs            INTEGER NOT NULL DEFAULT 0,
    exceptions      INTEGER NOT NULL DEFAULT 0,
    secret          TEXT NOT NULL,
    create_time     INTEGER NOT NULL,
    PRIMARY KEY (organization_id, workspace_id, id),
    FOREIGN KEY (organization_id, workspace_id) REFERENCES workspaces (organization_id, id) ON DELETE CASCADE
) STRICT;

-- resource_state is the run's or exception's new state; state is the
-- delivery's (pending, succeeded, failed).
CREATE TABLE webhook_deliveries (
    id                TEXT PRIMARY KEY,
    organization_id   TEXT NOT NULL,
    workspace_id      TEXT NOT NULL,
    webhook_id        TEXT NOT NULL,
    event_type        TEXT NOT NULL,
    automation_id     TEXT NOT NULL,
    run_id            TEXT NOT NULL,
    exception_id      TEXT NOT NULL DEFAULT '',
    resource_state    TEXT NOT NULL,
    state             TEXT NOT NULL DEFAULT 'pending',
    attempts          INTEGER NOT NULL DEFAULT 0,
    last_status_code  INTEGER NOT NULL DEFAULT 0,
    last_error        TEXT NOT NULL DEFAULT '',
    next_attempt_time INTEGER NOT NULL,
    lease_until       INTEGER,
    create_time       INTEGER NOT NULL,
    update_time       INTEGER NOT NULL,
    FOREIGN KEY (organization_id, workspace_id, webhook_id) REFERENCES webhooks (organization_id, workspace_id, id) ON DELETE CASCADE
) STRICT;
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_time) WHERE state = 'pending';
CREATE INDEX webhook_deliveries_log ON webhook_deliveries (organization_id, workspace_id, webhook_id, create_time, id);

-- +goose StatementBegin
CREATE TRIGGER runs_webhook_insert AFTER INSERT ON runs
BEGIN
    INSERT INTO webhook_deliveries (id, organization_id, workspace_id, webhook_id, event_type, automation_id, run_id, resource_state,
        next_attempt_time, create_time, update_time)
    SELECT lower(hex(randomblob(16))), w.organization_id, w.workspace_id, w.id, 'run.state_changed', NEW.automation_id, NEW.id, NEW.state,
        NEW.update_time, NEW.update_time, NEW.update_time
    FROM webhooks w WHERE w.organization_id = NEW.organization_id AND w.workspace_id = NEW.workspace_id AND w.runs = 1;
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER runs_webhook_update AFTER UPDATE OF state ON runs WHEN NEW.state <> OLD.state
BEGIN
    INSERT INTO webhook_deliveries (id, organization_id, workspace_id, webhook_id, event_type, automation_id, run_id, resource_state,
        next_attempt_time, create_time, update_time)
    SELECT lower(hex(randomblob(16))), w.organization_id, w.workspace_id, w.id, 'run.state_changed', NEW.automation_id, NEW.id, NEW.state,
        NEW.update_time, NEW.update_time, NEW.update_time
    FROM webhooks w WHERE w.organization_id = NEW.organization_id AND w.workspace_id = NEW.workspace_id AND w.runs = 1;
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER exceptions_webhook_insert AFTER INSERT ON exceptions
BEGIN
    INSERT INTO webhook_deliveries (id, organization_id, workspace_id, webhook_id, event_type, automation_id, run_id, exception_id,
        resource_state, next_attempt_time, create_time, update_time)
    SELECT lower(hex(randomblob(16))), w.organization_id, w.workspace_id, w.id, 'exception.state_changed', NEW.automation_id, NEW.run_id, NEW.id,
        NEW.state, NEW.update_time, NEW.update_time, NEW.update_time
    FROM webhooks w WHERE w.organization_id = NEW.organization_id AND w.workspace_id = NEW.workspace_id AND w.exceptions = 1;
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER exceptions_webhook_update AFTER UPDATE OF state ON exceptions WHEN NEW.state <> OLD.state
BEGIN
    INSERT INTO webhook_deliveries (id, organization_id, workspace_id, webhook_id, event_type, automation_id, run_id, exception_id,
        resource_state, next_attempt_time, create_time, update_time)
    SELECT lower(hex(randomblob(16))), w.organization_id, w.workspace_id, w.id, 'exception.state_changed', NEW.automation_id, NEW.run_id, NEW.id,
        NEW.state, NEW.update_time, NEW.update_time, NEW.update_time
    FROM webhooks w WHERE w.organization_id = NEW.organization_id AND w.workspace_id = NEW.workspace_id AND w.exceptions = 1;
END;
-- +goose StatementEnd

-- +goose Down
DROP TRIGGER exceptions_webhook_update;
DROP TRIGGER exceptions_webhook_insert;
DROP TRIGGER runs_webhook_update;
DROP TRIGGER runs_webhook_insert;
DROP TABLE webhook_deliveries;
DROP TABLE webhooks;
