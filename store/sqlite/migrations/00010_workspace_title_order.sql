-- +goose Up
-- order_by=title sorts as a person reads: case-insensitively (ASCII letters,
-- as store.TitleSortKey and SQLite's lower() fold them), then by id. The key
-- is a stored column, so that the index serves keyset pages as a range.
ALTER TABLE workspaces ADD COLUMN title_key TEXT NOT NULL DEFAULT '';
UPDATE workspaces SET title_key = lower(title);
DROP INDEX workspaces_title;
CREATE INDEX workspaces_title_key ON workspaces (organization_id, title_key, id);

-- +goose Down
DROP INDEX workspaces_title_key;
CREATE INDEX workspaces_title ON workspaces (organization_id, title, id);
ALTER TABLE workspaces DROP COLUMN title_key;
