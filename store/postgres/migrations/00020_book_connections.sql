-- +goose Up
-- Connections of books in workspaces. descriptor is a marshalled
-- prose.book.v1.BookConnectionDescriptor without credential values; secret
-- is the credentials sealed with AES-GCM by the books package (never plain
-- text).
CREATE TABLE book_connections (
    organization_id TEXT COLLATE "C" NOT NULL,
    workspace_id    TEXT COLLATE "C" NOT NULL,
    id              TEXT COLLATE "C" NOT NULL,
    book_name       TEXT COLLATE "C" NOT NULL,
    book_version    TEXT COLLATE "C" NOT NULL,
    name            TEXT COLLATE "C" NOT NULL,
    descriptor      BYTEA NOT NULL,
    secret          BYTEA NOT NULL,
    create_time     TIMESTAMPTZ NOT NULL,
    update_time     TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (organization_id, workspace_id, id),
    FOREIGN KEY (organization_id, workspace_id) REFERENCES workspaces (organization_id, id) ON DELETE CASCADE
);
CREATE UNIQUE INDEX book_connections_name ON book_connections (organization_id, workspace_id, name);

-- The key that seals connection secrets when the operator gives none: made
-- by the first process that starts on the database.
CREATE TABLE secret_keys (
    id          INTEGER PRIMARY KEY CHECK (id = 1),
    key         BYTEA NOT NULL,
    create_time TIMESTAMPTZ NOT NULL
);

-- +goose Down
DROP TABLE secret_keys;
DROP TABLE book_connections;
