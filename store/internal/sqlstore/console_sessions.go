package sqlstore

import (
	"context"
	"fmt"
	"time"

	"github.com/proserun/prose/store"
)

const consoleSessionCols = `token_hash, link, organization_id, user_id, api_key_id, csrf_token, create_time, expire_time`

func scanConsoleSession(s interface{ Scan(...any) error }) (store.ConsoleSession, error) {
	var cs store.ConsoleSession
	err := s.Scan(&cs.TokenHash, &cs.Link, &cs.OrganizationID, &cs.UserID, &cs.APIKeyID, &cs.CSRFToken,
		ts{&cs.CreateTime}, ts{&cs.ExpireTime})
	return cs, err
}

// CreateConsoleSession implements store.ConsoleSessions.
func (db *DB) CreateConsoleSession(ctx context.Context, s store.ConsoleSession) (store.ConsoleSession, error) {
	if s.TokenHash == "" || s.ExpireTime.IsZero() {
		return store.ConsoleSession{}, fmt.Errorf("%w: a console session needs a token hash and an expiry", store.ErrInvalidArgument)
	}
	s.CreateTime = db.now()
	s.ExpireTime = store.Time(s.ExpireTime)
	_, err := db.writer().exec(ctx, `INSERT INTO console_sessions (`+consoleSessionCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
		s.TokenHash, s.Link, s.OrganizationID, s.UserID, s.APIKeyID, s.CSRFToken, s.CreateTime, s.ExpireTime)
	if err != nil {
		return store.ConsoleSession{}, db.mapErr(err, fmt.Sprintf("console session of user %q in organization %q", s.UserID, s.OrganizationID))
	}
	return s, nil
}

// GetConsoleSession implements store.ConsoleSessions.
func (db *DB) GetConsoleSession(ctx context.Context, tokenHash string, now time.Time) (store.ConsoleSession, error) {
	s, err := scanConsoleSession(db.reader().queryRow(ctx,
		`SELECT `+consoleSessionCols+` FROM console_sessions WHERE token_hash = ? AND link = ? AND expire_time > ?`,
		tokenHash, false, store.Time(now)))
	return s, db.mapErr(err, "console session")
}

// TakeConsoleLink implements store.ConsoleSessions.
func (db *DB) TakeConsoleLink(ctx context.Context, tokenHash string, now time.Time) (store.ConsoleSession, error) {
	s, err := scanConsoleSession(db.writer().queryRow(ctx,
		`DELETE FROM console_sessions WHERE token_hash = ? AND link = ? AND expire_time > ? RETURNING `+consoleSessionCols,
		tokenHash, true, store.Time(now)))
	return s, db.mapErr(err, "sign-in link")
}

// DeleteConsoleSession implements store.ConsoleSessions.
func (db *DB) DeleteConsoleSession(ctx context.Context, tokenHash string) error {
	// Authentication caches sessions (server.KeyAuth): a sign-out moves
	// the generation on, here and on the other replicas.
	defer db.authChanged(ctx)
	res, err := db.writer().exec(ctx, `DELETE FROM console_sessions WHERE token_hash = ?`, tokenHash)
	if err != nil {
		return db.mapErr(err, "delete console session")
	}
	if rowsAffected(res) == 0 {
		return fmt.Errorf("console session: %w", store.ErrNotFound)
	}
	return nil
}

// DeleteExpiredConsoleSessions implements store.ConsoleSessions.
func (db *DB) DeleteExpiredConsoleSessions(ctx context.Context, now time.Time) (int, error) {
	res, err := db.writer().exec(ctx, `DELETE FROM console_sessions WHERE expire_time <= ?`, store.Time(now))
	if err != nil {
		return 0, db.mapErr(err, "delete expired console sessions")
	}
	return int(rowsAffected(res)), nil
}
