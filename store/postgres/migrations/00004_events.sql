-- +goose Up
-- Conversation events of runs with agents. The payload is the marshalled
-- prose.platform.v1.Event; the other columns index it.
CREATE TABLE events (
    run_id          TEXT COLLATE "C" NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    agent_id        TEXT COLLATE "C" NOT NULL,
    id              TEXT COLLATE "C" NOT NULL,
    organization_id TEXT COLLATE "C" NOT NULL,
    workspace_id    TEXT COLLATE "C" NOT NULL,
    automation_id   TEXT COLLATE "C" NOT NULL,
    seq             BIGINT NOT NULL,
    revision        BIGINT NOT NULL,
    exception_id    TEXT COLLATE "C" NOT NULL DEFAULT '',
    state           TEXT COLLATE "C" NOT NULL,
    payload         BYTEA NOT NULL,
    create_time     TIMESTAMPTZ NOT NULL,
    update_time     TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (run_id, agent_id, id)
);
CREATE UNIQUE INDEX events_seq ON events (run_id, agent_id, seq);
CREATE INDEX events_update_time ON events (run_id, agent_id, update_time);

-- +goose Down
DROP TABLE events;
