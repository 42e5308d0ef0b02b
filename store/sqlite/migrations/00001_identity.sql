-- +goose Up
-- Timestamps are integer unix microseconds (UTC).
CREATE TABLE organizations (
    id           TEXT PRIMARY KEY,
    display_name TEXT NOT NULL DEFAULT '',
    create_time  INTEGER NOT NULL,
    update_time  INTEGER NOT NULL
) STRICT;

CREATE TABLE users (
    id           TEXT PRIMARY KEY,
    display_name TEXT NOT NULL DEFAULT '',
    email        TEXT NOT NULL,
    create_time  INTEGER NOT NULL,
    update_time  INTEGER NOT NULL
) STRICT;
CREATE UNIQUE INDEX users_email ON users (lower(email));

CREATE TABLE workspaces (
    organization_id TEXT NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    id              TEXT NOT NULL,
    title           TEXT NOT NULL,
    icon            TEXT NOT NULL DEFAULT '',
    icon_color      TEXT NOT NULL DEFAULT '',
    creator_id      TEXT REFERENCES users (id) ON DELETE SET NULL,
    create_time     INTEGER NOT NULL,
    update_time     INTEGER NOT NULL,
    PRIMARY KEY (organization_id, id)
) STRICT;
CREATE INDEX workspaces_create_time ON workspaces (organization_id, create_time, id);
CREATE INDEX workspaces_update_time ON workspaces (organization_id, update_time, id);
CREATE INDEX workspaces_title ON workspaces (organization_id, title, id);
CREATE INDEX workspaces_creator ON workspaces (creator_id);

CREATE TABLE workspace_preferences (
    organization_id     TEXT NOT NULL,
    workspace_id        TEXT NOT NULL,
    support_team_access INTEGER NOT NULL DEFAULT 0,
    time_zone           TEXT NOT NULL DEFAULT '',
    time_format         TEXT NOT NULL DEFAULT 'TIME_FORMAT_UNSPECIFIED',
    date_format         TEXT NOT NULL DEFAULT 'DATE_FORMAT_UNSPECIFIED',
    decimal_symbol      TEXT NOT NULL DEFAULT 'DECIMAL_SYMBOL_UNSPECIFIED',
    decimal_places      INTEGER NOT NULL DEFAULT 0,
    measurement_system  TEXT NOT NULL DEFAULT 'MEASUREMENT_SYSTEM_UNSPECIFIED',
    update_time         INTEGER NOT NULL,
    PRIMARY KEY (organization_id, workspace_id),
    FOREIGN KEY (organization_id, workspace_id) REFERENCES workspaces (organization_id, id) ON DELETE CASCADE
) STRICT;

CREATE TABLE roles (
    organization_id TEXT NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    id              TEXT NOT NULL,
    scope           TEXT NOT NULL CHECK (scope IN ('organization', 'workspace')),
    title           TEXT NOT NULL DEFAULT '',
    description     TEXT NOT NULL DEFAULT '',
    permissions     TEXT NOT NULL DEFAULT '[]', -- JSON array of strings
    builtin         INTEGER NOT NULL DEFAULT 0,
    create_time     INTEGER NOT NULL,
    update_time     INTEGER NOT NULL,
    PRIMARY KEY (organization_id, id)
) STRICT;

CREATE TABLE organization_members (
    organization_id TEXT NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    user_id         TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    create_time     INTEGER NOT NULL,
    update_time     INTEGER NOT NULL,
    PRIMARY KEY (organization_id, user_id)
) STRICT;
CREATE INDEX organization_members_user ON organization_members (user_id, organization_id);

CREATE TABLE organization_role_bindings (
    organization_id TEXT NOT NULL,
    user_id         TEXT NOT NULL,
    role_id         TEXT NOT NULL,
    create_time     INTEGER NOT NULL,
    PRIMARY KEY (organization_id, user_id, role_id),
    FOREIGN KEY (organization_id, user_id) REFERENCES organization_members (organization_id, user_id) ON DELETE CASCADE,
    FOREIGN KEY (organization_id, role_id) REFERENCES roles (organization_id, id) ON DELETE RESTRICT
) STRICT;
CREATE INDEX organization_role_bindings_role ON organization_role_bindings (organization_id, role_id);

CREATE TABLE workspace_members (
    organization_id TEXT NOT NULL,
    workspace_id    TEXT NOT NULL,
    user_id         TEXT NOT NULL,
    create_time     INTEGER NOT NULL,
    update_time     INTEGER NOT NULL,
    PRIMARY KEY (organization_id, workspace_id, user_id),
    FOREIGN KEY (organization_id, workspace_id) REFERENCES workspaces (organization_id, id) ON DELETE CASCADE,
    FOREIGN KEY (organization_id, user_id) REFERENCES organization_members (organization_id, user_id) ON DELETE CASCADE
) STRICT;
CREATE INDEX workspace_members_user ON workspace_members (organization_id, user_id);
CREATE INDEX workspace_members_create_time ON workspace_members (organization_id, workspace_id, create_time, user_id);

CREATE TABLE workspace_role_bindings (
    organization_id TEXT NOT NULL,
    workspace_id    TEXT NOT NULL,
    user_id         TEXT NOT NULL,
    role_id         TEXT NOT NULL,
    create_time     INTEGER NOT NULL,
    PRIMARY KEY (organization_id, workspace_id, user_id, role_id),
    FOREIGN KEY (organization_id, workspace_id, user_id)
        REFERENCES workspace_members (organization_id, workspace_id, user_id) ON DELETE CASCADE,
    FOREIGN KEY (organization_id, role_id) REFERENCES roles (organization_id, id) ON DELETE RESTRICT
) STRICT;
CREATE INDEX workspace_role_bindings_role ON workspace_role_bindings (organization_id, role_id);

-- workspace_id is '' for an invitation to the organization itself.
CREATE TABLE invitations (
    organization_id TEXT NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    id              TEXT NOT NULL,
    workspace_id    TEXT NOT NULL DEFAULT '',
    email           TEXT NOT NULL,
    role_ids        TEXT NOT NULL DEFAULT '[]',
    inviter_id      TEXT REFERENCES users (id) ON DELETE SET NULL,
    create_time     INTEGER NOT NULL,
    expire_time     INTEGER,
    PRIMARY KEY (organization_id, id)
) STRICT;
CREATE UNIQUE INDEX invitations_email ON invitations (organization_id, workspace_id, lower(email));
CREATE INDEX invitations_list ON invitations (organization_id, workspace_id, create_time, id);

CREATE TABLE api_keys (
    id               TEXT PRIMARY KEY,
    organization_id  TEXT NOT NULL,
    user_id          TEXT NOT NULL,
    name             TEXT NOT NULL DEFAULT '',
    prefix           TEXT NOT NULL UNIQUE,
    secret_hash      BLOB NOT NULL,
    all_workspaces   INTEGER NOT NULL DEFAULT 0,
    workspace_ids    TEXT NOT NULL DEFAULT '[]',
    permission_level TEXT NOT NULL CHECK (permission_level IN ('all', 'read_only', 'restricted')),
    permissions      TEXT NOT NULL DEFAULT '{}',
    create_time      INTEGER NOT NULL,
    update_time      INTEGER NOT NULL,
    expire_time      INTEGER,
    last_used_time   INTEGER,
    FOREIGN KEY (organization_id, user_id) REFERENCES organization_members (organization_id, user_id) ON DELETE CASCADE
) STRICT;
CREATE INDEX api_keys_list ON api_keys (organization_id, create_time, id);
CREATE INDEX api_keys_user ON api_keys (organization_id, user_id, create_time, id);

CREATE TABLE idempotency_keys (
    organization_id TEXT NOT NULL,
    method          TEXT NOT NULL,
    request_id      TEXT NOT NULL,
    resource_name   TEXT NOT NULL,
    create_time     INTEGER NOT NULL,
    PRIMARY KEY (organization_id, method, request_id)
) STRICT;
CREATE INDEX idempotency_keys_create_time ON idempotency_keys (create_time);

-- +goose Down
DROP TABLE idempotency_keys;
DROP TABLE api_keys;
DROP TABLE invitations;
DROP TABLE workspace_role_bindings;
DROP TABLE workspace_members;
DROP TABLE organization_role_bindings;
DROP TABLE organization_members;
DROP TABLE roles;
DROP TABLE workspace_preferences;
DROP TABLE workspaces;
DROP TABLE users;
DROP TABLE organizations;
