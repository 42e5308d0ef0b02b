-- +goose Up
-- Run numbers: each run of an automation gets the next of 1, 2, 3, … (what
-- people call it: "Invoices #42"); run_counters holds the last number given
-- per automation, which the create statement raises once per automation
-- and batch (its row lock orders concurrent creates across replicas).
-- Existing runs are numbered in creation order.
ALTER TABLE runs ADD COLUMN number BIGINT NOT NULL DEFAULT 0;
UPDATE runs SET number = n.number FROM (
    SELECT id, row_number() OVER (PARTITION BY organization_id, workspace_id, automation_id ORDER BY create_time, id) AS number FROM runs
) AS n WHERE runs.id = n.id;
-- Unique where given (0: a row written without one, as tests write rows
-- of older versions).
CREATE UNIQUE INDEX runs_number ON runs (organization_id, workspace_id, automation_id, number) WHERE number > 0;

CREATE TABLE run_counters (
    organization_id TEXT COLLATE "C" NOT NULL,
    workspace_id    TEXT COLLATE "C" NOT NULL,
    automation_id   TEXT COLLATE "C" NOT NULL,
    last_number     BIGINT NOT NULL,
    PRIMARY KEY (organization_id, workspace_id, automation_id),
    FOREIGN KEY (organization_id, workspace_id, automation_id) REFERENCES automations (organization_id, workspace_id, id) ON DELETE CASCADE
);
INSERT INTO run_counters (organization_id, workspace_id, automation_id, last_number)
    SELECT organization_id, workspace_id, automation_id, max(number) FROM runs GROUP BY organization_id, workspace_id, automation_id;

-- +goose Down
DROP TABLE run_counters;
DROP INDEX runs_number;
ALTER TABLE runs DROP COLUMN number;
