-- +goose Up
-- The schedule of an automation (config: a marshalled
-- prose.platform.v1.ScheduleConfig). next_time is the next occurrence no
-- scheduler has handled yet (NULL: none left); generation counts the API's
-- writes, so a scheduler that read an older version advances nothing.
-- Timestamps are integer unix microseconds (UTC).
CREATE TABLE automation_schedules (
    organization_id TEXT NOT NULL,
    workspace_id    TEXT NOT NULL,
    automation_id   TEXT NOT NULL,
    config          BLOB NOT NULL,
    enabled         INTEGER NOT NULL DEFAULT 1,
    next_time       INTEGER,
    generation      INTEGER NOT NULL DEFAULT 1,
    create_time     INTEGER NOT NULL,
    update_time     INTEGER NOT NULL,
    PRIMARY KEY (organization_id, workspace_id, automation_id),
    FOREIGN KEY (organization_id, workspace_id, automation_id) REFERENCES automations (organization_id, workspace_id, id) ON DELETE CASCADE
) STRICT;
CREATE INDEX automation_schedules_due ON automation_schedules (next_time) WHERE enabled = 1 AND next_time IS NOT NULL;

-- Trigger instances (an inbound webhook, ...) of a workspace.
-- configuration is a marshalled prose.platform.v1.TriggerInstance holding
-- only its configuration map; secret signs inbound webhook bodies.
CREATE TABLE trigger_instances (
    organization_id TEXT NOT NULL,
    workspace_id    TEXT NOT NULL,
    id              TEXT NOT NULL,
    name            TEXT NOT NULL DEFAULT '',
    book_name       TEXT NOT NULL,
    book_version    TEXT NOT NULL DEFAULT '',
    connection_id   TEXT NOT NULL,
    trigger_id      TEXT NOT NULL DEFAULT '',
    configuration   BLOB NOT NULL,
    secret          TEXT NOT NULL DEFAULT '',
    automation_ids  TEXT NOT NULL DEFAULT '[]',
    create_time     INTEGER NOT NULL,
    update_time     INTEGER NOT NULL,
    PRIMARY KEY (organization_id, workspace_id, id),
    FOREIGN KEY (organization_id, workspace_id) REFERENCES workspaces (organization_id, id) ON DELETE CASCADE
) STRICT;

-- How a trigger instance starts an automation (input_mapping: JSON object).
CREATE TABLE automation_triggers (
    organization_id TEXT NOT NULL,
    workspace_id    TEXT NOT NULL,
    automation_id   TEXT NOT NULL,
    trigger_id      TEXT NOT NULL,
    input_mapping   TEXT NOT NULL DEFAULT '{}',
    phase_type      INTEGER NOT NULL DEFAULT 0,
    phase_sub_type  INTEGER NOT NULL DEFAULT 0,
    is_active       INTEGER NOT NULL DEFAULT 1,
    create_time     INTEGER NOT NULL,
    update_time     INTEGER NOT NULL,
    PRIMARY KEY (organization_id, workspace_id, automation_id, trigger_id),
    FOREIGN KEY (organization_id, workspace_id, automation_id) REFERENCES automations (organization_id, workspace_id, id) ON DELETE CASCADE
) STRICT;

-- +goose Down
DROP TABLE automation_triggers;
DROP TABLE trigger_instances;
DROP TABLE automation_schedules;
