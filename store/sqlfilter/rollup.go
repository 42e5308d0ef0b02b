package sqlfilter

import (
	"slices"
	"sync"

	"github.com/proserun/prose/store"
)

// renderColumns holds, per field with a Render, the columns its SQL
// references, as declared with RenderColumns.
var renderColumns sync.Map // *Field → []string

// RenderColumns declares that the SQL the Render of field name produces
// references only cols, so that Conjuncts can report them (a Render field
// is otherwise of unknown columns). It returns r; an unknown field or one
// without Render is ignored.
func (r *Resource) RenderColumns(name string, cols ...string) *Resource {
	if f, ok := r.fields[name]; ok && f.Render != nil {
		renderColumns.Store(f, slices.Clone(cols))
	}
	return r
}

// Conjuncts implements store.ConjunctFilter: the operands of the top-level
// AND (nested ANDs flattened), each with the columns its comparisons
// reference. A plain comparison (Column, no Render, exact operator) also
// reports Column/Op/Value; a Render field never does, its operators need
// not mean what they mean on the column (see the server's ordered states).
func (c *compiled) Conjuncts() []store.Conjunct {
	if c == nil || c.root == nil {
		return nil
	}
	var out []store.Conjunct
	var walk func(n node)
	walk = func(n node) {
		if l, ok := n.(*logic); ok && l.op == "AND" {
			for _, k := range l.kids {
				walk(k)
			}
			return
		}
		cj := store.Conjunct{Filter: nodeFilter{n}, Columns: columns(n, nil)}
		if cm, ok := n.(*cmp); ok && cm.f.Render == nil && cm.op != OpHas && !cm.f.CaseInsensitive && !isName(cm.v) {
			cj.Column, cj.Op, cj.Value = cm.f.Column, cm.op, cm.v
		}
		out = append(out, cj)
	}
	walk(c.root)
	return out
}

// columns collects the columns of n's comparisons; nil if one is unknown.
func columns(n node, acc []string) []string {
	switch n := n.(type) {
	case *logic:
		for _, k := range n.kids {
			if acc = columns(k, acc); acc == nil {
				return nil
			}
		}
		return acc
	case *not:
		return columns(n.kid, acc)
	case *cmp:
		cols := []string{n.f.Column}
		if nv, ok := n.v.(nameValue); ok {
			cols = nv.cols
		} else if n.f.Render != nil {
			v, ok := renderColumns.Load(n.f)
			if !ok {
				return nil
			}
			cols = v.([]string)
		}
		if acc == nil {
			acc = []string{}
		}
		for _, c := range cols {
			if c == "" {
				return nil
			}
			if !slices.Contains(acc, c) {
				acc = append(acc, c)
			}
		}
		return acc
	}
	return nil
}

// nodeFilter renders one operand as a store.Filter.
type nodeFilter struct{ n node }

func (f nodeFilter) String() string { return "" }

func (f nodeFilter) SQL(a *store.Args) (string, error) {
	s, err := f.n.sql(a)
	if err != nil {
		return "", err
	}
	return "(" + s + ")", nil
}

func isName(v any) bool {
	_, ok := v.(nameValue)
	return ok
}
