-- +goose Up
-- Insights: workspace rollups in run_aggregates (issue 15). Beside the rows
-- per automation, every workspace has rows with automation_id = '' (no
-- automation has an empty id) counting all its runs, per hour and per UTC
-- day, appended as deltas by the same triggers in the same transaction
-- (still no key: creates never wait on a counter row). Queries that do not
-- split or filter by automation read them: a tenth of the rows with ten
-- automations a workspace.
--
-- Built from the rows and the deltas not folded yet (those stay and are
-- folded into the rows of their automation only).
INSERT INTO run_aggregates (organization_id, workspace_id, level, bucket, automation_id, runs, completed, guided_completed, failed, awaiting)
SELECT organization_id, workspace_id, level, bucket, '', sum(runs), sum(completed), sum(guided_completed), sum(failed), sum(awaiting)
FROM (SELECT * FROM run_aggregates WHERE automation_id <> '' UNION ALL SELECT * FROM run_aggregate_deltas WHERE automation_id <> '') g
GROUP BY organization_id, workspace_id, level, bucket;

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

-- +goose Down
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION run_aggregates_add(o TEXT, w TEXT, a TEXT, ct TIMESTAMPTZ, dr BIGINT, dc BIGINT, dg BIGINT, df BIGINT, da BIGINT) RETURNS void
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

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION run_aggregates_rows() RETURNS trigger
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

DELETE FROM run_aggregate_deltas WHERE automation_id = '';
DELETE FROM run_aggregates WHERE automation_id = '';
