-- +goose Up
-- The offset of an event in its thread's stream of changes: every create
-- and update gives the event the thread's next offset, so a stream reads
-- just what changed after the last offset it sent (and a client resumes
-- from it). Unique, so concurrent writers of a thread cannot share one.
ALTER TABLE events ADD COLUMN change_offset INTEGER NOT NULL DEFAULT 0;
UPDATE events SET change_offset = seq;
CREATE UNIQUE INDEX events_change_offset ON events (run_id, agent_id, change_offset);

-- +goose Down
DROP INDEX events_change_offset;
ALTER TABLE events DROP COLUMN change_offset;
