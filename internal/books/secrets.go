package books

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
)

// SecretKeySize is the size of a key that seals connection secrets
// (AES-256-GCM).
const SecretKeySize = 32

// sealVersion is the first byte of a sealed secret.
const sealVersion = 1

// keyIDSize is the number of bytes of a key's id (the start of the SHA-256
// of the key) that a sealed secret carries, so that the key that sealed it
// can be found among several during a rotation.
const keyIDSize = 8

// ErrSecretKey is returned when a sealed secret cannot be opened with any key of the
// keyring (a key was removed too early, or the data was changed).
var ErrSecretKey = errors.New("the connection's secret cannot be opened with the configured keys")

// Keyring seals connection secrets with AES-256-GCM under its first key and
// opens them with whichever of its keys sealed them (key rotation: the new
// key first, the old ones after it until every secret was sealed again).
// A sealed secret is: version (1 byte), key id (8 bytes), nonce (12 bytes),
// ciphertext and tag. The additional data binds it to its connection, so a
// sealed secret copied to another row does not open.
type Keyring struct {
	keys []keyringKey
}

type keyringKey struct {
	id   [keyIDSize]byte
	aead cipher.AEAD
}

// NewKeyring returns a keyring over keys (each SecretKeySize bytes); the
// first seals.
func NewKeyring(keys ...[]byte) (*Keyring, error) {
	if len(keys) == 0 {
		return nil, errors.New("a keyring needs at least one key")
	}
	kr := &Keyring{}
	for i, k := range keys {
		if len(k) != SecretKeySize {
			return nil, fmt.Errorf("secret key %d has %d bytes, want %d", i+1, len(k), SecretKeySize)
		}
		block, err := aes.NewCipher(k)
		if err != nil {
			return nil, err
		}
		aead, err := cipher.NewGCM(block)
		if err != nil {
			return nil, err
		}
		sum := sha256.Sum256(k)
		var id [keyIDSize]byte
		copy(id[:], sum[:])
		kr.keys = append(kr.keys, keyringKey{id: id, aead: aead})
	}
	return kr, nil
}

// ParseSecretKeys parses a comma-separated list of base64 keys (standard or
// URL alphabet, padded or not), as `prose serve --secret-keys` and
// PROSE_SECRET_KEYS take them. Error messages never contain a key.
func ParseSecretKeys(s string) ([][]byte, error) {
	var out [][]byte
	for i, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		var k []byte
		var err error
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
			if k, err = enc.DecodeString(part); err == nil {
				break
			}
		}
		if err != nil {
			return nil, fmt.Errorf("secret key %d is not base64", i+1)
		}
		if len(k) != SecretKeySize {
			return nil, fmt.Errorf("secret key %d has %d bytes, want %d (make one with: head -c 32 /dev/urandom | base64)", i+1, len(k), SecretKeySize)
		}
		out = append(out, k)
	}
	if len(out) == 0 {
		return nil, errors.New("no secret key given")
	}
	return out, nil
}

// NewSecretKey returns a random key.
func NewSecretKey() ([]byte, error) {
	k := make([]byte, SecretKeySize)
	if _, err := rand.Read(k); err != nil {
		return nil, err
	}
	return k, nil
}

// Seal encrypts plain under the first key, bound to aad.
func (kr *Keyring) Seal(plain, aad []byte) ([]byte, error) {
	k := kr.keys[0]
	out := make([]byte, 1+keyIDSize+k.aead.NonceSize(), 1+keyIDSize+k.aead.NonceSize()+len(plain)+k.aead.Overhead())
	out[0] = sealVersion
	copy(out[1:], k.id[:])
	if _, err := rand.Read(out[1+keyIDSize:]); err != nil {
		return nil, err
	}
	// The nonce is the random bytes just read into out (G407 misreads it).
	return k.aead.Seal(out, out[1+keyIDSize:], plain, aad), nil //nolint:gosec // G407: the nonce is random, read above
}

// Open decrypts what Seal sealed with any key of the keyring and the same
// aad. Empty input opens to nothing.
func (kr *Keyring) Open(sealed, aad []byte) ([]byte, error) {
	if len(sealed) == 0 {
		return nil, nil
	}
	if sealed[0] != sealVersion || len(sealed) < 1+keyIDSize {
		return nil, ErrSecretKey
	}
	for _, k := range kr.keys {
		if string(k.id[:]) != string(sealed[1:1+keyIDSize]) {
			continue
		}
		rest := sealed[1+keyIDSize:]
		if len(rest) < k.aead.NonceSize() {
			return nil, ErrSecretKey
		}
		plain, err := k.aead.Open(nil, rest[:k.aead.NonceSize()], rest[k.aead.NonceSize():], aad)
		if err != nil {
			return nil, ErrSecretKey
		}
		return plain, nil
	}
	return nil, ErrSecretKey
}

// Current reports whether sealed was sealed with the first key (a rotation
// is done for it).
func (kr *Keyring) Current(sealed []byte) bool {
	return len(sealed) == 0 || (len(sealed) > keyIDSize && string(sealed[1:1+keyIDSize]) == string(kr.keys[0].id[:]))
}

// Len is the number of keys.
func (kr *Keyring) Len() int { return len(kr.keys) }
