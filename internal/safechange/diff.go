package safechange

import (
	"fmt"
	"strings"

	"github.com/proserun/prose/internal/lang"
)

// Diff is one value that is not what it should be: Want is what a test
// expects (or what a recorded run gave), Got what the run gave. A value
// one side lacks is not valid on that side.
type Diff struct {
	// Output is the output's name ("output due"); Path the place inside
	// it ("" for the whole value, "lines[2].price").
	Output string
	Path   string
	Want   lang.Value
	Got    lang.Value
}

// String writes the difference for a person: "output due: expected
// 128.94, got 129.00".
func (d Diff) String() string {
	where := d.Output
	if d.Path != "" {
		where += "'s " + d.Path
	}
	switch {
	case !d.Got.IsValid():
		return fmt.Sprintf("%s: expected %s, got no value", where, show(d.Want))
	case !d.Want.IsValid():
		return fmt.Sprintf("%s: expected no value, got %s", where, show(d.Got))
	}
	return fmt.Sprintf("%s: expected %s, got %s", where, show(d.Want), show(d.Got))
}

// outputName finds the output a test names ("due" or "output due").
func outputName(name string, got map[string]lang.Value) (string, bool) {
	n := lang.FactName(name)
	if _, ok := got[n]; ok {
		return n, true
	}
	if !strings.HasPrefix(n, "output") {
		if _, ok := got["output "+n]; ok {
			return "output " + n, true
		}
		return "output " + n, false
	}
	return n, false
}

// DiffExpected compares the outputs a test names with those a run gave
// (outputs it does not name are not compared).
func DiffExpected(want, got map[string]lang.Value) []Diff {
	var out []Diff
	for _, k := range sortedKeys(want) {
		name, ok := outputName(k, got)
		if !ok {
			out = append(out, Diff{Output: name, Want: want[k]})
			continue
		}
		out = append(out, diffValue(name, "", want[k], got[name], 0)...)
	}
	return out
}

// DiffOutputs compares every output of two runs: one's outputs the other
// lacks are differences too.
func DiffOutputs(want, got map[string]lang.Value) []Diff {
	var out []Diff
	for _, k := range sortedKeys(want) {
		g, ok := got[k]
		if !ok {
			out = append(out, Diff{Output: k, Want: want[k]})
			continue
		}
		out = append(out, diffValue(k, "", want[k], g, 0)...)
	}
	for _, k := range sortedKeys(got) {
		if _, ok := want[k]; !ok {
			out = append(out, Diff{Output: k, Got: got[k]})
		}
	}
	return out
}

// maxDiffs bounds the differences reported inside one output.
const maxDiffs = 20

// diffValue compares two values, down into dictionaries and lists of the
// same shape, so that a difference names the field that differs.
func diffValue(output, path string, want, got lang.Value, depth int) []Diff {
	if sameValue(want, got) {
		return nil
	}
	whole := []Diff{{Output: output, Path: path, Want: want, Got: got}}
	if depth > 16 || want.Kind() != got.Kind() {
		return whole
	}
	var out []Diff
	switch want.Kind() {
	case lang.KindDictionary:
		w, g := want.AsDictionary(), got.AsDictionary()
		seen := map[string]bool{}
		for i := range w.Len() {
			k, wv := w.Entry(i)
			seen[k.String()] = true
			gv, ok := g.Get(k)
			if !ok {
				out = append(out, Diff{Output: output, Path: join(path, k.String()), Want: wv})
				continue
			}
			out = append(out, diffValue(output, join(path, k.String()), wv, gv, depth+1)...)
		}
		for i := range g.Len() {
			k, gv := g.Entry(i)
			if !seen[k.String()] {
				out = append(out, Diff{Output: output, Path: join(path, k.String()), Got: gv})
			}
		}
	case lang.KindList:
		w, g := want.AsList().Items, got.AsList().Items
		if len(w) != len(g) {
			return whole
		}
		for i := range w {
			out = append(out, diffValue(output, fmt.Sprintf("%s[%d]", path, i+1), w[i], g[i], depth+1)...)
		}
	default:
		return whole
	}
	if len(out) == 0 || len(out) > maxDiffs {
		return whole
	}
	return out
}

func join(path, field string) string {
	if path == "" {
		return field
	}
	return path + "'s " + field
}
