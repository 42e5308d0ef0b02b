-- +goose Up
-- Insights: the workspaces' rollup rows (automation_id '', migration
-- 00030) indexed by bucket, with their counts and value (a covering
-- index: a read takes them from the index alone). In the primary key
-- (organization, workspace, level, bucket, automation) a bucket's rollup
-- row sits beside the rows of the workspace's automations, so a range of
-- rollups read every automation's rows too (11 entries a rollup row in
-- the insights benchmark, 10 automations a workspace); without the
-- counts in it, each entry was a seek into the table, which cost as much.
-- The store reads the rollups INDEXED BY it. Its cost is on the run path:
-- a change of a rollup row's counts rewrites its entry.
CREATE INDEX run_aggregates_rollups ON run_aggregates (organization_id, workspace_id, level, bucket,
    runs, completed, guided_completed, failed, awaiting, saved_usd, saved_secs) WHERE automation_id = '';

-- +goose Down
DROP INDEX run_aggregates_rollups;
