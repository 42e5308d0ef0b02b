-- +goose Up
-- Sessions of the web console and one-time sign-in links (link = 1). Only a
-- SHA-256 of the token is kept. A session ends with its membership.
-- Timestamps are integer unix microseconds (UTC).
CREATE TABLE console_sessions (
    token_hash      TEXT PRIMARY KEY,
    link            INTEGER NOT NULL DEFAULT 0,
    organization_id TEXT NOT NULL,
    user_id         TEXT NOT NULL,
    api_key_id      TEXT NOT NULL DEFAULT '',
    csrf_token      TEXT NOT NULL DEFAULT '',
    create_time     INTEGER NOT NULL,
    expire_time     INTEGER NOT NULL,
    FOREIGN KEY (organization_id, user_id) REFERENCES organization_members (organization_id, user_id) ON DELETE CASCADE
) STRICT;
CREATE INDEX console_sessions_expire ON console_sessions (expire_time);

-- +goose Down
DROP TABLE console_sessions;
