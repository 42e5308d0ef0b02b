package server

import (
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/proserun/prose/server/transport"
	"github.com/proserun/prose/store"
	"github.com/proserun/prose/store/sqlfilter"
)

// TestNoMessageMatching: no code of server/ or gateway/ (their
// sub-packages included, tests excluded) decides anything by the words of an
// error. The reason, the code and the field of an answer come from typed
// errors (errors.Is on the store's sentinels, errors.As on
// *store.FieldError and the engine's errors); a message may be shown, never
// searched.
func TestNoMessageMatching(t *testing.T) {
	dirs := map[string][]string{}
	for _, root := range []string{".", "../gateway"} {
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() && strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, "_test.go") {
				dirs[filepath.Dir(path)] = append(dirs[filepath.Dir(path)], path)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if len(dirs) < 3 {
		t.Fatalf("found only %v", dirs)
	}
	for _, paths := range dirs {
		fset := token.NewFileSet()
		var files []*ast.File
		for _, p := range paths {
			f, err := parser.ParseFile(fset, p, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			files = append(files, f)
		}
		for _, m := range messageMatches(fset, files) {
			t.Errorf("decides by an error's text: %s", m)
		}
	}
}

// TestMessageMatchingFound: the check of TestNoMessageMatching finds the
// shapes it forbids (so that it can fail), and lets shaping a message for
// display through.
func TestMessageMatchingFound(t *testing.T) {
	src := `package p
import ("strings"; "errors")
func text(err error) string { return strings.TrimPrefix(err.Error(), "x: ") }
func direct(err error) bool { return strings.Contains(err.Error(), "page_token") }
func viaVar(err error) string {
	msg := text(err)
	switch {
	case strings.HasPrefix(msg, "filter"):
		return "filter"
	}
	return ""
}
func equal(err error) bool { s := err.Error(); return s != "" && s == "not found" }
func tag(err error) int {
	switch err.Error() {
	case "x":
		return 1
	}
	return 0
}
func fine(err error) (string, bool) { return text(err), errors.Is(err, errors.ErrUnsupported) }
func fineLen(name string) bool { return strings.Contains(name, "/") }
`
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "fixture.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	got := messageMatches(fset, []*ast.File{f})
	want := []string{"direct", "viaVar", "equal", "tag"}
	if len(got) != len(want) {
		t.Fatalf("found %q, want one in each of %q", got, want)
	}
	for i, w := range want {
		if !strings.HasPrefix(got[i], w+":") {
			t.Errorf("finding %d: %q, want one in %s", i, got[i], w)
		}
	}
}

// matchers are the strings functions that test a text (as opposed to
// shaping one).
var matchers = map[string]bool{
	"Contains": true, "ContainsAny": true, "ContainsRune": true, "ContainsFunc": true,
	"HasPrefix": true, "HasSuffix": true, "EqualFold": true, "Count": true,
	"Index": true, "IndexAny": true, "IndexByte": true, "IndexRune": true, "IndexFunc": true,
	"LastIndex": true, "LastIndexAny": true, "LastIndexByte": true,
	"Cut": true, "CutPrefix": true, "CutSuffix": true,
}

// messageMatches lists, as "func: position", the places in one package's
// files where an error's text (err.Error(), or a value or function result
// made from it) is searched by a strings matcher or a regexp, compared with
// == / !=, or switched on.
func messageMatches(fset *token.FileSet, files []*ast.File) []string {
	var funcs []*ast.FuncDecl
	for _, f := range files {
		for _, d := range f.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Body != nil {
				funcs = append(funcs, fd)
			}
		}
	}
	// Functions returning an error's text, found to a fixed point (a
	// function returning another's result is one too).
	textFuncs := map[string]bool{}
	for changed := true; changed; {
		changed = false
		for _, fd := range funcs {
			if textFuncs[fd.Name.Name] {
				continue
			}
			tainted := taintedNames(fd.Body, textFuncs)
			ast.Inspect(fd.Body, func(n ast.Node) bool {
				if r, ok := n.(*ast.ReturnStmt); ok {
					for _, e := range r.Results {
						if isText(e, tainted, textFuncs) {
							textFuncs[fd.Name.Name], changed = true, true
						}
					}
				}
				return true
			})
		}
	}
	var out []string
	for _, fd := range funcs {
		tainted := taintedNames(fd.Body, textFuncs)
		report := func(n ast.Node) {
			out = append(out, fd.Name.Name+": "+fset.Position(n.Pos()).String())
		}
		ast.Inspect(fd.Body, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.CallExpr:
				sel, ok := n.Fun.(*ast.SelectorExpr)
				if !ok {
					break
				}
				pkg, _ := sel.X.(*ast.Ident)
				isMatcher := pkg != nil && pkg.Name == "strings" && matchers[sel.Sel.Name] ||
					strings.HasPrefix(sel.Sel.Name, "Match") || strings.HasPrefix(sel.Sel.Name, "FindString")
				if !isMatcher {
					break
				}
				for _, a := range n.Args {
					if isText(a, tainted, textFuncs) {
						report(n)
						break
					}
				}
			case *ast.BinaryExpr:
				if (n.Op == token.EQL || n.Op == token.NEQ) && !isEmpty(n.X) && !isEmpty(n.Y) &&
					(isText(n.X, tainted, textFuncs) || isText(n.Y, tainted, textFuncs)) {
					report(n)
				}
			case *ast.SwitchStmt:
				if n.Tag != nil && isText(n.Tag, tainted, textFuncs) {
					report(n)
				}
			}
			return true
		})
	}
	return out
}

// taintedNames are the local names of body assigned an error's text.
func taintedNames(body *ast.BlockStmt, textFuncs map[string]bool) map[string]bool {
	tainted := map[string]bool{}
	for changed := true; changed; {
		changed = false
		ast.Inspect(body, func(n ast.Node) bool {
			var lhs, rhs []ast.Expr
			switch n := n.(type) {
			case *ast.AssignStmt:
				lhs, rhs = n.Lhs, n.Rhs
			case *ast.ValueSpec:
				for _, id := range n.Names {
					lhs = append(lhs, id)
				}
				rhs = n.Values
			default:
				return true
			}
			for i, l := range lhs {
				id, ok := l.(*ast.Ident)
				if !ok || tainted[id.Name] {
					continue
				}
				if len(rhs) > 0 && isText(rhs[min(i, len(rhs)-1)], tainted, textFuncs) {
					tainted[id.Name], changed = true, true
				}
			}
			return true
		})
	}
	return tainted
}

// isText reports whether e is an error's text, or a string made from one
// (sliced, joined, trimmed, formatted). A call of any other function is
// not: a status built from a message carries it without searching it.
func isText(e ast.Expr, tainted, textFuncs map[string]bool) bool {
	switch e := e.(type) {
	case *ast.Ident:
		return tainted[e.Name]
	case *ast.ParenExpr:
		return isText(e.X, tainted, textFuncs)
	case *ast.SliceExpr:
		return isText(e.X, tainted, textFuncs)
	case *ast.BinaryExpr:
		return e.Op == token.ADD && (isText(e.X, tainted, textFuncs) || isText(e.Y, tainted, textFuncs))
	case *ast.CallExpr:
		switch fun := e.Fun.(type) {
		case *ast.Ident:
			return textFuncs[fun.Name] || fun.Name == "string" && len(e.Args) == 1 && isText(e.Args[0], tainted, textFuncs)
		case *ast.SelectorExpr:
			if fun.Sel.Name == "Error" && len(e.Args) == 0 {
				return true
			}
			pkg, _ := fun.X.(*ast.Ident)
			if pkg == nil || !(pkg.Name == "strings" && !matchers[fun.Sel.Name] || pkg.Name == "fmt" && strings.HasPrefix(fun.Sel.Name, "Sprint")) {
				return false
			}
			for _, a := range e.Args {
				if isText(a, tainted, textFuncs) {
					return true
				}
			}
		}
	}
	return false
}

// isEmpty reports whether e is nil or "": comparing with them asks whether
// there is a text (or an error), not what it says.
func isEmpty(e ast.Expr) bool {
	if id, ok := e.(*ast.Ident); ok {
		return id.Name == "nil"
	}
	lit, ok := e.(*ast.BasicLit)
	return ok && lit.Kind == token.STRING && (lit.Value == `""` || lit.Value == "``")
}

// TestStoreStatus: the one mapping answers each store error by its type:
// the code, the reason, the violation's field and the metadata, with the
// store's words (less the sentinel's) as the message.
func TestStoreStatus(t *testing.T) {
	run := storeErrors{name: "runs/r", notFound: ReasonRunNotFound, exists: ReasonRunNotFound, precondition: ReasonRunStateConflict}
	file := storeErrors{name: "files/f", notFound: ReasonFileNotFound, exists: ReasonConflict,
		precondition: ReasonFileNotUploaded, preconditionKey: "file", preconditionMsg: "not uploaded"}
	plain := storeErrors{name: "roles/x", notFound: ReasonRoleNotFound, exists: ReasonRoleNotFound}
	_, filterErr := sqlfilter.Runs.Parse(`page_token = "x"`)
	for name, tc := range map[string]struct {
		got                          error
		code                         codes.Code
		reason                       transport.ErrorReason
		msg, field, metaKey, metaVal string
	}{
		"not found":                 {run.status(fmt.Errorf("get run: %w", store.ErrNotFound)), codes.NotFound, ReasonRunNotFound, "runs/r not found", "", "resource_name", "runs/r"},
		"exists":                    {plain.status(store.ErrAlreadyExists), codes.AlreadyExists, ReasonRoleNotFound, "roles/x already exists", "", "resource_name", "roles/x"},
		"precondition":              {run.status(fmt.Errorf("%w: run is completed", store.ErrFailedPrecondition)), codes.FailedPrecondition, ReasonRunStateConflict, "run is completed", "", "resource_name", "runs/r"},
		"precondition, fixed words": {file.status(fmt.Errorf("%w: no bytes", store.ErrFailedPrecondition)), codes.FailedPrecondition, ReasonFileNotUploaded, "not uploaded", "", "file", "files/f"},
		"precondition, shared":      {plain.status(fmt.Errorf("%w: built in", store.ErrFailedPrecondition)), codes.FailedPrecondition, ReasonFailedPrecondition, "built in", "", "", ""},
		"conflict":                  {plain.status(store.ErrStageChanged), codes.Aborted, ReasonConflict, "a concurrent change won; retry", "", "", ""},
		"exhausted":                 {plain.status(fmt.Errorf("%w: 100 keys", store.ErrResourceExhausted)), codes.ResourceExhausted, ReasonAPIKeyLimit, "100 keys", "", "", ""},
		"page token":                {plain.status(store.InvalidField("page_token", "page_token is malformed")), codes.InvalidArgument, ReasonInvalidPageToken, "page_token is malformed", "page_token", "", ""},
		"filter naming page_token":  {plain.status(filterErr), codes.InvalidArgument, ReasonInvalidFilter, strings.TrimPrefix(filterErr.Error(), "invalid argument: "), "filter", "", ""},
		"other field":               {plain.status(store.InvalidField("periods", "periods overlap")), codes.InvalidArgument, ReasonInvalidField, "periods overlap", "", "", ""},
		"untyped":                   {plain.status(fmt.Errorf("%w: update_mask: unknown field %q", store.ErrInvalidArgument, "page_size")), codes.InvalidArgument, ReasonInvalidField, `update_mask: unknown field "page_size"`, "", "", ""},
		"previous_run":              {invokeErr(store.InvalidField("previous_run", "previous_run %q is not a run of this automation", "r"), "o", "w", "a", "inputs"), codes.InvalidArgument, ReasonInvalidField, `previous_run "r" is not a run of this automation`, "previous_run", "", ""},
		"inputs":                    {invokeErr(fmt.Errorf("%w: inputs: previous_run is not a value", store.ErrInvalidArgument), "o", "w", "a", "inputs"), codes.InvalidArgument, ReasonInvalidField, "inputs: previous_run is not a value", "inputs", "", ""},
	} {
		st, _ := status.FromError(tc.got)
		if st.Code() != tc.code || transport.ReasonOf(tc.got) != tc.reason || st.Message() != tc.msg {
			t.Errorf("%s: %v %v %q, want %v %v %q", name, st.Code(), transport.ReasonOf(tc.got), st.Message(), tc.code, tc.reason, tc.msg)
		}
		var field string
		var meta map[string]string
		for _, d := range st.Details() {
			switch d := d.(type) {
			case *errdetails.BadRequest:
				field = d.GetFieldViolations()[0].GetField()
			case *errdetails.ErrorInfo:
				meta = d.GetMetadata()
			}
		}
		if field != tc.field {
			t.Errorf("%s: violation on %q, want %q", name, field, tc.field)
		}
		if tc.metaKey == "" && len(meta) > 0 || tc.metaKey != "" && (len(meta) != 1 || meta[tc.metaKey] != tc.metaVal) {
			t.Errorf("%s: metadata %v, want %s=%s", name, meta, tc.metaKey, tc.metaVal)
		}
	}
	if plain.status(nil) != nil {
		t.Error("nil is not nil")
	}
	if internal := errors.New("disk on fire"); !errors.Is(plain.status(internal), internal) {
		t.Error("an internal error is not left to the errors entry")
	}
}
