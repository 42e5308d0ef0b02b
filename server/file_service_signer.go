package server

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"

	"github.com/proserun/prose/server/transport"
	"github.com/proserun/prose/store"
)

// Signed file URLs. A token is base64url(JSON grant) "." base64url(HMAC-SHA256
// of the first part), keyed by a 32-byte secret the store creates at first
// use (store.Files.ServerSecret "file-url-signing"), so every replica on one
// database signs and verifies alike. The URLs need no API key: the grant says
// which organization and file, what may be done and until when.

// Paths of the signed URLs on the HTTP side (served by
// gateway.HandleSignedFiles).
const (
	SignedUploadPath   = "/files/upload/"
	SignedDownloadPath = "/files/download/"
)

const (
	fileSigningSecret  = "file-url-signing"
	grantUpload        = "upload"
	grantDownload      = "download"
	defaultURLLifetime = 15 * time.Minute
	maxURLLifetime     = 7 * 24 * time.Hour
)

// fileGrant is what a signed URL allows.
type fileGrant struct {
	Op  string `json:"op"`
	Org string `json:"o"`
	// File is the file the URL reads or writes; empty for an upload URL of
	// GenerateUploadUrl, which makes a new file at each upload.
	File string `json:"f,omitempty"`
	// Workspace is the workspace of the file an upload URL of
	// GenerateUploadUrl makes (empty: the organization's).
	Workspace string `json:"w,omitempty"`
	// MimeType is the MIME type promised at creation (legacy uploads).
	MimeType string `json:"t,omitempty"`
	// Form: the upload is the v2 multipart form, with its fields.
	Form bool  `json:"form,omitempty"`
	Exp  int64 `json:"exp"` // unix seconds
}

// fileSigner signs and verifies grants with the store's secret.
type fileSigner struct {
	st  store.Files
	now func() time.Time

	mu  sync.Mutex
	key []byte
}

// signers caches one signer per store, so services that share a store
// (the file service and the legacy services) load the key once.
var signers sync.Map // store.Files → *fileSigner

func signerFor(st store.Files) *fileSigner {
	if s, ok := signers.Load(st); ok {
		return s.(*fileSigner)
	}
	s, _ := signers.LoadOrStore(st, &fileSigner{st: st, now: time.Now})
	return s.(*fileSigner)
}

func (s *fileSigner) secret(ctx context.Context) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.key != nil {
		return s.key, nil
	}
	k, err := s.st.ServerSecret(ctx, fileSigningSecret, func() []byte {
		b := make([]byte, 32)
		_, _ = rand.Read(b) // never fails (Go 1.24+)
		return b
	})
	if err != nil {
		return nil, err
	}
	s.key = k
	return k, nil
}

// keyID names the signing key without revealing it (the form's access key
// id field).
func (s *fileSigner) keyID(ctx context.Context) (string, error) {
	k, err := s.secret(ctx)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(append([]byte("prose-key-id\n"), k...))
	return "PROSE" + strings.ToUpper(hex.EncodeToString(sum[:8])), nil
}

func mac(key []byte, purpose, msg string) []byte {
	h := hmac.New(sha256.New, key)
	h.Write([]byte(purpose))
	h.Write([]byte{'\n'})
	h.Write([]byte(msg))
	return h.Sum(nil)
}

var b64 = base64.RawURLEncoding

// sign returns the token of g.
func (s *fileSigner) sign(ctx context.Context, g fileGrant) (string, error) {
	k, err := s.secret(ctx)
	if err != nil {
		return "", err
	}
	body, err := json.Marshal(g)
	if err != nil {
		return "", err
	}
	payload := b64.EncodeToString(body)
	return payload + "." + b64.EncodeToString(mac(k, "prose-file-url", payload)), nil
}

// securityToken is the form's security token field: bound to the URL token.
func (s *fileSigner) securityToken(ctx context.Context, token string) (string, error) {
	k, err := s.secret(ctx)
	if err != nil {
		return "", err
	}
	return b64.EncodeToString(mac(k, "prose-file-session", token)), nil
}

// verify checks a token's signature, expiry and operation:
// INVALID_ARGUMENT when it cannot be read, PERMISSION_DENIED when it is
// tampered with, expired or for another operation.
func (s *fileSigner) verify(ctx context.Context, token, op string) (fileGrant, error) {
	return s.check(ctx, token, op, true)
}

// verifyAnyTime is verify without the expiry check: a blob URL still names
// its file after the URL stopped serving it.
func (s *fileSigner) verifyAnyTime(ctx context.Context, token, op string) (fileGrant, error) {
	return s.check(ctx, token, op, false)
}

func (s *fileSigner) check(ctx context.Context, token, op string, expiry bool) (fileGrant, error) {
	var g fileGrant
	payload, sig, ok := strings.Cut(token, ".")
	rawSig, err := b64.DecodeString(sig)
	if !ok || payload == "" || err != nil {
		return g, transport.InvalidArgument(ReasonSignedURLMalformed, "the signed URL is malformed")
	}
	k, err := s.secret(ctx)
	if err != nil {
		return g, err
	}
	if !hmac.Equal(rawSig, mac(k, "prose-file-url", payload)) {
		return g, transport.PermissionDenied(ReasonSignedURLInvalid, "the signature of the URL does not match")
	}
	body, err := b64.DecodeString(payload)
	if err != nil || json.Unmarshal(body, &g) != nil {
		return g, transport.InvalidArgument(ReasonSignedURLMalformed, "the signed URL is malformed")
	}
	if expiry && !s.now().Before(time.Unix(g.Exp, 0)) {
		return g, transport.NewError(codes.PermissionDenied, ReasonSignedURLExpired, "the signed URL has expired").
			Meta("expire_time", time.Unix(g.Exp, 0).UTC().Format(time.RFC3339)).Err()
	}
	if g.Op != op {
		return g, transport.PermissionDenied(ReasonSignedURLOperation, "the signed URL does not allow this operation")
	}
	return g, nil
}

// baseURL is the origin clients reached this service at: the HTTP request's
// host (x-forwarded-host, set by the gateway from Host) or the gRPC
// :authority, over http unless x-forwarded-proto says otherwise. A fixed
// base (FileOptions.BaseURL) wins.
func baseURL(ctx context.Context, fixed string) string {
	if fixed != "" {
		return strings.TrimRight(fixed, "/")
	}
	md, _ := metadata.FromIncomingContext(ctx)
	first := func(k string) string {
		if v := md.Get(k); len(v) > 0 {
			return strings.TrimSpace(strings.Split(v[0], ",")[0])
		}
		return ""
	}
	host := first("x-forwarded-host")
	if host == "" {
		host = first(":authority")
	}
	if host == "" || strings.ContainsAny(host, "/ ") {
		host = "localhost"
	}
	scheme := "http"
	if p := first("x-forwarded-proto"); p == "https" {
		scheme = p
	}
	return scheme + "://" + host
}

// lifetime applies the URL lifetime rules: default 15 minutes, at most 7
// days, positive.
func lifetime(d time.Duration, set bool) (time.Duration, error) {
	if !set {
		return defaultURLLifetime, nil
	}
	if d <= 0 || d > maxURLLifetime {
		msg := "expire_duration must be positive and at most 7 days"
		return 0, transport.InvalidArgument(ReasonInvalidField, msg, transport.Violation("expire_duration", msg))
	}
	return d, nil
}
