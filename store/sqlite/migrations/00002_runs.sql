-- +goose Up
-- Automations, runs (with their leases and journals) and exceptions.
-- Timestamps are integer unix microseconds (UTC); 0 means unset where nullable
-- columns are not used.
CREATE TABLE automations (
    organization_id    TEXT NOT NULL,
    workspace_id       TEXT NOT NULL,
    id                 TEXT NOT NULL,
    display_name       TEXT NOT NULL,
    description        TEXT NOT NULL DEFAULT '',
    code               TEXT NOT NULL DEFAULT '',
    details            BLOB,
    version            INTEGER NOT NULL,
    published_code     TEXT NOT NULL DEFAULT '',
    published_details  BLOB,
    published_version  INTEGER NOT NULL DEFAULT 0,
    draft_share_id     TEXT NOT NULL,
    published_share_id TEXT NOT NULL,
    author_id          TEXT NOT NULL DEFAULT '',
    update_user_id     TEXT NOT NULL DEFAULT '',
    publish_user_id    TEXT NOT NULL DEFAULT '',
    create_time        INTEGER NOT NULL,
    update_time        INTEGER NOT NULL,
    publish_time       INTEGER,
    delete_time        INTEGER,
    PRIMARY KEY (organization_id, workspace_id, id),
    FOREIGN KEY (organization_id, workspace_id) REFERENCES workspaces (organization_id, id) ON DELETE CASCADE
) STRICT;
CREATE UNIQUE INDEX automations_draft_share ON automations (draft_share_id);
CREATE UNIQUE INDEX automations_published_share ON automations (published_share_id);
CREATE INDEX automations_update_time ON automations (organization_id, workspace_id, update_time, id);
CREATE INDEX automations_create_time ON automations (organization_id, workspace_id, create_time, id);
CREATE INDEX automations_display_name ON automations (organization_id, workspace_id, display_name, id);

CREATE TABLE runs (
    id                 TEXT PRIMARY KEY,
    organization_id    TEXT NOT NULL,
    workspace_id       TEXT NOT NULL,
    automation_id      TEXT NOT NULL,
    name               TEXT NOT NULL DEFAULT '',
    stage              TEXT NOT NULL,
    stage_version      INTEGER NOT NULL,
    steps              BLOB,
    user_inputs        BLOB,
    invocation_details BLOB,
    file_ids           TEXT NOT NULL DEFAULT '[]',
    previous_run       TEXT NOT NULL DEFAULT '',
    request_id         TEXT NOT NULL DEFAULT '',
    state              TEXT NOT NULL,
    state_time         INTEGER NOT NULL,
    reason             TEXT NOT NULL DEFAULT '',
    exception_id       TEXT NOT NULL DEFAULT '',
    description        TEXT NOT NULL DEFAULT '',
    loc_start          INTEGER NOT NULL DEFAULT 0,
    loc_end            INTEGER NOT NULL DEFAULT 0,
    error_id           TEXT NOT NULL DEFAULT '',
    outputs            BLOB,
    step               INTEGER NOT NULL DEFAULT 0,
    step_inputs        BLOB,
    checkpoint         BLOB,
    resolution         BLOB,
    lease_owner        TEXT NOT NULL DEFAULT '',
    lease_expire_time  INTEGER NOT NULL DEFAULT 0,
    create_time        INTEGER NOT NULL,
    update_time        INTEGER NOT NULL,
    FOREIGN KEY (organization_id, workspace_id, automation_id) REFERENCES automations (organization_id, workspace_id, id) ON DELETE CASCADE
) STRICT;
CREATE INDEX runs_automation_create_time ON runs (organization_id, workspace_id, automation_id, create_time, id);
CREATE INDEX runs_workspace_create_time ON runs (organization_id, workspace_id, create_time, id);
-- The work queue: pending runs oldest first, and leases to recover.
CREATE INDEX runs_pending ON runs (create_time, id) WHERE state = 'pending';
CREATE INDEX runs_leased ON runs (lease_expire_time) WHERE state IN ('executing', 'stopping');
CREATE UNIQUE INDEX runs_request_id ON runs (organization_id, request_id) WHERE request_id != '';

CREATE TABLE run_journal (
    run_id TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    step   INTEGER NOT NULL,
    seq    INTEGER NOT NULL,
    kind   TEXT NOT NULL,
    key    TEXT NOT NULL,
    data   BLOB,
    PRIMARY KEY (run_id, step, seq)
) STRICT;

CREATE TABLE exceptions (
    organization_id TEXT NOT NULL,
    workspace_id    TEXT NOT NULL,
    id              TEXT NOT NULL,
    run_id          TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    automation_id   TEXT NOT NULL,
    stage           TEXT NOT NULL,
    step            INTEGER NOT NULL DEFAULT 0,
    group_id        TEXT NOT NULL DEFAULT '',
    message         TEXT NOT NULL,
    description     TEXT NOT NULL DEFAULT '',
    loc_start       INTEGER NOT NULL DEFAULT 0,
    loc_end         INTEGER NOT NULL DEFAULT 0,
    details         BLOB,
    state           TEXT NOT NULL,
    assignee        TEXT NOT NULL DEFAULT '',
    resolver        TEXT NOT NULL DEFAULT '',
    extra           TEXT NOT NULL DEFAULT '{}',
    create_time     INTEGER NOT NULL,
    update_time     INTEGER NOT NULL,
    PRIMARY KEY (organization_id, workspace_id, id)
) STRICT;
CREATE INDEX exceptions_create_time ON exceptions (organization_id, workspace_id, create_time, id);
CREATE INDEX exceptions_state_create_time ON exceptions (organization_id, workspace_id, state, create_time, id);
CREATE INDEX exceptions_group ON exceptions (organization_id, workspace_id, group_id, state);
CREATE INDEX exceptions_automation ON exceptions (organization_id, workspace_id, automation_id, state);
CREATE INDEX exceptions_run ON exceptions (run_id, state);

-- +goose Down
DROP TABLE exceptions;
DROP TABLE run_journal;
DROP TABLE runs;
DROP TABLE automations;
