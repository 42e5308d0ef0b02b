package books

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	bookv1 "github.com/proserun/prose/gen/prose/book/v1"
	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"google.golang.org/protobuf/proto"
)

// OAuth 2.0 authorization code flow of the http book's "oauth2"
// authentication: the connection holds the client id and secret and the
// provider's "authorize url", "token url" and "scopes"; Authorize makes the
// URL a person opens; the provider sends them back to the server's callback
// with a code, which CompleteAuthorization exchanges for an access token
// kept (sealed) with the connection's credentials.
const (
	// OAuthAuthID is the http book's OAuth authentication.
	OAuthAuthID = "oauth2"
	// OAuthStateTTL is how long an authorization URL may be used.
	OAuthStateTTL = 15 * time.Minute
	// The credentials the token exchange issues (not given by a person).
	oauthAccessToken  = "access token"
	oauthRefreshToken = "refresh token"
	// oauthAccessExpiry is when the access token expires (Unix seconds; empty
	// when the provider did not say).
	oauthAccessExpiry = "access token expiry"
	// OAuthRefreshMargin: an access token expiring sooner than this is
	// refreshed before a call.
	OAuthRefreshMargin = 30 * time.Second
)

// ErrNotOAuth is returned by Authorize for a connection whose
// authentication is not OAuth.
var ErrNotOAuth = errors.New("the connection's authentication is not OAuth")

// ErrOAuth wraps a failed authorization (a bad or expired state, a token
// endpoint that refused the code); its message names no secret.
var ErrOAuth = errors.New("authorization failed")

type oauthState struct {
	Org, WS, ID string
	Exp         int64
}

func oauthAAD() []byte { return []byte("prose-oauth-state/v1") }

// Authorize returns the URL that starts the authorization of connection id
// (an http connection with the oauth2 authentication); the provider sends
// the person back to redirectURI.
func (c *Connections) Authorize(ctx context.Context, ws Workspace, id, redirectURI string) (*bookv1.BookConnectionDescriptor, string, error) {
	row, err := c.st.GetConnection(ctx, ws, id)
	if err != nil {
		return nil, "", connStoreError(err, id)
	}
	conn, err := c.fromRecord(ws, row, row.Name)
	if err != nil {
		return nil, "", err
	}
	if row.BookName != HTTPBookName || conn.AuthID != OAuthAuthID {
		return nil, "", fmt.Errorf("%w: connection %q uses %q", ErrNotOAuth, row.Name, conn.AuthID)
	}
	authURL := conn.ConfigText("authorize url")
	if authURL == "" || conn.ConfigText("token url") == "" {
		return nil, "", fmt.Errorf("%w: the connection %q needs the configuration \"authorize url\" and \"token url\"", ErrInvalidArgument, row.Name)
	}
	u, err := url.Parse(authURL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") {
		return nil, "", fmt.Errorf("%w: the connection %q has an authorize url that is not an http(s) URL", ErrInvalidArgument, row.Name)
	}
	plain, _ := json.Marshal(oauthState{Org: ws.OrganizationID, WS: ws.WorkspaceID, ID: id, Exp: c.now().Add(OAuthStateTTL).Unix()})
	sealed, err := c.keys.Seal(plain, oauthAAD())
	if err != nil {
		return nil, "", err
	}
	q := u.Query()
	q.Set("response_type", "code")
	q.Set("client_id", conn.Credentials["client id"])
	q.Set("redirect_uri", redirectURI)
	if s := conn.ConfigText("scopes"); s != "" {
		q.Set("scope", s)
	}
	q.Set("state", base64.RawURLEncoding.EncodeToString(sealed))
	u.RawQuery = q.Encode()
	d, err := c.decode(row)
	return d, u.String(), err
}

// CompleteAuthorization exchanges code for tokens at the token url of the
// connection the state names (dialled as PublicNetworkOnly says) and keeps
// them sealed with the connection. It returns the connection's name.
func (c *Connections) CompleteAuthorization(ctx context.Context, state, code, redirectURI string) (string, error) {
	raw, err := base64.RawURLEncoding.DecodeString(state)
	if err != nil {
		return "", fmt.Errorf("%w: the state is malformed", ErrOAuth)
	}
	plain, err := c.keys.Open(raw, oauthAAD())
	var st oauthState
	if err != nil || plain == nil || json.Unmarshal(plain, &st) != nil {
		return "", fmt.Errorf("%w: the state was not made by this server", ErrOAuth)
	}
	if c.now().Unix() > st.Exp {
		return "", fmt.Errorf("%w: the authorization URL expired (it lasts %s); authorize again", ErrOAuth, OAuthStateTTL)
	}
	if code == "" {
		return "", fmt.Errorf("%w: the provider sent no code", ErrOAuth)
	}
	// A state is good for one callback: a second one (a replayed or leaked
	// URL, with another code) would bind the connection to whoever sent it.
	// Each state is unique (its seal has a random nonce).
	sum := sha256.Sum256(raw)
	first, err := c.once.UseOnce(ctx, st.Org, "oauth-state", hex.EncodeToString(sum[:]))
	if err != nil {
		return "", err
	}
	if !first {
		return "", fmt.Errorf("%w: this authorization was already completed (a state is good once); authorize again", ErrOAuth)
	}
	ws := Workspace{OrganizationID: st.Org, WorkspaceID: st.WS}
	row, err := c.st.GetConnection(ctx, ws, st.ID)
	if err != nil {
		return "", connStoreError(err, st.ID)
	}
	conn, err := c.fromRecord(ws, row, row.Name)
	if err != nil {
		return "", err
	}
	form := url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {redirectURI},
		"client_id": {conn.Credentials["client id"]}, "client_secret": {conn.Credentials["client secret"]}}
	tok, err := c.exchange(ctx, conn, form)
	if err != nil {
		return "", err
	}
	if err := c.saveTokens(ctx, ws, row, tok); err != nil {
		return "", err
	}
	return row.Name, nil
}

// OnceLedger remembers keys that may be used once, atomically across the
// processes sharing it.
type OnceLedger interface {
	// UseOnce reports whether key (of kind, in org) is used for the first
	// time, and records it.
	UseOnce(ctx context.Context, org, kind, key string) (bool, error)
}

// SetOnceLedger makes l the ledger of used OAuth states (default: one in
// this process's memory, which a second replica does not share).
func (c *Connections) SetOnceLedger(l OnceLedger) { c.once = l }

// memoryOnce is a OnceLedger of one process.
type memoryOnce struct {
	mu   sync.Mutex
	used map[string]bool
}

func (m *memoryOnce) UseOnce(_ context.Context, org, kind, key string) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := org + "\x00" + kind + "\x00" + key
	if m.used[k] {
		return false, nil
	}
	if m.used == nil {
		m.used = map[string]bool{}
	}
	m.used[k] = true
	return true, nil
}

// tokenAnswer is what a token url answers.
type tokenAnswer struct {
	AccessToken  string `json:"access_token"`
	RefreshToken string `json:"refresh_token"`
	ExpiresIn    int64  `json:"expires_in"`
}

// exchange posts form to conn's token url (dialled as PublicNetworkOnly
// says). Its errors wrap ErrOAuth and name no secret: the token url's
// status, not its answer.
func (c *Connections) exchange(ctx context.Context, conn *Connection, form url.Values) (tokenAnswer, error) {
	ctx, cancel := context.WithTimeout(ctx, DefaultBookTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, conn.ConfigText("token url"), strings.NewReader(form.Encode()))
	if err != nil {
		return tokenAnswer{}, fmt.Errorf("%w: the connection's token url is not usable", ErrOAuth)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	resp, err := c.nw.httpClient(DefaultBookTimeout).Do(req)
	if err != nil {
		return tokenAnswer{}, fmt.Errorf("%w: %s", ErrOAuth, redact(unwrapURLError(err).Error(), conn))
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	var tok tokenAnswer
	if resp.StatusCode/100 != 2 || json.Unmarshal(body, &tok) != nil || tok.AccessToken == "" {
		return tokenAnswer{}, fmt.Errorf("%w: the token url answered %s without an access token", ErrOAuth, resp.Status)
	}
	return tok, nil
}

// saveTokens keeps tok's tokens (and when the access token expires) sealed
// with the connection of row; a refresh token tok lacks keeps the old one.
func (c *Connections) saveTokens(ctx context.Context, ws Workspace, row ConnectionRecord, tok tokenAnswer) error {
	next, err := c.withTokens(ctx, ws, row, tok)
	if err != nil {
		return err
	}
	if _, err := c.st.UpdateConnection(ctx, next); err != nil {
		return connStoreError(err, row.Name)
	}
	return nil
}

// withTokens is row with tok's tokens (and when the access token expires)
// sealed in its credentials; a refresh token tok lacks keeps the old one.
func (c *Connections) withTokens(ctx context.Context, ws Workspace, row ConnectionRecord, tok tokenAnswer) (ConnectionRecord, error) {
	auth, err := c.open(ws, row)
	if err != nil {
		return ConnectionRecord{}, err
	}
	auth = proto.CloneOf(auth)
	setCred := func(id, v string) {
		val := &platformv1.BdkValue{Kind: &platformv1.BdkValue_TextValue{TextValue: v}}
		for _, cr := range auth.GetAuthenticationCredentials() {
			if cr.GetId() == id {
				cr.Value = val
				return
			}
		}
		auth.AuthenticationCredentials = append(auth.AuthenticationCredentials, &bookv1.CredentialValue{Id: id, Value: val})
	}
	setCred(oauthAccessToken, tok.AccessToken)
	if tok.RefreshToken != "" {
		setCred(oauthRefreshToken, tok.RefreshToken)
	}
	expiry := ""
	if tok.ExpiresIn > 0 {
		expiry = strconv.FormatInt(c.now().Unix()+tok.ExpiresIn, 10)
	}
	setCred(oauthAccessExpiry, expiry)
	d, err := decodeDescriptor(row)
	if err != nil {
		return ConnectionRecord{}, err
	}
	b, err := c.reg.Book(ctx, ws, row.BookName, row.BookVersion)
	if err != nil {
		return ConnectionRecord{}, err
	}
	next, err := c.encode(ws, row.ID, b, ConnectionInput{Name: row.Name, Auth: auth, Config: d.GetConfigMap(), Labels: d.GetLabels(), discovered: d.GetDiscovered()}, auth)
	if err != nil {
		return ConnectionRecord{}, err
	}
	next.CreateTime, next.UpdateTime = row.CreateTime, row.UpdateTime
	return next, nil
}

// oauthExpired reports whether conn's access token has expired or expires
// within OAuthRefreshMargin (false when the provider did not say when).
func oauthExpired(conn *Connection, now time.Time) bool {
	exp, err := strconv.ParseInt(conn.Credentials[oauthAccessExpiry], 10, 64)
	return err == nil && !now.Add(OAuthRefreshMargin).Before(time.Unix(exp, 0))
}

// oauthRefreshTimeout bounds a refresh, its wait for another one of the
// same connection included (that one's token request is bounded by
// DefaultBookTimeout).
const oauthRefreshTimeout = 3 * DefaultBookTimeout

// RefreshOAuth gets a new access token for the OAuth connection id of ws
// with its refresh token, keeps the tokens sealed with the connection and
// returns the connection with them. stale is the access token the caller
// found expired or refused: when the stored one differs and has not expired,
// another call refreshed it already and it is returned as it is.
//
// One refresh of a connection runs at a time: concurrent calls in this
// process share one (singleflight), and the store holds the connection
// while its token url is asked (ConnectionStore.RefreshConnection: a row
// lock on PostgreSQL), so a replica that comes second reads the token the
// first stored instead of spending the refresh token again, which a
// provider rotating refresh tokens would refuse. Errors wrap ErrOAuth and
// name no secret.
func (c *Connections) RefreshOAuth(ctx context.Context, ws Workspace, id, stale string) (*Connection, error) {
	key := ws.OrganizationID + "\x00" + ws.WorkspaceID + "\x00" + id
	v, err, _ := c.refreshes.Do(key, func() (any, error) {
		// The first caller's cancellation must not fail the others.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), oauthRefreshTimeout)
		defer cancel()
		conn, err := c.Resolve(ctx, ws, HTTPBookName, id)
		if err != nil {
			return nil, err
		}
		if fresh(conn, stale, c.now()) {
			return conn, nil
		}
		var out *Connection
		_, err = c.st.RefreshConnection(ctx, ws, conn.ID, func(ctx context.Context, row ConnectionRecord) (*ConnectionRecord, error) {
			// Read again under the hold: another replica may have refreshed.
			cur, err := c.fromRecord(ws, row, conn.Name)
			if err != nil {
				return nil, err
			}
			if fresh(cur, stale, c.now()) {
				out = cur
				return nil, nil
			}
			rt := cur.Credentials[oauthRefreshToken]
			if rt == "" {
				return nil, fmt.Errorf("%w: the connection %q has no refresh token; authorize it again", ErrOAuth, cur.Name)
			}
			tok, err := c.exchange(ctx, cur, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt},
				"client_id": {cur.Credentials["client id"]}, "client_secret": {cur.Credentials["client secret"]}})
			if err != nil {
				return nil, err
			}
			next, err := c.withTokens(ctx, ws, row, tok)
			if err != nil {
				return nil, err
			}
			if out, err = c.fromRecord(ws, next, conn.Name); err != nil {
				return nil, err
			}
			return &next, nil
		})
		if err != nil {
			return nil, connStoreError(err, conn.Name)
		}
		return out, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*Connection), nil
}

// fresh reports whether conn's access token is one the caller can use in
// place of stale: another one, not expired.
func fresh(conn *Connection, stale string, now time.Time) bool {
	t := conn.Credentials[oauthAccessToken]
	return t != "" && t != stale && !oauthExpired(conn, now)
}

// issuedCredential reports whether id is a credential the authorization
// of method issues (not one a person gives).
func issuedCredential(method, id string) bool {
	return method == OAuthAuthID && (id == oauthAccessToken || id == oauthRefreshToken || id == oauthAccessExpiry)
}
