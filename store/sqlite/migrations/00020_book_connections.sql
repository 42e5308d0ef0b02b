-- +goose Up
-- Connections of books in workspaces. descriptor is a marshalled
-- prose.book.v1.BookConnectionDescriptor without credential values; secret
-- is the credentials sealed with AES-GCM by the books package (never plain
-- text). Timestamps are integer unix microseconds (UTC).
CREATE TABLE book_connections (
    organization_id TEXT NOT NULL,
    workspace_id    TEXT NOT NULL,
    id              TEXT NOT NULL,
    book_name       TEXT NOT NULL,
    book_version    TEXT NOT NULL,
    name            TEXT NOT NULL,
    descriptor      BLOB NOT NULL,
    secret          BLOB NOT NULL,
    create_time     INTEGER NOT NULL,
    update_time     INTEGER NOT NULL,
    PRIMARY KEY (organization_id, workspace_id, id),
    FOREIGN KEY (organization_id, workspace_id) REFERENCES workspaces (organization_id, id) ON DELETE CASCADE
) STRICT;
CREATE UNIQUE INDEX book_connections_name ON book_connections (organization_id, workspace_id, name);

-- The key that seals connection secrets when the operator gives none: made
-- by the first process that starts on the database.
CREATE TABLE secret_keys (
    id          INTEGER PRIMARY KEY CHECK (id = 1),
    key         BLOB NOT NULL,
    create_time INTEGER NOT NULL
) STRICT;

-- +goose Down
DROP TABLE secret_keys;
DROP TABLE book_connections;
