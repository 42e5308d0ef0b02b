-- +goose Up
-- Insights: run counts per (workspace, automation, time bucket), kept by
-- triggers in the transaction of every insert, state change and delete of a
-- run (store/internal/sqlstore/insights.go reads them; nothing scans runs).
--
-- Every count is by the run's create_time: level 0 buckets are hours, 1
-- UTC days, counted from the unix epoch (bucket = floor(create_time /
-- size), create_time in microseconds). A range of time is read as whole
-- days inside it plus the hours at its edges, so a day in any time zone
-- whose offset is whole hours is exact. Rows whose counts fell to 0 stay.
--
--   runs              runs created
--   completed         of them, completed now
--   guided_completed  completed after human guidance (runs.guided > 0)
--   failed            failed now
--   awaiting          awaiting guidance now
ALTER TABLE runs ADD COLUMN guided INTEGER NOT NULL DEFAULT 0;

CREATE TABLE run_aggregates (
    organization_id  TEXT NOT NULL,
    workspace_id     TEXT NOT NULL,
    level            INTEGER NOT NULL,
    bucket           INTEGER NOT NULL,
    automation_id    TEXT NOT NULL,
    runs             INTEGER NOT NULL DEFAULT 0,
    completed        INTEGER NOT NULL DEFAULT 0,
    guided_completed INTEGER NOT NULL DEFAULT 0,
    failed           INTEGER NOT NULL DEFAULT 0,
    awaiting         INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (organization_id, workspace_id, level, bucket, automation_id)
) STRICT, WITHOUT ROWID;

CREATE TABLE run_aggregate_levels (
    level INTEGER PRIMARY KEY,
    size  INTEGER NOT NULL -- microseconds
) STRICT;
INSERT INTO run_aggregate_levels VALUES (0, 3600000000), (1, 86400000000);

-- Per-automation value estimates (ConfigureAutomationEstimates): cost_usd
-- is an exact decimal in its text form.
CREATE TABLE automation_estimates (
    organization_id TEXT NOT NULL,
    workspace_id    TEXT NOT NULL,
    automation_id   TEXT NOT NULL,
    cost_usd        TEXT NOT NULL,
    time_saved_secs INTEGER NOT NULL,
    update_time     INTEGER NOT NULL,
    PRIMARY KEY (organization_id, workspace_id, automation_id),
    FOREIGN KEY (organization_id, workspace_id, automation_id) REFERENCES automations (organization_id, workspace_id, id) ON DELETE CASCADE
) STRICT;

-- The runs that exist now: a run was guided when a person or an agent
-- resolved one of its exceptions (not a guide entry).
UPDATE runs SET guided = (SELECT count(*) FROM exceptions e
    WHERE e.run_id = runs.id AND e.state = 'RESOLVED' AND e.resolver NOT LIKE 'guideEntries/%')
WHERE id IN (SELECT run_id FROM exceptions WHERE state = 'RESOLVED');

INSERT INTO run_aggregates (organization_id, workspace_id, level, bucket, automation_id, runs, completed, guided_completed, failed, awaiting)
SELECT r.organization_id, r.workspace_id, l.level, (r.create_time - ((r.create_time % l.size) + l.size) % l.size) / l.size, r.automation_id,
    count(*), sum(r.state = 'completed'), sum(r.state = 'completed' AND r.guided > 0), sum(r.state = 'failed'), sum(r.state = 'awaiting_guidance')
FROM runs r, run_aggregate_levels l
GROUP BY 1, 2, 3, 4, 5;

-- +goose StatementBegin
CREATE TRIGGER run_aggregates_insert AFTER INSERT ON runs BEGIN
    INSERT INTO run_aggregates (organization_id, workspace_id, level, bucket, automation_id, runs, completed, guided_completed, failed, awaiting)
    SELECT NEW.organization_id, NEW.workspace_id, l.level, (NEW.create_time - ((NEW.create_time % l.size) + l.size) % l.size) / l.size,
        NEW.automation_id, 1, NEW.state = 'completed', NEW.state = 'completed' AND NEW.guided > 0, NEW.state = 'failed', NEW.state = 'awaiting_guidance'
    FROM run_aggregate_levels l WHERE true
    ON CONFLICT (organization_id, workspace_id, level, bucket, automation_id) DO UPDATE SET
        runs = runs + excluded.runs, completed = completed + excluded.completed, guided_completed = guided_completed + excluded.guided_completed,
        failed = failed + excluded.failed, awaiting = awaiting + excluded.awaiting;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER run_aggregates_update AFTER UPDATE OF state ON runs
WHEN OLD.state IS NOT NEW.state
    AND (OLD.state IN ('completed', 'failed', 'awaiting_guidance') OR NEW.state IN ('completed', 'failed', 'awaiting_guidance'))
BEGIN
    UPDATE run_aggregates SET
        completed = completed + (NEW.state = 'completed') - (OLD.state = 'completed'),
        guided_completed = guided_completed + (NEW.state = 'completed' AND NEW.guided > 0) - (OLD.state = 'completed' AND OLD.guided > 0),
        failed = failed + (NEW.state = 'failed') - (OLD.state = 'failed'),
        awaiting = awaiting + (NEW.state = 'awaiting_guidance') - (OLD.state = 'awaiting_guidance')
    WHERE organization_id = NEW.organization_id AND workspace_id = NEW.workspace_id
        AND (level, bucket) IN (SELECT l.level, (NEW.create_time - ((NEW.create_time % l.size) + l.size) % l.size) / l.size FROM run_aggregate_levels l)
        AND automation_id = NEW.automation_id;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER run_aggregates_delete AFTER DELETE ON runs BEGIN
    UPDATE run_aggregates SET runs = runs - 1, completed = completed - (OLD.state = 'completed'),
        guided_completed = guided_completed - (OLD.state = 'completed' AND OLD.guided > 0),
        failed = failed - (OLD.state = 'failed'), awaiting = awaiting - (OLD.state = 'awaiting_guidance')
    WHERE organization_id = OLD.organization_id AND workspace_id = OLD.workspace_id
        AND (level, bucket) IN (SELECT l.level, (OLD.create_time - ((OLD.create_time % l.size) + l.size) % l.size) / l.size FROM run_aggregate_levels l)
        AND automation_id = OLD.automation_id;
END;
-- +goose StatementEnd

-- +goose Down
DROP TRIGGER run_aggregates_delete;
DROP TRIGGER run_aggregates_update;
DROP TRIGGER run_aggregates_insert;
DROP TABLE automation_estimates;
DROP TABLE run_aggregate_levels;
DROP TABLE run_aggregates;
ALTER TABLE runs DROP COLUMN guided;
