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
	"unicode"
)

// docLine is one command of a document's ```sh blocks.
type docLine struct {
	text   string // the command, continuation lines joined
	expect string // "# → text": what its output contains
	exit   int    // "# exit N": its exit code
	line   int    // its line in the document
	run    bool   // it is in a ```sh run block: TestRunnableDocs runs it
}

var (
	expectRE = regexp.MustCompile(`#\s*→\s*(.+?)\s*$`)
	exitRE   = regexp.MustCompile(`#\s*exit (\d+)\s*$`)
)

// shellLines returns the commands of the ```sh blocks of a Markdown file;
// those of ```sh run blocks are marked run.
func shellLines(t *testing.T, path string) []docLine {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []docLine
	in, run, cont := false, false, ""
	sc := bufio.NewScanner(bytes.NewReader(data))
	n := 0
	for sc.Scan() {
		n++
		l := sc.Text()
		fence := strings.TrimLeft(l, " ") // a block may sit in a list item
		switch {
		case !in && strings.HasPrefix(fence, "```sh"):
			info := strings.Fields(strings.TrimPrefix(fence, "```sh"))
			in, run = true, len(info) > 0 && info[0] == "run"
			continue
		case strings.HasPrefix(fence, "```"):
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
		d := docLine{text: l, line: n, run: run}
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

// docFiles lists the Markdown documents the docs tests read, as paths from
// this package's directory: the README, docs/ (subfolders included),
// BENCHMARKS.md and the package notes.
func docFiles(t *testing.T) []string {
	t.Helper()
	files := []string{"../../README.md", "../../BENCHMARKS.md"}
	err := filepath.WalkDir("../../docs", func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".md") {
			files = append(files, path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	notes, _ := filepath.Glob("../../internal/*/README.md")
	files = append(files, notes...)
	if _, err := os.Stat("../../store/README.md"); err == nil {
		files = append(files, "../../store/README.md")
	}
	return files
}

// TestRunnableDocs runs the ```sh run blocks of every document as written,
// one script per document, in a fresh directory with the examples of the
// clone, the built binary on the PATH (for `go install ./cmd/prose`) and a
// free port for its server: every command must exit 0 (or the code of its
// "# exit N"), and print what its "# → text" says.
func TestRunnableDocs(t *testing.T) {
	for _, tool := range []string{"bash", "curl", "jq"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("the runnable blocks need %s: %v", tool, err)
		}
	}
	ran := map[string]bool{}
	for _, f := range docFiles(t) {
		var lines []docLine
		for _, l := range shellLines(t, f) {
			if l.run {
				lines = append(lines, l)
			}
		}
		if len(lines) == 0 {
			continue
		}
		name := strings.TrimPrefix(f, "../../")
		ran[name] = true
		t.Run(name, func(t *testing.T) { runDocScript(t, lines) })
	}
	// The two a newcomer follows must stay runnable.
	for _, must := range []string{"README.md", "docs/getting-started.md"} {
		if !ran[must] {
			t.Errorf("%s has no ```sh run block", must)
		}
	}
}

func runDocScript(t *testing.T, lines []docLine) {
	bin := proseBinary(t)
	work := t.TempDir()
	if err := os.MkdirAll(filepath.Join(work, "examples"), 0o755); err != nil {
		t.Fatal(err)
	}
	progs, _ := filepath.Glob("../../examples/*.prose")
	for _, p := range progs {
		src, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(work, "examples", filepath.Base(p)), src, 0o644); err != nil {
			t.Fatal(err)
		}
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
	for i, l := range lines {
		cmd := l.text
		switch {
		case strings.HasPrefix(cmd, "go install ./cmd/prose"):
			cmd = ": " + cmd // the test built it and put it on the PATH
		case strings.HasPrefix(cmd, "export PROSE_ADDRESS="):
			cmd = "export PROSE_ADDRESS=" + addr
		}
		fmt.Fprintf(&script, "echo '@@begin %d'\n%s\necho \"@@end %d $?\"\n", i, cmd, i)
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
	// The document's server, if the script left it running: the script's
	// process group (this test made it).
	_ = syscall.Kill(-sh.Process.Pid, syscall.SIGKILL)
	if err != nil {
		t.Fatalf("the script: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
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
	checked := 0
	for _, f := range docFiles(t) {
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

// TestReadmeIsShort keeps the README a page a newcomer reads to the end:
// what Prose is, the set-up, the tour and the way into docs/. The rest
// belongs in docs/.
func TestReadmeIsShort(t *testing.T) {
	data, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(data, []byte("\n")); n > 150 {
		t.Errorf("README.md has %d lines, at most 150: move the detail into docs/", n)
	}
}

// pendingDocs are documents that other branches add, linked before they
// land. Remove an entry once its document is on main.
var pendingDocs = map[string]string{}

var (
	linkRE     = regexp.MustCompile(`!?\[[^\]]*\]\(([^)\s]+)\)`)
	codeSpanRE = regexp.MustCompile("`[^`]*`")
)

// mdProse returns the lines of a Markdown file outside its fenced code
// blocks, with their line numbers (others are "").
func mdProse(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(data), "\n")
	in := false
	for i, l := range lines {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			in = !in
			lines[i] = ""
			continue
		}
		if in {
			lines[i] = ""
		}
	}
	return lines
}

// anchors returns the anchors GitHub makes of a Markdown file's headings.
func anchors(t *testing.T, path string) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	seen := map[string]int{}
	for _, l := range mdProse(t, path) {
		if !strings.HasPrefix(l, "#") {
			continue
		}
		h := strings.TrimSpace(strings.TrimLeft(l, "#"))
		var b strings.Builder
		for _, r := range strings.ToLower(h) {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				b.WriteRune(r)
			}
		}
		a := b.String()
		if n := seen[a]; n > 0 {
			out[fmt.Sprintf("%s-%d", a, n)] = true
		} else {
			out[a] = true
		}
		seen[a]++
	}
	return out
}

// TestDocsLinks resolves every relative link of the documents: the file
// (or folder) exists and, for a Markdown file, the #anchor is one of its
// headings.
func TestDocsLinks(t *testing.T) {
	root, _ := filepath.Abs("../..")
	checked := 0
	links := map[string][]string{} // document → the documents it links to, from the root
	for _, f := range docFiles(t) {
		for i, l := range mdProse(t, f) {
			l = codeSpanRE.ReplaceAllString(l, "")
			for _, m := range linkRE.FindAllStringSubmatch(l, -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				checked++
				file, anchor, _ := strings.Cut(target, "#")
				path := f
				if file != "" {
					path = filepath.Join(filepath.Dir(f), file)
				}
				abs, _ := filepath.Abs(path)
				rel, _ := filepath.Rel(root, abs)
				from, _ := filepath.Abs(f)
				fromRel, _ := filepath.Rel(root, from)
				links[filepath.ToSlash(fromRel)] = append(links[filepath.ToSlash(fromRel)], filepath.ToSlash(rel))
				where := fmt.Sprintf("%s:%d: %s", strings.TrimPrefix(f, "../../"), i+1, target)
				if _, err := os.Stat(path); err != nil {
					if _, ok := pendingDocs[filepath.ToSlash(rel)]; !ok {
						t.Errorf("%s: no such file %s", where, filepath.ToSlash(rel))
					}
					continue
				}
				if anchor != "" && strings.HasSuffix(path, ".md") && !anchors(t, path)[anchor] {
					t.Errorf("%s: %s has no heading #%s", where, filepath.ToSlash(rel), anchor)
				}
			}
		}
	}
	if checked < 50 {
		t.Errorf("checked %d links; the documents have more", checked)
	}
	// Every document is reachable from the README, following links.
	seen := map[string]bool{"README.md": true}
	queue := []string{"README.md"}
	for len(queue) > 0 {
		d := queue[0]
		queue = queue[1:]
		for _, to := range links[d] {
			if to == "docs" { // the folder: GitHub shows its README.md
				to = "docs/README.md"
			}
			if !seen[to] {
				seen[to] = true
				queue = append(queue, to)
			}
		}
	}
	for _, f := range docFiles(t) {
		abs, _ := filepath.Abs(f)
		rel, _ := filepath.Rel(root, abs)
		if !seen[filepath.ToSlash(rel)] {
			t.Errorf("%s cannot be reached from README.md by its links", filepath.ToSlash(rel))
		}
	}
}

// repoPathRE matches a code span that reads as a path in the repository:
// a folder of the top level, or a package that moved under internal/, then
// at least one more segment.
var repoPathRE = regexp.MustCompile(`^([a-z][a-z0-9_-]*)(/[A-Za-z0-9_.*-]+)+/?$`)

// TestDocsPaths checks that every path in backticks that starts at a folder
// of the repository exists, and that no document names a package by the
// place it had before it moved under internal/ (`engine/schedule`, `lang/`).
func TestDocsPaths(t *testing.T) {
	entries, err := os.ReadDir("../..")
	if err != nil {
		t.Fatal(err)
	}
	top := map[string]bool{}
	for _, e := range entries {
		if e.IsDir() {
			top[e.Name()] = true
		}
	}
	moved := map[string]bool{}
	internal, _ := os.ReadDir("../../internal")
	for _, e := range internal {
		if e.IsDir() {
			moved[e.Name()] = true
		}
	}
	checked := 0
	for _, f := range docFiles(t) {
		for i, l := range mdProse(t, f) {
			for _, span := range codeSpanRE.FindAllString(l, -1) {
				p := strings.TrimSuffix(strings.Trim(span, "`"), "/...") // a Go package pattern
				if i := strings.LastIndex(p, "/"); i >= 0 {
					// pkg/path.Name names a declaration of the package.
					if j := strings.Index(p[i:], "."); j > 0 && i+j+1 < len(p) && unicode.IsUpper(rune(p[i+j+1])) {
						p = p[:i+j]
					}
				}
				if strings.HasPrefix(p, "../") && !strings.ContainsAny(p, " …{") { // relative to the document
					// The shared contract lives beside the repository, not in it,
					// and is named from the repository's root.
					if p == "../shared" || strings.HasPrefix(p, "../shared/") {
						continue
					}
					checked++
					if _, err := os.Stat(filepath.Join(filepath.Dir(f), p)); err != nil {
						t.Errorf("%s:%d: %s: no such path from the document's folder", strings.TrimPrefix(f, "../../"), i+1, span)
					}
					continue
				}
				m := repoPathRE.FindStringSubmatch(p)
				if m == nil || (!top[m[1]] && !moved[m[1]]) {
					continue
				}
				checked++
				where := fmt.Sprintf("%s:%d: %s", strings.TrimPrefix(f, "../../"), i+1, span)
				// A package note may name its own files from its folder.
				bases := []string{"../..", filepath.Dir(f)}
				found := false
				for _, b := range bases {
					if hits, _ := filepath.Glob(filepath.Join(b, strings.TrimSuffix(p, "/"))); len(hits) > 0 {
						found = true
						break
					}
				}
				switch {
				case found:
				case moved[m[1]] && !top[m[1]]:
					t.Errorf("%s: the package is under internal/ now (internal/%s)", where, p)
				default:
					t.Errorf("%s: no such path in the repository", where)
				}
			}
		}
	}
	if checked < 30 {
		t.Errorf("checked %d paths; the documents have more", checked)
	}
	// The packages a go command names (`go test ./internal/engine -run X`),
	// in code blocks and in the text alike.
	for _, f := range docFiles(t) {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, l := range strings.Split(string(data), "\n") {
			if j := strings.Index(l, " #"); j >= 0 { // a shell comment
				l = l[:j]
			}
			if !goCmdRE.MatchString(l) {
				continue
			}
			for _, m := range goPkgRE.FindAllStringSubmatch(l, -1) {
				dir := strings.TrimSuffix(strings.TrimSuffix(m[1], "/..."), "/")
				if st, err := os.Stat(filepath.Join("../..", dir)); err != nil || !st.IsDir() {
					t.Errorf("%s:%d: go package ./%s: no such folder", strings.TrimPrefix(f, "../../"), i+1, dir)
				}
			}
		}
	}
}

var (
	goCmdRE = regexp.MustCompile(`\bgo (test|run|build|vet|install|list|generate)\b`)
	goPkgRE = regexp.MustCompile(`(?:^|[\s(])\./([a-z][A-Za-z0-9_/.-]*)`)
)
