-- +goose Up
-- Catalog search: one row per searchable item (the book itself, each
-- procedure, each concept) of every book registered in a workspace, written in
-- the transaction that creates, updates or deletes the book
-- (store/internal/sqlstore/catalog.go). name is weighted above text when
-- ranking (bm25). Rows with an empty organization and workspace are the
-- built-in books' (written at start).
CREATE VIRTUAL TABLE catalog_fts USING fts5(
    name,
    text,
    organization_id UNINDEXED,
    workspace_id UNINDEXED,
    book_name UNINDEXED,
    book_version UNINDEXED,
    kind UNINDEXED,
    item UNINDEXED,
    tokenize = 'porter unicode61'
);

-- A virtual table has no foreign keys: the book's rows go with the book (also
-- when a workspace or organization delete cascades to it).
-- +goose StatementBegin
CREATE TRIGGER workspace_books_catalog_delete AFTER DELETE ON workspace_books BEGIN
    DELETE FROM catalog_fts
    WHERE organization_id = old.organization_id AND workspace_id = old.workspace_id
      AND book_name = old.name AND book_version = old.version;
END;
-- +goose StatementEnd

-- +goose Down
DROP TRIGGER workspace_books_catalog_delete;
DROP TABLE catalog_fts;
