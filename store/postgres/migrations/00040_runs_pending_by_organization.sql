-- +goose Up
-- The pending runs of each organization: a run is created already executed
-- (or leased to its creator) only while no run of its organization waits
-- in the queue (store.Run.State), looked up through this index however
-- long the other organizations' queues are (docs/fairness.md).
CREATE INDEX runs_pending_by_org ON runs (organization_id) WHERE state = 'pending';

-- +goose Down
DROP INDEX runs_pending_by_org;
