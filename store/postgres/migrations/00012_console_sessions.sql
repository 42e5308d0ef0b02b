-- +goose Up
-- Sessions of the web console and one-time sign-in links (link = true).
-- Only a SHA-256 of the token is kept. A session ends with its membership.
CREATE TABLE console_sessions (
    token_hash      TEXT COLLATE "C" PRIMARY KEY,
    link            BOOLEAN NOT NULL DEFAULT false,
    organization_id TEXT COLLATE "C" NOT NULL,
    user_id         TEXT COLLATE "C" NOT NULL,
    api_key_id      TEXT COLLATE "C" NOT NULL DEFAULT '',
    csrf_token      TEXT COLLATE "C" NOT NULL DEFAULT '',
    create_time     TIMESTAMPTZ NOT NULL,
    expire_time     TIMESTAMPTZ NOT NULL,
    FOREIGN KEY (organization_id, user_id) REFERENCES organization_members (organization_id, user_id) ON DELETE CASCADE
);
CREATE INDEX console_sessions_expire ON console_sessions (expire_time);

-- +goose Down
DROP TABLE console_sessions;
