-- +goose Up
-- Child runs: a run started by another run's `start a run` (see lang/README.md,
-- "Parallel runs"). parent_run is the id of the run that started it ('' for
-- every other run). A parent that waits for its children is in state
-- 'waiting': it holds no lease and is not claimed until its children settle
-- (completed or failed), when it goes back to pending.
ALTER TABLE runs ADD COLUMN parent_run TEXT NOT NULL DEFAULT '';
CREATE INDEX runs_children ON runs (parent_run, state) WHERE parent_run != '';
CREATE INDEX runs_waiting ON runs (id) WHERE state = 'waiting';

-- +goose Down
DROP INDEX runs_waiting;
DROP INDEX runs_children;
ALTER TABLE runs DROP COLUMN parent_run;
