-- +goose Up
-- order_by=title sorts as a person reads: case-insensitively (ASCII letters;
-- lower() changes nothing else here, as under PostgreSQL's "C" collation),
-- then by id. The index serves the keyset pages of that order.
DROP INDEX workspaces_title;
CREATE INDEX workspaces_title_ci ON workspaces (organization_id, lower(title), id);

-- +goose Down
DROP INDEX workspaces_title_ci;
CREATE INDEX workspaces_title ON workspaces (organization_id, title, id);
