package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCLISafeChange drives the built binary: the example's tests file
// pushed to the server (twice: the tests are matched by name) and run
// there, a published automation's runs replayed against a changed draft
// (exit 1, the runs it changes), the publish refused with a line per
// failing test and changed run, --force without --reason a usage
// mistake, and the forced publish.
func TestCLISafeChange(t *testing.T) {
	e := newTestEnv(t)
	addr := serveTCP(t, e)
	c := newCLI(t, "PROSE_ADDRESS="+addr, "PROSE_API_KEY="+e.Init.APIKey)
	c.json(0, "automations", "create", "--file", "../../examples/invoice.prose", "--title", "Invoices", "--id", "invoices", "--publish")
	for _, total := range []string{"50", "120.50"} {
		c.must(0, "automations", "invoke", "invoices", "--input", "invoice_total="+total, "--wait")
	}
	for range 2 {
		c.must(0, "automations", "update", "invoices", "--tests", "../../examples/invoice.tests.yaml")
	}
	if out := c.must(0, "automations", "test", "invoices"); !strings.Contains(out, "5 passed, 0 failed; lines covered 10 of 10 (100%)") {
		t.Fatalf("test:\n%s", out)
	}
	src, err := os.ReadFile("../../examples/invoice.prose")
	if err != nil {
		t.Fatal(err)
	}
	draft := filepath.Join(t.TempDir(), "invoice.prose")
	if err := os.WriteFile(draft, []byte(strings.Replace(string(src), "0.07", "0.08", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	c.must(0, "automations", "update", "invoices", "--file", draft)

	out := c.must(1, "automations", "replay", "invoices")
	if strings.Count(out, ": outputs differ: ") != 2 || !strings.Contains(out, "output due 128.9350 → 130.1400") ||
		!strings.Contains(out, "replayed 2 runs of version 2 against version 8: 0 unchanged, 2 outputs differ") {
		t.Fatalf("replay:\n%s", out)
	}
	if out := c.must(1, "automations", "test", "invoices"); !strings.Contains(out, "2 passed, 3 failed") ||
		!strings.Contains(out, "FAIL a small invoice needs no approval\n       output due: expected 53.50, got 54.00") {
		t.Fatalf("test:\n%s", out)
	}
	code, _, errb := c.run("automations", "publish", "invoices")
	if code != 1 || !strings.Contains(errb, "PUBLISH_CHECKS_FAILED") || strings.Count(errb, "\n  - run ") != 2 || strings.Count(errb, "\n  - test ") != 3 {
		t.Fatalf("publish: exit %d\n%s", code, errb)
	}
	c.must(exitUsage, "automations", "publish", "invoices", "--force")
	if out := c.must(0, "automations", "publish", "invoices", "--force", "--reason", "the tax is 8%"); !strings.Contains(out, "published") {
		t.Fatalf("forced publish:\n%s", out)
	}
}
