-- +goose Up
-- Insights (issue 15): the value saved, kept in the workspace rollups
-- (automation_id = '', migration 00030), and two coarser levels.
--
--   saved_usd   Σ over the bucket's completed runs of their automation's
--               estimated cost (exact decimal text, summed by
--               prose_dec_add/prose_dec_sum: store/sqlite/decimal.go)
--   saved_secs  Σ of their automation's estimated time saved
--
-- An estimate values every completed run of its automation, those before
-- it was set too (the reference's estimate is "per run", with no time of
-- its own): a change of estimate re-values the automation's completed runs
-- in the rollups (the triggers on automation_estimates below, in the
-- transaction of ConfigureAutomationEstimates). The rows per automation
-- keep counts only (their saved columns stay 0): an automation's value is
-- its estimate × its completed runs.
--
-- Levels 2 (7 UTC days) and 3 (56 UTC days), counted from the epoch like
-- the others, let a long range be read in few rows: a year is about 20
-- rows per automation instead of 365.
ALTER TABLE run_aggregates ADD COLUMN saved_usd TEXT NOT NULL DEFAULT '0';
ALTER TABLE run_aggregates ADD COLUMN saved_secs INTEGER NOT NULL DEFAULT 0;

INSERT INTO run_aggregate_levels VALUES (2, 604800000000), (3, 4838400000000);
INSERT INTO run_aggregates (organization_id, workspace_id, level, bucket, automation_id, runs, completed, guided_completed, failed, awaiting)
SELECT g.organization_id, g.workspace_id, l.level, (g.bucket * 86400000000 - (((g.bucket * 86400000000) % l.size) + l.size) % l.size) / l.size, g.automation_id,
    sum(g.runs), sum(g.completed), sum(g.guided_completed), sum(g.failed), sum(g.awaiting)
FROM run_aggregates g, run_aggregate_levels l WHERE g.level = 1 AND l.level >= 2
GROUP BY 1, 2, 3, 4, 5;

UPDATE run_aggregates SET
    saved_usd = coalesce((SELECT prose_dec_sum(e.cost_usd, a.completed) FROM run_aggregates a JOIN automation_estimates e
        ON e.organization_id = a.organization_id AND e.workspace_id = a.workspace_id AND e.automation_id = a.automation_id
        WHERE a.organization_id = run_aggregates.organization_id AND a.workspace_id = run_aggregates.workspace_id
            AND a.level = run_aggregates.level AND a.bucket = run_aggregates.bucket AND a.automation_id <> ''), '0'),
    saved_secs = coalesce((SELECT sum(e.time_saved_secs * a.completed) FROM run_aggregates a JOIN automation_estimates e
        ON e.organization_id = a.organization_id AND e.workspace_id = a.workspace_id AND e.automation_id = a.automation_id
        WHERE a.organization_id = run_aggregates.organization_id AND a.workspace_id = run_aggregates.workspace_id
            AND a.level = run_aggregates.level AND a.bucket = run_aggregates.bucket AND a.automation_id <> ''), 0)
WHERE automation_id = '';

DROP TRIGGER run_aggregates_insert;
DROP TRIGGER run_aggregates_update;
DROP TRIGGER run_aggregates_delete;

-- +goose StatementBegin
CREATE TRIGGER run_aggregates_insert AFTER INSERT ON runs BEGIN
    INSERT INTO run_aggregates (organization_id, workspace_id, level, bucket, automation_id, runs, completed, guided_completed, failed, awaiting, saved_usd, saved_secs)
    SELECT NEW.organization_id, NEW.workspace_id, l.level, (NEW.create_time - ((NEW.create_time % l.size) + l.size) % l.size) / l.size,
        a.id, 1, NEW.state = 'completed', NEW.state = 'completed' AND NEW.guided > 0, NEW.state = 'failed', NEW.state = 'awaiting_guidance',
        CASE WHEN a.id = '' AND NEW.state = 'completed' THEN coalesce(e.cost_usd, '0') ELSE '0' END,
        CASE WHEN a.id = '' AND NEW.state = 'completed' THEN coalesce(e.time_saved_secs, 0) ELSE 0 END
    FROM run_aggregate_levels l, (SELECT NEW.automation_id AS id UNION ALL SELECT '') a
    LEFT JOIN automation_estimates e ON e.organization_id = NEW.organization_id AND e.workspace_id = NEW.workspace_id AND e.automation_id = NEW.automation_id
    WHERE true
    ON CONFLICT (organization_id, workspace_id, level, bucket, automation_id) DO UPDATE SET
        runs = runs + excluded.runs, completed = completed + excluded.completed, guided_completed = guided_completed + excluded.guided_completed,
        failed = failed + excluded.failed, awaiting = awaiting + excluded.awaiting,
        saved_usd = prose_dec_add(saved_usd, excluded.saved_usd, 1), saved_secs = saved_secs + excluded.saved_secs;
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
        awaiting = awaiting + (NEW.state = 'awaiting_guidance') - (OLD.state = 'awaiting_guidance'),
        saved_usd = CASE WHEN automation_id = '' AND (NEW.state = 'completed') <> (OLD.state = 'completed')
            THEN prose_dec_add(saved_usd, (SELECT e.cost_usd FROM automation_estimates e WHERE e.organization_id = NEW.organization_id
                AND e.workspace_id = NEW.workspace_id AND e.automation_id = NEW.automation_id), (NEW.state = 'completed') - (OLD.state = 'completed'))
            ELSE saved_usd END,
        saved_secs = saved_secs + CASE WHEN automation_id = '' THEN ((NEW.state = 'completed') - (OLD.state = 'completed')) *
            coalesce((SELECT e.time_saved_secs FROM automation_estimates e WHERE e.organization_id = NEW.organization_id
                AND e.workspace_id = NEW.workspace_id AND e.automation_id = NEW.automation_id), 0) ELSE 0 END
    WHERE organization_id = NEW.organization_id AND workspace_id = NEW.workspace_id
        AND (level, bucket) IN (SELECT l.level, (NEW.create_time - ((NEW.create_time % l.size) + l.size) % l.size) / l.size FROM run_aggregate_levels l)
        AND automation_id IN (NEW.automation_id, '');
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER run_aggregates_delete AFTER DELETE ON runs BEGIN
    UPDATE run_aggregates SET runs = runs - 1, completed = completed - (OLD.state = 'completed'),
        guided_completed = guided_completed - (OLD.state = 'completed' AND OLD.guided > 0),
        failed = failed - (OLD.state = 'failed'), awaiting = awaiting - (OLD.state = 'awaiting_guidance'),
        saved_usd = CASE WHEN automation_id = '' AND OLD.state = 'completed'
            THEN prose_dec_add(saved_usd, (SELECT e.cost_usd FROM automation_estimates e WHERE e.organization_id = OLD.organization_id
                AND e.workspace_id = OLD.workspace_id AND e.automation_id = OLD.automation_id), -1)
            ELSE saved_usd END,
        saved_secs = saved_secs - CASE WHEN automation_id = '' AND OLD.state = 'completed' THEN
            coalesce((SELECT e.time_saved_secs FROM automation_estimates e WHERE e.organization_id = OLD.organization_id
                AND e.workspace_id = OLD.workspace_id AND e.automation_id = OLD.automation_id), 0) ELSE 0 END
    WHERE organization_id = OLD.organization_id AND workspace_id = OLD.workspace_id
        AND (level, bucket) IN (SELECT l.level, (OLD.create_time - ((OLD.create_time % l.size) + l.size) % l.size) / l.size FROM run_aggregate_levels l)
        AND automation_id IN (OLD.automation_id, '');
END;
-- +goose StatementEnd

-- An estimate set, changed or removed re-values its automation's completed
-- runs in the workspace's rollups: one pass over the rollup rows of the
-- workspace, each looking up the automation's row of its bucket.
-- +goose StatementBegin
CREATE TRIGGER automation_estimates_insert AFTER INSERT ON automation_estimates BEGIN
    UPDATE run_aggregates SET
        saved_usd = prose_dec_add(saved_usd, NEW.cost_usd, (SELECT a.completed FROM run_aggregates a WHERE a.organization_id = NEW.organization_id
            AND a.workspace_id = NEW.workspace_id AND a.level = run_aggregates.level AND a.bucket = run_aggregates.bucket AND a.automation_id = NEW.automation_id)),
        saved_secs = saved_secs + NEW.time_saved_secs * coalesce((SELECT a.completed FROM run_aggregates a WHERE a.organization_id = NEW.organization_id
            AND a.workspace_id = NEW.workspace_id AND a.level = run_aggregates.level AND a.bucket = run_aggregates.bucket AND a.automation_id = NEW.automation_id), 0)
    WHERE organization_id = NEW.organization_id AND workspace_id = NEW.workspace_id AND automation_id = '';
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER automation_estimates_update AFTER UPDATE ON automation_estimates
WHEN NEW.cost_usd IS NOT OLD.cost_usd OR NEW.time_saved_secs IS NOT OLD.time_saved_secs
BEGIN
    UPDATE run_aggregates SET
        saved_usd = prose_dec_add(prose_dec_add(saved_usd, NEW.cost_usd, (SELECT a.completed FROM run_aggregates a WHERE a.organization_id = NEW.organization_id
            AND a.workspace_id = NEW.workspace_id AND a.level = run_aggregates.level AND a.bucket = run_aggregates.bucket AND a.automation_id = NEW.automation_id)),
            OLD.cost_usd, -(SELECT a.completed FROM run_aggregates a WHERE a.organization_id = NEW.organization_id
            AND a.workspace_id = NEW.workspace_id AND a.level = run_aggregates.level AND a.bucket = run_aggregates.bucket AND a.automation_id = NEW.automation_id)),
        saved_secs = saved_secs + (NEW.time_saved_secs - OLD.time_saved_secs) * coalesce((SELECT a.completed FROM run_aggregates a WHERE a.organization_id = NEW.organization_id
            AND a.workspace_id = NEW.workspace_id AND a.level = run_aggregates.level AND a.bucket = run_aggregates.bucket AND a.automation_id = NEW.automation_id), 0)
    WHERE organization_id = NEW.organization_id AND workspace_id = NEW.workspace_id AND automation_id = '';
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER automation_estimates_delete AFTER DELETE ON automation_estimates BEGIN
    UPDATE run_aggregates SET
        saved_usd = prose_dec_add(saved_usd, OLD.cost_usd, -(SELECT a.completed FROM run_aggregates a WHERE a.organization_id = OLD.organization_id
            AND a.workspace_id = OLD.workspace_id AND a.level = run_aggregates.level AND a.bucket = run_aggregates.bucket AND a.automation_id = OLD.automation_id)),
        saved_secs = saved_secs - OLD.time_saved_secs * coalesce((SELECT a.completed FROM run_aggregates a WHERE a.organization_id = OLD.organization_id
            AND a.workspace_id = OLD.workspace_id AND a.level = run_aggregates.level AND a.bucket = run_aggregates.bucket AND a.automation_id = OLD.automation_id), 0)
    WHERE organization_id = OLD.organization_id AND workspace_id = OLD.workspace_id AND automation_id = '';
END;
-- +goose StatementEnd

-- +goose Down
DROP TRIGGER automation_estimates_delete;
DROP TRIGGER automation_estimates_update;
DROP TRIGGER automation_estimates_insert;
DROP TRIGGER run_aggregates_delete;
DROP TRIGGER run_aggregates_update;
DROP TRIGGER run_aggregates_insert;

-- +goose StatementBegin
CREATE TRIGGER run_aggregates_insert AFTER INSERT ON runs BEGIN
    INSERT INTO run_aggregates (organization_id, workspace_id, level, bucket, automation_id, runs, completed, guided_completed, failed, awaiting)
    SELECT NEW.organization_id, NEW.workspace_id, l.level, (NEW.create_time - ((NEW.create_time % l.size) + l.size) % l.size) / l.size,
        a.id, 1, NEW.state = 'completed', NEW.state = 'completed' AND NEW.guided > 0, NEW.state = 'failed', NEW.state = 'awaiting_guidance'
    FROM run_aggregate_levels l, (SELECT NEW.automation_id AS id UNION ALL SELECT '') a WHERE true
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
        AND automation_id IN (NEW.automation_id, '');
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER run_aggregates_delete AFTER DELETE ON runs BEGIN
    UPDATE run_aggregates SET runs = runs - 1, completed = completed - (OLD.state = 'completed'),
        guided_completed = guided_completed - (OLD.state = 'completed' AND OLD.guided > 0),
        failed = failed - (OLD.state = 'failed'), awaiting = awaiting - (OLD.state = 'awaiting_guidance')
    WHERE organization_id = OLD.organization_id AND workspace_id = OLD.workspace_id
        AND (level, bucket) IN (SELECT l.level, (OLD.create_time - ((OLD.create_time % l.size) + l.size) % l.size) / l.size FROM run_aggregate_levels l)
        AND automation_id IN (OLD.automation_id, '');
END;
-- +goose StatementEnd

DELETE FROM run_aggregates WHERE level >= 2;
DELETE FROM run_aggregate_levels WHERE level >= 2;
ALTER TABLE run_aggregates DROP COLUMN saved_secs;
ALTER TABLE run_aggregates DROP COLUMN saved_usd;
