package gateway

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"
)

// CertReloader serves a certificate and key from files and reads them again
// when either file changes (a renewed certificate, a Kubernetes secret
// swapped): every TLS handshake looks at the files' modification times and
// sizes (two stats) and loads the pair again when they differ from those
// loaded. A pair that does not load (a half-written renewal) leaves the
// previous one in use, logged once per change.
type CertReloader struct {
	certFile, keyFile string
	log               *slog.Logger

	mu      sync.Mutex
	cert    *tls.Certificate
	stamp   fileStamp
	badSeen fileStamp // the stamp of the last pair that failed to load
}

type fileStamp struct {
	certMod, keyMod   time.Time
	certSize, keySize int64
}

// NewCertReloader loads the pair once (an error if it does not load).
func NewCertReloader(certFile, keyFile string, log *slog.Logger) (*CertReloader, error) {
	if log == nil {
		log = slog.Default()
	}
	r := &CertReloader{certFile: certFile, keyFile: keyFile, log: log}
	st, err := r.stat()
	if err != nil {
		return nil, err
	}
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("tls: %w", err)
	}
	r.cert, r.stamp = &cert, st
	return r, nil
}

func (r *CertReloader) stat() (fileStamp, error) {
	c, err := os.Stat(r.certFile)
	if err != nil {
		return fileStamp{}, fmt.Errorf("tls: %w", err)
	}
	k, err := os.Stat(r.keyFile)
	if err != nil {
		return fileStamp{}, fmt.Errorf("tls: %w", err)
	}
	return fileStamp{certMod: c.ModTime(), keyMod: k.ModTime(), certSize: c.Size(), keySize: k.Size()}, nil
}

// GetCertificate is tls.Config.GetCertificate: the current pair, loaded
// again first if the files changed.
func (r *CertReloader) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	st, err := r.stat()
	if err != nil || st == r.stamp || st == r.badSeen {
		return r.cert, nil
	}
	cert, err := tls.LoadX509KeyPair(r.certFile, r.keyFile)
	if err != nil {
		r.badSeen = st
		r.log.Warn("tls: the changed certificate does not load; serving the previous one", "err", err)
		return r.cert, nil
	}
	r.cert, r.stamp = &cert, st
	r.log.Info("tls: certificate reloaded", "cert", r.certFile)
	return r.cert, nil
}

// TLSConfig is a server configuration serving the reloaded pair (TLS 1.2 at
// least; Serve adds HTTP/2's ALPN).
func (r *CertReloader) TLSConfig() *tls.Config {
	return &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: r.GetCertificate}
}

// LoadCAPool reads the PEM CA certificates of file (a client CA for mutual
// TLS): an error when the file cannot be read or holds no certificate.
func LoadCAPool(file string) (*x509.CertPool, error) {
	b, err := os.ReadFile(file) //nolint:gosec // G304: the operator's own file
	if err != nil {
		return nil, fmt.Errorf("tls: client CA: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		return nil, fmt.Errorf("tls: client CA %s: no PEM certificate in it", file)
	}
	return pool, nil
}
