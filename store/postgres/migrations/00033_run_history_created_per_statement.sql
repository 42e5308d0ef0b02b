-- +goose Up
-- The state entry of a run's creation (the run's history, migration 00024)
-- is written once per INSERT statement on runs, for all the runs it
-- created (a batch of creates is one statement), not by a PL/pgSQL call
-- and an insert per run. Like row triggers, a statement trigger fires at
-- the end of its statement, so the entries the statement wrote itself
-- (what a run created completed said) still come before its state entry.
-- State changes keep their row trigger, now called only for a change.
DROP TRIGGER runs_history ON runs;

-- +goose StatementBegin
CREATE FUNCTION prose_run_history_created() RETURNS trigger AS $$
BEGIN
    INSERT INTO run_events (run_id, create_time, kind, state, reason, ref, loc_start, loc_end)
    SELECT c.id, c.state_time, 'state', c.state,
        CASE WHEN c.state IN ('stopping', 'stopped') THEN c.reason WHEN c.state = 'failed' THEN c.description ELSE '' END,
        CASE c.state WHEN 'awaiting_guidance' THEN c.exception_id WHEN 'failed' THEN c.error_id ELSE '' END,
        CASE WHEN c.state IN ('awaiting_guidance', 'failed') THEN c.loc_start ELSE 0 END,
        CASE WHEN c.state IN ('awaiting_guidance', 'failed') THEN c.loc_end ELSE 0 END
    FROM created c;
    RETURN NULL;
END $$ LANGUAGE plpgsql;
-- +goose StatementEnd
CREATE TRIGGER runs_history_insert AFTER INSERT ON runs REFERENCING NEW TABLE AS created
FOR EACH STATEMENT EXECUTE FUNCTION prose_run_history_created();
CREATE TRIGGER runs_history_update AFTER UPDATE OF state ON runs FOR EACH ROW
WHEN (OLD.state IS DISTINCT FROM NEW.state) EXECUTE FUNCTION prose_run_history();

-- +goose Down
DROP TRIGGER runs_history_update ON runs;
DROP TRIGGER runs_history_insert ON runs;
DROP FUNCTION prose_run_history_created();
CREATE TRIGGER runs_history AFTER INSERT OR UPDATE OF state ON runs FOR EACH ROW EXECUTE FUNCTION prose_run_history();
