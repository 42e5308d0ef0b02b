-- +goose Up
-- Exception counts per (workspace, time bucket, state, group, automation),
-- kept by triggers in the transaction of every insert, state (or key)
-- change and delete of an exception, cascades included. Counts under a
-- filter on state, group and automation with a create_time range are the
-- sum of the whole buckets inside the range plus an exact count of the
-- partial edge buckets (store/internal/sqlstore/exceptions.go).
--
-- level 0 buckets are hours, 1 days (24 h), 2 periods of 30 days (720 h),
-- all counted from the unix epoch: bucket = floor(create_time / size). Rows
-- whose count fell to 0 stay (they add nothing).
CREATE TABLE exception_counts (
    organization_id TEXT NOT NULL,
    workspace_id    TEXT NOT NULL,
    level           INTEGER NOT NULL,
    bucket          INTEGER NOT NULL,
    state           TEXT NOT NULL,
    group_id        TEXT NOT NULL,
    automation_id   TEXT NOT NULL,
    n               INTEGER NOT NULL,
    PRIMARY KEY (organization_id, workspace_id, level, bucket, state, group_id, automation_id)
) STRICT, WITHOUT ROWID;

CREATE TABLE exception_count_levels (
    level INTEGER PRIMARY KEY,
    size  INTEGER NOT NULL -- microseconds
) STRICT;
INSERT INTO exception_count_levels VALUES (0, 3600000000), (1, 86400000000), (2, 2592000000000);

INSERT INTO exception_counts (organization_id, workspace_id, level, bucket, state, group_id, automation_id, n)
SELECT e.organization_id, e.workspace_id, l.level, (e.create_time - ((e.create_time % l.size) + l.size) % l.size) / l.size,
    e.state, e.group_id, e.automation_id, count(*)
FROM exceptions e, exception_count_levels l
GROUP BY 1, 2, 3, 4, 5, 6, 7;

-- +goose StatementBegin
CREATE TRIGGER exception_counts_insert AFTER INSERT ON exceptions BEGIN
    INSERT INTO exception_counts (organization_id, workspace_id, level, bucket, state, group_id, automation_id, n)
    SELECT NEW.organization_id, NEW.workspace_id, l.level, (NEW.create_time - ((NEW.create_time % l.size) + l.size) % l.size) / l.size,
        NEW.state, NEW.group_id, NEW.automation_id, 1
    FROM exception_count_levels l WHERE true
    ON CONFLICT (organization_id, workspace_id, level, bucket, state, group_id, automation_id) DO UPDATE SET n = n + 1;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER exception_counts_delete AFTER DELETE ON exceptions BEGIN
    UPDATE exception_counts SET n = n - 1
    WHERE organization_id = OLD.organization_id AND workspace_id = OLD.workspace_id
        AND (level, bucket) IN (SELECT l.level, (OLD.create_time - ((OLD.create_time % l.size) + l.size) % l.size) / l.size FROM exception_count_levels l)
        AND state = OLD.state AND group_id = OLD.group_id AND automation_id = OLD.automation_id;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER exception_counts_update AFTER UPDATE OF organization_id, workspace_id, state, group_id, automation_id, create_time ON exceptions
WHEN OLD.organization_id IS NOT NEW.organization_id OR OLD.workspace_id IS NOT NEW.workspace_id OR OLD.state IS NOT NEW.state
    OR OLD.group_id IS NOT NEW.group_id OR OLD.automation_id IS NOT NEW.automation_id OR OLD.create_time IS NOT NEW.create_time
BEGIN
    UPDATE exception_counts SET n = n - 1
    WHERE organization_id = OLD.organization_id AND workspace_id = OLD.workspace_id
        AND (level, bucket) IN (SELECT l.level, (OLD.create_time - ((OLD.create_time % l.size) + l.size) % l.size) / l.size FROM exception_count_levels l)
        AND state = OLD.state AND group_id = OLD.group_id AND automation_id = OLD.automation_id;
    INSERT INTO exception_counts (organization_id, workspace_id, level, bucket, state, group_id, automation_id, n)
    SELECT NEW.organization_id, NEW.workspace_id, l.level, (NEW.create_time - ((NEW.create_time % l.size) + l.size) % l.size) / l.size,
        NEW.state, NEW.group_id, NEW.automation_id, 1
    FROM exception_count_levels l WHERE true
    ON CONFLICT (organization_id, workspace_id, level, bucket, state, group_id, automation_id) DO UPDATE SET n = n + 1;
END;
-- +goose StatementEnd

-- +goose Down
DROP TRIGGER exception_counts_update;
DROP TRIGGER exception_counts_delete;
DROP TRIGGER exception_counts_insert;
DROP TABLE exception_count_levels;
DROP TABLE exception_counts;
