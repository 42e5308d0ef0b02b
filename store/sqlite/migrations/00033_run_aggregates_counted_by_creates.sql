-- +goose Up
-- Runs created are counted in run_aggregates by the store, once per
-- transaction of creates (store/internal/sqlstore/insights.go,
-- countCreatedRuns: one upsert per automation, level and workspace rollup
-- for the runs of a batch, which share their create time, the rollups
-- with the value saved of the runs created completed), not by a trigger
-- making eight upserts a run (migrations 00027, 00030, 00032). Changes of
-- state and deletions are still counted by their triggers. Runs are
-- created only by the store's CreateRun(s).
DROP TRIGGER run_aggregates_insert;

-- +goose Down
-- The insert trigger as migration 00032 left it (with the value saved).
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
