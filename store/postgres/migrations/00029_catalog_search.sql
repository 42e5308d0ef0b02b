-- +goose Up
-- Catalog search: one row per searchable item (the book itself, each
-- procedure, each concept) of every book registered in a workspace, written in
-- the transaction that creates, updates or deletes the book
-- (store/internal/sqlstore/catalog.go). doc weighs name 'A' and text 'B' for
-- ts_rank. Rows with an empty organization and workspace are the built-in
-- books' (written at start); a workspace book's rows go with the book (a
-- trigger, also when a workspace or organization delete cascades to it).
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
    ) STORED
);
CREATE INDEX catalog_entries_book ON catalog_entries (organization_id, workspace_id, book_name, book_version);
CREATE INDEX catalog_entries_doc ON catalog_entries USING GIN (doc);

-- +goose StatementBegin
CREATE FUNCTION workspace_books_catalog_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM catalog_entries
    WHERE organization_id = OLD.organization_id AND workspace_id = OLD.workspace_id
      AND book_name = OLD.name AND book_version = OLD.version;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd
CREATE TRIGGER workspace_books_catalog_delete AFTER DELETE ON workspace_books
    FOR EACH ROW EXECUTE FUNCTION workspace_books_catalog_delete();

-- +goose Down
DROP TRIGGER workspace_books_catalog_delete ON workspace_books;
DROP FUNCTION workspace_books_catalog_delete();
DROP TABLE catalog_entries;
