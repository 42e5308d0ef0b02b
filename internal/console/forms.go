package console

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/internal/codec/protovalue"
	"github.com/proserun/prose/internal/lang"
)

// maxFormFacts bounds the facts one form provides.
const maxFormFacts = 100

// Input types a person can give a value as.
var inputTypes = []string{"number", "text", "date", "yes/no", "list"}

// formValues reads the facts of a form: fact.N (the name), type.N (one of
// inputTypes) and value.N, for N = 0, 1, …; a row without a name is left
// out.
func formValues(f url.Values) (map[string]*platformv1.Value, error) {
	out := map[string]*platformv1.Value{}
	for i := 0; i < maxFormFacts; i++ {
		n := strconv.Itoa(i)
		if !f.Has("fact." + n) {
			break
		}
		name := strings.TrimSpace(f.Get("fact." + n))
		if name == "" {
			continue
		}
		v, err := typedValue(f.Get("type."+n), f.Get("value."+n))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		out[name] = v
	}
	return out, nil
}

// typedValue converts what a person typed into a Value of the chosen type.
func typedValue(typ, s string) (*platformv1.Value, error) {
	s = strings.TrimSpace(s)
	var v lang.Value
	switch typ {
	case "number":
		n, err := lang.ParseNumber(strings.ReplaceAll(s, ",", ""))
		if err != nil {
			return nil, fmt.Errorf("%q is not a number", s)
		}
		v = lang.Num(n)
	case "text", "":
		v = lang.Text(s)
	case "date":
		t, err := time.Parse("2006-01-02", s)
		if err != nil {
			return nil, fmt.Errorf("%q is not a date (year-month-day)", s)
		}
		v = lang.DateValue(lang.Date{Year: t.Year(), Month: int(t.Month()), Day: t.Day()})
	case "yes/no":
		switch strings.ToLower(s) {
		case "yes", "true":
			v = lang.Bool(true)
		case "no", "false":
			v = lang.Bool(false)
		default:
			return nil, fmt.Errorf("answer yes or no, not %q", s)
		}
	case "list":
		var items []lang.Value
		for _, it := range strings.Split(s, ",") {
			it = strings.TrimSpace(it)
			if it == "" {
				continue
			}
			if n, err := lang.ParseNumber(it); err == nil {
				items = append(items, lang.Num(n))
			} else {
				items = append(items, lang.Text(it))
			}
		}
		v = lang.ListValue(items...)
	default:
		return nil, fmt.Errorf("unknown input type %q (one of %s)", typ, strings.Join(inputTypes, ", "))
	}
	return protovalue.ToProto(v)
}
