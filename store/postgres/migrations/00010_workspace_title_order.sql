-- +goose Up
-- order_by=title sorts as a person reads: case-insensitively, then by id.
-- The key is a stored column (store.TitleSortKey: ASCII letters folded);
-- title is COLLATE "C", so lower() folds ASCII letters only, exactly as
-- SQLite's does, and both backends compare the keys byte by byte.
ALTER TABLE workspaces ADD COLUMN title_key TEXT COLLATE "C" NOT NULL DEFAULT '';
UPDATE workspaces SET title_key = lower(title);
DROP INDEX workspaces_title;
CREATE INDEX workspaces_title_key ON workspaces (organization_id, title_key, id);

-- +goose Down
DROP INDEX workspaces_title_key;
CREATE INDEX workspaces_title ON workspaces (organization_id, title, id);
ALTER TABLE workspaces DROP COLUMN title_key;
