-- +goose Up
-- Catalog search: one row per searchable item (the book itself, each
-- procedure, each concept) of every book registered in a workspace, written in
-- the transaction that creates, updates or deletes the book
-- (store/internal/sqlstore/catalog.go). doc weighs name 'A' and text 'B' for
-- ts_rank.
CREATE TABLE catalog_entries (
    organization_id TEXT COLLATE "C" NOT NULL,
    workspace_id    TEXT COLLATE "C" NOT NULL,
    book_name       TEXT COLLATE "C" NOT NULL,
    book_version    TEXT COLLATE "C" NOT NULL,
    kind            TEXT COLLATE "C" NOT NULL,
    item            TEXT COLLATE "C" NOT NULL,
    name            TEXT NOT NULL,
    text            TEXT NOT NULL,
    doc             TSVECTOR GENERATED ALWAYS AS (
        setweight(to_tsvector('english', name), 'A') || setweight(to_tsvector('english', text), 'B')
    ) STORED,
    FOREIGN KEY (organization_id, workspace_id, book_name, book_version)
        REFERENCES workspace_books (organization_id, workspace_id, name, version) ON DELETE CASCADE
);
CREATE INDEX catalog_entries_book ON catalog_entries (organization_id, workspace_id, book_name, book_version);
CREATE INDEX catalog_entries_doc ON catalog_entries USING GIN (doc);

-- +goose Down
DROP TABLE catalog_entries;
