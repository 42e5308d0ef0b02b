-- +goose Up
-- lost_leases counts the times in a row a run's worker lost its lease while
-- executing it (the worker died or hung) without the run making progress;
-- past the store's limit the run fails instead of going back to the queue
-- (a poison run). runs_leased_org counts the runs each organization holds,
-- for claiming runs fairly between organizations.
ALTER TABLE runs ADD COLUMN lost_leases INTEGER NOT NULL DEFAULT 0;
CREATE INDEX runs_leased_org ON runs (organization_id) WHERE state IN ('executing', 'stopping');

-- +goose Down
DROP INDEX runs_leased_org;
ALTER TABLE runs DROP COLUMN lost_leases;
