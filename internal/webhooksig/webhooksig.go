// Package webhooksig signs and verifies webhook deliveries, the ones Prose
// receives (inbound triggers) and the ones it sends (outbound webhooks), in
// one scheme, as Stripe and GitHub do:
//
//	X-Prose-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256>
//
// where the HMAC is taken under the webhook's secret over
// "<t>.<delivery id>.<raw body>". The signed timestamp bounds how long a
// captured delivery can be replayed (Tolerance), and the signed delivery id
// stops a replay under a new id: a delivery id names at most one event, so a
// resent one starts nothing new.
package webhooksig

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Header is the signature's header.
const Header = "X-Prose-Signature"

// DefaultTolerance is how far a delivery's signed time may be from the
// receiver's clock, either way.
const DefaultTolerance = 5 * time.Minute

// maxSignatures bounds the v1 entries of one header (a sender rotating its
// secret signs with the old and the new one).
const maxSignatures = 4

// Errors of Verify; each says what a sender must fix.
var (
	ErrMissing  = errors.New("the " + Header + " header is missing or is not t=<unix seconds>,v1=<hex HMAC-SHA256 of \"<t>.<delivery id>.<body>\" under the webhook's secret>")
	ErrMismatch = errors.New("the " + Header + " signature does not match the body, the delivery id and the time under the webhook's secret")
)

// TooOldError is a signature whose time is outside the tolerance.
type TooOldError struct {
	Signed    time.Time
	Tolerance time.Duration
}

func (e *TooOldError) Error() string {
	return fmt.Sprintf("the %s time %s is more than %s from this server's clock: a delivery is accepted only within that window (sign each attempt anew)",
		Header, e.Signed.UTC().Format(time.RFC3339), e.Tolerance)
}

// Sign returns the header value for body, delivery and time t under secret.
func Sign(secret string, t time.Time, delivery string, body []byte) string {
	ts := strconv.FormatInt(t.Unix(), 10)
	return "t=" + ts + ",v1=" + hex.EncodeToString(mac(secret, ts, delivery, body))
}

func mac(secret, ts, delivery string, body []byte) []byte {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(ts))
	m.Write([]byte{'.'})
	m.Write([]byte(delivery))
	m.Write([]byte{'.'})
	m.Write(body)
	return m.Sum(nil)
}

// Verify checks header against body and delivery under secret at now: one
// of its v1 signatures matches (compared in constant time) and its time is
// within tolerance of now.
func Verify(secret, header, delivery string, body []byte, now time.Time, tolerance time.Duration) error {
	if secret == "" {
		return ErrMismatch
	}
	var ts string
	var sigs [][]byte
	for part := range strings.SplitSeq(header, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return ErrMissing
		}
		switch k {
		case "t":
			ts = v
		case "v1":
			sig, err := hex.DecodeString(v)
			if err != nil || len(sigs) == maxSignatures {
				return ErrMissing
			}
			sigs = append(sigs, sig)
		}
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || len(sigs) == 0 {
		return ErrMissing
	}
	want := mac(secret, ts, delivery, body)
	matched := false
	for _, s := range sigs {
		matched = hmac.Equal(s, want) || matched
	}
	if !matched {
		return ErrMismatch
	}
	signed := time.Unix(sec, 0)
	if d := now.Sub(signed); d > tolerance || d < -tolerance {
		return &TooOldError{Signed: signed, Tolerance: tolerance}
	}
	return nil
}
