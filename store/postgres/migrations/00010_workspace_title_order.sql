-- +goose Up
-- order_by=title sorts as a person reads: case-insensitively, then by id.
-- title is COLLATE "C", so lower() changes ASCII letters only, exactly as
-- SQLite's lower() does: both backends give the same order.
DROP INDEX workspaces_title;
CREATE INDEX workspaces_title_ci ON workspaces (organization_id, lower(title), id);

-- +goose Down
DROP INDEX workspaces_title_ci;
CREATE INDEX workspaces_title ON workspaces (organization_id, title, id);
