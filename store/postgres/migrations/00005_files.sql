-- +goose Up
-- Files of organizations, with their bytes in the row (the server bounds a
-- file to 32 MiB; BYTEA is TOASTed out of line), and server secrets (the key
-- that signs upload and download URLs).
CREATE TABLE files (
    organization_id TEXT COLLATE "C" NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    id              TEXT COLLATE "C" NOT NULL,
    workspace_id    TEXT COLLATE "C" NOT NULL DEFAULT '',
    filename        TEXT COLLATE "C" NOT NULL,
    mime_type       TEXT COLLATE "C" NOT NULL DEFAULT '',
    size_bytes      BIGINT NOT NULL DEFAULT 0,
    uploaded        BOOLEAN NOT NULL DEFAULT FALSE,
    content         BYTEA,
    create_time     TIMESTAMPTZ NOT NULL,
    update_time     TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (organization_id, id)
);

CREATE TABLE server_secrets (
    name        TEXT COLLATE "C" PRIMARY KEY,
    value       BYTEA NOT NULL,
    create_time TIMESTAMPTZ NOT NULL
);

-- +goose Down
DROP TABLE server_secrets;
DROP TABLE files;
