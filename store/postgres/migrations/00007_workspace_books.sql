-- +goose Up
-- Books registered in workspaces (external books at an HTTP endpoint). The
-- descriptor is a marshalled prose.book.v1.Book. request_id makes a retried
-- create return the first one.
CREATE TABLE workspace_books (
    organization_id TEXT COLLATE "C" NOT NULL,
    workspace_id    TEXT COLLATE "C" NOT NULL,
    name            TEXT COLLATE "C" NOT NULL,
    version         TEXT COLLATE "C" NOT NULL,
    book            BYTEA NOT NULL,
    request_id      TEXT COLLATE "C" NOT NULL DEFAULT '',
    create_time     TIMESTAMPTZ NOT NULL,
    update_time     TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (organization_id, workspace_id, name, version),
    FOREIGN KEY (organization_id, workspace_id) REFERENCES workspaces (organization_id, id) ON DELETE CASCADE
);
CREATE UNIQUE INDEX workspace_books_request ON workspace_books (organization_id, workspace_id, request_id) WHERE request_id <> '';

-- +goose Down
DROP TABLE workspace_books;
