-- +goose Up
-- Insights: workspace rollups in run_aggregates (issue 15). Beside the rows
-- per automation, every workspace has rows with automation_id = '' (no
-- automation has an empty id) counting all its runs, per hour and per UTC
-- day, kept by the same triggers in the same transaction. Queries that do
-- not split or filter by automation read them: a tenth of the rows with
-- ten automations a workspace.
INSERT INTO run_aggregates (organization_id, workspace_id, level, bucket, automation_id, runs, completed, guided_completed, failed, awaiting)
SELECT organization_id, workspace_id, level, bucket, '', sum(runs), sum(completed), sum(guided_completed), sum(failed), sum(awaiting)
FROM run_aggregates WHERE automation_id <> ''
GROUP BY organization_id, workspace_id, level, bucket;

DROP TRIGGER run_aggregates_insert;
DROP TRIGGER run_aggregates_update;
DROP TRIGGER run_aggregates_delete;

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

-- +goose Down
DROP TRIGGER run_aggregates_delete;
DROP TRIGGER run_aggregates_update;
DROP TRIGGER run_aggregates_insert;

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

DELETE FROM run_aggregates WHERE automation_id = '';
