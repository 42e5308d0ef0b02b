-- +goose Up
-- The inbox filters by assignee ("assigned to me"), automation and group,
-- newest first: an index per filter column that ends with the list's order,
-- so that a filter matching few (or no) pending exceptions does not walk
-- every pending one by time. The automation and group indexes replace
-- those of 00002 (their prefixes).
CREATE INDEX exceptions_assignee ON exceptions (organization_id, workspace_id, assignee, state, create_time, id);
DROP INDEX exceptions_automation;
CREATE INDEX exceptions_automation ON exceptions (organization_id, workspace_id, automation_id, state, create_time, id);
DROP INDEX exceptions_group;
CREATE INDEX exceptions_group ON exceptions (organization_id, workspace_id, group_id, state, create_time, id);

-- +goose Down
DROP INDEX exceptions_assignee;
DROP INDEX exceptions_automation;
CREATE INDEX exceptions_automation ON exceptions (organization_id, workspace_id, automation_id, state);
DROP INDEX exceptions_group;
CREATE INDEX exceptions_group ON exceptions (organization_id, workspace_id, group_id, state);
