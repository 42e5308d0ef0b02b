package books

import (
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path"
	"regexp"
	"strconv"
	"strings"

	"github.com/xuri/excelize/v2"

	bookv1 "github.com/proserun/prose/gen/prose/book/v1"
	"github.com/proserun/prose/internal/lang"
)

// TablesBookName is the name of the built-in tables book.
const TablesBookName = "tables"

// Tables returns the built-in tables book: CSV and Excel (.xlsx) files as
// tables the language can `process each`. hc downloads files given by URL.
//
//	read a table from a file (the table)   inputs: sheet, delimiter
//	write a table as csv (the file)         input: file name
//	write a table as excel (the file)       inputs: file name, sheet
//
// The first row names the columns (an empty name becomes "column N", a
// repeated one gets " 2", " 3" …). A cell that is a plain decimal number
// (`12`, `-3.50`) becomes a number, an empty cell nothing, any other cell
// text (Excel cells as Excel shows them). The format is the file name's
// (.csv, .tsv, .xlsx, .xlsm), else the content's (a zip is Excel).
func Tables(hc *http.Client) *Builtin { return tablesBook(downloader{hc: hc}) }

func tablesBook(dl downloader) *Builtin {
	procs := []*bookv1.Procedure{
		{
			Id:        "read_table",
			Signature: Signature("read a table from a file (the table)"),
			Inputs: []*bookv1.Concept{
				concept("file", fileType, "A CSV or Excel (.xlsx) file.", nil),
				concept("sheet", textType, "The Excel sheet to read (default: the first).", nil),
				concept("delimiter", textType, "The CSV delimiter (default: a comma; a tab for .tsv files).", nil),
			},
			Outputs:            []*bookv1.Concept{concept("table", tableType, "The rows, with the first row's cells as column names.", nil)},
			ShortDescription:   "Reads a CSV or Excel file as a table.",
			ConnectionRequired: bookv1.ConnectionRequired_Never,
			Examples: []*bookv1.Example{{Description: "Total the amounts of a spreadsheet",
				Snippet: "read the table from the orders file\nthe orders are the above\nthe total is 0\nprocess each order in the orders as follows\n  add the order's amount to the total"}},
			SearchHints: []string{"csv", "excel", "xlsx", "spreadsheet", "rows"},
		},
		{
			Id:        "write_csv",
			Signature: Signature("write a table as csv (the file)"),
			Inputs: []*bookv1.Concept{
				concept("table", tableType, "The table to write.", nil),
				concept("file name", textType, "The file's name.", textDefault("table.csv")),
			},
			Outputs:            []*bookv1.Concept{concept("file", fileType, "The CSV file.", nil)},
			ShortDescription:   "Writes a table to a CSV file.",
			ConnectionRequired: bookv1.ConnectionRequired_Never,
			SearchHints:        []string{"csv", "export"},
		},
		{
			Id:        "write_excel",
			Signature: Signature("write a table as excel (the file)"),
			Inputs: []*bookv1.Concept{
				concept("table", tableType, "The table to write.", nil),
				concept("file name", textType, "The file's name.", textDefault("table.xlsx")),
				concept("sheet", textType, "The sheet's name.", textDefault("Sheet1")),
			},
			Outputs:            []*bookv1.Concept{concept("file", fileType, "The Excel file.", nil)},
			ShortDescription:   "Writes a table to an Excel (.xlsx) file.",
			ConnectionRequired: bookv1.ConnectionRequired_Never,
			SearchHints:        []string{"excel", "xlsx", "export", "spreadsheet"},
		},
	}
	b := builtinBook(TablesBookName, "Tables", "Reads and writes CSV and Excel files as tables.",
		"The tables book is built into Prose. Files up to 20 MiB and tables up to 100,000 rows.", []string{"files", "spreadsheets"}, procs)
	return &Builtin{Book: b, Funcs: map[string]Func{
		"read_table": func(ctx context.Context, in map[string]lang.Value) (map[string]lang.Value, error) {
			return readTable(ctx, dl, in)
		},
		"write_csv":   writeCSV,
		"write_excel": writeExcel,
	}}
}

func readTable(ctx context.Context, dl downloader, in map[string]lang.Value) (map[string]lang.Value, error) {
	fv, err := input(in, "file", lang.KindFile)
	if err != nil {
		return nil, err
	}
	f := fv.AsFile()
	data, err := fileBytes(ctx, dl, f)
	if err != nil {
		return nil, err
	}
	name := strings.ToLower(fileName(f))
	ext := path.Ext(name)
	isExcel := ext == ".xlsx" || ext == ".xlsm" || (ext != ".csv" && ext != ".tsv" && ext != ".txt" && bytes.HasPrefix(data, []byte("PK\x03\x04")))
	var rows [][]string
	if isExcel {
		sheet, err := optionalText(in, "sheet")
		if err != nil {
			return nil, err
		}
		rows, err = excelRows(data, sheet)
		if err != nil {
			return nil, err
		}
	} else {
		delim := ','
		if ext == ".tsv" {
			delim = '\t'
		}
		d, err := optionalText(in, "delimiter")
		if err != nil {
			return nil, err
		}
		if d != "" {
			if d == `\t` || strings.EqualFold(d, "tab") {
				d = "\t"
			}
			r := []rune(d)
			if len(r) != 1 || r[0] == '"' || r[0] == '\n' || r[0] == '\r' {
				return nil, &InputError{Message: fmt.Sprintf("Could not use %q as the delimiter: it must be one character", d)}
			}
			delim = r[0]
		}
		rows, err = csvRows(data, delim)
		if err != nil {
			return nil, err
		}
	}
	t, err := tableOf(rows)
	if err != nil {
		return nil, err
	}
	return map[string]lang.Value{"table": lang.TableValue(t)}, nil
}

func csvRows(data []byte, delim rune) ([][]string, error) {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf")) // a UTF-8 byte order mark
	r := csv.NewReader(bytes.NewReader(data))
	r.Comma = delim
	r.FieldsPerRecord = -1
	var rows [][]string
	cells := 0
	for {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			return rows, nil
		}
		if err != nil {
			return nil, &InputError{Message: fmt.Sprintf("the file is not valid CSV: %v", err)}
		}
		if len(rows) > MaxTableRows {
			return nil, &InputError{Message: fmt.Sprintf("the file has more than %d rows", MaxTableRows)}
		}
		if cells += len(rec); cells > MaxTableCells {
			return nil, tooManyCells()
		}
		rows = append(rows, rec)
	}
}

func tooManyCells() error {
	return &InputError{Message: fmt.Sprintf("the table would have more than %s cells (columns × rows), the limit", formatCount(MaxTableCells))}
}

// formatCount writes 1000000 as "1,000,000".
func formatCount(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

func excelRows(data []byte, sheet string) ([][]string, error) {
	x, err := excelize.OpenReader(bytes.NewReader(data), excelize.Options{UnzipSizeLimit: MaxWorkbookBytes})
	if err != nil {
		if strings.Contains(err.Error(), "unzip size exceeds") {
			return nil, &InputError{Message: fmt.Sprintf("the workbook unzips to more than %d MiB, the limit", MaxWorkbookBytes>>20)}
		}
		return nil, &InputError{Message: fmt.Sprintf("the file is not an Excel (.xlsx) workbook: %v", err)}
	}
	defer func() { _ = x.Close() }()
	sheets := x.GetSheetList()
	if sheet == "" {
		if len(sheets) == 0 {
			return nil, &InputError{Message: "the workbook has no sheets"}
		}
		sheet = sheets[0]
	} else if !containsString(sheets, sheet) {
		return nil, &InputError{Message: fmt.Sprintf("the workbook has no sheet %q; its sheets are %s", sheet, strings.Join(sheets, ", "))}
	}
	it, err := x.Rows(sheet)
	if err != nil {
		return nil, &InputError{Message: fmt.Sprintf("could not read the sheet %q: %v", sheet, err)}
	}
	defer func() { _ = it.Close() }()
	var rows [][]string
	cells := 0
	for it.Next() {
		if len(rows) > MaxTableRows {
			return nil, &InputError{Message: fmt.Sprintf("the sheet %q has more than %d rows", sheet, MaxTableRows)}
		}
		cols, err := it.Columns()
		if err != nil {
			return nil, &InputError{Message: fmt.Sprintf("could not read the sheet %q: %v", sheet, err)}
		}
		if cells += len(cols); cells > MaxTableCells {
			return nil, tooManyCells()
		}
		rows = append(rows, cols)
	}
	return rows, it.Error()
}

var plainNumber = regexp.MustCompile(`^-?[0-9]+(\.[0-9]+)?$`)

func cellValue(s string) lang.Value {
	t := strings.TrimSpace(s)
	if t == "" {
		return lang.Null()
	}
	if plainNumber.MatchString(t) {
		if n, err := lang.ParseNumber(t); err == nil {
			return lang.Num(n)
		}
	}
	return lang.Text(s)
}

// tableOf makes a table of rows whose first row names the columns.
func tableOf(rows [][]string) (*lang.Table, error) {
	// Trailing empty rows (Excel keeps formatted ones) are dropped.
	for len(rows) > 0 && strings.TrimSpace(strings.Join(rows[len(rows)-1], "")) == "" {
		rows = rows[:len(rows)-1]
	}
	t := &lang.Table{}
	if len(rows) == 0 {
		return t, nil
	}
	width := 0
	for _, r := range rows {
		width = max(width, len(r))
	}
	if int64(width)*int64(len(rows)-1) > MaxTableCells {
		return nil, tooManyCells()
	}
	seen := map[string]int{}
	for i := range width {
		name := ""
		if i < len(rows[0]) {
			name = strings.TrimSpace(rows[0][i])
		}
		if name == "" {
			name = "column " + strconv.Itoa(i+1)
		}
		seen[name]++
		if n := seen[name]; n > 1 {
			name += " " + strconv.Itoa(n)
		}
		col := lang.Column{Name: name, Values: make([]lang.Value, 0, len(rows)-1)}
		for _, r := range rows[1:] {
			v := lang.Null()
			if i < len(r) {
				v = cellValue(r[i])
			}
			col.Values = append(col.Values, v)
		}
		t.Columns = append(t.Columns, col)
	}
	return t, nil
}

func tableInput(in map[string]lang.Value) (*lang.Table, error) {
	v, ok := optional(in, "table")
	if !ok {
		return nil, &InputError{Message: "Please provide the table"}
	}
	switch v.Kind() {
	case lang.KindTable:
		t := v.AsTable()
		if t.NumRows() > MaxTableRows {
			return nil, &InputError{Message: fmt.Sprintf("the table has more than %d rows", MaxTableRows)}
		}
		return t, nil
	case lang.KindList:
		// A list of dictionaries (records) is a table too.
		t := &lang.Table{}
		for i, item := range v.AsList().Items {
			d := item.AsDictionary()
			if item.Kind() != lang.KindDictionary || d == nil {
				return nil, &InputError{Message: fmt.Sprintf("item %d of the list is %s, not a dictionary, so the list is no table", i+1, item.Kind())}
			}
			t.AppendRow(d)
		}
		return t, nil
	}
	return nil, &InputError{Message: fmt.Sprintf("Could not use %s as the table", v.Kind())}
}

func cellText(v lang.Value) string {
	if !v.IsValid() || v.Kind() == lang.KindNull {
		return ""
	}
	return plainText(v)
}

func writeCSV(_ context.Context, in map[string]lang.Value) (map[string]lang.Value, error) {
	t, err := tableInput(in)
	if err != nil {
		return nil, err
	}
	name, err := optionalText(in, "file name")
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	header := make([]string, len(t.Columns))
	for i, c := range t.Columns {
		header[i] = c.Name
	}
	_ = w.Write(header)
	for r := range t.NumRows() {
		rec := make([]string, len(t.Columns))
		for i, c := range t.Columns {
			rec[i] = cellText(c.Values[r])
		}
		_ = w.Write(rec)
	}
	w.Flush()
	if err := w.Error(); err != nil {
		return nil, err
	}
	if buf.Len() > MaxFileBytes {
		return nil, &InputError{Message: fmt.Sprintf("the CSV file would be larger than %d MiB", MaxFileBytes>>20)}
	}
	return map[string]lang.Value{"file": lang.FileValue(&lang.File{Name: name, Content: buf.Bytes()})}, nil
}

func writeExcel(_ context.Context, in map[string]lang.Value) (map[string]lang.Value, error) {
	t, err := tableInput(in)
	if err != nil {
		return nil, err
	}
	name, err := optionalText(in, "file name")
	if err != nil {
		return nil, err
	}
	sheet, err := optionalText(in, "sheet")
	if err != nil {
		return nil, err
	}
	if sheet == "" {
		sheet = "Sheet1"
	}
	x := excelize.NewFile()
	defer func() { _ = x.Close() }()
	if sheet != "Sheet1" {
		if err := x.SetSheetName("Sheet1", sheet); err != nil {
			return nil, &InputError{Message: fmt.Sprintf("Could not name the sheet %q: %v", sheet, err)}
		}
	}
	sw, err := x.NewStreamWriter(sheet)
	if err != nil {
		return nil, err
	}
	header := make([]any, len(t.Columns))
	for i, c := range t.Columns {
		header[i] = c.Name
	}
	if err := sw.SetRow("A1", header); err != nil {
		return nil, err
	}
	for r := range t.NumRows() {
		row := make([]any, len(t.Columns))
		for i, c := range t.Columns {
			v := c.Values[r]
			switch v.Kind() {
			case lang.KindNumber:
				if f, err := strconv.ParseFloat(v.AsNumber().String(), 64); err == nil {
					row[i] = f
				} else {
					row[i] = v.AsNumber().String()
				}
			case lang.KindBool:
				row[i] = v.AsBool()
			case lang.KindNull:
				row[i] = nil
			default:
				row[i] = cellText(v)
			}
		}
		cell, _ := excelize.CoordinatesToCellName(1, r+2)
		if err := sw.SetRow(cell, row); err != nil {
			return nil, err
		}
	}
	if err := sw.Flush(); err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if _, err := x.WriteTo(&buf); err != nil {
		return nil, err
	}
	if buf.Len() > MaxFileBytes {
		return nil, &InputError{Message: fmt.Sprintf("the Excel file would be larger than %d MiB", MaxFileBytes>>20)}
	}
	return map[string]lang.Value{"file": lang.FileValue(&lang.File{Name: name, Content: buf.Bytes()})}, nil
}
