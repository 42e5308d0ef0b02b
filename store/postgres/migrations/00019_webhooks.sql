-- +goose Up
-- Outbound webhooks: a URL subscribed to the run (runs) and exception
-- (exceptions) events of a workspace, and its delivery log. Triggers write
-- one delivery per subscribed webhook in the transaction of the change
-- itself (an outbox): no event is lost, none is made up, and a run never
-- waits for a receiver.
CREATE TABLE webhooks (
    organization_id TEXT COLLATE "C" NOT NULL,
    workspace_id    TEXT COLLATE "C" NOT NULL,
    id              TEXT COLLATE "C" NOT NULL,
    display_name    TEXT NOT NULL DEFAULT '',
    url             TEXT NOT NULL,
    runs            BOOLEAN NOT NULL DEFAULT false,
    exceptions      BOOLEAN NOT NULL DEFAULT false,
    secret          TEXT NOT NULL,
    create_time     TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (organization_id, workspace_id, id),
    FOREIGN KEY (organization_id, workspace_id) REFERENCES workspaces (organization_id, id) ON DELETE CASCADE
);

CREATE TABLE webhook_deliveries (
    id                TEXT COLLATE "C" PRIMARY KEY,
    organization_id   TEXT COLLATE "C" NOT NULL,
    workspace_id      TEXT COLLATE "C" NOT NULL,
    webhook_id        TEXT COLLATE "C" NOT NULL,
    event_type        TEXT NOT NULL,
    automation_id     TEXT COLLATE "C" NOT NULL,
    run_id            TEXT COLLATE "C" NOT NULL,
    exception_id      TEXT COLLATE "C" NOT NULL DEFAULT '',
    resource_state    TEXT NOT NULL,
    state             TEXT NOT NULL DEFAULT 'pending',
    attempts          INTEGER NOT NULL DEFAULT 0,
    last_status_code  INTEGER NOT NULL DEFAULT 0,
    last_error        TEXT NOT NULL DEFAULT '',
    next_attempt_time TIMESTAMPTZ NOT NULL,
    lease_until       TIMESTAMPTZ,
    create_time       TIMESTAMPTZ NOT NULL,
    update_time       TIMESTAMPTZ NOT NULL,
    FOREIGN KEY (organization_id, workspace_id, webhook_id) REFERENCES webhooks (organization_id, workspace_id, id) ON DELETE CASCADE
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_time) WHERE state = 'pending';
CREATE INDEX webhook_deliveries_log ON webhook_deliveries (organization_id, workspace_id, webhook_id, create_time, id);

-- +goose StatementBegin
CREATE FUNCTION prose_run_webhook() RETURNS trigger AS $$
BEGIN
    IF TG_OP = 'UPDATE' AND NEW.state = OLD.state THEN
        RETURN NULL;
    END IF;
    INSERT INTO webhook_deliveries (id, organization_id, workspace_id, webhook_id, event_type, automation_id, run_id, resource_state,
        next_attempt_time, create_time, update_time)
    SELECT gen_random_uuid()::text, w.organization_id, w.workspace_id, w.id, 'run.state_changed', NEW.automation_id, NEW.id, NEW.state,
        NEW.update_time, NEW.update_time, NEW.update_time
    FROM webhooks w WHERE w.organization_id = NEW.organization_id AND w.workspace_id = NEW.workspace_id AND w.runs;
    RETURN NULL;
END $$ LANGUAGE plpgsql;
-- +goose StatementEnd
CREATE TRIGGER runs_webhook AFTER INSERT OR UPDATE OF state ON runs FOR EACH ROW EXECUTE FUNCTION prose_run_webhook();

-- +goose StatementBegin
CREATE FUNCTION prose_exception_webhook() RETURNS trigger AS $$
BEGIN
    IF TG_OP = 'UPDATE' AND NEW.state = OLD.state THEN
        RETURN NULL;
    END IF;
    INSERT INTO webhook_deliveries (id, organization_id, workspace_id, webhook_id, event_type, automation_id, run_id, exception_id,
        resource_state, next_attempt_time, create_time, update_time)
    SELECT gen_random_uuid()::text, w.organization_id, w.workspace_id, w.id, 'exception.state_changed', NEW.automation_id, NEW.run_id, NEW.id,
        NEW.state, NEW.update_time, NEW.update_time, NEW.update_time
    FROM webhooks w WHERE w.organization_id = NEW.organization_id AND w.workspace_id = NEW.workspace_id AND w.exceptions;
    RETURN NULL;
END $$ LANGUAGE plpgsql;
-- +goose StatementEnd
CREATE TRIGGER exceptions_webhook AFTER INSERT OR UPDATE OF state ON exceptions FOR EACH ROW EXECUTE FUNCTION prose_exception_webhook();

-- +goose Down
DROP TRIGGER exceptions_webhook ON exceptions;
DROP FUNCTION prose_exception_webhook();
DROP TRIGGER runs_webhook ON runs;
DROP FUNCTION prose_run_webhook();
DROP TABLE webhook_deliveries;
DROP TABLE webhooks;
