-- +goose Up
-- Insights (issue 15): the value saved, kept in the workspace rollups
-- (automation_id = '', migration 00030), and two coarser levels.
--
--   saved_usd   Σ over the bucket's completed runs of their automation's
--               estimated cost (exact NUMERIC)
--   saved_secs  Σ of their automation's estimated time saved
--
-- An estimate values every completed run of its automation, those before
-- it was set too (the reference's estimate is "per run", with no time of
-- its own): a change of estimate re-values the automation's completed runs
-- in the rollups (the trigger on automation_estimates below, in the
-- transaction of ConfigureAutomationEstimates, appends the difference as
-- deltas). The rows per automation keep counts only (their saved columns
-- stay 0): an automation's value is its estimate × its completed runs.
--
-- Consistency: a run's completion values it with the estimate it reads;
-- the estimate's change re-values the completed runs it sees. Both take
-- the workspace's advisory lock (completions shared, a change exclusive),
-- so a change waits for the completions in flight to commit and sees them,
-- and a completion after it reads the new estimate.
--
-- Levels 2 (7 UTC days) and 3 (56 UTC days), counted from the epoch like
-- the others, let a long range be read in few rows: a year is about 20
-- rows per automation instead of 365.
ALTER TABLE run_aggregates ADD COLUMN saved_usd NUMERIC NOT NULL DEFAULT 0, ADD COLUMN saved_secs BIGINT NOT NULL DEFAULT 0;
ALTER TABLE run_aggregate_deltas ADD COLUMN saved_usd NUMERIC NOT NULL DEFAULT 0, ADD COLUMN saved_secs BIGINT NOT NULL DEFAULT 0;

-- Every delta folded first (the value below is read from the rows): the
-- compaction's lock is taken waiting, so that a compaction in flight
-- elsewhere is waited for, not skipped (run_aggregates_compact only tries
-- it; in this transaction it holds it then). The fill of the new levels
-- reads the deltas too, as the queries do.
SELECT pg_advisory_xact_lock(hashtext('prose.run_aggregates_compact'));
SELECT run_aggregates_compact();
INSERT INTO run_aggregates (organization_id, workspace_id, level, bucket, automation_id, runs, completed, guided_completed, failed, awaiting)
SELECT g.organization_id, g.workspace_id, l.level, floor(g.bucket / l.days)::BIGINT, g.automation_id,
    sum(g.runs), sum(g.completed), sum(g.guided_completed), sum(g.failed), sum(g.awaiting)
FROM (SELECT * FROM run_aggregates WHERE level = 1 UNION ALL SELECT * FROM run_aggregate_deltas WHERE level = 1) g, (VALUES (2, 7.0), (3, 56.0)) AS l (level, days)
GROUP BY 1, 2, 3, 4, 5;
UPDATE run_aggregates g SET saved_usd = v.usd, saved_secs = v.secs
FROM (SELECT a.organization_id, a.workspace_id, a.level, a.bucket, sum(e.cost_usd::NUMERIC * a.completed) AS usd, sum(e.time_saved_secs::BIGINT * a.completed) AS secs
    FROM run_aggregates a JOIN automation_estimates e USING (organization_id, workspace_id, automation_id)
    WHERE a.automation_id <> '' GROUP BY 1, 2, 3, 4) v
WHERE g.organization_id = v.organization_id AND g.workspace_id = v.workspace_id AND g.level = v.level AND g.bucket = v.bucket AND g.automation_id = '';

-- The workspace's lock of the value (shared: a completion; exclusive: an
-- estimate's change).
-- +goose StatementBegin
CREATE FUNCTION run_aggregates_value_key(o TEXT, w TEXT) RETURNS BIGINT
LANGUAGE sql IMMUTABLE AS $$ SELECT hashtextextended('prose.run_aggregates_value/' || o || '/' || w, 0) $$;
-- +goose StatementEnd

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

-- An estimate set, changed or removed re-values its automation's completed
-- runs: the difference, per bucket with completed runs, appended to the
-- workspace's rollups as deltas (read from the automation's rows and the
-- deltas not folded yet, after the completions in flight committed).
-- +goose StatementBegin
CREATE FUNCTION automation_estimates_value() RETURNS trigger
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

CREATE TRIGGER automation_estimates_value AFTER INSERT OR UPDATE OR DELETE ON automation_estimates FOR EACH ROW EXECUTE FUNCTION automation_estimates_value();

-- +goose Down
DROP TRIGGER automation_estimates_value ON automation_estimates;
DROP FUNCTION automation_estimates_value();
SELECT run_aggregates_compact();

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

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION run_aggregates_add(o TEXT, w TEXT, a TEXT, ct TIMESTAMPTZ, dr BIGINT, dc BIGINT, dg BIGINT, df BIGINT, da BIGINT) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    s BIGINT := floor(extract(epoch FROM ct))::BIGINT;
BEGIN
    INSERT INTO run_aggregate_deltas (organization_id, workspace_id, level, bucket, automation_id, runs, completed, guided_completed, failed, awaiting)
    VALUES (o, w, 0, floor(s / 3600.0)::BIGINT, a, dr, dc, dg, df, da),
           (o, w, 1, floor(s / 86400.0)::BIGINT, a, dr, dc, dg, df, da),
           (o, w, 0, floor(s / 3600.0)::BIGINT, '', dr, dc, dg, df, da),
           (o, w, 1, floor(s / 86400.0)::BIGINT, '', dr, dc, dg, df, da);
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION run_aggregates_rows() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    k BIGINT := CASE WHEN TG_OP = 'INSERT' THEN 1 ELSE -1 END;
BEGIN
    INSERT INTO run_aggregate_deltas (organization_id, workspace_id, level, bucket, automation_id, runs, completed, guided_completed, failed, awaiting)
    SELECT r.organization_id, r.workspace_id, l.level, floor(floor(extract(epoch FROM r.create_time)) / l.size)::BIGINT,
        CASE WHEN x.rollup THEN '' ELSE r.automation_id END,
        k * count(*), k * count(*) FILTER (WHERE r.state = 'completed'), k * count(*) FILTER (WHERE r.state = 'completed' AND r.guided > 0),
        k * count(*) FILTER (WHERE r.state = 'failed'), k * count(*) FILTER (WHERE r.state = 'awaiting_guidance')
    FROM changed r, (VALUES (0, 3600.0), (1, 86400.0)) AS l (level, size), (VALUES (false), (true)) AS x (rollup)
    GROUP BY 1, 2, 3, 4, 5;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd

DROP FUNCTION run_aggregates_value_key(TEXT, TEXT);
DELETE FROM run_aggregate_deltas WHERE level >= 2;
DELETE FROM run_aggregates WHERE level >= 2;
ALTER TABLE run_aggregate_deltas DROP COLUMN saved_secs, DROP COLUMN saved_usd;
ALTER TABLE run_aggregates DROP COLUMN saved_secs, DROP COLUMN saved_usd;
