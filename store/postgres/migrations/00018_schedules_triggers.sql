-- +goose Up
-- The schedule of an automation (config: a marshalled
-- prose.platform.v1.ScheduleConfig). next_time is the next occurrence no
-- scheduler has handled yet (NULL: none left); generation counts the API's
-- writes, so a scheduler that read an older version advances nothing.
CREATE TABLE automation_schedules (
    organization_id TEXT COLLATE "C" NOT NULL,
    workspace_id    TEXT COLLATE "C" NOT NULL,
    automation_id   TEXT COLLATE "C" NOT NULL,
    config          BYTEA NOT NULL,
    enabled         BOOLEAN NOT NULL DEFAULT true,
    next_time       TIMESTAMPTZ,
    generation      BIGINT NOT NULL DEFAULT 1,
    create_time     TIMESTAMPTZ NOT NULL,
    update_time     TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (organization_id, workspace_id, automation_id),
    FOREIGN KEY (organization_id, workspace_id, automation_id) REFERENCES automations (organization_id, workspace_id, id) ON DELETE CASCADE
);
CREATE INDEX automation_schedules_due ON automation_schedules (next_time) WHERE enabled AND next_time IS NOT NULL;

-- Trigger instances (an inbound webhook, ...) of a workspace.
CREATE TABLE trigger_instances (
    organization_id TEXT COLLATE "C" NOT NULL,
    workspace_id    TEXT COLLATE "C" NOT NULL,
    id              TEXT COLLATE "C" NOT NULL,
    name            TEXT NOT NULL DEFAULT '',
    book_name       TEXT COLLATE "C" NOT NULL,
    book_version    TEXT COLLATE "C" NOT NULL DEFAULT '',
    connection_id   TEXT COLLATE "C" NOT NULL,
    trigger_id      TEXT COLLATE "C" NOT NULL DEFAULT '',
    configuration   BYTEA NOT NULL,
    secret          TEXT NOT NULL DEFAULT '',
    automation_ids  TEXT NOT NULL DEFAULT '[]',
    create_time     TIMESTAMPTZ NOT NULL,
    update_time     TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (organization_id, workspace_id, id),
    FOREIGN KEY (organization_id, workspace_id) REFERENCES workspaces (organization_id, id) ON DELETE CASCADE
);

-- How a trigger instance starts an automation (input_mapping: JSON object).
CREATE TABLE automation_triggers (
    organization_id TEXT COLLATE "C" NOT NULL,
    workspace_id    TEXT COLLATE "C" NOT NULL,
    automation_id   TEXT COLLATE "C" NOT NULL,
    trigger_id      TEXT COLLATE "C" NOT NULL,
    input_mapping   TEXT NOT NULL DEFAULT '{}',
    phase_type      INTEGER NOT NULL DEFAULT 0,
    phase_sub_type  INTEGER NOT NULL DEFAULT 0,
    is_active       BOOLEAN NOT NULL DEFAULT true,
    create_time     TIMESTAMPTZ NOT NULL,
    update_time     TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (organization_id, workspace_id, automation_id, trigger_id),
    FOREIGN KEY (organization_id, workspace_id, automation_id) REFERENCES automations (organization_id, workspace_id, id) ON DELETE CASCADE
);

-- +goose Down
DROP TABLE automation_triggers;
DROP TABLE trigger_instances;
DROP TABLE automation_schedules;
