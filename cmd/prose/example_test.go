package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// The README runs examples/invoice.prose; keep what it shows true.
func TestReadmeExample(t *testing.T) {
	var out, errb bytes.Buffer
	code := runCommand(context.Background(),
		[]string{"../../examples/invoice.prose", "--inputs", `{"invoice_total": 120.50}`, "--json"},
		strings.NewReader(""), &out, &errb)
	want := `{"state":"completed","outputs":{"output approval":"manager","output due":128.9350,"output tax":8.4350},"log":["Due: 128.9350"]}`
	if code != 0 || strings.TrimSpace(out.String()) != want {
		t.Fatalf("exit %d\n got %s\nwant %s\n%s", code, out.String(), want, errb.String())
	}
	out.Reset()
	if code := runCommand(context.Background(), []string{"../../examples/invoice.prose", "--json"},
		strings.NewReader(""), &out, &errb); code != 3 || !strings.Contains(out.String(), `"Please provide the invoice total"`) {
		t.Fatalf("without input: exit %d, %s", code, out.String())
	}
}
