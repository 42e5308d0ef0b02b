-- +goose Up
-- The inbox filters by assignee ("assigned to me"): the exceptions of a
-- workspace by assignee and state, newest first.
CREATE INDEX exceptions_assignee ON exceptions (organization_id, workspace_id, assignee, state, create_time, id);

-- +goose Down
DROP INDEX exceptions_assignee;
