-- +goose Up
-- The webhook deliveries of a run's creation (migration 00019) are written
-- by the store with the runs of a create batch, in the same transaction
-- (store/internal/sqlstore/runs_sqlite.go, createRunsSQLite): the runs'
-- automations are read once per batch with whether their workspace has a
-- webhook taking runs, and the deliveries are written only for those, not
-- by a row trigger making an INSERT … SELECT per run, whether or not its
-- workspace has a webhook. The rows are the same: one delivery per run
-- and webhook of its workspace that takes runs, in the run's created
-- state. Changes of state keep their trigger (runs_webhook_update). Runs
-- are created only by the store's CreateRun(s) (as for the insights'
-- counts, migration 00033).
DROP TRIGGER runs_webhook_insert;

-- +goose Down
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
