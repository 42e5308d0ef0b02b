package storetest

import (
	"bytes"
	"errors"
	"testing"

	"github.com/proserun/prose/store"
)

// testSealer is a store.Sealer of one key name: its sealed form is the key
// name, the aad's length and the plain text reversed — enough to tell
// which key sealed a secret and to refuse another row's aad; the real one
// (AES-256-GCM) is the server's keyring.
type testSealer struct{ keys []string }

func (k testSealer) Seal(plain, aad []byte) ([]byte, error) {
	out := append([]byte(k.keys[0]+"|"), aad...)
	out = append(out, '|')
	for i := len(plain) - 1; i >= 0; i-- {
		out = append(out, plain[i])
	}
	return out, nil
}

func (k testSealer) Open(sealed, aad []byte) ([]byte, error) {
	for _, key := range k.keys {
		rest, ok := bytes.CutPrefix(sealed, append([]byte(key+"|"), append(aad, '|')...))
		if !ok {
			continue
		}
		out := make([]byte, 0, len(rest))
		for i := len(rest) - 1; i >= 0; i-- {
			out = append(out, rest[i])
		}
		return out, nil
	}
	return nil, errors.New("no key opens it")
}

func (k testSealer) Current(sealed []byte) bool {
	return bytes.HasPrefix(sealed, []byte(k.keys[0]+"|"))
}

// testSecretSealing: trigger and webhook secrets written before a sealer
// read as they are and are sealed by ResealSecrets; sealed ones read plain;
// a rotation (a new first key, the old one after it) seals them again with
// the new key; a secret no key opens fails its read with ErrSecretKey.
func testSecretSealing(t *testing.T, open Opener) {
	s := setup(t, open)
	s.automation(t, "a1") // the organization and its workspace
	hook := of(s.st.CreateWebhook(s.ctx, store.Webhook{OrganizationID: "acme", WorkspaceID: "ops", URL: "https://example.test/a", Runs: true, Secret: "plain-hook"})).must(t)
	trig := of(s.st.CreateTriggerInstance(s.ctx, store.TriggerInstance{OrganizationID: "acme", WorkspaceID: "ops", Name: "T", BookName: "webhook",
		BookVersion: "1", ConnectionID: "c", TriggerID: "webhook", Secret: "plain-trigger"})).must(t)
	read := func(t *testing.T) (string, string, error) {
		t.Helper()
		h, err := s.st.GetWebhook(s.ctx, "acme", "ops", hook.ID)
		if err != nil {
			return "", "", err
		}
		tr, err := s.st.GetTriggerInstance(s.ctx, "acme", "ops", trig.ID)
		return h.Secret, tr.Secret, err
	}
	s.st.SetSealer(testSealer{keys: []string{"k1"}})
	if h, tr, err := read(t); err != nil || h != "plain-hook" || tr != "plain-trigger" {
		t.Fatalf("written before a sealer: %q %q %v", h, tr, err)
	}
	if n, err := s.st.ResealSecrets(s.ctx); err != nil || n != 2 {
		t.Fatalf("ResealSecrets: %d %v, want 2", n, err)
	}
	if n, err := s.st.ResealSecrets(s.ctx); err != nil || n != 0 {
		t.Fatalf("ResealSecrets again: %d %v, want 0", n, err)
	}
	if h, tr, err := read(t); err != nil || h != "plain-hook" || tr != "plain-trigger" {
		t.Fatalf("sealed: %q %q %v", h, tr, err)
	}
	fresh := of(s.st.CreateWebhook(s.ctx, store.Webhook{OrganizationID: "acme", WorkspaceID: "ops", URL: "https://example.test/b", Runs: true, Secret: "new-hook"})).must(t)
	s.st.SetSealer(testSealer{keys: []string{"k2", "k1"}})
	if n, err := s.st.ResealSecrets(s.ctx); err != nil || n != 3 {
		t.Fatalf("ResealSecrets after a rotation: %d %v, want 3", n, err)
	}
	s.st.SetSealer(testSealer{keys: []string{"k2"}})
	if h, tr, err := read(t); err != nil || h != "plain-hook" || tr != "plain-trigger" {
		t.Fatalf("after the rotation, with the new key only: %q %q %v", h, tr, err)
	}
	if got := of(s.st.GetWebhook(s.ctx, "acme", "ops", fresh.ID)).must(t); got.Secret != "new-hook" {
		t.Fatalf("a webhook made under k1: %q", got.Secret)
	}
	s.st.SetSealer(testSealer{keys: []string{"k3"}})
	if _, err := s.st.GetWebhook(s.ctx, "acme", "ops", hook.ID); !errors.Is(err, store.ErrSecretKey) {
		t.Fatalf("read with a key that sealed nothing: %v, want ErrSecretKey", err)
	}
}
