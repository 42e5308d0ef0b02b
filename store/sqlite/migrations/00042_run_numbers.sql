-- +goose Up
-- Run numbers: each run of an automation gets the next of 1, 2, 3, … (what
-- people call it: "Invoices #42"). SQLite's one writer gives a batch the
-- numbers after the largest of the automation (runs_number: one probe;
-- runs are deleted only with their automation); PostgreSQL keeps a
-- counter row per automation instead. Existing runs are numbered in
-- creation order.
ALTER TABLE runs ADD COLUMN number INTEGER NOT NULL DEFAULT 0;
UPDATE runs SET number = n.number FROM (
    SELECT id, row_number() OVER (PARTITION BY organization_id, workspace_id, automation_id ORDER BY create_time, id) AS number FROM runs
) AS n WHERE runs.id = n.id;
-- Unique where given (0: a row written without one, as tests write rows
-- of older versions).
CREATE UNIQUE INDEX runs_number ON runs (organization_id, workspace_id, automation_id, number) WHERE number > 0;

-- +goose Down
DROP INDEX runs_number;
ALTER TABLE runs DROP COLUMN number;
