package books

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"mime"
	"mime/multipart"
	"net"
	"net/mail"
	"net/smtp"
	"net/textproto"
	"strconv"
	"strings"
	"time"

	bookv1 "github.com/proserun/prose/gen/prose/book/v1"
	"github.com/proserun/prose/internal/lang"
	"github.com/proserun/prose/internal/netguard"
)

// EmailBookName is the name of the built-in email book.
const EmailBookName = "email"

// Email returns the built-in email book: it sends mail through the SMTP
// server of an email connection (config: host, port, security — "starttls"
// (default), "tls" or "none" — and from; authentication "password" with a
// username and password). rootCAs verifies the server's certificate (nil:
// the system's roots).
//
//	send an email to a recipient (the message id)
//
// Inputs: recipient (an address, several separated by commas, or a list),
// subject, body, attachments (a file or a list of files, 20 MiB together),
// connection (required).
func Email(rootCAs *x509.CertPool) *Builtin {
	return emailBook(rootCAs, network{}, downloader{hc: defaultDownloadClient})
}

func emailBook(rootCAs *x509.CertPool, nw network, dl downloader) *Builtin {
	procs := []*bookv1.Procedure{{
		Id:        "send_email",
		Signature: Signature("send an email to a recipient (the message id)"),
		Inputs: []*bookv1.Concept{
			concept("recipient", anyType, "An address, several separated by commas, or a list of addresses.", nil),
			concept("subject", textType, "The subject.", textDefault("")),
			concept("body", textType, "The text of the message.", textDefault("")),
			concept("attachments", anyType, "A file or a list of files to attach.", nil),
			concept("connection", textType, "The name of the email connection (the SMTP server) to send through.", nil),
		},
		Outputs:            []*bookv1.Concept{concept("message id", textType, "The Message-ID header of the message sent.", nil)},
		ShortDescription:   "Sends an email through an SMTP server.",
		ConnectionRequired: bookv1.ConnectionRequired_Always,
		Examples: []*bookv1.Example{{Description: "Send a summary",
			Snippet: "send an email to \"ana@example.com\" with\n  the subject is \"Daily summary\"\n  the body is the summary\n  the connection is \"mail\""}},
		SearchHints: []string{"mail", "smtp", "notify", "message"},
	}}
	b := builtinBook(EmailBookName, "Email", "Sends email through SMTP (TLS or STARTTLS), with attachments.",
		"The email book is built into Prose. A send times out after 30 s (a connection's \"timeout seconds\" changes it, up to 120); credentials are only sent over TLS unless the connection's security is \"none\".",
		[]string{"network", "email"}, procs)
	b.ConnectionRequired = true
	b.Authentications = []*bookv1.Authentication{customAuth("password", "User name and password", "username", "password")}
	b.Configurations = []*bookv1.Concept{
		concept("host", textType, "The SMTP server's host name.", nil),
		concept("port", numberType, "The SMTP port (default 587 for starttls, 465 for tls, 25 for none).", nil),
		concept("security", textType, "starttls (default), tls or none.", nil),
		concept("from", textType, "The sender's address.", nil),
		concept("timeout seconds", numberType, "How long a send may take (default 30, at most 120).", nil),
	}
	return &Builtin{Book: b, Funcs: map[string]Func{"send_email": func(ctx context.Context, in map[string]lang.Value) (map[string]lang.Value, error) {
		return sendEmail(ctx, rootCAs, nw, dl, in)
	}}, Check: func(ctx context.Context, conn *Connection) (map[string]string, error) {
		return smtpCheck(ctx, rootCAs, nw, conn)
	}}
}

func recipients(v lang.Value) ([]string, error) {
	var raw []string
	switch v.Kind() {
	case lang.KindText:
		raw = strings.Split(v.AsText(), ",")
	case lang.KindList:
		for _, it := range v.AsList().Items {
			raw = append(raw, plainText(it))
		}
	default:
		return nil, &InputError{Message: fmt.Sprintf("Could not use %s as the recipient: give an address or a list of them", v.Kind())}
	}
	var out []string
	for _, r := range raw {
		r = strings.TrimSpace(r)
		if r == "" {
			continue
		}
		a, err := mail.ParseAddress(r)
		if err != nil {
			return nil, &InputError{Message: fmt.Sprintf("%q is not an email address", r)}
		}
		out = append(out, a.Address)
	}
	if len(out) == 0 {
		return nil, &InputError{Message: "Please provide the recipient"}
	}
	if len(out) > MaxEmailRecipients {
		return nil, &InputError{Message: fmt.Sprintf("the message has %d recipients; one email goes to at most %d", len(out), MaxEmailRecipients)}
	}
	return out, nil
}

// MaxEmailRecipients bounds the recipients of one email (one SMTP session
// of at most the call's timeout).
const MaxEmailRecipients = 100

func attachmentFiles(in map[string]lang.Value) ([]*lang.File, error) {
	v, ok := optional(in, "attachments")
	if !ok {
		return nil, nil
	}
	var items []lang.Value
	switch v.Kind() {
	case lang.KindFile:
		items = []lang.Value{v}
	case lang.KindList:
		items = v.AsList().Items
	default:
		return nil, &InputError{Message: fmt.Sprintf("Could not attach %s: give a file or a list of files", v.Kind())}
	}
	var out []*lang.File
	for i, it := range items {
		if it.Kind() != lang.KindFile {
			return nil, &InputError{Message: fmt.Sprintf("attachment %d is %s, not a file", i+1, it.Kind())}
		}
		out = append(out, it.AsFile())
	}
	return out, nil
}

func sendEmail(ctx context.Context, rootCAs *x509.CertPool, nw network, dl downloader, in map[string]lang.Value) (map[string]lang.Value, error) {
	conn, err := bookConnection(ctx, in, EmailBookName)
	if err != nil {
		return nil, err
	}
	if conn == nil {
		return nil, &InputError{Message: "Please provide the connection: the name of an email connection of this workspace (its SMTP server)"}
	}
	rv, ok := optional(in, "recipient")
	if !ok {
		return nil, &InputError{Message: "Please provide the recipient"}
	}
	to, err := recipients(rv)
	if err != nil {
		return nil, err
	}
	subject, err := optionalText(in, "subject")
	if err != nil {
		return nil, err
	}
	body, err := optionalText(in, "body")
	if err != nil {
		return nil, err
	}
	files, err := attachmentFiles(in)
	if err != nil {
		return nil, err
	}
	srv, err := smtpServerOf(conn)
	if err != nil {
		return nil, err
	}
	from := conn.ConfigText("from")
	fromAddr, err := mail.ParseAddress(from)
	if err != nil {
		return nil, &InputError{Message: fmt.Sprintf("the connection %q has no valid from address", conn.Name)}
	}
	ctx, cancel := context.WithTimeout(ctx, srv.timeout)
	defer cancel()
	var parts []attachment
	total := 0
	for _, f := range files {
		data, err := fileBytes(ctx, dl, f)
		if err != nil {
			return nil, err
		}
		if total += len(data); total > MaxFileBytes {
			return nil, &InputError{Message: fmt.Sprintf("the attachments are larger than %d MiB together", MaxFileBytes>>20)}
		}
		parts = append(parts, attachment{name: fileName(f), data: data})
	}
	msgID, msg, err := buildMessage(fromAddr, to, subject, body, parts, time.Now())
	if err != nil {
		return nil, err
	}
	if err := smtpSend(ctx, srv, rootCAs, nw, conn, fromAddr.Address, to, msg); err != nil {
		return nil, errors.New(redact(err.Error(), conn))
	}
	return map[string]lang.Value{"message id": lang.Text(msgID)}, nil
}

type attachment struct {
	name string
	data []byte
}

func buildMessage(from *mail.Address, to []string, subject, body string, files []attachment, now time.Time) (string, []byte, error) {
	var rnd [12]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return "", nil, err
	}
	domain := from.Address[strings.LastIndexByte(from.Address, '@')+1:]
	msgID := "<" + hex.EncodeToString(rnd[:]) + "@" + domain + ">"
	var buf bytes.Buffer
	h := func(k, v string) { fmt.Fprintf(&buf, "%s: %s\r\n", k, v) }
	h("From", from.String())
	h("To", strings.Join(to, ", "))
	h("Subject", mime.QEncoding.Encode("utf-8", subject))
	h("Date", now.Format(time.RFC1123Z))
	h("Message-ID", msgID)
	h("MIME-Version", "1.0")
	textPart := func(w *bytes.Buffer) {
		enc := base64.StdEncoding.EncodeToString([]byte(body))
		for len(enc) > 76 {
			w.WriteString(enc[:76] + "\r\n")
			enc = enc[76:]
		}
		w.WriteString(enc + "\r\n")
	}
	if len(files) == 0 {
		h("Content-Type", "text/plain; charset=utf-8")
		h("Content-Transfer-Encoding", "base64")
		buf.WriteString("\r\n")
		textPart(&buf)
		return msgID, buf.Bytes(), nil
	}
	var mp bytes.Buffer
	w := multipart.NewWriter(&mp)
	h("Content-Type", "multipart/mixed; boundary="+w.Boundary())
	buf.WriteString("\r\n")
	pw, err := w.CreatePart(textproto.MIMEHeader{"Content-Type": {"text/plain; charset=utf-8"}, "Content-Transfer-Encoding": {"base64"}})
	if err != nil {
		return "", nil, err
	}
	var tb bytes.Buffer
	textPart(&tb)
	_, _ = pw.Write(tb.Bytes())
	for _, f := range files {
		ct := mime.TypeByExtension(strings.ToLower(pathExt(f.name)))
		if ct == "" {
			ct = "application/octet-stream"
		}
		name := f.name
		if name == "" {
			name = "attachment"
		}
		pw, err := w.CreatePart(textproto.MIMEHeader{
			"Content-Type":              {mime.FormatMediaType(ct, map[string]string{"name": name})},
			"Content-Disposition":       {mime.FormatMediaType("attachment", map[string]string{"filename": name})},
			"Content-Transfer-Encoding": {"base64"},
		})
		if err != nil {
			return "", nil, err
		}
		enc := base64.StdEncoding.EncodeToString(f.data)
		for len(enc) > 76 {
			_, _ = pw.Write([]byte(enc[:76] + "\r\n"))
			enc = enc[76:]
		}
		_, _ = pw.Write([]byte(enc + "\r\n"))
	}
	if err := w.Close(); err != nil {
		return "", nil, err
	}
	buf.Write(mp.Bytes())
	return msgID, buf.Bytes(), nil
}

func pathExt(name string) string {
	if i := strings.LastIndexByte(name, '.'); i >= 0 {
		return name[i:]
	}
	return ""
}

// smtpServer is where an email connection sends: its host, port and
// security (starttls, tls or none), and how long a session may take.
type smtpServer struct {
	host, port, security string
	timeout              time.Duration
}

// smtpServerOf reads the connection's server (an InputError for a bad one).
func smtpServerOf(conn *Connection) (smtpServer, error) {
	host := conn.ConfigText("host")
	if host == "" {
		return smtpServer{}, &InputError{Message: fmt.Sprintf("the connection %q has no host", conn.Name)}
	}
	security := strings.ToLower(conn.ConfigText("security"))
	if security == "" {
		security = "starttls"
	}
	port := map[string]string{"starttls": "587", "tls": "465", "none": "25"}[security]
	if port == "" {
		return smtpServer{}, &InputError{Message: fmt.Sprintf("the connection %q has the security %q; it must be starttls, tls or none", conn.Name, security)}
	}
	if p := conn.ConfigText("port"); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 {
			return smtpServer{}, &InputError{Message: fmt.Sprintf("the connection %q has the port %s; it must be a whole number from 1 to 65535", conn.Name, p)}
		}
		port = p
	}
	timeout, err := timeoutOf(conn)
	if err != nil {
		return smtpServer{}, err
	}
	return smtpServer{host: host, port: port, security: security, timeout: timeout}, nil
}

// smtpSend delivers msg.
func smtpSend(ctx context.Context, srv smtpServer, rootCAs *x509.CertPool, nw network, conn *Connection, from string, to []string, msg []byte) error {
	return smtpSession(ctx, srv, rootCAs, nw, conn, func(c *smtp.Client, addr string) error {
		if err := c.Mail(from); err != nil {
			return fmt.Errorf("the mail server %s refused the sender: %w", addr, err)
		}
		for _, r := range to {
			if err := c.Rcpt(r); err != nil {
				return fmt.Errorf("the mail server %s refused the recipient %s: %w", addr, r, err)
			}
		}
		w, err := c.Data()
		if err != nil {
			return fmt.Errorf("the mail server %s: %w", addr, err)
		}
		if _, err := w.Write(msg); err != nil {
			return fmt.Errorf("the mail server %s: %w", addr, err)
		}
		if err := w.Close(); err != nil {
			return fmt.Errorf("the mail server %s did not accept the message: %w", addr, err)
		}
		return c.Quit()
	})
}

// smtpCheck signs in to the connection's server and leaves, sending
// nothing (Connections.Check).
func smtpCheck(ctx context.Context, rootCAs *x509.CertPool, nw network, conn *Connection) (map[string]string, error) {
	srv, err := smtpServerOf(conn)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, srv.timeout)
	defer cancel()
	found := map[string]string{"security": srv.security}
	err = smtpSession(ctx, srv, rootCAs, nw, conn, func(c *smtp.Client, addr string) error {
		found["server"] = addr
		if conn.AuthID == "password" {
			found["user"] = conn.Credentials["username"]
		}
		return c.Quit()
	})
	if err != nil {
		return nil, errors.New(redact(err.Error(), conn))
	}
	return found, nil
}

// smtpSession connects to the server, greets it, starts TLS and signs in
// as the connection says, then does do. Credentials are sent only over TLS
// (tls or starttls; a server that offers no STARTTLS is refused) unless
// security is "none".
func smtpSession(ctx context.Context, srv smtpServer, rootCAs *x509.CertPool, nw network, conn *Connection, do func(c *smtp.Client, addr string) error) error {
	addr := net.JoinHostPort(srv.host, srv.port)
	deadline, _ := ctx.Deadline()
	d := nw.dialer(deadline)
	tlsCfg := &tls.Config{ServerName: srv.host, RootCAs: rootCAs, MinVersion: tls.VersionTLS12}
	var nc net.Conn
	var err error
	if srv.security == "tls" {
		nc, err = (&tls.Dialer{NetDialer: d, Config: tlsCfg}).DialContext(ctx, "tcp", addr)
	} else {
		nc, err = d.DialContext(ctx, "tcp", addr)
	}
	if err != nil {
		return fmt.Errorf("could not reach the mail server: %w", netguard.TenantError(addr, err))
	}
	defer func() { _ = nc.Close() }()
	_ = nc.SetDeadline(deadline)
	// The session ends when ctx does (a paused run, a shutdown).
	stop := context.AfterFunc(ctx, func() { _ = nc.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	c, err := smtp.NewClient(nc, srv.host)
	if err != nil {
		return fmt.Errorf("the mail server %s: %w", addr, err)
	}
	defer func() { _ = c.Close() }()
	if err := c.Hello("prose.localhost"); err != nil {
		return fmt.Errorf("the mail server %s: %w", addr, err)
	}
	if srv.security == "starttls" {
		if ok, _ := c.Extension("STARTTLS"); !ok {
			return fmt.Errorf("the mail server %s does not offer STARTTLS (the connection's security is starttls)", addr)
		}
		if err := c.StartTLS(tlsCfg); err != nil {
			return fmt.Errorf("the mail server %s: STARTTLS: %w", addr, err)
		}
	}
	if conn.AuthID == "password" {
		if ok, _ := c.Extension("AUTH"); !ok {
			return fmt.Errorf("the mail server %s does not offer authentication", addr)
		}
		auth := plainAuth{username: conn.Credentials["username"], password: conn.Credentials["password"], host: srv.host, allowPlain: srv.security == "none"}
		if err := c.Auth(auth); err != nil {
			return fmt.Errorf("the mail server %s refused the connection's credentials: %w", addr, err)
		}
	}
	return do(c, addr)
}

// plainAuth is SMTP AUTH PLAIN. Unlike smtp.PlainAuth it sends over a
// connection without TLS only when the connection says security "none" (the
// operator's choice), and never otherwise.
type plainAuth struct {
	username, password, host string
	allowPlain               bool
}

func (a plainAuth) Start(server *smtp.ServerInfo) (string, []byte, error) {
	if !server.TLS && !a.allowPlain {
		return "", nil, errors.New("the connection is not encrypted, so the credentials are not sent")
	}
	return "PLAIN", []byte("\x00" + a.username + "\x00" + a.password), nil
}

func (a plainAuth) Next(_ []byte, more bool) ([]byte, error) {
	if more {
		return nil, errors.New("unexpected server challenge")
	}
	return nil, nil
}
