-- +goose Up
-- Insights on PostgreSQL (issue 13): the triggers append one delta a
-- workspace, automation and hour, and the fold (run_aggregates_compact)
-- derives the other levels (UTC days, 7 and 56 days) and the workspace's
-- rollups (automation_id '') when it folds them. Each created batch was
-- 8 delta rows a (workspace, automation, hour) group (4 levels × the row
-- of the automation and the rollup), built from a join of every created
-- run with the 8 combinations (512 rows aggregated for 64 runs), and 8
-- index entries; now 1 row and 1 entry, from the runs grouped first.
--
-- A delta row (bucket: the hour from the epoch, as level 0 counts it):
--   automation_id <> ''  its counts go to the automation's rows and to the
--                        workspace's rollups, at every level; its saved_usd
--                        and saved_secs (the value of its completions, by
--                        the automation's estimate) to the rollups only
--                        (the rows per automation keep counts only)
--   automation_id = ''   a change of estimate (automation_estimates_value):
--                        its value goes to the rollups only, every level
-- Reads add the deltas not folded yet the same way (sqlstore.SumRunAggregates).
-- The deltas stay an ordinary (logged) table: they are acknowledged runs.
--
-- The table is made again without the column level (every delta is an
-- hour): a transaction of an older server that appends a delta of another
-- level fails instead of being folded as an hour. The deltas are folded
-- first, in this transaction, with the compaction's lock held (as 00032)
-- and the table's lock (no delta appended meanwhile).
SELECT pg_advisory_xact_lock(hashtext('prose.run_aggregates_compact'));
LOCK TABLE run_aggregate_deltas IN EXCLUSIVE MODE;
SELECT run_aggregates_compact();
DROP TABLE run_aggregate_deltas;
CREATE TABLE run_aggregate_deltas (
    organization_id  TEXT COLLATE "C" NOT NULL,
    workspace_id     TEXT COLLATE "C" NOT NULL,
    bucket           BIGINT NOT NULL,
    automation_id    TEXT COLLATE "C" NOT NULL,
    runs             BIGINT NOT NULL,
    completed        BIGINT NOT NULL,
    guided_completed BIGINT NOT NULL,
    failed           BIGINT NOT NULL,
    awaiting         BIGINT NOT NULL,
    saved_usd        NUMERIC NOT NULL DEFAULT 0,
    saved_secs       BIGINT NOT NULL DEFAULT 0
);
CREATE INDEX run_aggregate_deltas_bucket ON run_aggregate_deltas (organization_id, workspace_id, bucket);

-- A run's state changed (the row trigger run_aggregates_update): one row.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION run_aggregates_add(o TEXT, w TEXT, a TEXT, ct TIMESTAMPTZ, dr BIGINT, dc BIGINT, dg BIGINT, df BIGINT, da BIGINT) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    cost NUMERIC := 0;
    secs BIGINT := 0;
BEGIN
    IF dc <> 0 THEN
        PERFORM pg_advisory_xact_lock_shared(run_aggregates_value_key(o, w));
        SELECT e.cost_usd::NUMERIC, e.time_saved_secs INTO cost, secs FROM automation_estimates e
        WHERE e.organization_id = o AND e.workspace_id = w AND e.automation_id = a;
    END IF;
    INSERT INTO run_aggregate_deltas (organization_id, workspace_id, bucket, automation_id, runs, completed, guided_completed, failed, awaiting, saved_usd, saved_secs)
    VALUES (o, w, floor(floor(extract(epoch FROM ct)) / 3600.0)::BIGINT, a, dr, dc, dg, df, da, dc * coalesce(cost, 0), dc * coalesce(secs, 0));
END;
$$;
-- +goose StatementEnd

-- Runs inserted or deleted (a statement): one row a workspace, automation
-- and hour, the runs grouped before their estimate is joined.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION run_aggregates_rows() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    k BIGINT := CASE WHEN TG_OP = 'INSERT' THEN 1 ELSE -1 END;
BEGIN
    PERFORM pg_advisory_xact_lock_shared(run_aggregates_value_key(w.organization_id, w.workspace_id))
    FROM (SELECT DISTINCT organization_id, workspace_id FROM changed WHERE state = 'completed' ORDER BY 1, 2) w;
    INSERT INTO run_aggregate_deltas (organization_id, workspace_id, bucket, automation_id, runs, completed, guided_completed, failed, awaiting, saved_usd, saved_secs)
    SELECT c.organization_id, c.workspace_id, c.bucket, c.automation_id, k * c.runs, k * c.completed, k * c.guided, k * c.failed, k * c.awaiting,
        coalesce(k * nullif(c.completed, 0) * e.cost_usd::NUMERIC, 0), coalesce(k * nullif(c.completed, 0) * e.time_saved_secs, 0)
    FROM (SELECT r.organization_id, r.workspace_id, floor(floor(extract(epoch FROM r.create_time)) / 3600.0)::BIGINT AS bucket, r.automation_id,
            count(*) AS runs, count(*) FILTER (WHERE r.state = 'completed') AS completed, count(*) FILTER (WHERE r.state = 'completed' AND r.guided > 0) AS guided,
            count(*) FILTER (WHERE r.state = 'failed') AS failed, count(*) FILTER (WHERE r.state = 'awaiting_guidance') AS awaiting
        FROM changed r GROUP BY 1, 2, 3, 4) c
    LEFT JOIN automation_estimates e ON e.organization_id = c.organization_id AND e.workspace_id = c.workspace_id AND e.automation_id = c.automation_id;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd

-- The fold: the deltas summed per hour, then spread over the levels and
-- the rollups.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION run_aggregates_compact() RETURNS BIGINT
LANGUAGE plpgsql AS $$
DECLARE
    n BIGINT;
BEGIN
    IF NOT pg_try_advisory_xact_lock(hashtext('prose.run_aggregates_compact')) THEN
        RETURN 0;
    END IF;
    WITH d AS (DELETE FROM run_aggregate_deltas RETURNING *), h AS (
        SELECT organization_id, workspace_id, bucket, automation_id, sum(runs) AS runs, sum(completed) AS completed, sum(guided_completed) AS guided,
            sum(failed) AS failed, sum(awaiting) AS awaiting, sum(saved_usd) AS usd, sum(saved_secs) AS secs
        FROM d GROUP BY 1, 2, 3, 4), f AS (
        INSERT INTO run_aggregates AS g (organization_id, workspace_id, level, bucket, automation_id, runs, completed, guided_completed, failed, awaiting, saved_usd, saved_secs)
        SELECT h.organization_id, h.workspace_id, l.level, floor(h.bucket / l.hours)::BIGINT, CASE WHEN x.rollup THEN '' ELSE h.automation_id END,
            sum(h.runs), sum(h.completed), sum(h.guided), sum(h.failed), sum(h.awaiting),
            CASE WHEN x.rollup THEN sum(h.usd) ELSE 0 END, CASE WHEN x.rollup THEN sum(h.secs) ELSE 0 END
        FROM h, (VALUES (0, 1.0), (1, 24.0), (2, 168.0), (3, 1344.0)) AS l (level, hours), (VALUES (false), (true)) AS x (rollup)
        WHERE x.rollup OR h.automation_id <> ''
        GROUP BY 1, 2, 3, 4, 5, x.rollup
        ON CONFLICT (organization_id, workspace_id, level, bucket, automation_id) DO UPDATE SET
            runs = g.runs + EXCLUDED.runs, completed = g.completed + EXCLUDED.completed,
            guided_completed = g.guided_completed + EXCLUDED.guided_completed,
            failed = g.failed + EXCLUDED.failed, awaiting = g.awaiting + EXCLUDED.awaiting,
            saved_usd = g.saved_usd + EXCLUDED.saved_usd, saved_secs = g.saved_secs + EXCLUDED.saved_secs
        RETURNING 1)
    SELECT count(*) INTO n FROM f;
    RETURN n;
END;
$$;
-- +goose StatementEnd

-- A change of estimate: the difference a bucket with completed runs of the
-- automation, per hour (its rows of level 0 and its deltas), as rollup
-- deltas; the fold spreads them over the levels.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION automation_estimates_value() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    r automation_estimates := CASE WHEN TG_OP = 'DELETE' THEN OLD ELSE NEW END;
    dcost NUMERIC := CASE WHEN TG_OP = 'DELETE' THEN 0 ELSE NEW.cost_usd::NUMERIC END - CASE WHEN TG_OP = 'INSERT' THEN 0 ELSE OLD.cost_usd::NUMERIC END;
    dsecs BIGINT := CASE WHEN TG_OP = 'DELETE' THEN 0 ELSE NEW.time_saved_secs END - CASE WHEN TG_OP = 'INSERT' THEN 0 ELSE OLD.time_saved_secs END;
BEGIN
    IF dcost = 0 AND dsecs = 0 THEN
        RETURN NULL;
    END IF;
    PERFORM pg_advisory_xact_lock(run_aggregates_value_key(r.organization_id, r.workspace_id));
    INSERT INTO run_aggregate_deltas (organization_id, workspace_id, bucket, automation_id, runs, completed, guided_completed, failed, awaiting, saved_usd, saved_secs)
    SELECT r.organization_id, r.workspace_id, g.bucket, '', 0, 0, 0, 0, 0, dcost * sum(g.completed), dsecs * sum(g.completed)
    FROM (SELECT bucket, completed FROM run_aggregates WHERE organization_id = r.organization_id AND workspace_id = r.workspace_id AND level = 0 AND automation_id = r.automation_id
        UNION ALL SELECT bucket, completed FROM run_aggregate_deltas WHERE organization_id = r.organization_id AND workspace_id = r.workspace_id AND automation_id = r.automation_id) g
    GROUP BY g.bucket HAVING sum(g.completed) <> 0;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd

-- +goose Down
SELECT pg_advisory_xact_lock(hashtext('prose.run_aggregates_compact'));
LOCK TABLE run_aggregate_deltas IN EXCLUSIVE MODE;
SELECT run_aggregates_compact();
DROP TABLE run_aggregate_deltas;
-- As 00027 and 00032 made it (their columns in their order).
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
    awaiting         BIGINT NOT NULL,
    saved_usd        NUMERIC NOT NULL DEFAULT 0,
    saved_secs       BIGINT NOT NULL DEFAULT 0
);
CREATE INDEX run_aggregate_deltas_bucket ON run_aggregate_deltas (organization_id, workspace_id, level, bucket);

-- The functions of 00032.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION run_aggregates_add(o TEXT, w TEXT, a TEXT, ct TIMESTAMPTZ, dr BIGINT, dc BIGINT, dg BIGINT, df BIGINT, da BIGINT) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    s BIGINT := floor(extract(epoch FROM ct))::BIGINT;
    cost NUMERIC := 0;
    secs BIGINT := 0;
BEGIN
    IF dc <> 0 THEN
        PERFORM pg_advisory_xact_lock_shared(run_aggregates_value_key(o, w));
        SELECT e.cost_usd::NUMERIC, e.time_saved_secs INTO cost, secs FROM automation_estimates e
        WHERE e.organization_id = o AND e.workspace_id = w AND e.automation_id = a;
    END IF;
    INSERT INTO run_aggregate_deltas (organization_id, workspace_id, level, bucket, automation_id, runs, completed, guided_completed, failed, awaiting, saved_usd, saved_secs)
    SELECT o, w, l.level, floor(s / l.size)::BIGINT, CASE WHEN x.rollup THEN '' ELSE a END, dr, dc, dg, df, da,
        CASE WHEN x.rollup THEN dc * coalesce(cost, 0) ELSE 0 END, CASE WHEN x.rollup THEN dc * coalesce(secs, 0) ELSE 0 END
    FROM (VALUES (0, 3600.0), (1, 86400.0), (2, 604800.0), (3, 4838400.0)) AS l (level, size), (VALUES (false), (true)) AS x (rollup);
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION run_aggregates_rows() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    k BIGINT := CASE WHEN TG_OP = 'INSERT' THEN 1 ELSE -1 END;
BEGIN
    PERFORM pg_advisory_xact_lock_shared(run_aggregates_value_key(w.organization_id, w.workspace_id))
    FROM (SELECT DISTINCT organization_id, workspace_id FROM changed WHERE state = 'completed' ORDER BY 1, 2) w;
    INSERT INTO run_aggregate_deltas (organization_id, workspace_id, level, bucket, automation_id, runs, completed, guided_completed, failed, awaiting, saved_usd, saved_secs)
    SELECT r.organization_id, r.workspace_id, l.level, floor(floor(extract(epoch FROM r.create_time)) / l.size)::BIGINT,
        CASE WHEN x.rollup THEN '' ELSE r.automation_id END,
        k * count(*), k * count(*) FILTER (WHERE r.state = 'completed'), k * count(*) FILTER (WHERE r.state = 'completed' AND r.guided > 0),
        k * count(*) FILTER (WHERE r.state = 'failed'), k * count(*) FILTER (WHERE r.state = 'awaiting_guidance'),
        CASE WHEN x.rollup THEN k * coalesce(sum(e.cost_usd::NUMERIC) FILTER (WHERE r.state = 'completed'), 0) ELSE 0 END,
        CASE WHEN x.rollup THEN k * coalesce(sum(e.time_saved_secs) FILTER (WHERE r.state = 'completed'), 0) ELSE 0 END
    FROM changed r LEFT JOIN automation_estimates e USING (organization_id, workspace_id, automation_id),
        (VALUES (0, 3600.0), (1, 86400.0), (2, 604800.0), (3, 4838400.0)) AS l (level, size), (VALUES (false), (true)) AS x (rollup)
    GROUP BY 1, 2, 3, 4, 5, x.rollup;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION run_aggregates_compact() RETURNS BIGINT
LANGUAGE plpgsql AS $$
DECLARE
    n BIGINT;
BEGIN
    IF NOT pg_try_advisory_xact_lock(hashtext('prose.run_aggregates_compact')) THEN
        RETURN 0;
    END IF;
    WITH d AS (DELETE FROM run_aggregate_deltas RETURNING *), f AS (
        INSERT INTO run_aggregates AS g (organization_id, workspace_id, level, bucket, automation_id, runs, completed, guided_completed, failed, awaiting, saved_usd, saved_secs)
        SELECT organization_id, workspace_id, level, bucket, automation_id, sum(runs), sum(completed), sum(guided_completed), sum(failed), sum(awaiting),
            sum(saved_usd), sum(saved_secs)
        FROM d GROUP BY 1, 2, 3, 4, 5
        ON CONFLICT (organization_id, workspace_id, level, bucket, automation_id) DO UPDATE SET
            runs = g.runs + EXCLUDED.runs, completed = g.completed + EXCLUDED.completed,
            guided_completed = g.guided_completed + EXCLUDED.guided_completed,
            failed = g.failed + EXCLUDED.failed, awaiting = g.awaiting + EXCLUDED.awaiting,
            saved_usd = g.saved_usd + EXCLUDED.saved_usd, saved_secs = g.saved_secs + EXCLUDED.saved_secs
        RETURNING 1)
    SELECT count(*) INTO n FROM f;
    RETURN n;
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION automation_estimates_value() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    r automation_estimates := CASE WHEN TG_OP = 'DELETE' THEN OLD ELSE NEW END;
    dcost NUMERIC := CASE WHEN TG_OP = 'DELETE' THEN 0 ELSE NEW.cost_usd::NUMERIC END - CASE WHEN TG_OP = 'INSERT' THEN 0 ELSE OLD.cost_usd::NUMERIC END;
    dsecs BIGINT := CASE WHEN TG_OP = 'DELETE' THEN 0 ELSE NEW.time_saved_secs END - CASE WHEN TG_OP = 'INSERT' THEN 0 ELSE OLD.time_saved_secs END;
BEGIN
    IF dcost = 0 AND dsecs = 0 THEN
        RETURN NULL;
    END IF;
    PERFORM pg_advisory_xact_lock(run_aggregates_value_key(r.organization_id, r.workspace_id));
    INSERT INTO run_aggregate_deltas (organization_id, workspace_id, level, bucket, automation_id, runs, completed, guided_completed, failed, awaiting, saved_usd, saved_secs)
    SELECT r.organization_id, r.workspace_id, g.level, g.bucket, '', 0, 0, 0, 0, 0, dcost * sum(g.completed), dsecs * sum(g.completed)
    FROM (SELECT level, bucket, completed FROM run_aggregates WHERE organization_id = r.organization_id AND workspace_id = r.workspace_id AND automation_id = r.automation_id
        UNION ALL SELECT level, bucket, completed FROM run_aggregate_deltas WHERE organization_id = r.organization_id AND workspace_id = r.workspace_id AND automation_id = r.automation_id) g
    GROUP BY g.level, g.bucket HAVING sum(g.completed) <> 0;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd
