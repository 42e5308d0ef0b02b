-- +goose Up
-- Books registered in workspaces (external books at an HTTP endpoint). The
-- descriptor is a marshalled prose.book.v1.Book. request_id makes a retried
-- create return the first one. Timestamps are integer unix microseconds (UTC).
CREATE TABLE workspace_books (
    organization_id TEXT NOT NULL,
    workspace_id    TEXT NOT NULL,
    name            TEXT NOT NULL,
    version         TEXT NOT NULL,
    book            BLOB NOT NULL,
    request_id      TEXT NOT NULL DEFAULT '',
    create_time     INTEGER NOT NULL,
    update_time     INTEGER NOT NULL,
    PRIMARY KEY (organization_id, workspace_id, name, version),
    FOREIGN KEY (organization_id, workspace_id) REFERENCES workspaces (organization_id, id) ON DELETE CASCADE
) STRICT;
CREATE UNIQUE INDEX workspace_books_request ON workspace_books (organization_id, workspace_id, request_id) WHERE request_id <> '';

-- +goose Down
DROP TABLE workspace_books;
