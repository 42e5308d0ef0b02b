-- +goose Up
-- The run's history (ListRunEvents), oldest first. One row per event:
--   kind 'state': every change of runs.state (and the state a run is created
--     in), written by the triggers below in the statement that changes it;
--     state, reason (the pause reason; a failure's description), ref (the
--     exception waited on; the failure's id) and loc are the run's columns then.
--   kind 'exception': an exception raised, resolved (reason: the resolver;
--     data: the guidance, prose.persist.v1.Guidance), archived or unarchived
--     (state: the exception's new state, ref: its id), written by the store's
--     exception transitions.
--   kind 'engine': what the run did, recorded by the engine and written with
--     the checkpoint, progress or outcome that persists it (data:
--     prose.persist.v1.RunEvent; node_kind: Say, FunctionCall, StartRun,
--     HistoryTruncated).
-- id orders the events: a writer inserts a run's events only while it holds
-- the run's row, so a run's ids grow in commit order.
-- runs.history_events counts the engine's events of the run (bounded by
-- `prose serve --max-history-events`).
CREATE TABLE run_events (
    id          INTEGER PRIMARY KEY,
    run_id      TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE DEFERRABLE INITIALLY DEFERRED,
    create_time INTEGER NOT NULL,
    kind        TEXT NOT NULL,
    node_kind   TEXT NOT NULL DEFAULT '',
    state       TEXT NOT NULL DEFAULT '',
    reason      TEXT NOT NULL DEFAULT '',
    ref         TEXT NOT NULL DEFAULT '',
    loc_start   INTEGER NOT NULL DEFAULT 0,
    loc_end     INTEGER NOT NULL DEFAULT 0,
    data        BLOB
) STRICT;
CREATE INDEX run_events_run ON run_events (run_id, id);
ALTER TABLE runs ADD COLUMN history_events INTEGER NOT NULL DEFAULT 0;

-- +goose StatementBegin
CREATE TRIGGER runs_history_insert AFTER INSERT ON runs
BEGIN
    INSERT INTO run_events (run_id, create_time, kind, state, reason, ref, loc_start, loc_end)
    VALUES (NEW.id, NEW.state_time, 'state', NEW.state,
        CASE WHEN NEW.state IN ('stopping', 'stopped') THEN NEW.reason WHEN NEW.state = 'failed' THEN NEW.description ELSE '' END,
        CASE NEW.state WHEN 'awaiting_guidance' THEN NEW.exception_id WHEN 'failed' THEN NEW.error_id ELSE '' END,
        CASE WHEN NEW.state IN ('awaiting_guidance', 'failed') THEN NEW.loc_start ELSE 0 END,
        CASE WHEN NEW.state IN ('awaiting_guidance', 'failed') THEN NEW.loc_end ELSE 0 END);
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER runs_history_update AFTER UPDATE OF state ON runs WHEN NEW.state <> OLD.state
BEGIN
    INSERT INTO run_events (run_id, create_time, kind, state, reason, ref, loc_start, loc_end)
    VALUES (NEW.id, NEW.state_time, 'state', NEW.state,
        CASE WHEN NEW.state IN ('stopping', 'stopped') THEN NEW.reason WHEN NEW.state = 'failed' THEN NEW.description ELSE '' END,
        CASE NEW.state WHEN 'awaiting_guidance' THEN NEW.exception_id WHEN 'failed' THEN NEW.error_id ELSE '' END,
        CASE WHEN NEW.state IN ('awaiting_guidance', 'failed') THEN NEW.loc_start ELSE 0 END,
        CASE WHEN NEW.state IN ('awaiting_guidance', 'failed') THEN NEW.loc_end ELSE 0 END);
END;
-- +goose StatementEnd

-- +goose Down
DROP TRIGGER runs_history_update;
DROP TRIGGER runs_history_insert;
ALTER TABLE runs DROP COLUMN history_events;
DROP TABLE run_events;
