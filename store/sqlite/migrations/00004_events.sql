-- +goose Up
-- Conversation events of runs with agents. The payload is the marshalled
-- prose.platform.v1.Event; the other columns index it. Timestamps are integer
-- unix microseconds (UTC).
CREATE TABLE events (
    run_id          TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    agent_id        TEXT NOT NULL,
    id              TEXT NOT NULL,
    organization_id TEXT NOT NULL,
    workspace_id    TEXT NOT NULL,
    automation_id   TEXT NOT NULL,
    seq             INTEGER NOT NULL,
    revision        INTEGER NOT NULL,
    exception_id    TEXT NOT NULL DEFAULT '',
    state           TEXT NOT NULL,
    payload         BLOB NOT NULL,
    create_time     INTEGER NOT NULL,
    update_time     INTEGER NOT NULL,
    PRIMARY KEY (run_id, agent_id, id)
) STRICT;
CREATE UNIQUE INDEX events_seq ON events (run_id, agent_id, seq);
CREATE INDEX events_update_time ON events (run_id, agent_id, update_time);

-- +goose Down
DROP TABLE events;
