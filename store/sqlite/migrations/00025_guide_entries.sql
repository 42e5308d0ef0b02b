-- +goose Up
-- Guide entries: what a person taught an automation about an exception,
-- applied by the engine to the exceptions that match it. The match is the
-- source exception's: the statement's text (statement_hash, a SHA-256 of
-- it, beside the text itself), the exception's group, and its fact or
-- question. guidance is a marshalled prose.persist.v1.Guidance.
CREATE TABLE guide_entries (
    organization_id  TEXT NOT NULL,
    workspace_id     TEXT NOT NULL,
    automation_id    TEXT NOT NULL,
    id               TEXT NOT NULL,
    title            TEXT NOT NULL DEFAULT '',
    root_cause       TEXT NOT NULL DEFAULT '',
    resolution_steps TEXT NOT NULL DEFAULT '',
    resolution_code  TEXT NOT NULL DEFAULT '',
    resolution_notes TEXT NOT NULL DEFAULT '',
    state            TEXT NOT NULL,
    deleted_state    TEXT NOT NULL DEFAULT '',
    source_exception TEXT NOT NULL DEFAULT '',
    source_run       TEXT NOT NULL DEFAULT '',
    version_major    INTEGER NOT NULL DEFAULT 0,
    version_minor    INTEGER NOT NULL DEFAULT 1,
    statement        TEXT NOT NULL,
    statement_hash   TEXT NOT NULL,
    group_id         TEXT NOT NULL DEFAULT '',
    fact             TEXT NOT NULL DEFAULT '',
    question         TEXT NOT NULL DEFAULT '',
    guidance         BLOB NOT NULL,
    create_time      INTEGER NOT NULL,
    update_time      INTEGER NOT NULL,
    delete_time      INTEGER,
    PRIMARY KEY (organization_id, workspace_id, id),
    FOREIGN KEY (organization_id, workspace_id) REFERENCES workspaces (organization_id, id) ON DELETE CASCADE
) STRICT;
CREATE INDEX guide_entries_create_time ON guide_entries (organization_id, workspace_id, automation_id, create_time, id);
-- The engine's lookup: the approved entries of an automation for one statement.
CREATE INDEX guide_entries_match ON guide_entries (organization_id, workspace_id, automation_id, statement_hash)
    WHERE state = 'APPROVED' AND delete_time IS NULL;

-- The guide entry that resolved an exception ('' when none did).
ALTER TABLE exceptions ADD COLUMN resolution_guide_entry TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE exceptions DROP COLUMN resolution_guide_entry;
DROP TABLE guide_entries;
