package prose

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// maxFuncLines is the longest a function of production code may be, from
// its func line to its closing brace: past it, a function does several
// things that a name each would explain (issue 27, item 5).
const maxFuncLines = 120

// longFuncs are the functions allowed past maxFuncLines, by file and name
// (Receiver.Method for a method), each with the reason.
var longFuncs = map[string]string{
	"cmd/prose/serve.go:serveCmd": "in the file the server's wiring is moved out of (issue 27); split after that move",
	// Its UPDATEs' state clauses are being rebuilt from the state machine
	// table (issue 27): split once that lands, not under it.
	"store/internal/sqlstore/runs.go:DB.FinishRun": "its state clauses are rebuilt from the state machine table (issue 27); split after that",
}

// TestNoLongFunctions lists the functions of the module's own Go code
// (not tests, not generated code, not test harness packages) longer than
// maxFuncLines, and fails on any not in longFuncs.
func TestNoLongFunctions(t *testing.T) {
	fset := token.NewFileSet()
	var found []string
	long := map[string]int{}
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if skipDir(path, d.Name()) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		if ast.IsGenerated(f) {
			return nil
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			n := fset.Position(fn.End()).Line - fset.Position(fn.Pos()).Line + 1
			if n > maxFuncLines {
				key := filepath.ToSlash(path) + ":" + funcName(fn)
				long[key] = n
				found = append(found, key)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(found)
	for _, key := range found {
		if _, ok := longFuncs[key]; !ok {
			t.Errorf("%s is %d lines (over %d): split it where a name explains the part, or add it to longFuncs with the reason", key, long[key], maxFuncLines)
		}
	}
	// An entry no longer needed is only reported: the functions it names
	// are being moved and split in other branches at the same time, and
	// the list is trimmed when they meet.
	for key := range longFuncs {
		if _, ok := long[key]; !ok {
			t.Logf("longFuncs: %s is no longer over %d lines here: remove it", key, maxFuncLines)
		}
	}
}

// skipDir reports whether the folder holds no production code of ours:
// generated code, vendored protos, hidden folders, test data, and test
// harness packages (named …test or test…: storetest, the store suite's
// cases; testenv, the servers under test).
func skipDir(path, name string) bool {
	if path == "." {
		return false
	}
	switch {
	case path == "gen", path == "third_party", name == "testdata", strings.HasPrefix(name, "."):
		return true
	case strings.HasSuffix(name, "test"), strings.HasPrefix(name, "test"):
		return true
	}
	return false
}

func funcName(fn *ast.FuncDecl) string {
	if fn.Recv == nil || len(fn.Recv.List) == 0 {
		return fn.Name.Name
	}
	t := fn.Recv.List[0].Type
	if s, ok := t.(*ast.StarExpr); ok {
		t = s.X
	}
	switch x := t.(type) {
	case *ast.IndexExpr:
		t = x.X
	case *ast.IndexListExpr:
		t = x.X
	}
	if id, ok := t.(*ast.Ident); ok {
		return id.Name + "." + fn.Name.Name
	}
	return fn.Name.Name
}
