-- +goose Up
-- Exception counts per (workspace, time bucket, state, group, automation),
-- kept by a trigger in the transaction of every insert, state (or key)
-- change and delete of an exception, cascades included. Counts under a
-- filter on state, group and automation with a create_time range are the
-- sum of the whole buckets inside the range plus an exact count of the
-- partial edge buckets (store/internal/sqlstore/exceptions.go).
--
-- level 0 buckets are hours, 1 days (24 h), 2 periods of 30 days (720 h),
-- all counted from the unix epoch: bucket = floor(unix microseconds /
-- size). Rows whose count fell to 0 stay (they add nothing).
CREATE TABLE exception_counts (
    organization_id TEXT COLLATE "C" NOT NULL,
    workspace_id    TEXT COLLATE "C" NOT NULL,
    level           SMALLINT NOT NULL,
    bucket          BIGINT NOT NULL,
    state           TEXT COLLATE "C" NOT NULL,
    group_id        TEXT COLLATE "C" NOT NULL,
    automation_id   TEXT COLLATE "C" NOT NULL,
    n               BIGINT NOT NULL,
    PRIMARY KEY (organization_id, workspace_id, level, bucket, state, group_id, automation_id)
);

-- +goose StatementBegin
CREATE FUNCTION exception_counts_add(o TEXT, w TEXT, s TEXT, g TEXT, a TEXT, ct TIMESTAMPTZ, d INTEGER) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    us NUMERIC := extract(epoch FROM ct) * 1000000;
BEGIN
    -- One statement, rows in key order (level 0, 1, 2): concurrent
    -- transactions lock the rows of one key in the same order.
    INSERT INTO exception_counts AS c (organization_id, workspace_id, level, bucket, state, group_id, automation_id, n)
    VALUES (o, w, 0, floor(us / 3600000000)::BIGINT, s, g, a, d),
           (o, w, 1, floor(us / 86400000000)::BIGINT, s, g, a, d),
           (o, w, 2, floor(us / 2592000000000)::BIGINT, s, g, a, d)
    ON CONFLICT (organization_id, workspace_id, level, bucket, state, group_id, automation_id) DO UPDATE SET n = c.n + EXCLUDED.n;
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION exception_counts_trigger() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        PERFORM exception_counts_add(NEW.organization_id, NEW.workspace_id, NEW.state, NEW.group_id, NEW.automation_id, NEW.create_time, 1);
    ELSIF TG_OP = 'DELETE' THEN
        PERFORM exception_counts_add(OLD.organization_id, OLD.workspace_id, OLD.state, OLD.group_id, OLD.automation_id, OLD.create_time, -1);
    ELSIF (OLD.organization_id, OLD.workspace_id, OLD.state, OLD.group_id, OLD.automation_id, OLD.create_time)
        IS DISTINCT FROM (NEW.organization_id, NEW.workspace_id, NEW.state, NEW.group_id, NEW.automation_id, NEW.create_time) THEN
        -- The two keys in state order, so that opposite transitions (archive,
        -- unarchive) of one bucket lock its rows in the same order.
        IF OLD.state <= NEW.state THEN
            PERFORM exception_counts_add(OLD.organization_id, OLD.workspace_id, OLD.state, OLD.group_id, OLD.automation_id, OLD.create_time, -1);
            PERFORM exception_counts_add(NEW.organization_id, NEW.workspace_id, NEW.state, NEW.group_id, NEW.automation_id, NEW.create_time, 1);
        ELSE
            PERFORM exception_counts_add(NEW.organization_id, NEW.workspace_id, NEW.state, NEW.group_id, NEW.automation_id, NEW.create_time, 1);
            PERFORM exception_counts_add(OLD.organization_id, OLD.workspace_id, OLD.state, OLD.group_id, OLD.automation_id, OLD.create_time, -1);
        END IF;
    END IF;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd

CREATE TRIGGER exception_counts AFTER INSERT OR DELETE OR UPDATE OF organization_id, workspace_id, state, group_id, automation_id, create_time
ON exceptions FOR EACH ROW EXECUTE FUNCTION exception_counts_trigger();

INSERT INTO exception_counts (organization_id, workspace_id, level, bucket, state, group_id, automation_id, n)
SELECT e.organization_id, e.workspace_id, l.level, floor(extract(epoch FROM e.create_time) * 1000000 / l.size)::BIGINT,
    e.state, e.group_id, e.automation_id, count(*)
FROM exceptions e, (VALUES (0, 3600000000), (1, 86400000000), (2, 2592000000000)) AS l (level, size)
GROUP BY 1, 2, 3, 4, 5, 6, 7;

-- +goose Down
DROP TRIGGER exception_counts ON exceptions;
DROP FUNCTION exception_counts_trigger();
DROP FUNCTION exception_counts_add(TEXT, TEXT, TEXT, TEXT, TEXT, TIMESTAMPTZ, INTEGER);
DROP TABLE exception_counts;
