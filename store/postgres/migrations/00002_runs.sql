-- +goose Up
-- Automations, runs (with their leases and journals) and exceptions.
CREATE TABLE automations (
    organization_id    TEXT COLLATE "C" NOT NULL,
    workspace_id       TEXT COLLATE "C" NOT NULL,
    id                 TEXT COLLATE "C" NOT NULL,
    display_name       TEXT COLLATE "C" NOT NULL,
    description        TEXT COLLATE "C" NOT NULL DEFAULT '',
    code               TEXT COLLATE "C" NOT NULL DEFAULT '',
    details            BYTEA,
    version            BIGINT NOT NULL,
    published_code     TEXT COLLATE "C" NOT NULL DEFAULT '',
    published_details  BYTEA,
    published_version  BIGINT NOT NULL DEFAULT 0,
    draft_share_id     TEXT COLLATE "C" NOT NULL,
    published_share_id TEXT COLLATE "C" NOT NULL,
    author_id          TEXT COLLATE "C" NOT NULL DEFAULT '',
    update_user_id     TEXT COLLATE "C" NOT NULL DEFAULT '',
    publish_user_id    TEXT COLLATE "C" NOT NULL DEFAULT '',
    create_time        TIMESTAMPTZ NOT NULL,
    update_time        TIMESTAMPTZ NOT NULL,
    publish_time       TIMESTAMPTZ,
    delete_time        TIMESTAMPTZ,
    PRIMARY KEY (organization_id, workspace_id, id),
    FOREIGN KEY (organization_id, workspace_id) REFERENCES workspaces (organization_id, id) ON DELETE CASCADE
);
CREATE UNIQUE INDEX automations_draft_share ON automations (draft_share_id);
CREATE UNIQUE INDEX automations_published_share ON automations (published_share_id);
CREATE INDEX automations_update_time ON automations (organization_id, workspace_id, update_time, id);
CREATE INDEX automations_create_time ON automations (organization_id, workspace_id, create_time, id);
CREATE INDEX automations_display_name ON automations (organization_id, workspace_id, display_name, id);

CREATE TABLE runs (
    id                 TEXT COLLATE "C" PRIMARY KEY,
    organization_id    TEXT COLLATE "C" NOT NULL,
    workspace_id       TEXT COLLATE "C" NOT NULL,
    automation_id      TEXT COLLATE "C" NOT NULL,
    name               TEXT COLLATE "C" NOT NULL DEFAULT '',
    stage              TEXT COLLATE "C" NOT NULL,
    stage_version      BIGINT NOT NULL,
    steps              BYTEA,
    user_inputs        BYTEA,
    invocation_details BYTEA,
    file_ids           TEXT COLLATE "C" NOT NULL DEFAULT '[]',
    previous_run       TEXT COLLATE "C" NOT NULL DEFAULT '',
    request_id         TEXT COLLATE "C" NOT NULL DEFAULT '',
    state              TEXT COLLATE "C" NOT NULL,
    state_time         TIMESTAMPTZ NOT NULL,
    reason             TEXT COLLATE "C" NOT NULL DEFAULT '',
    exception_id       TEXT COLLATE "C" NOT NULL DEFAULT '',
    description        TEXT COLLATE "C" NOT NULL DEFAULT '',
    loc_start          BIGINT NOT NULL DEFAULT 0,
    loc_end            BIGINT NOT NULL DEFAULT 0,
    error_id           TEXT COLLATE "C" NOT NULL DEFAULT '',
    outputs            BYTEA,
    step               INTEGER NOT NULL DEFAULT 0,
    step_inputs        BYTEA,
    checkpoint         BYTEA,
    resolution         BYTEA,
    lease_owner        TEXT COLLATE "C" NOT NULL DEFAULT '',
    lease_expire_time  TIMESTAMPTZ NOT NULL DEFAULT 'epoch',
    create_time        TIMESTAMPTZ NOT NULL,
    update_time        TIMESTAMPTZ NOT NULL,
    FOREIGN KEY (organization_id, workspace_id, automation_id) REFERENCES automations (organization_id, workspace_id, id) ON DELETE CASCADE
);
CREATE INDEX runs_automation_create_time ON runs (organization_id, workspace_id, automation_id, create_time, id);
CREATE INDEX runs_workspace_create_time ON runs (organization_id, workspace_id, create_time, id);
-- The work queue: pending runs oldest first, and leases to recover.
CREATE INDEX runs_pending ON runs (create_time, id) WHERE state = 'pending';
CREATE INDEX runs_leased ON runs (lease_expire_time) WHERE state IN ('executing', 'stopping');
CREATE UNIQUE INDEX runs_request_id ON runs (organization_id, request_id) WHERE request_id != '';

CREATE TABLE run_journal (
    run_id TEXT COLLATE "C" NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    step   INTEGER NOT NULL,
    seq    INTEGER NOT NULL,
    kind   TEXT COLLATE "C" NOT NULL,
    key    TEXT COLLATE "C" NOT NULL,
    data   BYTEA,
    PRIMARY KEY (run_id, step, seq)
);

CREATE TABLE exceptions (
    organization_id TEXT COLLATE "C" NOT NULL,
    workspace_id    TEXT COLLATE "C" NOT NULL,
    id              TEXT COLLATE "C" NOT NULL,
    run_id          TEXT COLLATE "C" NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    automation_id   TEXT COLLATE "C" NOT NULL,
    stage           TEXT COLLATE "C" NOT NULL,
    step            INTEGER NOT NULL DEFAULT 0,
    group_id        TEXT COLLATE "C" NOT NULL DEFAULT '',
    message         TEXT COLLATE "C" NOT NULL,
    description     TEXT COLLATE "C" NOT NULL DEFAULT '',
    loc_start       BIGINT NOT NULL DEFAULT 0,
    loc_end         BIGINT NOT NULL DEFAULT 0,
    details         BYTEA,
    state           TEXT COLLATE "C" NOT NULL,
    assignee        TEXT COLLATE "C" NOT NULL DEFAULT '',
    resolver        TEXT COLLATE "C" NOT NULL DEFAULT '',
    extra           TEXT COLLATE "C" NOT NULL DEFAULT '{}',
    create_time     TIMESTAMPTZ NOT NULL,
    update_time     TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (organization_id, workspace_id, id)
);
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
