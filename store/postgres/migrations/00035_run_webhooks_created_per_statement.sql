-- +goose Up
-- The webhook deliveries of a run's creation (migration 00019) are written
-- once per INSERT statement on runs, for all the runs it created (a batch
-- of creates is one statement), not by a PL/pgSQL call and an
-- INSERT … SELECT per run, made for every run whether or not its workspace
-- has a webhook. The rows are the same: one delivery per run and webhook
-- of its workspace that takes runs. State changes keep their row trigger,
-- now called only for a change (the function returned at once otherwise).
DROP TRIGGER runs_webhook ON runs;

-- +goose StatementBegin
CREATE FUNCTION prose_run_webhook_created() RETURNS trigger AS $$
BEGIN
    INSERT INTO webhook_deliveries (id, organization_id, workspace_id, webhook_id, event_type, automation_id, run_id, resource_state,
        next_attempt_time, create_time, update_time)
    SELECT gen_random_uuid()::text, w.organization_id, w.workspace_id, w.id, 'run.state_changed', c.automation_id, c.id, c.state,
        c.update_time, c.update_time, c.update_time
    FROM created c JOIN webhooks w ON w.organization_id = c.organization_id AND w.workspace_id = c.workspace_id AND w.runs;
    RETURN NULL;
END $$ LANGUAGE plpgsql;
-- +goose StatementEnd
CREATE TRIGGER runs_webhook_insert AFTER INSERT ON runs REFERENCING NEW TABLE AS created
FOR EACH STATEMENT EXECUTE FUNCTION prose_run_webhook_created();
CREATE TRIGGER runs_webhook_update AFTER UPDATE OF state ON runs FOR EACH ROW
WHEN (OLD.state IS DISTINCT FROM NEW.state) EXECUTE FUNCTION prose_run_webhook();

-- +goose Down
DROP TRIGGER runs_webhook_update ON runs;
DROP TRIGGER runs_webhook_insert ON runs;
DROP FUNCTION prose_run_webhook_created();
CREATE TRIGGER runs_webhook AFTER INSERT OR UPDATE OF state ON runs FOR EACH ROW EXECUTE FUNCTION prose_run_webhook();
