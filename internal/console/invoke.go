package console

import (
	"net/url"
	"strconv"
	"strings"

	"github.com/proserun/prose/internal/lang"
)

// invokeInput is a field of the invoke form: a fact the code needs, typed
// where the code tells (lang.Program.Inputs).
type invokeInput struct {
	I    int
	Name string
	// Type is the value's type for typedValue ("" when the code does not
	// tell: the person chooses); HTMLType the input's type attribute.
	Type, HTMLType string
}

// extraInputRows is how many rows the form has for inputs the code does
// not name.
const extraInputRows = 3

// invokeForm lays out the invoke form's fields: the inputs of the draft,
// then those only the published version needs, then rows for others.
func invokeForm(draft, published string) ([]invokeInput, []int) {
	var out []invokeInput
	seen := map[string]bool{}
	for _, code := range []string{draft, published} {
		prog, err := lang.Parse(code)
		if code == "" || err != nil {
			continue
		}
		for _, in := range prog.Inputs() {
			if seen[in.Name] || len(out) >= maxFormFacts-extraInputRows {
				continue
			}
			seen[in.Name] = true
			f := invokeInput{I: len(out), Name: in.Name, HTMLType: "text"}
			switch {
			case in.Known && in.Kind == lang.KindNumber:
				f.Type = "number"
			case in.Known && in.Kind == lang.KindDate:
				f.Type, f.HTMLType = "date", "date"
			}
			out = append(out, f)
		}
	}
	extra := make([]int, extraInputRows)
	for i := range extra {
		extra[i] = len(out) + i
	}
	return out, extra
}

// givenOnly leaves out the rows of the invoke form left empty: a run asks
// for what it is missing.
func givenOnly(f url.Values) url.Values {
	out := url.Values{}
	for k, v := range f {
		out[k] = v
	}
	for i := 0; i < maxFormFacts; i++ {
		n := strconv.Itoa(i)
		if !f.Has("fact." + n) {
			break
		}
		if strings.TrimSpace(f.Get("value."+n)) == "" {
			out.Set("fact."+n, "")
		}
	}
	return out
}
