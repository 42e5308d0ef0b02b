package books

import (
	"context"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	bookv1 "github.com/proserun/prose/gen/prose/book/v1"
	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/internal/lang"
)

// Limits of the built-in books that reach the network or read files. Each
// is enforced with an error the run shows as an exception ("Could not …"),
// which a person can retry or skip.
const (
	// DefaultBookTimeout bounds one network call of a built-in book (an HTTP
	// request with its answer, an SMTP session, a file download).
	DefaultBookTimeout = 30 * time.Second
	// MaxBookTimeout bounds a connection's "timeout seconds".
	MaxBookTimeout = 120 * time.Second
	// MaxHTTPResponseBytes bounds an HTTP answer the http book reads.
	MaxHTTPResponseBytes = 10 << 20
	// MaxHTTPRequestBytes bounds the body the http book sends.
	MaxHTTPRequestBytes = 10 << 20
	// MaxFileBytes bounds a file the tables and documents books read, and
	// the attachments of one email together.
	MaxFileBytes = 20 << 20
	// MaxTableRows bounds the rows of a table read from or written to a file.
	MaxTableRows = 100_000
	// MaxTableCells bounds the cells of a table read from a file: its
	// columns (the widest row's) times its rows, and the cells read on the
	// way. Without it a small file makes a huge table: one row of 200,000
	// commas beside 100,000 short rows is 2×10^10 cells.
	MaxTableCells = 1_000_000
	// MaxWorkbookBytes bounds what an Excel workbook unzips to (excelize's
	// UnzipSizeLimit): a 20 MiB file may otherwise unzip to gigabytes.
	MaxWorkbookBytes = 256 << 20
	// MaxDocumentTextBytes bounds the text read from one document.
	MaxDocumentTextBytes = 10 << 20
)

// BuiltinOptions configures the built-in books that reach the network.
type BuiltinOptions struct {
	// HTTP is the client of the http book and of file downloads (default: a
	// client with DefaultBookTimeout).
	HTTP *http.Client
	// RootCAs verifies SMTP servers' certificates (nil: the system's).
	RootCAs *x509.CertPool
	// Now is the clock of the standard book (nil: time.Now).
	Now Clock
	// PublicNetworkOnly refuses the books' connections (http calls, file
	// downloads, mail and database servers) to addresses that are not
	// public: loopback, private (RFC 1918, fc00::/7), link-local (cloud
	// metadata at 169.254.169.254) and other reserved ranges
	// (PublicAddress), checked on each address dialled, after DNS. prose
	// serve sets it unless --allow-private-networks. A given HTTP client is
	// used as it is.
	PublicNetworkOnly bool
	// OwnFile, when set, reads a file of this server by its URL (a signed
	// download link) without a network call: ok false when the URL is none
	// of the server's. File downloads try it first, so that a server on a
	// private address reads its own files with PublicNetworkOnly set.
	OwnFile OwnFileFunc
}

// OwnFileFunc reads a file of the server by its URL (BuiltinOptions.OwnFile).
type OwnFileFunc func(ctx context.Context, url string) (data []byte, ok bool, err error)

// downloader fetches the files of file values: own files through own, the
// others with hc.
type downloader struct {
	hc  *http.Client
	own OwnFileFunc
}

// Builtins returns every built-in book: standard, http, tables, email,
// documents and databases, and the trigger books (TriggerBooks).
func Builtins(o BuiltinOptions) []*Builtin {
	nw := network{publicOnly: o.PublicNetworkOnly}
	if o.HTTP == nil {
		o.HTTP = nw.httpClient(DefaultBookTimeout)
	}
	dl := downloader{hc: o.HTTP, own: o.OwnFile}
	return append([]*Builtin{Standard(o.Now), HTTPBook(o.HTTP), tablesBook(dl), emailBook(o.RootCAs, nw, dl), documentsBook(dl), databasesBook(nw)},
		TriggerBooks()...)
}

func builtinBook(name, display, short, long string, tags []string, procs []*bookv1.Procedure) *bookv1.Book {
	return &bookv1.Book{
		Id: name, Name: name, DisplayName: display, Version: "1.0.0",
		ShortDescription: short, LongDescription: long, Author: "Prose", Tags: append([]string{"built-in"}, tags...),
		NounPhrase: Phrase(name, "book"), Procedures: procs,
		EnvironmentInformation: &bookv1.EnvironmentInformation{RuntimeName: "prose-builtin", Version: "1.0.0"},
	}
}

func customAuth(id, name string, creds ...string) *bookv1.Authentication {
	a := &bookv1.CustomAuthentication{Id: id, Name: name}
	for _, c := range creds {
		t := bookv1.CredentialType_CredentialTypeSensitiveText
		if c == "username" || c == "header" {
			t = bookv1.CredentialType_CredentialTypeText
		}
		a.Credentials = append(a.Credentials, &bookv1.Credential{Id: c, Type: t, Label: c})
	}
	return &bookv1.Authentication{Custom: a}
}

var (
	textType    = scalar(bookv1.ConceptScalarType_ConceptScalarTypeText)
	numberType  = scalar(bookv1.ConceptScalarType_ConceptScalarTypeNumber)
	fileType    = scalar(bookv1.ConceptScalarType_ConceptScalarTypeFile)
	anyType     = &bookv1.ConceptType{Kind: &bookv1.ConceptType_AnyType{AnyType: &bookv1.ConceptAnyType{}}}
	tableType   = &bookv1.ConceptType{Kind: &bookv1.ConceptType_TableType{TableType: &bookv1.ConceptTableType{}}}
	dictType    = &bookv1.ConceptType{Kind: &bookv1.ConceptType_DictionaryType{DictionaryType: &bookv1.ConceptDictionaryType{}}}
	textDefault = func(s string) *platformv1.BdkValue {
		return &platformv1.BdkValue{Kind: &platformv1.BdkValue_TextValue{TextValue: s}}
	}
)

// optional returns an input if the call gave it (not nothing).
func optional(in map[string]lang.Value, name string) (lang.Value, bool) {
	v, ok := in[name]
	if !ok || !v.IsValid() || v.Kind() == lang.KindNull {
		return lang.Value{}, false
	}
	return v, true
}

func optionalText(in map[string]lang.Value, name string) (string, error) {
	v, ok := optional(in, name)
	if !ok {
		return "", nil
	}
	if v.Kind() != lang.KindText {
		return "", &InputError{Message: fmt.Sprintf("Could not use %s as the %s: it must be a text", v.Kind(), name)}
	}
	return v.AsText(), nil
}

// bookConnection resolves the call's `connection` input, if it has one.
func bookConnection(ctx context.Context, in map[string]lang.Value, bookName string) (*Connection, error) {
	name, err := optionalText(in, "connection")
	if err != nil || name == "" {
		return nil, err
	}
	return connection(ctx, bookName, name)
}

// timeoutOf is the connection's "timeout seconds", else DefaultBookTimeout.
func timeoutOf(c *Connection) (time.Duration, error) {
	if c == nil {
		return DefaultBookTimeout, nil
	}
	v, ok := c.Config["timeout seconds"]
	if !ok || v.Kind() != lang.KindNumber {
		return DefaultBookTimeout, nil
	}
	f, _ := strconv.ParseFloat(v.AsNumber().String(), 64)
	d := time.Duration(f * float64(time.Second))
	if d <= 0 || d > MaxBookTimeout {
		return 0, &InputError{Message: fmt.Sprintf("the connection %q has a timeout of %s seconds; it must be more than 0 and at most %d", c.Name, v.AsNumber(), int(MaxBookTimeout/time.Second))}
	}
	return d, nil
}

// redact removes the connection's credentials from a message (an answer a
// server echoed, an error that quotes a request).
func redact(msg string, c *Connection) string {
	if c == nil {
		return msg
	}
	for _, v := range c.Credentials {
		if len(v) >= 3 {
			msg = strings.ReplaceAll(msg, v, "[redacted]")
		}
	}
	return msg
}

// readLimited reads at most limit bytes of r; more is an error naming what.
func readLimited(r io.Reader, limit int64, what string) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, &InputError{Message: fmt.Sprintf("%s is larger than %d MiB", what, limit>>20)}
	}
	return b, nil
}

// fileBytes returns a file value's content: inline, or downloaded from its
// URL (a run's files are signed download links) with the http client, at
// most MaxFileBytes.
func fileBytes(ctx context.Context, dl downloader, f *lang.File) ([]byte, error) {
	if f == nil {
		return nil, &InputError{Message: "the file is empty"}
	}
	if f.URL == "" || len(f.Content) > 0 {
		if len(f.Content) > MaxFileBytes {
			return nil, &InputError{Message: fmt.Sprintf("the file %q is larger than %d MiB", f.Name, MaxFileBytes>>20)}
		}
		return f.Content, nil
	}
	ctx, cancel := context.WithTimeout(ctx, DefaultBookTimeout)
	defer cancel()
	if dl.own != nil {
		data, ok, err := dl.own(ctx, f.URL)
		switch {
		case err != nil:
			return nil, fmt.Errorf("could not read the file: %w", err)
		case ok && len(data) > MaxFileBytes:
			return nil, &InputError{Message: fmt.Sprintf("the file %q is larger than %d MiB", fileName(f), MaxFileBytes>>20)}
		case ok:
			return data, nil
		}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, f.URL, nil)
	if err != nil {
		return nil, &InputError{Message: fmt.Sprintf("the file's address is not a URL: %v", err)}
	}
	resp, err := dl.hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("could not download the file: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return nil, fmt.Errorf("could not download the file: the server answered %s", resp.Status)
	}
	return readLimited(resp.Body, MaxFileBytes, "the file")
}

// fileName is a file value's name, or the last part of its URL's path.
func fileName(f *lang.File) string {
	if f.Name != "" {
		return f.Name
	}
	u := f.URL
	if i := strings.IndexAny(u, "?#"); i >= 0 {
		u = u[:i]
	}
	return u[strings.LastIndexByte(u, '/')+1:]
}
