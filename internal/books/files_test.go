package books_test

import (
	"archive/zip"
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"io"
	"math/big"
	"mime"
	"net"
	"net/mail"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
	"github.com/xuri/excelize/v2"

	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/internal/books"
	"github.com/proserun/prose/internal/lang"
)

func file(name string, data []byte) lang.Value {
	return lang.FileValue(&lang.File{Name: name, Content: data})
}

func TestTablesBookReadsCSVAndExcelForProcessEach(t *testing.T) {
	e := newEnv(t, books.BuiltinOptions{})
	csvData := []byte("\xef\xbb\xbfcustomer,amount,note\nAna,12.50,\"first, of many\"\nBo,3,\n")
	x := excelize.NewFile()
	_ = x.SetSheetRow("Sheet1", "A1", &[]any{"customer", "amount", "note"})
	_ = x.SetSheetRow("Sheet1", "A2", &[]any{"Ana", 12.5, "first, of many"})
	_ = x.SetSheetRow("Sheet1", "A3", &[]any{"Bo", 3, nil})
	_, _ = x.NewSheet("Other")
	_ = x.SetSheetRow("Other", "A1", &[]any{"customer", "amount"})
	_ = x.SetSheetRow("Other", "A2", &[]any{"Cy", 100})
	var xb bytes.Buffer
	if _, err := x.WriteTo(&xb); err != nil {
		t.Fatal(err)
	}
	code := "read the table from the orders file\nthe orders are the above\nthe total is 0\nthe names are \"\"\n" +
		"process each order in the orders as follows\n  add the order's amount to the total\n  the names is the names + the order's customer + \";\"\n" +
		"the output total is the total\nthe output names is the names\n"
	for _, c := range []struct {
		name  string
		file  lang.Value
		total string
	}{
		{"csv", file("orders.csv", csvData), "15.50"},
		{"xlsx", file("orders.xlsx", xb.Bytes()), "15.5"},
		{"xlsx by content", file("orders", xb.Bytes()), "15.5"},
	} {
		res := e.run(code, map[string]lang.Value{"orders file": c.file})
		wantCompleted(t, res)
		if got := outputText(t, res, "output total"); got != c.total {
			t.Errorf("%s: total = %s, want %s", c.name, got, c.total)
		}
		if got := outputText(t, res, "output names"); got != "Ana;Bo;" {
			t.Errorf("%s: names = %q", c.name, got)
		}
	}
	// Another sheet, by name.
	res := e.run("read the table from the orders file with\n  the sheet is \"Other\"\nthe rows are the above\nthe names are \"\"\nprocess each row in the rows as follows\n  the names is the names + the row's customer\nthe output first is the names\n",
		map[string]lang.Value{"orders file": file("o.xlsx", xb.Bytes())})
	wantCompleted(t, res)
	if got := outputText(t, res, "output first"); got != "Cy" {
		t.Errorf("Other sheet first customer = %q", got)
	}
	// Bad files are exceptions.
	for _, c := range []struct {
		f    lang.Value
		want string
	}{
		{file("o.xlsx", []byte("not a zip")), "not an Excel"},
		{file("o.csv", []byte("a,b\n\"unterminated\n")), "not valid CSV"},
	} {
		res := e.run("read the table from the orders file\n", map[string]lang.Value{"orders file": c.f})
		if res.Status != lang.Suspended || !strings.Contains(res.Exception.Message, c.want) {
			t.Errorf("status %s, exception %+v, want %q", res.Status, res.Exception, c.want)
		}
	}
	res = e.run("read the table from the orders file with\n  the sheet is \"Nope\"\n", map[string]lang.Value{"orders file": file("o.xlsx", xb.Bytes())})
	if res.Status != lang.Suspended || !strings.Contains(res.Exception.Message, `no sheet "Nope"`) {
		t.Errorf("unknown sheet: %s %+v", res.Status, res.Exception)
	}
}

func TestTablesBookWritesCSVAndExcel(t *testing.T) {
	e := newEnv(t, books.BuiltinOptions{})
	src := []byte("name,amount\nAna,12.50\n\"Bo, Jr\",3\n")
	code := "read the table from the source\nthe rows are the above\n" +
		"write the rows as csv\nthe output csv is the above\n" +
		"write the rows as excel with\n  the file name is \"out.xlsx\"\nthe output xlsx is the above\n"
	res := e.run(code, map[string]lang.Value{"source": file("in.csv", src)})
	wantCompleted(t, res)
	csvOut := res.Outputs["output csv"].AsFile()
	if csvOut == nil || string(csvOut.Content) != string(src) || csvOut.Name != "table.csv" {
		t.Errorf("csv = %+v", csvOut)
	}
	xOut := res.Outputs["output xlsx"].AsFile()
	x, err := excelize.OpenReader(bytes.NewReader(xOut.Content))
	if err != nil {
		t.Fatal(err)
	}
	rows, _ := x.GetRows("Sheet1")
	if fmt.Sprint(rows) != "[[name amount] [Ana 12.5] [Bo, Jr 3]]" || xOut.Name != "out.xlsx" {
		t.Errorf("xlsx rows = %q, name %q", rows, xOut.Name)
	}
}

// minimalPDF writes a one-page PDF whose page shows lines of text.
func minimalPDF(lines ...string) []byte {
	var content strings.Builder
	content.WriteString("BT /F1 12 Tf 72 720 Td 14 TL\n")
	for _, l := range lines {
		fmt.Fprintf(&content, "(%s) Tj T*\n", l)
	}
	content.WriteString("ET")
	objs := []string{
		"<< /Type /Catalog /Pages 2 0 R >>",
		"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
		"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 5 0 R >> >> /Contents 4 0 R >>",
		fmt.Sprintf("<< /Length %d >>\nstream\n%s\nendstream", content.Len(), content.String()),
		"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>",
	}
	var b bytes.Buffer
	b.WriteString("%PDF-1.4\n")
	offsets := make([]int, len(objs))
	for i, o := range objs {
		offsets[i] = b.Len()
		fmt.Fprintf(&b, "%d 0 obj\n%s\nendobj\n", i+1, o)
	}
	xref := b.Len()
	fmt.Fprintf(&b, "xref\n0 %d\n0000000000 65535 f \n", len(objs)+1)
	for _, off := range offsets {
		fmt.Fprintf(&b, "%010d 00000 n \n", off)
	}
	fmt.Fprintf(&b, "trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n", len(objs)+1, xref)
	return b.Bytes()
}

func TestDocumentsBookReadsPDFText(t *testing.T) {
	e := newEnv(t, books.BuiltinOptions{})
	pdf := minimalPDF("Invoice 2024-17", "Total due 42.00 EUR")
	code := "read the text of the invoice\nthe output text is the above\n"
	res := e.run(code, map[string]lang.Value{"invoice": file("invoice.pdf", pdf)})
	wantCompleted(t, res)
	if got := outputText(t, res, "output text"); !strings.Contains(got, "Invoice 2024-17") || !strings.Contains(got, "Total due 42.00 EUR") {
		t.Errorf("text = %q", got)
	}
	for _, bad := range [][]byte{[]byte("hello"), []byte("%PDF-1.4\ngarbage"), pdf[:len(pdf)/2]} {
		res := e.run("read the text of the invoice\n", map[string]lang.Value{"invoice": file("bad.pdf", bad)})
		if res.Status != lang.Suspended || !strings.Contains(res.Exception.Message, "as a PDF") {
			t.Errorf("bad pdf %q: %s %+v", bad[:min(len(bad), 12)], res.Status, res.Exception)
		}
	}
}

// mailServer is an SMTP server on loopback that keeps what it receives.
type mailServer struct {
	mu       sync.Mutex
	user, pw string
	msgs     []received
}

type received struct {
	from string
	to   []string
	data []byte
	auth bool
}

type mailSession struct {
	s    *mailServer
	cur  received
	auth bool
}

func (m *mailServer) NewSession(*smtp.Conn) (smtp.Session, error) { return &mailSession{s: m}, nil }

func (s *mailSession) AuthMechanisms() []string { return []string{sasl.Plain} }
func (s *mailSession) Auth(string) (sasl.Server, error) {
	return sasl.NewPlainServer(func(_, user, pw string) error {
		if user != s.s.user || pw != s.s.pw {
			return errors.New("invalid credentials")
		}
		s.auth = true
		return nil
	}), nil
}
func (s *mailSession) Mail(from string, _ *smtp.MailOptions) error {
	if !s.auth {
		return smtp.ErrAuthRequired
	}
	s.cur.from = from
	return nil
}
func (s *mailSession) Rcpt(to string, _ *smtp.RcptOptions) error {
	s.cur.to = append(s.cur.to, to)
	return nil
}
func (s *mailSession) Data(r io.Reader) error {
	b, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	s.cur.data, s.cur.auth = b, s.auth
	s.s.mu.Lock()
	s.s.msgs = append(s.s.msgs, s.cur)
	s.s.mu.Unlock()
	return nil
}
func (s *mailSession) Reset()        { s.cur = received{} }
func (s *mailSession) Logout() error { return nil }

func selfSigned(t *testing.T) (tls.Certificate, *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, pool
}

// startMail serves SMTP on loopback: implicit TLS when implicitTLS, else
// plain with STARTTLS offered.
func startMail(t *testing.T, ms *mailServer, cert tls.Certificate, implicitTLS bool) string {
	t.Helper()
	srv := smtp.NewServer(ms)
	srv.Domain = "127.0.0.1"
	srv.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}}
	srv.ReadTimeout, srv.WriteTimeout = 10*time.Second, 10*time.Second
	var l net.Listener
	var err error
	if implicitTLS {
		l, err = tls.Listen("tcp", "127.0.0.1:0", srv.TLSConfig)
	} else {
		l, err = net.Listen("tcp", "127.0.0.1:0")
	}
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	_, port, _ := net.SplitHostPort(l.Addr().String())
	return port
}

func TestEmailBookSendsThroughSMTP(t *testing.T) {
	cert, pool := selfSigned(t)
	ms := &mailServer{user: "robot@acme.test", pw: "smtp-s3cr3t-9"}
	starttlsPort := startMail(t, ms, cert, false)
	tlsPort := startMail(t, ms, cert, true)
	e := newEnv(t, books.BuiltinOptions{RootCAs: pool})
	cfg := func(port, security string) map[string]*platformv1.BdkValue {
		p, _ := new(big.Float).SetString(port)
		f, _ := p.Float64()
		return map[string]*platformv1.BdkValue{"host": text("127.0.0.1"), "port": num(f), "security": text(security), "from": text("Robot <robot@acme.test>")}
	}
	e.add("email", "mail", auth("password", "username", "robot@acme.test", "password", "smtp-s3cr3t-9"), cfg(starttlsPort, "starttls"))
	e.add("email", "mail tls", auth("password", "username", "robot@acme.test", "password", "smtp-s3cr3t-9"), cfg(tlsPort, "tls"))
	e.add("email", "mail wrong", auth("password", "username", "robot@acme.test", "password", "wrong-pw-77"), cfg(starttlsPort, "starttls"))

	code := "send an email to \"ana@example.com, bo@example.com\" with\n  the subject is \"Daily summary ✓\"\n  the body is \"3 orders\"\n  the attachments is the report\n  the connection is the mail connection\nthe output id is the above\n"
	for i, conn := range []string{"mail", "mail tls"} {
		res := e.run(code, map[string]lang.Value{"report": file("report.csv", []byte("a,b\n1,2\n")), "mail connection": lang.Text(conn)})
		wantCompleted(t, res)
		ms.mu.Lock()
		if len(ms.msgs) != i+1 {
			ms.mu.Unlock()
			t.Fatalf("%s: server got %d messages", conn, len(ms.msgs))
		}
		got := ms.msgs[i]
		ms.mu.Unlock()
		if got.from != "robot@acme.test" || strings.Join(got.to, ",") != "ana@example.com,bo@example.com" || !got.auth {
			t.Errorf("%s: envelope %+v", conn, got)
		}
		m, err := mail.ReadMessage(bytes.NewReader(got.data))
		if err != nil {
			t.Fatal(err)
		}
		subject, _ := new(mime.WordDecoder).DecodeHeader(m.Header.Get("Subject"))
		if subject != "Daily summary ✓" || m.Header.Get("Message-Id") != outputText(t, res, "output id") {
			t.Errorf("%s: subject %q, message id %q vs %q", conn, subject, m.Header.Get("Message-Id"), outputText(t, res, "output id"))
		}
		if !bytes.Contains(got.data, []byte(`filename=report.csv`)) || !bytes.Contains(got.data, []byte("YSxiCjEsMgo=")) {
			t.Errorf("%s: attachment missing in %s", conn, got.data)
		}
	}
	// Wrong credentials: an exception that does not show them.
	res := e.run(code, map[string]lang.Value{"report": file("r.csv", []byte("x")), "mail connection": lang.Text("mail wrong")})
	if res.Status != lang.Suspended || !strings.Contains(res.Exception.Message, "refused the connection's credentials") || strings.Contains(res.Exception.Message, "wrong-pw-77") {
		t.Errorf("wrong credentials: %s %+v", res.Status, res.Exception)
	}
	// No connection, a bad recipient: exceptions.
	res = e.run("send an email to \"ana@example.com\"\n", nil)
	if res.Status != lang.Suspended || !strings.Contains(res.Exception.Message, "Please provide the connection") {
		t.Errorf("no connection: %s %+v", res.Status, res.Exception)
	}
	res = e.run("send an email to \"not an address\" with\n  the connection is \"mail\"\n", nil)
	if res.Status != lang.Suspended || !strings.Contains(res.Exception.Message, "is not an email address") {
		t.Errorf("bad recipient: %s %+v", res.Status, res.Exception)
	}
	many := make([]string, books.MaxEmailRecipients+1)
	for i := range many {
		many[i] = fmt.Sprintf("r%d@acme.test", i)
	}
	res = e.run("send an email to the people with\n  the connection is \"mail\"\n", map[string]lang.Value{"people": lang.Text(strings.Join(many, ","))})
	if res.Status != lang.Suspended || !strings.Contains(res.Exception.Message, "at most 100") {
		t.Errorf("101 recipients: %s %+v", res.Status, res.Exception)
	}
}

// A small file must not make a huge table: the cells (columns × rows) of a
// table read from a file are bounded, and so is what a workbook unzips to.
// Each is an exception at the statement.
func TestTablesBookBoundsCells(t *testing.T) {
	e := newEnv(t, books.BuiltinOptions{})
	// One wide row beside many short ones: 200,001 columns × 10,001 rows
	// would be 2×10^9 cells from a 220 KB file.
	var wide bytes.Buffer
	wide.WriteString("a\n")
	wide.WriteString(strings.Repeat(",", 200_000) + "\n")
	wide.WriteString(strings.Repeat("1\n", 10_000))
	// Many cells read: 1,100 rows of 1,000 fields.
	var many bytes.Buffer
	for range 1_100 {
		many.WriteString(strings.Repeat("1,", 999) + "1\n")
	}
	// A sheet with a cell in the last column beside 100 rows.
	x := excelize.NewFile()
	_ = x.SetCellValue("Sheet1", "A1", "a")
	_ = x.SetCellValue("Sheet1", "XFD2", "far")
	for r := 3; r <= 100; r++ {
		_ = x.SetCellValue("Sheet1", fmt.Sprintf("A%d", r), r)
	}
	var xb bytes.Buffer
	if _, err := x.WriteTo(&xb); err != nil {
		t.Fatal(err)
	}
	// A workbook that unzips to more than 256 MiB: a sheet of 300 MiB of
	// one repeated row compresses to well under 20 MiB.
	var bomb bytes.Buffer
	{
		zw := zipWriter(&bomb)
		w, _ := zw.Create("[Content_Types].xml")
		_, _ = io.WriteString(w, `<?xml version="1.0"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"/>`)
		w, _ = zw.Create("xl/worksheets/sheet1.xml")
		row := strings.Repeat(" ", 1<<20)
		for range 300 {
			_, _ = io.WriteString(w, row)
		}
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if bomb.Len() > books.MaxFileBytes {
		t.Fatalf("the bomb is %d bytes, more than a file may be", bomb.Len())
	}
	for _, c := range []struct {
		name string
		f    lang.Value
		want string
	}{
		{"wide csv", file("w.csv", wide.Bytes()), "more than 1,000,000 cells"},
		{"many cells", file("m.csv", many.Bytes()), "more than 1,000,000 cells"},
		{"wide sheet", file("w.xlsx", xb.Bytes()), "more than 1,000,000 cells"},
		{"zip bomb", file("b.xlsx", bomb.Bytes()), "unzips to more than 256 MiB"},
	} {
		res := e.run("read the table from the orders file\n", map[string]lang.Value{"orders file": c.f})
		if res.Status != lang.Suspended || res.Exception == nil || !strings.Contains(res.Exception.Message, c.want) {
			t.Errorf("%s: status %s, exception %+v, want %q", c.name, res.Status, res.Exception, c.want)
		}
	}
}

func zipWriter(w io.Writer) *zip.Writer { return zip.NewWriter(w) }

// sharedPagesPDF is a PDF of pages pages that all show one content stream
// of lines lines of text.
func sharedPagesPDF(pages, lines int, line string) []byte {
	var content strings.Builder
	content.WriteString("BT /F1 12 Tf 72 720 Td 14 TL\n")
	for range lines {
		fmt.Fprintf(&content, "(%s) Tj T*\n", line)
	}
	content.WriteString("ET")
	kids := strings.TrimSpace(strings.Repeat("3 0 R ", pages))
	objs := []string{
		"<< /Type /Catalog /Pages 2 0 R >>",
		fmt.Sprintf("<< /Type /Pages /Kids [%s] /Count %d >>", kids, pages),
		"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 5 0 R >> >> /Contents 4 0 R >>",
		fmt.Sprintf("<< /Length %d >>\nstream\n%s\nendstream", content.Len(), content.String()),
		"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>",
	}
	var b bytes.Buffer
	b.WriteString("%PDF-1.4\n")
	offsets := make([]int, len(objs))
	for i, o := range objs {
		offsets[i] = b.Len()
		fmt.Fprintf(&b, "%d 0 obj\n%s\nendobj\n", i+1, o)
	}
	xref := b.Len()
	fmt.Fprintf(&b, "xref\n0 %d\n0000000000 65535 f \n", len(objs)+1)
	for _, off := range offsets {
		fmt.Fprintf(&b, "%010d 00000 n \n", off)
	}
	fmt.Fprintf(&b, "trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n", len(objs)+1, xref)
	return b.Bytes()
}

// A document's text stops at the limit as it is read: 2,000 pages showing
// one content stream of 64 KiB of text (a 100 KB file, 128 MiB of text)
// read about 10 MiB of it, not the whole.
func TestDocumentsBookStopsAtTheTextLimit(t *testing.T) {
	e := newEnv(t, books.BuiltinOptions{})
	doc := sharedPagesPDF(2_000, 1_024, strings.Repeat("x", 63))
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	res := e.run("read the text of the invoice\nthe output n is the length of the above\n", map[string]lang.Value{"invoice": file("big.pdf", doc)})
	runtime.ReadMemStats(&after)
	wantCompleted(t, res)
	if got := outputText(t, res, "output n"); got != strconv.Itoa(books.MaxDocumentTextBytes) {
		t.Errorf("text length %s, want %d", got, books.MaxDocumentTextBytes)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 512<<20 {
		t.Errorf("reading the document allocated %d MiB", alloc>>20)
	} else {
		t.Logf("allocated %d MiB for a %d-byte file", alloc>>20, len(doc))
	}
}
