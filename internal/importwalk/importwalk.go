// Package importwalk walks the imports of this module's packages (their
// non-test files, as go/build reads them): the one walk of the layering
// tests (store, books, engine), which fail when a package reaches another
// it must not.
package importwalk

import (
	"errors"
	"go/build"
	"io/fs"
	"path/filepath"
	"strings"
)

// Module is this module's import path, with its trailing slash.
const Module = "github.com/proserun/prose/"

// Walker walks imports; a package is visited once, whichever walk reached
// it first.
type Walker struct {
	// By is the package that first imported each package reached.
	By map[string]string
}

// Rel is path without the module's prefix ("store/sqlite").
func Rel(path string) string { return strings.TrimPrefix(path, Module) }

// Under reports whether path is the module's package rel or one below it.
func Under(path, rel string) bool {
	r := Rel(path)
	return r == rel || strings.HasPrefix(r, rel+"/")
}

// Walk reads the package path (from dir when dir is not "") and follows
// its imports of this module depth first, calling visit for each package
// not reached before with the package importing it; visit returns whether
// to follow that package's imports.
func (w *Walker) Walk(path, dir string, visit func(from, to string) bool) error {
	if w.By == nil {
		w.By = map[string]string{}
	}
	var p *build.Package
	var err error
	if dir != "" {
		p, err = build.ImportDir(dir, 0)
	} else {
		p, err = build.Import(path, ".", 0)
	}
	if err != nil {
		return err
	}
	for _, imp := range p.Imports {
		if !strings.HasPrefix(imp, Module) {
			continue
		}
		if _, ok := w.By[imp]; ok {
			continue
		}
		w.By[imp] = path
		if !visit(path, imp) {
			continue
		}
		if err := w.Walk(imp, "", visit); err != nil {
			return err
		}
	}
	return nil
}

// Dirs lists the directories under root (root included, as "."; paths
// relative to root) that hold a package of non-test Go files.
func Dirs(root string) ([]string, error) {
	var dirs []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		if _, err := build.ImportDir(path, 0); err != nil {
			var none *build.NoGoError
			if errors.As(err, &none) {
				return nil
			}
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		dirs = append(dirs, rel)
		return nil
	})
	return dirs, err
}
