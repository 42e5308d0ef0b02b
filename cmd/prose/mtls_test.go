package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// testCA is a certificate authority of a test: it signs server and client
// certificates written as PEM files.
type testCA struct {
	t    *testing.T
	dir  string
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	file string // the CA certificate's PEM file
}

func newTestCA(t *testing.T, name string) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	ca := &testCA{t: t, dir: t.TempDir(), cert: cert, key: key}
	ca.file = filepath.Join(ca.dir, name+".pem")
	ca.write(ca.file, "CERTIFICATE", der)
	return ca
}

func (ca *testCA) write(path, kind string, der []byte) {
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), 0o600); err != nil {
		ca.t.Fatal(err)
	}
}

// issue writes a certificate the CA signs (for 127.0.0.1 when server, for
// client authentication otherwise) and its key; it returns both files.
func (ca *testCA) issue(name string, serial int64, server bool) (certFile, keyFile string) {
	ca.t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		ca.t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	if server {
		tmpl.IPAddresses = []net.IP{net.IPv4(127, 0, 0, 1)}
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		ca.t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		ca.t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(ca.dir, name+".pem"), filepath.Join(ca.dir, name+"-key.pem")
	ca.write(certFile, "CERTIFICATE", der)
	ca.write(keyFile, "EC PRIVATE KEY", kb)
	return certFile, keyFile
}

// The built binary against `prose serve --tls-client-ca` (mutual TLS),
// itself the built binary: the client commands take the CA and their
// certificate from flags, the environment or the profile `prose login`
// wrote; without a certificate, or with one another CA signed, the server
// refuses the connection; without --ca-file the server's private CA is not
// trusted.
func TestCLIMutualTLS(t *testing.T) {
	bin := proseBinary(t)
	data := t.TempDir()
	init := proseInit(t, bin, "--data", data)
	ca := newTestCA(t, "prose-ca")
	srvCert, srvKey := ca.issue("server", 2, true)
	cliCert, cliKey := ca.issue("client", 3, false)
	other := newTestCA(t, "other-ca")
	otherCert, otherKey := other.issue("stranger", 4, false)

	p := startProse(t, bin, time.Now().Add(2*time.Minute), "--data", data,
		"--tls-cert", srvCert, "--tls-key", srvKey, "--tls-client-ca", ca.file)
	addr := "https://" + p.addr
	base := []string{"--address", addr, "--api-key", init.APIKey}

	t.Run("flags", func(t *testing.T) {
		c := newCLI(t)
		out := c.must(0, append(base, "automations", "list", "--ca-file", ca.file, "--cert-file", cliCert, "--key-file", cliKey)...)
		if !strings.HasPrefix(out, "ID ") {
			t.Fatalf("automations list over mutual TLS:\n%s", out)
		}
	})
	t.Run("environment", func(t *testing.T) {
		c := newCLI(t, "PROSE_ADDRESS="+addr, "PROSE_API_KEY="+init.APIKey,
			"PROSE_CA_FILE="+ca.file, "PROSE_CERT_FILE="+cliCert, "PROSE_KEY_FILE="+cliKey)
		c.must(0, "runs", "list")
	})
	t.Run("profile", func(t *testing.T) {
		c := newCLI(t)
		c.must(0, append(base, "login", "--ca-file", ca.file, "--cert-file", cliCert, "--key-file", cliKey)...)
		c.must(0, "exceptions", "list")
		// The profile's files are overridden by a flag: another CA's
		// client certificate is refused.
		code, _, errb := c.run("exceptions", "list", "--cert-file", otherCert, "--key-file", otherKey)
		if code == 0 {
			t.Fatalf("a certificate of another CA was accepted: %s", errb)
		}
	})
	t.Run("no client certificate", func(t *testing.T) {
		c := newCLI(t)
		// TLS 1.3: the client's half of the handshake ends before the
		// server refuses, so the refusal reaches it as "certificate
		// required" or as the connection closed under it.
		code, _, errb := c.run(append(base, "automations", "list", "--ca-file", ca.file)...)
		if code != exitUnavailable {
			t.Fatalf("without a client certificate: exit %d, want %d\n%s", code, exitUnavailable, errb)
		}
	})
	t.Run("server CA not trusted", func(t *testing.T) {
		c := newCLI(t)
		code, _, errb := c.run(append(base, "automations", "list", "--cert-file", cliCert, "--key-file", cliKey)...)
		if code != exitUnavailable || !strings.Contains(errb, "certificate") {
			t.Fatalf("without --ca-file: exit %d, want %d naming the certificate\n%s", code, exitUnavailable, errb)
		}
	})
	t.Run("mistakes", func(t *testing.T) {
		c := newCLI(t)
		if code, _, errb := c.run(append(base, "automations", "list", "--cert-file", cliCert)...); code != exitUsage || !strings.Contains(errb, "--key-file") {
			t.Fatalf("--cert-file alone: exit %d\n%s", code, errb)
		}
		if code, _, errb := c.run(append(base, "automations", "list", "--ca-file", cliKey)...); code != exitUsage || !strings.Contains(errb, "no PEM certificate") {
			t.Fatalf("--ca-file of a key: exit %d\n%s", code, errb)
		}
	})
}

// --tls-client-ca needs TLS, and a file with a certificate in it.
func TestServeClientCAFlag(t *testing.T) {
	c := newCLI(t)
	if code, _, errb := c.run("serve", "--data", t.TempDir(), "--tls-client-ca", "ca.pem"); code != 2 || !strings.Contains(errb, "--tls-client-ca needs --tls-cert") {
		t.Fatalf("--tls-client-ca without TLS: exit %d\n%s", code, errb)
	}
}
