-- +goose Up
-- Timestamps are timestamptz (microsecond precision). Text columns use
-- COLLATE "C" so that orderings match the SQLite backend byte for byte.
CREATE TABLE organizations (
    id           TEXT COLLATE "C" PRIMARY KEY,
    display_name TEXT COLLATE "C" NOT NULL DEFAULT '',
    create_time  TIMESTAMPTZ NOT NULL,
    update_time  TIMESTAMPTZ NOT NULL
);

CREATE TABLE users (
    id           TEXT COLLATE "C" PRIMARY KEY,
    display_name TEXT COLLATE "C" NOT NULL DEFAULT '',
    email        TEXT COLLATE "C" NOT NULL,
    create_time  TIMESTAMPTZ NOT NULL,
    update_time  TIMESTAMPTZ NOT NULL
);
CREATE UNIQUE INDEX users_email ON users (lower(email));

CREATE TABLE workspaces (
    organization_id TEXT COLLATE "C" NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    id              TEXT COLLATE "C" NOT NULL,
    title           TEXT COLLATE "C" NOT NULL,
    icon            TEXT COLLATE "C" NOT NULL DEFAULT '',
    icon_color      TEXT COLLATE "C" NOT NULL DEFAULT '',
    creator_id      TEXT COLLATE "C" REFERENCES users (id) ON DELETE SET NULL,
    create_time     TIMESTAMPTZ NOT NULL,
    update_time     TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (organization_id, id)
);
CREATE INDEX workspaces_create_time ON workspaces (organization_id, create_time, id);
CREATE INDEX workspaces_update_time ON workspaces (organization_id, update_time, id);
CREATE INDEX workspaces_title ON workspaces (organization_id, title, id);
CREATE INDEX workspaces_creator ON workspaces (creator_id);

CREATE TABLE workspace_preferences (
    organization_id     TEXT COLLATE "C" NOT NULL,
    workspace_id        TEXT COLLATE "C" NOT NULL,
    support_team_access BOOLEAN NOT NULL DEFAULT false,
    time_zone           TEXT COLLATE "C" NOT NULL DEFAULT '',
    time_format         TEXT COLLATE "C" NOT NULL DEFAULT 'TIME_FORMAT_UNSPECIFIED',
    date_format         TEXT COLLATE "C" NOT NULL DEFAULT 'DATE_FORMAT_UNSPECIFIED',
    decimal_symbol      TEXT COLLATE "C" NOT NULL DEFAULT 'DECIMAL_SYMBOL_UNSPECIFIED',
    decimal_places      INTEGER NOT NULL DEFAULT 0,
    measurement_system  TEXT COLLATE "C" NOT NULL DEFAULT 'MEASUREMENT_SYSTEM_UNSPECIFIED',
    update_time         TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (organization_id, workspace_id),
    FOREIGN KEY (organization_id, workspace_id) REFERENCES workspaces (organization_id, id) ON DELETE CASCADE
);

CREATE TABLE roles (
    organization_id TEXT COLLATE "C" NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    id              TEXT COLLATE "C" NOT NULL,
    scope           TEXT COLLATE "C" NOT NULL CHECK (scope IN ('organization', 'workspace')),
    title           TEXT COLLATE "C" NOT NULL DEFAULT '',
    description     TEXT COLLATE "C" NOT NULL DEFAULT '',
    permissions     TEXT COLLATE "C" NOT NULL DEFAULT '[]', -- JSON array of strings
    builtin         BOOLEAN NOT NULL DEFAULT false,
    create_time     TIMESTAMPTZ NOT NULL,
    update_time     TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (organization_id, id)
);

CREATE TABLE organization_members (
    organization_id TEXT COLLATE "C" NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    user_id         TEXT COLLATE "C" NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    create_time     TIMESTAMPTZ NOT NULL,
    update_time     TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (organization_id, user_id)
);
CREATE INDEX organization_members_user ON organization_members (user_id, organization_id);

CREATE TABLE organization_role_bindings (
    organization_id TEXT COLLATE "C" NOT NULL,
    user_id         TEXT COLLATE "C" NOT NULL,
    role_id         TEXT COLLATE "C" NOT NULL,
    create_time     TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (organization_id, user_id, role_id),
    FOREIGN KEY (organization_id, user_id) REFERENCES organization_members (organization_id, user_id) ON DELETE CASCADE,
    FOREIGN KEY (organization_id, role_id) REFERENCES roles (organization_id, id) ON DELETE RESTRICT
);
CREATE INDEX organization_role_bindings_role ON organization_role_bindings (organization_id, role_id);

CREATE TABLE workspace_members (
    organization_id TEXT COLLATE "C" NOT NULL,
    workspace_id    TEXT COLLATE "C" NOT NULL,
    user_id         TEXT COLLATE "C" NOT NULL,
    create_time     TIMESTAMPTZ NOT NULL,
    update_time     TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (organization_id, workspace_id, user_id),
    FOREIGN KEY (organization_id, workspace_id) REFERENCES workspaces (organization_id, id) ON DELETE CASCADE,
    FOREIGN KEY (organization_id, user_id) REFERENCES organization_members (organization_id, user_id) ON DELETE CASCADE
);
CREATE INDEX workspace_members_user ON workspace_members (organization_id, user_id);
CREATE INDEX workspace_members_create_time ON workspace_members (organization_id, workspace_id, create_time, user_id);

CREATE TABLE workspace_role_bindings (
    organization_id TEXT COLLATE "C" NOT NULL,
    workspace_id    TEXT COLLATE "C" NOT NULL,
    user_id         TEXT COLLATE "C" NOT NULL,
    role_id         TEXT COLLATE "C" NOT NULL,
    create_time     TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (organization_id, workspace_id, user_id, role_id),
    FOREIGN KEY (organization_id, workspace_id, user_id)
        REFERENCES workspace_members (organization_id, workspace_id, user_id) ON DELETE CASCADE,
    FOREIGN KEY (organization_id, role_id) REFERENCES roles (organization_id, id) ON DELETE RESTRICT
);
CREATE INDEX workspace_role_bindings_role ON workspace_role_bindings (organization_id, role_id);

-- workspace_id is '' for an invitation to the organization itself.
CREATE TABLE invitations (
    organization_id TEXT COLLATE "C" NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    id              TEXT COLLATE "C" NOT NULL,
    workspace_id    TEXT COLLATE "C" NOT NULL DEFAULT '',
    email           TEXT COLLATE "C" NOT NULL,
    role_ids        TEXT COLLATE "C" NOT NULL DEFAULT '[]',
    inviter_id      TEXT COLLATE "C" REFERENCES users (id) ON DELETE SET NULL,
    create_time     TIMESTAMPTZ NOT NULL,
    expire_time     TIMESTAMPTZ,
    PRIMARY KEY (organization_id, id)
);
CREATE UNIQUE INDEX invitations_email ON invitations (organization_id, workspace_id, lower(email));
CREATE INDEX invitations_list ON invitations (organization_id, workspace_id, create_time, id);

CREATE TABLE api_keys (
    id               TEXT COLLATE "C" PRIMARY KEY,
    organization_id  TEXT COLLATE "C" NOT NULL,
    user_id          TEXT COLLATE "C" NOT NULL,
    name             TEXT COLLATE "C" NOT NULL DEFAULT '',
    prefix           TEXT COLLATE "C" NOT NULL UNIQUE,
    secret_hash      BYTEA NOT NULL,
    all_workspaces   BOOLEAN NOT NULL DEFAULT false,
    workspace_ids    TEXT COLLATE "C" NOT NULL DEFAULT '[]',
    permission_level TEXT COLLATE "C" NOT NULL CHECK (permission_level IN ('all', 'read_only', 'restricted')),
    permissions      TEXT COLLATE "C" NOT NULL DEFAULT '{}',
    create_time      TIMESTAMPTZ NOT NULL,
    update_time      TIMESTAMPTZ NOT NULL,
    expire_time      TIMESTAMPTZ,
    last_used_time   TIMESTAMPTZ,
    FOREIGN KEY (organization_id, user_id) REFERENCES organization_members (organization_id, user_id) ON DELETE CASCADE
);
CREATE INDEX api_keys_list ON api_keys (organization_id, create_time, id);
CREATE INDEX api_keys_user ON api_keys (organization_id, user_id, create_time, id);

CREATE TABLE idempotency_keys (
    organization_id TEXT COLLATE "C" NOT NULL,
    method          TEXT COLLATE "C" NOT NULL,
    request_id      TEXT COLLATE "C" NOT NULL,
    resource_name   TEXT COLLATE "C" NOT NULL,
    create_time     TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (organization_id, method, request_id)
);
CREATE INDEX idempotency_keys_create_time ON idempotency_keys (create_time);

-- +goose Down
DROP TABLE IF EXISTS idempotency_keys;
DROP TABLE IF EXISTS api_keys;
DROP TABLE IF EXISTS invitations;
DROP TABLE IF EXISTS workspace_role_bindings;
DROP TABLE IF EXISTS workspace_members;
DROP TABLE IF EXISTS organization_role_bindings;
DROP TABLE IF EXISTS organization_members;
DROP TABLE IF EXISTS roles;
DROP TABLE IF EXISTS workspace_preferences;
DROP TABLE IF EXISTS workspaces;
DROP TABLE IF EXISTS users;
DROP TABLE IF EXISTS organizations;
