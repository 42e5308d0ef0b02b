-- +goose Up
-- Safe change: the tests of automations (their drafts'; every revision
-- keeps them as they stood, automation_revisions.tests, a marshalled
-- prose.persist.v1.TestSuite), what a publish checked
-- (automation_revisions.publish_check, a prose.persist.v1.PublishCheck),
-- and each automation's last replay with its results, kept until the next.
CREATE TABLE automation_tests (
    organization_id    TEXT NOT NULL,
    workspace_id       TEXT NOT NULL,
    automation_id      TEXT NOT NULL,
    id                 TEXT NOT NULL,
    display_name       TEXT NOT NULL,
    -- the display name folded (lower case, trimmed): unique in the automation
    name_key           TEXT NOT NULL,
    -- the test in the tests-file format (internal/safechange)
    spec               BLOB NOT NULL,
    source_guide_entry TEXT NOT NULL DEFAULT '',
    create_time        INTEGER NOT NULL,
    update_time        INTEGER NOT NULL,
    PRIMARY KEY (organization_id, workspace_id, automation_id, id),
    FOREIGN KEY (organization_id, workspace_id, automation_id) REFERENCES automations (organization_id, workspace_id, id) ON DELETE CASCADE
) STRICT;
CREATE UNIQUE INDEX automation_tests_name ON automation_tests (organization_id, workspace_id, automation_id, name_key);
CREATE INDEX automation_tests_create_time ON automation_tests (organization_id, workspace_id, automation_id, create_time, id);

ALTER TABLE automation_revisions ADD COLUMN tests BLOB;
ALTER TABLE automation_revisions ADD COLUMN publish_check BLOB;

CREATE TABLE automation_replays (
    organization_id    TEXT NOT NULL,
    workspace_id       TEXT NOT NULL,
    automation_id      TEXT NOT NULL,
    id                 TEXT NOT NULL UNIQUE,
    state              TEXT NOT NULL,
    automation_version INTEGER NOT NULL,
    published_version  INTEGER NOT NULL,
    filter             TEXT NOT NULL DEFAULT '',
    run_count          INTEGER NOT NULL,
    replayed           INTEGER NOT NULL DEFAULT 0,
    unchanged          INTEGER NOT NULL DEFAULT 0,
    outputs_differ     INTEGER NOT NULL DEFAULT 0,
    new_exception      INTEGER NOT NULL DEFAULT 0,
    unanswered_call    INTEGER NOT NULL DEFAULT 0,
    failed             INTEGER NOT NULL DEFAULT 0,
    error_message      TEXT NOT NULL DEFAULT '',
    create_time        INTEGER NOT NULL,
    update_time        INTEGER NOT NULL,
    end_time           INTEGER,
    PRIMARY KEY (organization_id, workspace_id, automation_id),
    FOREIGN KEY (organization_id, workspace_id, automation_id) REFERENCES automations (organization_id, workspace_id, id) ON DELETE CASCADE
) STRICT;

-- One row per replayed run, in replay order (seq); data is a marshalled
-- prose.persist.v1.ReplayResultDetails.
CREATE TABLE automation_replay_results (
    replay_id       TEXT NOT NULL REFERENCES automation_replays (id) ON DELETE CASCADE,
    seq             INTEGER NOT NULL,
    run_id          TEXT NOT NULL,
    outcome         TEXT NOT NULL,
    run_create_time INTEGER NOT NULL,
    data            BLOB,
    PRIMARY KEY (replay_id, seq)
) STRICT;

-- +goose Down
DROP TABLE automation_replay_results;
DROP TABLE automation_replays;
ALTER TABLE automation_revisions DROP COLUMN publish_check;
ALTER TABLE automation_revisions DROP COLUMN tests;
DROP TABLE automation_tests;
