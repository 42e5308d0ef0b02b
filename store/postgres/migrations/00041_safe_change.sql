-- +goose Up
-- Safe change: the tests of automations (their drafts'; every revision
-- keeps them as they stood, automation_revisions.tests, a marshalled
-- prose.persist.v1.TestSuite), what a publish checked
-- (automation_revisions.publish_check, a prose.persist.v1.PublishCheck),
-- and each automation's last replay with its results, kept until the next.
CREATE TABLE automation_tests (
    organization_id    TEXT COLLATE "C" NOT NULL,
    workspace_id       TEXT COLLATE "C" NOT NULL,
    automation_id      TEXT COLLATE "C" NOT NULL,
    id                 TEXT COLLATE "C" NOT NULL,
    display_name       TEXT COLLATE "C" NOT NULL,
    -- the display name folded (lower case, trimmed): unique in the automation
    name_key           TEXT COLLATE "C" NOT NULL,
    -- the test in the tests-file format (internal/safechange)
    spec               BYTEA NOT NULL,
    source_guide_entry TEXT COLLATE "C" NOT NULL DEFAULT '',
    create_time        TIMESTAMPTZ NOT NULL,
    update_time        TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (organization_id, workspace_id, automation_id, id),
    FOREIGN KEY (organization_id, workspace_id, automation_id) REFERENCES automations (organization_id, workspace_id, id) ON DELETE CASCADE
);
CREATE UNIQUE INDEX automation_tests_name ON automation_tests (organization_id, workspace_id, automation_id, name_key);
CREATE INDEX automation_tests_create_time ON automation_tests (organization_id, workspace_id, automation_id, create_time, id);

ALTER TABLE automation_revisions ADD COLUMN tests BYTEA;
ALTER TABLE automation_revisions ADD COLUMN publish_check BYTEA;

CREATE TABLE automation_replays (
    organization_id    TEXT COLLATE "C" NOT NULL,
    workspace_id       TEXT COLLATE "C" NOT NULL,
    automation_id      TEXT COLLATE "C" NOT NULL,
    id                 TEXT COLLATE "C" NOT NULL UNIQUE,
    state              TEXT COLLATE "C" NOT NULL,
    automation_version BIGINT NOT NULL,
    published_version  BIGINT NOT NULL,
    filter             TEXT COLLATE "C" NOT NULL DEFAULT '',
    run_count          BIGINT NOT NULL,
    replayed           BIGINT NOT NULL DEFAULT 0,
    unchanged          BIGINT NOT NULL DEFAULT 0,
    outputs_differ     BIGINT NOT NULL DEFAULT 0,
    new_exception      BIGINT NOT NULL DEFAULT 0,
    unanswered_call    BIGINT NOT NULL DEFAULT 0,
    failed             BIGINT NOT NULL DEFAULT 0,
    error_message      TEXT COLLATE "C" NOT NULL DEFAULT '',
    create_time        TIMESTAMPTZ NOT NULL,
    update_time        TIMESTAMPTZ NOT NULL,
    end_time           TIMESTAMPTZ,
    PRIMARY KEY (organization_id, workspace_id, automation_id),
    FOREIGN KEY (organization_id, workspace_id, automation_id) REFERENCES automations (organization_id, workspace_id, id) ON DELETE CASCADE
);

-- One row per replayed run, in replay order (seq); data is a marshalled
-- prose.persist.v1.ReplayResultDetails.
CREATE TABLE automation_replay_results (
    replay_id       TEXT COLLATE "C" NOT NULL REFERENCES automation_replays (id) ON DELETE CASCADE,
    seq             BIGINT NOT NULL,
    run_id          TEXT COLLATE "C" NOT NULL,
    outcome         TEXT COLLATE "C" NOT NULL,
    run_create_time TIMESTAMPTZ NOT NULL,
    data            BYTEA,
    PRIMARY KEY (replay_id, seq)
);

-- +goose Down
DROP TABLE automation_replay_results;
DROP TABLE automation_replays;
ALTER TABLE automation_revisions DROP COLUMN publish_check;
ALTER TABLE automation_revisions DROP COLUMN tests;
DROP TABLE automation_tests;
