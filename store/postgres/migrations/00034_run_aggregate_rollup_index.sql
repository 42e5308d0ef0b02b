-- +goose Up
-- Insights: the workspaces' rollup rows (automation_id '', migration
-- 00030) indexed by bucket. In the primary key (organization, workspace,
-- level, bucket, automation) a bucket's rollup row sits beside the rows
-- of the workspace's automations, so a range of rollups read every
-- automation's rows too (11 entries a rollup row in the insights
-- benchmark, 10 automations a workspace). The index's key never changes
-- once a row exists and holds no counts (an update of the counts can stay
-- a HOT update): compactions and changes of estimates write it only for a
-- new bucket of a workspace, once an hour.
CREATE INDEX run_aggregates_rollups ON run_aggregates (organization_id, workspace_id, level, bucket) WHERE automation_id = '';

-- +goose Down
DROP INDEX run_aggregates_rollups;
