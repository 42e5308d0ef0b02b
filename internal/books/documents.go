package books

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/ledongthuc/pdf"

	bookv1 "github.com/proserun/prose/gen/prose/book/v1"
	"github.com/proserun/prose/internal/lang"
)

// DocumentsBookName is the name of the built-in documents book.
const DocumentsBookName = "documents"

// defaultDownloadClient downloads files for books built without a client.
var defaultDownloadClient = plainClient(DefaultBookTimeout)

// Documents returns the built-in documents book: the text of PDF files.
//
//	read the text of a document (the text)
func Documents(hc *http.Client) *Builtin { return documentsBook(downloader{hc: hc}) }

func documentsBook(dl downloader) *Builtin {
	procs := []*bookv1.Procedure{{
		Id:        "document_text",
		Signature: Signature("read the text of a document (the text)"),
		Inputs: []*bookv1.Concept{
			concept("document", fileType, "A PDF file.", nil),
		},
		Outputs:            []*bookv1.Concept{concept("text", textType, "The document's text, page by page.", nil)},
		ShortDescription:   "Reads the text of a PDF document.",
		ConnectionRequired: bookv1.ConnectionRequired_Never,
		Examples: []*bookv1.Example{{Description: "Find the total of an invoice",
			Snippet: "read the text of the invoice\nif the above contains \"Total\" then\n  say \"found a total\""}},
		SearchHints: []string{"pdf", "text", "extract", "ocr"},
	}}
	b := builtinBook(DocumentsBookName, "Documents", "Reads the text of PDF documents.",
		"The documents book is built into Prose. Files up to 20 MiB; the text is cut at 10 MiB. Scanned pages without a text layer read as empty.",
		[]string{"files", "pdf"}, procs)
	return &Builtin{Book: b, Funcs: map[string]Func{"document_text": func(ctx context.Context, in map[string]lang.Value) (map[string]lang.Value, error) {
		fv, err := input(in, "document", lang.KindFile)
		if err != nil {
			return nil, err
		}
		data, err := fileBytes(ctx, dl, fv.AsFile())
		if err != nil {
			return nil, err
		}
		text, err := pdfText(data)
		if err != nil {
			return nil, &InputError{Message: fmt.Sprintf("Could not read the document %q as a PDF: %v", fileName(fv.AsFile()), err)}
		}
		return map[string]lang.Value{"text": lang.Text(text)}, nil
	}}}
}

// pdfText extracts the plain text of a PDF. The parser's panics on
// malformed files are errors.
func pdfText(data []byte) (text string, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("the file is malformed (%v)", r)
		}
	}()
	if !bytes.HasPrefix(bytes.TrimLeft(data, " \t\r\n"), []byte("%PDF-")) {
		return "", fmt.Errorf("it does not start with %%PDF-")
	}
	r, err := pdf.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return "", err
	}
	// Page by page (as pdf.Reader.GetPlainText does), stopping at the text
	// limit: the reader's own loop builds the whole text first, and pages
	// may share one content stream, so a small file can make a text
	// thousands of times its size.
	var b strings.Builder
	fonts := map[string]*pdf.Font{}
	for i := 1; i <= r.NumPage() && b.Len() < MaxDocumentTextBytes; i++ {
		p := r.Page(i)
		for _, name := range p.Fonts() {
			if _, ok := fonts[name]; !ok {
				f := p.Font(name)
				fonts[name] = &f
			}
		}
		t, err := p.GetPlainText(fonts)
		if err != nil {
			return "", err
		}
		n := min(len(t), MaxDocumentTextBytes-b.Len())
		for n < len(t) && n > 0 && !utf8.RuneStart(t[n]) {
			n-- // cut between characters
		}
		b.WriteString(t[:n])
		if n < len(t) {
			break
		}
	}
	return b.String(), nil
}
