-- +goose Up
-- Files of organizations, with their bytes in the row (the server bounds a
-- file to 32 MiB), and server secrets (the key that signs upload and download
-- URLs). Timestamps are integer unix microseconds (UTC).
CREATE TABLE files (
    organization_id TEXT NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    id              TEXT NOT NULL,
    workspace_id    TEXT NOT NULL DEFAULT '',
    filename        TEXT NOT NULL,
    mime_type       TEXT NOT NULL DEFAULT '',
    size_bytes      INTEGER NOT NULL DEFAULT 0,
    uploaded        INTEGER NOT NULL DEFAULT 0,
    content         BLOB,
    create_time     INTEGER NOT NULL,
    update_time     INTEGER NOT NULL,
    PRIMARY KEY (organization_id, id)
) STRICT;

CREATE TABLE server_secrets (
    name        TEXT PRIMARY KEY,
    value       BLOB NOT NULL,
    create_time INTEGER NOT NULL
) STRICT;

-- +goose Down
DROP TABLE server_secrets;
DROP TABLE files;
