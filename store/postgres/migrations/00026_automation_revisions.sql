-- +goose Up
-- Revisions of automations (AIP-162): an immutable snapshot written in the
-- transaction of every save (create, update: stage 'draft') and publish
-- (stage 'published'). The revision id is the automation's version after
-- that change, so ids grow with time and the newest is the largest.
CREATE TABLE automation_revisions (
    organization_id TEXT COLLATE "C" NOT NULL,
    workspace_id    TEXT COLLATE "C" NOT NULL,
    automation_id   TEXT COLLATE "C" NOT NULL,
    version         BIGINT NOT NULL,
    stage           TEXT COLLATE "C" NOT NULL,
    display_name    TEXT COLLATE "C" NOT NULL,
    description     TEXT COLLATE "C" NOT NULL DEFAULT '',
    code            TEXT COLLATE "C" NOT NULL DEFAULT '',
    details         BYTEA,
    user_id         TEXT COLLATE "C" NOT NULL DEFAULT '',
    create_time     TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (organization_id, workspace_id, automation_id, version),
    FOREIGN KEY (organization_id, workspace_id, automation_id) REFERENCES automations (organization_id, workspace_id, id) ON DELETE CASCADE
);

-- Existing automations get the revisions their rows still hold: the
-- published stage, and the draft when it changed after the last publish.
INSERT INTO automation_revisions (organization_id, workspace_id, automation_id, version, stage, display_name, description, code, details, user_id, create_time)
SELECT organization_id, workspace_id, id, published_version, 'published', display_name, description, published_code, published_details,
    publish_user_id, COALESCE(publish_time, update_time)
FROM automations WHERE published_version > 0;
INSERT INTO automation_revisions (organization_id, workspace_id, automation_id, version, stage, display_name, description, code, details, user_id, create_time)
SELECT organization_id, workspace_id, id, version, 'draft', display_name, description, code, details, update_user_id, update_time
FROM automations WHERE version != published_version;

-- +goose Down
DROP TABLE automation_revisions;
