-- +goose Up
-- lost_leases counts the times in a row a run's worker lost its lease while
-- executing it (the worker died or hung) without the run making progress;
-- past the store's limit the run fails instead of going back to the queue
-- (a poison run).
ALTER TABLE runs ADD COLUMN lost_leases BIGINT NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE runs DROP COLUMN lost_leases;
