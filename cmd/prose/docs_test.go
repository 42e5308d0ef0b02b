package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// docLine is one command of a document's ```sh blocks.
type docLine struct {
	text   string // the command, continuation lines joined
	expect string // "# → text": what its output contains
	exit   int    // "# exit N": its exit code
	line   int    // its line in the document
}

var (
	expectRE = regexp.MustCompile(`#\s*→\s*(.+?)\s*$`)
	exitRE   = regexp.MustCompile(`#\s*exit (\d+)\s*$`)
)

// shellLines returns the commands of the ```sh blocks of a Markdown file.
func shellLines(t *testing.T, path string) []docLine {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []docLine
	in, cont := false, ""
	sc := bufio.NewScanner(bytes.NewReader(data))
	n := 0
	for sc.Scan() {
		n++
		l := sc.Text()
		switch {
		case strings.HasPrefix(l, "```sh"):
			in = true
			continue
		case strings.HasPrefix(l, "```"):
			in = false
			continue
		}
		if !in {
			continue
		}
		if strings.HasSuffix(l, `\`) {
			cont += strings.TrimSuffix(l, `\`) + " "
			continue
		}
		l = cont + l
		cont = ""
		if strings.TrimSpace(l) == "" || strings.HasPrefix(strings.TrimSpace(l), "#") {
			continue
		}
		d := docLine{text: l, line: n}
		if m := expectRE.FindStringSubmatch(l); m != nil {
			d.expect = m[1]
		}
		if m := exitRE.FindStringSubmatch(l); m != nil {
			d.exit, _ = strconv.Atoi(m[1])
		}
		out = append(out, d)
	}
	return out
}

// TestGettingStartedGuide runs docs/getting-started.md as written, in a
// fresh directory with the examples of the clone, the built binary on the
// PATH (for `go install ./cmd/prose`) and a free port for its server: every
// command must exit 0 (or the code of its "# exit N"), and print what its
// "# → text" says.
func TestGettingStartedGuide(t *testing.T) {
	for _, tool := range []string{"bash", "curl", "jq"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("the guide needs %s: %v", tool, err)
		}
	}
	lines := shellLines(t, "../../docs/getting-started.md")
	bin := proseBinary(t)
	work := t.TempDir()
	if err := os.MkdirAll(filepath.Join(work, "examples"), 0o755); err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("../../examples/invoice.prose")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(work, "examples", "invoice.prose"), src, 0o644); err != nil {
		t.Fatal(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := lis.Addr().String()
	_ = lis.Close()

	// One bash script: each command, then a marker with its exit code, its
	// output between markers.
	var script strings.Builder
	sawInstall := false
	for i, l := range lines {
		cmd := l.text
		switch {
		case strings.HasPrefix(cmd, "go install ./cmd/prose"):
			sawInstall = true
			cmd = ": " + cmd // the test built it and put it on the PATH
		case strings.HasPrefix(cmd, "export PROSE_ADDRESS="):
			cmd = "export PROSE_ADDRESS=" + addr
		}
		fmt.Fprintf(&script, "echo '@@begin %d'\n%s\necho \"@@end %d $?\"\n", i, cmd, i)
	}
	if !sawInstall {
		t.Error("the guide does not say go install ./cmd/prose first")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	sh := exec.CommandContext(ctx, "bash", "-c", script.String())
	sh.Dir = work
	sh.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	sh.Cancel = func() error { return syscall.Kill(-sh.Process.Pid, syscall.SIGKILL) }
	sh.Env = []string{"PATH=" + filepath.Dir(bin) + string(os.PathListSeparator) + os.Getenv("PATH"), "HOME=" + work,
		"PROSE_CONFIG=" + filepath.Join(work, "profiles.json")}
	var stdout, stderr bytes.Buffer
	sh.Stdout, sh.Stderr = &stdout, &stderr
	err = sh.Run()
	// The guide's server, if the script left it running: the script's
	// process group (this test made it).
	_ = syscall.Kill(-sh.Process.Pid, syscall.SIGKILL)
	if err != nil {
		t.Fatalf("the guide's script: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	out := stdout.String()
	for i, l := range lines {
		begin := strings.Index(out, fmt.Sprintf("@@begin %d\n", i))
		endRE := regexp.MustCompile(fmt.Sprintf(`@@end %d (\d+)\n`, i))
		end := endRE.FindStringSubmatchIndex(out)
		if begin < 0 || end == nil {
			t.Errorf("line %d %q: did not run\nstderr:\n%s", l.line, l.text, stderr.String())
			continue
		}
		got := out[begin+len(fmt.Sprintf("@@begin %d\n", i)) : end[0]]
		code, _ := strconv.Atoi(out[end[2]:end[3]])
		if code != l.exit {
			t.Errorf("line %d %q: exit %d, want %d\noutput:\n%s\nstderr:\n%s", l.line, l.text, code, l.exit, got, stderr.String())
		}
		if l.expect != "" && !strings.Contains(got, l.expect) {
			t.Errorf("line %d %q: output lacks %q:\n%s", l.line, l.text, l.expect, got)
		}
	}
}

// TestDocsCommandsParse checks every `prose …` command line of the README
// and of docs/*.md against the binary's commands: the command exists, its
// flags exist and take what is given, and its arguments fit.
func TestDocsCommandsParse(t *testing.T) {
	files, _ := filepath.Glob("../../docs/*.md")
	files = append(files, "../../README.md")
	checked := 0
	for _, f := range files {
		for _, l := range shellLines(t, f) {
			for _, words := range proseCommands(l.text) {
				checked++
				if err := parseCommandLine(words); err != nil {
					t.Errorf("%s:%d: prose %s: %v", filepath.Base(f), l.line, strings.Join(words, " "), err)
				}
			}
		}
	}
	if checked < 20 {
		t.Errorf("checked %d prose commands; the documents have more", checked)
	}
}

// proseCommands splits a shell line into its commands (at ; && || | & and
// $( … )) and returns the words of those that run prose.
func proseCommands(line string) [][]string {
	if i := strings.Index(line, " #"); i >= 0 {
		line = line[:i]
	}
	var cmds [][]string
	var words []string
	var cur strings.Builder
	inWord := false
	flush := func() {
		if inWord {
			words = append(words, cur.String())
			cur.Reset()
			inWord = false
		}
	}
	end := func() {
		flush()
		if len(words) > 0 && words[0] == "prose" {
			cmds = append(cmds, words[1:])
		}
		words = nil
	}
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case c == '\'':
			j := strings.IndexByte(line[i+1:], '\'')
			if j < 0 {
				j = len(line) - i - 1
			}
			cur.WriteString(line[i+1 : i+1+j])
			inWord = true
			i += j + 1
		case c == '"':
			j := strings.IndexByte(line[i+1:], '"')
			if j < 0 {
				j = len(line) - i - 1
			}
			cur.WriteString(line[i+1 : i+1+j])
			inWord = true
			i += j + 1
		case c == '$' && i+1 < len(line) && line[i+1] == '(':
			end()
			i++
		case c == ')' || c == ';' || c == '&' || c == '|' || c == '>' || c == '<':
			end()
			if c == '>' || c == '<' { // a redirection's target is not a word of the command
				for i+1 < len(line) && (line[i+1] == ' ' || line[i+1] == '>') {
					i++
				}
				for i+1 < len(line) && line[i+1] != ' ' {
					i++
				}
			}
		case c == ' ' || c == '\t':
			flush()
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	end()
	return cmds
}

// parseCommandLine parses the words of a prose command line as the binary
// would, without running it.
func parseCommandLine(words []string) error {
	root := newRootCmd()
	cmd, rest, err := root.Find(words)
	if err != nil {
		return err
	}
	if cmd == root && len(rest) > 0 && !strings.HasPrefix(rest[0], "-") {
		return fmt.Errorf("unknown command %q", rest[0])
	}
	if cmd.DisableFlagParsing { // serve: its own Go flag set
		var bad error
		for _, w := range rest {
			if strings.HasPrefix(w, "--") {
				name, _, _ := strings.Cut(strings.TrimPrefix(w, "--"), "=")
				if cmd.Flags().Lookup(name) == nil && name != "help" {
					bad = fmt.Errorf("unknown flag --%s", name)
				}
			}
		}
		return bad
	}
	if err := cmd.ParseFlags(rest); err != nil {
		return err
	}
	if cmd.Args != nil {
		return cmd.Args(cmd, cmd.Flags().Args())
	}
	if !cmd.Runnable() {
		return fmt.Errorf("%s is not a command that runs", cmd.CommandPath())
	}
	return nil
}
