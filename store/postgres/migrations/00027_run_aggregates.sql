-- +goose Up
-- Insights: run counts per (workspace, automation, time bucket), kept by
-- triggers in the transaction of every insert, state change and delete of a
-- run (store/internal/sqlstore/insights.go reads them; nothing scans runs).
--
-- Every count is by the run's create_time: level 0 buckets are hours, 1
-- UTC days, counted from the unix epoch (bucket = floor(unix seconds /
-- size)). A range of time is read as whole days inside it plus the hours
-- at its edges, so a day in any time zone whose offset is whole hours is
-- exact. Rows whose counts fell to 0 stay (they add nothing).
--
--   runs              runs created
--   completed         of them, completed now
--   guided_completed  completed after human guidance (runs.guided > 0)
--   failed            failed now
--   awaiting          awaiting guidance now
--
-- The triggers only append to run_aggregate_deltas (no key, so concurrent
-- transactions never wait for each other on a counter row: an upsert of
-- one hot row held its lock until commit and serialised every create);
-- run_aggregates_compact() folds the deltas into run_aggregates (the
-- store calls it once a second with its recovery of expired leases), and
-- reads add the deltas not folded yet, in the same snapshot.
ALTER TABLE runs ADD COLUMN guided INTEGER NOT NULL DEFAULT 0;

CREATE TABLE run_aggregates (
    organization_id  TEXT COLLATE "C" NOT NULL,
    workspace_id     TEXT COLLATE "C" NOT NULL,
    level            SMALLINT NOT NULL,
    bucket           BIGINT NOT NULL,
    automation_id    TEXT COLLATE "C" NOT NULL,
    runs             BIGINT NOT NULL DEFAULT 0,
    completed        BIGINT NOT NULL DEFAULT 0,
    guided_completed BIGINT NOT NULL DEFAULT 0,
    failed           BIGINT NOT NULL DEFAULT 0,
    awaiting         BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (organization_id, workspace_id, level, bucket, automation_id)
);

CREATE TABLE run_aggregate_deltas (
    organization_id  TEXT COLLATE "C" NOT NULL,
    workspace_id     TEXT COLLATE "C" NOT NULL,
    level            SMALLINT NOT NULL,
    bucket           BIGINT NOT NULL,
    automation_id    TEXT COLLATE "C" NOT NULL,
    runs             BIGINT NOT NULL,
    completed        BIGINT NOT NULL,
    guided_completed BIGINT NOT NULL,
    failed           BIGINT NOT NULL,
    awaiting         BIGINT NOT NULL
);
CREATE INDEX run_aggregate_deltas_bucket ON run_aggregate_deltas (organization_id, workspace_id, level, bucket);

-- Per-automation value estimates (ConfigureAutomationEstimates): cost_usd
-- is an exact decimal in its text form.
CREATE TABLE automation_estimates (
    organization_id TEXT COLLATE "C" NOT NULL,
    workspace_id    TEXT COLLATE "C" NOT NULL,
    automation_id   TEXT COLLATE "C" NOT NULL,
    cost_usd        TEXT COLLATE "C" NOT NULL,
    time_saved_secs INTEGER NOT NULL,
    update_time     TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (organization_id, workspace_id, automation_id),
    FOREIGN KEY (organization_id, workspace_id, automation_id) REFERENCES automations (organization_id, workspace_id, id) ON DELETE CASCADE
);

-- A run's contribution, by its state and guidance.
-- +goose StatementBegin
CREATE FUNCTION run_aggregates_add(o TEXT, w TEXT, a TEXT, ct TIMESTAMPTZ, dr BIGINT, dc BIGINT, dg BIGINT, df BIGINT, da BIGINT) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    s BIGINT := floor(extract(epoch FROM ct))::BIGINT;
BEGIN
    INSERT INTO run_aggregate_deltas (organization_id, workspace_id, level, bucket, automation_id, runs, completed, guided_completed, failed, awaiting)
    VALUES (o, w, 0, floor(s / 3600.0)::BIGINT, a, dr, dc, dg, df, da),
           (o, w, 1, floor(s / 86400.0)::BIGINT, a, dr, dc, dg, df, da);
END;
$$;
-- +goose StatementEnd

-- A state change moves the run's contribution (only changes into or out of
-- completed, failed and awaiting_guidance fire it: see the WHEN below).
-- +goose StatementBegin
CREATE FUNCTION run_aggregates_update() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM run_aggregates_add(NEW.organization_id, NEW.workspace_id, NEW.automation_id, NEW.create_time, 0,
        (NEW.state = 'completed')::INT - (OLD.state = 'completed')::INT,
        (NEW.state = 'completed' AND NEW.guided > 0)::INT - (OLD.state = 'completed' AND OLD.guided > 0)::INT,
        (NEW.state = 'failed')::INT - (OLD.state = 'failed')::INT,
        (NEW.state = 'awaiting_guidance')::INT - (OLD.state = 'awaiting_guidance')::INT);
    RETURN NULL;
END;
$$;
-- +goose StatementEnd

CREATE TRIGGER run_aggregates_update AFTER UPDATE OF state ON runs FOR EACH ROW
WHEN (OLD.state IS DISTINCT FROM NEW.state
    AND (OLD.state IN ('completed', 'failed', 'awaiting_guidance') OR NEW.state IN ('completed', 'failed', 'awaiting_guidance')))
EXECUTE FUNCTION run_aggregates_update();

-- Inserts and deletes are counted once per statement (a batch of created
-- runs is one grouped insert).
-- +goose StatementBegin
CREATE FUNCTION run_aggregates_rows() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    k BIGINT := CASE WHEN TG_OP = 'INSERT' THEN 1 ELSE -1 END;
BEGIN
    INSERT INTO run_aggregate_deltas (organization_id, workspace_id, level, bucket, automation_id, runs, completed, guided_completed, failed, awaiting)
    SELECT r.organization_id, r.workspace_id, l.level, floor(floor(extract(epoch FROM r.create_time)) / l.size)::BIGINT, r.automation_id,
        k * count(*), k * count(*) FILTER (WHERE r.state = 'completed'), k * count(*) FILTER (WHERE r.state = 'completed' AND r.guided > 0),
        k * count(*) FILTER (WHERE r.state = 'failed'), k * count(*) FILTER (WHERE r.state = 'awaiting_guidance')
    FROM changed r, (VALUES (0, 3600.0), (1, 86400.0)) AS l (level, size)
    GROUP BY 1, 2, 3, 4, 5;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd

CREATE TRIGGER run_aggregates_insert AFTER INSERT ON runs REFERENCING NEW TABLE AS changed
FOR EACH STATEMENT EXECUTE FUNCTION run_aggregates_rows();
CREATE TRIGGER run_aggregates_delete AFTER DELETE ON runs REFERENCING OLD TABLE AS changed
FOR EACH STATEMENT EXECUTE FUNCTION run_aggregates_rows();

-- Folds the deltas into run_aggregates, one compaction at a time (another
-- one running: nothing to do); returns the deltas folded.
-- +goose StatementBegin
CREATE FUNCTION run_aggregates_compact() RETURNS BIGINT
LANGUAGE plpgsql AS $$
DECLARE
    n BIGINT;
BEGIN
    IF NOT pg_try_advisory_xact_lock(hashtext('prose.run_aggregates_compact')) THEN
        RETURN 0;
    END IF;
    WITH d AS (DELETE FROM run_aggregate_deltas RETURNING *), f AS (
        INSERT INTO run_aggregates AS g (organization_id, workspace_id, level, bucket, automation_id, runs, completed, guided_completed, failed, awaiting)
        SELECT organization_id, workspace_id, level, bucket, automation_id, sum(runs), sum(completed), sum(guided_completed), sum(failed), sum(awaiting)
        FROM d GROUP BY 1, 2, 3, 4, 5
        ON CONFLICT (organization_id, workspace_id, level, bucket, automation_id) DO UPDATE SET
            runs = g.runs + EXCLUDED.runs, completed = g.completed + EXCLUDED.completed,
            guided_completed = g.guided_completed + EXCLUDED.guided_completed,
            failed = g.failed + EXCLUDED.failed, awaiting = g.awaiting + EXCLUDED.awaiting
        RETURNING 1)
    SELECT count(*) INTO n FROM f;
    RETURN n;
END;
$$;
-- +goose StatementEnd

-- The runs that exist now: a run was guided when a person or an agent
-- resolved one of its exceptions (not a guide entry).
UPDATE runs r SET guided = x.n
FROM (SELECT run_id, count(*) AS n FROM exceptions WHERE state = 'RESOLVED' AND resolver NOT LIKE 'guideEntries/%' GROUP BY run_id) x
WHERE r.id = x.run_id;
INSERT INTO run_aggregates (organization_id, workspace_id, level, bucket, automation_id, runs, completed, guided_completed, failed, awaiting)
SELECT r.organization_id, r.workspace_id, l.level, floor(floor(extract(epoch FROM r.create_time)) / l.size)::BIGINT, r.automation_id,
    count(*), count(*) FILTER (WHERE r.state = 'completed'), count(*) FILTER (WHERE r.state = 'completed' AND r.guided > 0),
    count(*) FILTER (WHERE r.state = 'failed'), count(*) FILTER (WHERE r.state = 'awaiting_guidance')
FROM runs r, (VALUES (0, 3600.0), (1, 86400.0)) AS l (level, size)
GROUP BY 1, 2, 3, 4, 5;

-- +goose Down
DROP FUNCTION run_aggregates_compact();
DROP TRIGGER run_aggregates_delete ON runs;
DROP TRIGGER run_aggregates_insert ON runs;
DROP TRIGGER run_aggregates_update ON runs;
DROP FUNCTION run_aggregates_rows();
DROP FUNCTION run_aggregates_update();
DROP FUNCTION run_aggregates_add(TEXT, TEXT, TEXT, TIMESTAMPTZ, BIGINT, BIGINT, BIGINT, BIGINT, BIGINT);
DROP TABLE automation_estimates;
DROP TABLE run_aggregate_deltas;
DROP TABLE run_aggregates;
ALTER TABLE runs DROP COLUMN guided;
