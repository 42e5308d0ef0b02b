-- +goose Up
-- Guide entries: what a person taught an automation about an exception,
-- applied by the engine to the exceptions that match it. The match is the
-- source exception's: the statement's text (statement_hash, a SHA-256 of
-- it, beside the text itself), the exception's group, and its fact or
-- question. guidance is a marshalled prose.persist.v1.Guidance.
CREATE TABLE guide_entries (
    organization_id  TEXT COLLATE "C" NOT NULL,
    workspace_id     TEXT COLLATE "C" NOT NULL,
    automation_id    TEXT COLLATE "C" NOT NULL,
    id               TEXT COLLATE "C" NOT NULL,
    title            TEXT COLLATE "C" NOT NULL DEFAULT '',
    root_cause       TEXT COLLATE "C" NOT NULL DEFAULT '',
    resolution_steps TEXT COLLATE "C" NOT NULL DEFAULT '',
    resolution_code  TEXT COLLATE "C" NOT NULL DEFAULT '',
    resolution_notes TEXT COLLATE "C" NOT NULL DEFAULT '',
    state            TEXT COLLATE "C" NOT NULL,
    deleted_state    TEXT COLLATE "C" NOT NULL DEFAULT '',
    source_exception TEXT COLLATE "C" NOT NULL DEFAULT '',
    source_run       TEXT COLLATE "C" NOT NULL DEFAULT '',
    version_major    BIGINT NOT NULL DEFAULT 0,
    version_minor    BIGINT NOT NULL DEFAULT 1,
    statement        TEXT COLLATE "C" NOT NULL,
    statement_hash   TEXT COLLATE "C" NOT NULL,
    group_id         TEXT COLLATE "C" NOT NULL DEFAULT '',
    fact             TEXT COLLATE "C" NOT NULL DEFAULT '',
    question         TEXT COLLATE "C" NOT NULL DEFAULT '',
    guidance         BYTEA NOT NULL,
    create_time      TIMESTAMPTZ NOT NULL,
    update_time      TIMESTAMPTZ NOT NULL,
    delete_time      TIMESTAMPTZ,
    PRIMARY KEY (organization_id, workspace_id, id),
    FOREIGN KEY (organization_id, workspace_id) REFERENCES workspaces (organization_id, id) ON DELETE CASCADE
);
CREATE INDEX guide_entries_create_time ON guide_entries (organization_id, workspace_id, automation_id, create_time, id);
-- The engine's lookup: the approved entries of an automation for one statement.
CREATE INDEX guide_entries_match ON guide_entries (organization_id, workspace_id, automation_id, statement_hash)
    WHERE state = 'APPROVED' AND delete_time IS NULL;

-- The guide entry that resolved an exception ('' when none did).
ALTER TABLE exceptions ADD COLUMN resolution_guide_entry TEXT COLLATE "C" NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE exceptions DROP COLUMN resolution_guide_entry;
DROP TABLE guide_entries;
